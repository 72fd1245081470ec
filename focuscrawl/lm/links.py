"""Link scores and their Scrapy priorities (SPEC §5): pure functions, no crawl needed.

Scores are perplexity-like: lower = crawl earlier. Scrapy priorities are integers,
higher first, so a score maps to a bucket (``6e2 / 2e3 / 1e4`` boundaries: high,
medium, normal, low) and the bucket to a priority; seeds rank above every bucket.
"""
from __future__ import annotations

import math
from typing import Sequence

LINK_DOC_WEIGHT = 0.7  # γ_d
LINK_ANCHOR_WEIGHT = 0.3  # γ_otx
LINK_KEYWORD_WEIGHT = 3.0  # γ_linkkw
LINK_ANCHOR_MAX_PP = 3000.0  # T_otx
PRIORITY_BUCKETS = (6e2, 2e3, 1e4)
LINK_RAZOR = 3e4
BUCKET_NAMES = ("high", "medium", "normal", "low")


def link_score(doc_pp: float, anchor_pp: float | None, anchor_keyword_score: float,
               doc_weight: float = LINK_DOC_WEIGHT, anchor_weight: float = LINK_ANCHOR_WEIGHT,
               keyword_weight: float = LINK_KEYWORD_WEIGHT,
               anchor_max_pp: float = LINK_ANCHOR_MAX_PP) -> float:
    """The thesis's ``perpscore_link`` (mode ``keywords``).

    An anchor with a perplexity at most ``T_otx`` and at most the document's blends
    70/30 with the document perplexity; otherwise (or with no anchor words) the
    document perplexity alone. Both cases are shrunk by ``1 - γ_linkkw * kw``; a
    score below 0 becomes 1.
    """
    factor = 1.0 - keyword_weight * anchor_keyword_score
    if anchor_pp is not None and anchor_pp <= anchor_max_pp and anchor_pp <= doc_pp:
        score = (doc_weight * doc_pp + anchor_weight * anchor_pp) * factor
    else:
        score = doc_pp * factor
    return 1.0 if score < 0 else score


def bucket_index(score: float, boundaries: Sequence[float] = PRIORITY_BUCKETS) -> int:
    """0 for the best bucket (``score <= boundaries[0]``) ... ``len(boundaries)`` for the worst."""
    for i, bound in enumerate(boundaries):
        if score <= bound:
            return i
    return len(boundaries)


def bucket_name(index: int, n_buckets: int = len(BUCKET_NAMES)) -> str:
    """``high/medium/normal/low`` for the default four buckets, ``b<i>`` otherwise."""
    return BUCKET_NAMES[index] if n_buckets == len(BUCKET_NAMES) else f"b{index}"


def bucket_priority(score: float, boundaries: Sequence[float] = PRIORITY_BUCKETS,
                    steps_per_decade: int = 0) -> int:
    """Scrapy priority of a link score (higher = earlier); always below ``seed_priority``.

    With ``steps_per_decade = 0`` one priority per bucket: ``len(boundaries) - index``
    (3, 2, 1, 0 by default). With ``steps_per_decade = k > 0`` finer log-scale buckets:
    ``-ceil(k * log10(score))``, i.e. ``k`` priorities per power of ten (score 1 -> 0).
    """
    if steps_per_decade > 0:
        return -math.ceil(steps_per_decade * math.log10(max(score, 1.0)) - 1e-9)
    return len(boundaries) - bucket_index(score, boundaries)


def seed_priority(boundaries: Sequence[float] = PRIORITY_BUCKETS, steps_per_decade: int = 0) -> int:
    """A priority above every link's: seeds are crawled first."""
    return 1 if steps_per_decade > 0 else len(boundaries) + 1
