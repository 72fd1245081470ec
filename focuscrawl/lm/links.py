"""Link scores and their Scrapy priorities (SPEC §5): pure functions, no crawl needed.

Scores are perplexity-like: lower = crawl earlier. Scrapy priorities are integers,
higher first, so a score maps to a bucket (``6e2 / 2e3 / 1e4`` boundaries: high,
medium, normal, low), the bucket to a range of priorities and the score to a step
inside it (best-first); seeds rank above every bucket.
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
PRIORITY_STEPS_PER_DECADE = 10  # best-first inside a bucket (0 = FIFO)
SCORE_DECADES = 20  # scores above 1e20 share the last step of their bucket


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
                    steps_per_decade: int = PRIORITY_STEPS_PER_DECADE) -> int:
    """Scrapy priority of a link score (higher = earlier); always below ``seed_priority``.

    The bucket decides first: a link in a better bucket always precedes one in a worse
    bucket. Inside a bucket, ``steps_per_decade = k > 0`` orders by score on a log scale
    (``k`` priorities per power of ten) **(choice: SPEC §5 is silent on the order inside a
    bucket; best-first keeps the buckets meaningful when a model's perplexities are far
    below the thesis's, e.g. ~10-1,000 instead of ~1e7)**. ``k = 0``: one priority per
    bucket, ``len(boundaries) - index`` (3, 2, 1, 0 by default), FIFO inside it.
    """
    rank = len(boundaries) - bucket_index(score, boundaries)
    if steps_per_decade <= 0:
        return rank
    span = _bucket_span(steps_per_decade)
    step = math.ceil(steps_per_decade * math.log10(max(score, 1.0)) - 1e-9)
    return rank * span - min(step, span - 1)


def seed_priority(boundaries: Sequence[float] = PRIORITY_BUCKETS,
                  steps_per_decade: int = PRIORITY_STEPS_PER_DECADE) -> int:
    """A priority above every link's: seeds are crawled first."""
    return (len(boundaries) + 1) * (_bucket_span(steps_per_decade) if steps_per_decade > 0 else 1)


def _bucket_span(steps_per_decade: int) -> int:
    """Priorities reserved per bucket: scores up to 1e20 get distinct steps."""
    return steps_per_decade * SCORE_DECADES
