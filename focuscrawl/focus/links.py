"""Link scores and their Scrapy priorities (SPEC §5): pure functions, no crawl needed.

Scores are perplexity-like: lower = crawl earlier. Scrapy priorities are integers,
higher first, so a score maps to a bucket (``6e2 / 2e3 / 1e4`` boundaries: high,
medium, normal, low), the bucket to a range of priorities and the score to a step
inside it (best-first); seeds rank above every bucket.
"""
from __future__ import annotations

import math
from typing import Sequence

from focuscrawl import settings as defaults

#: SPEC §5's constants, defaults of the pure functions below: the settings' own values
LINK_DOC_WEIGHT = defaults.FOCUSCRAWL_LINK_DOC_WEIGHT  # γ_d
LINK_ANCHOR_WEIGHT = defaults.FOCUSCRAWL_LINK_ANCHOR_WEIGHT  # γ_otx
LINK_KEYWORD_WEIGHT = defaults.FOCUSCRAWL_LINK_KEYWORD_WEIGHT  # γ_linkkw
LINK_ANCHOR_MAX_PP = defaults.FOCUSCRAWL_LINK_ANCHOR_MAX_PP  # T_otx
PRIORITY_BUCKETS = defaults.FOCUSCRAWL_PRIORITY_BUCKETS
LINK_RAZOR = defaults.FOCUSCRAWL_LINK_RAZOR
BUCKET_NAMES = ("high", "medium", "normal", "low")
PRIORITY_STEPS_PER_DECADE = defaults.FOCUSCRAWL_PRIORITY_STEPS_PER_DECADE  # best-first inside a bucket (0 = FIFO)
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


#: calibrated crawl (FOCUSCRAWL_CRAWL_SCORING = "calibrated"): link scores are the odds
#: against the topic, ``(1 - p) / p``, so that lower = earlier as with perplexities
CALIBRATED_BUCKET_PROBABILITIES = (0.9, 0.5, 0.1)
ODDS_FLOOR = 1e-10  # best-first steps count decades of odds from here


def calibrated_link_logit(doc_logit: float, anchor_logit: float | None, doc_weight: float = LINK_DOC_WEIGHT,
                          anchor_weight: float = LINK_ANCHOR_WEIGHT) -> float:
    """The link rule on calibrated log-odds: an anchor at least as topical as its page blends
    ``doc_weight``/``anchor_weight`` with the page's log-odds, otherwise the page's alone
    (SPEC's ``anchor PP <= doc PP`` condition; its absolute ``T_otx`` has no calibrated meaning)."""
    if anchor_logit is not None and anchor_logit >= doc_logit:
        return doc_weight * doc_logit + anchor_weight * anchor_logit
    return doc_logit


def odds_against(logit: float) -> float:
    """``(1 - p) / p`` of log-odds ``logit`` (clamped to +-30)."""
    return math.exp(-max(-30.0, min(30.0, logit)))


def probability_to_odds(p: float) -> float:
    """Odds against of a probability threshold (a bucket boundary or the razor)."""
    p = min(max(p, 1e-13), 1 - 1e-13)
    return (1.0 - p) / p


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
                    steps_per_decade: int = PRIORITY_STEPS_PER_DECADE, floor: float = 1.0) -> int:
    """Scrapy priority of a link score (higher = earlier); always below ``seed_priority``.

    The bucket decides first: a link in a better bucket always precedes one in a worse
    bucket. Inside a bucket, ``steps_per_decade = k > 0`` orders by score on a log scale
    (``k`` priorities per power of ten) **(choice: SPEC §5 is silent on the order inside a
    bucket; best-first keeps the buckets meaningful when a model's perplexities are far
    below the thesis's, e.g. ~10-1,000 instead of ~1e7)**. ``k = 0``: one priority per
    bucket, ``len(boundaries) - index`` (3, 2, 1, 0 by default), FIFO inside it.
    ``floor``: the lowest score with a step of its own (1 for perplexities, ``ODDS_FLOOR`` for
    the calibrated crawl's odds).
    """
    rank = len(boundaries) - bucket_index(score, boundaries)
    if steps_per_decade <= 0:
        return rank
    span = _bucket_span(steps_per_decade)
    step = math.ceil(steps_per_decade * math.log10(max(score, floor) / floor) - 1e-9)
    return rank * span - min(step, span - 1)


def lowest_bucket_priority(steps_per_decade: int = PRIORITY_STEPS_PER_DECADE) -> int:
    """The lowest ``bucket_priority`` of any score (the last bucket's worst step)."""
    return 1 - _bucket_span(steps_per_decade) if steps_per_decade > 0 else 0


def seed_priority(boundaries: Sequence[float] = PRIORITY_BUCKETS,
                  steps_per_decade: int = PRIORITY_STEPS_PER_DECADE) -> int:
    """A priority above every link's: seeds are crawled first."""
    return (len(boundaries) + 1) * (_bucket_span(steps_per_decade) if steps_per_decade > 0 else 1)


def _bucket_span(steps_per_decade: int) -> int:
    """Priorities reserved per bucket: scores up to 1e20 get distinct steps."""
    return steps_per_decade * SCORE_DECADES
