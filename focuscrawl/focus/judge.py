"""Is a fetched page on topic? The page judge of crawl mode ``learning``.

Its call labels the link that led to the page for the link learner
(``focuscrawl.focus.link_learner``); its topicality is also a feature of the page's links.
"""
from __future__ import annotations

import math

from focuscrawl import settings as defaults
from focuscrawl.topic.model import sigmoid


class PageJudge:
    """Is a fetched page on topic? Its topicality in [0, 1], on topic from ``cut``.

    ``perplexity``: from the weighted perplexity (SPEC: PP × (1 − γ_kw · kw), floored at
    1) against ``on_topic_pp``, ``topicality = T / (T + wPP)`` (0.5 at the threshold), an
    absolute cut that suits one model's perplexities. ``calibrated``: the topic bundle's
    calibrated probability of the page's text (``PageAnalysis.topic_logit``), the same scale for
    any model and topic, on topic from ``on_topic_p`` (FOCUSCRAWL_LEARNING_ON_TOPIC_P) and,
    with a page calibration (``page_cut``), only from the log-odds that all but a small
    share of the topic's own pages reach: ``topicality = sigmoid(logit - shift)``, ``shift``
    the distance from the one cut to the other. The sentence calibration alone calls any
    page of the topic's style on topic when the bundle's neutral corpus is small or narrow.
    """

    def __init__(self, on_topic_pp: float = defaults.FOCUSCRAWL_LEARNING_ON_TOPIC_PP, calibrated: bool = False,
                 on_topic_p: float = defaults.FOCUSCRAWL_LEARNING_ON_TOPIC_P, page_cut: float | None = None) -> None:
        self.on_topic_pp = on_topic_pp
        self.calibrated = calibrated
        #: the topicality a page is on topic from (the perplexity's is 0.5 at ``on_topic_pp``)
        self.cut = on_topic_p if calibrated else 0.5
        #: the page log-odds a page is on topic from (``None``: the sentence calibration's cut only)
        self.page_cut = page_cut if calibrated else None
        self.shift = max(0.0, page_cut - _logit_exact(on_topic_p)) if self.page_cut is not None else 0.0

    def topicality(self, weighted_perplexity: float | None = None, topic_logit: float | None = None) -> float | None:
        if self.calibrated:
            return None if topic_logit is None else sigmoid(topic_logit - self.shift)
        if weighted_perplexity is None:
            return None
        return self.on_topic_pp / (self.on_topic_pp + max(weighted_perplexity, 0.0))

    def on_topic(self, topicality: float) -> bool:
        return topicality >= self.cut

    @classmethod
    def from_settings(cls, settings, topic_model=None) -> "PageJudge":
        """``calibrated`` needs the crawl's ``topic_model`` (a topic bundle); without one
        (a custom model and no bundle) pages are judged by their perplexity."""
        judge = settings.get("FOCUSCRAWL_LEARNING_JUDGE")
        if judge not in ("perplexity", "calibrated"):
            raise ValueError(f"FOCUSCRAWL_LEARNING_JUDGE must be perplexity or calibrated, not {judge!r}")
        on_topic_p = settings.getfloat("FOCUSCRAWL_LEARNING_ON_TOPIC_P")
        if not 0.0 < on_topic_p < 1.0:
            raise ValueError(f"FOCUSCRAWL_LEARNING_ON_TOPIC_P must be a probability between 0 and 1, not {on_topic_p}")
        level = settings.getfloat("FOCUSCRAWL_LEARNING_PAGE_QUANTILE")
        if not 0.0 <= level < 1.0:
            raise ValueError(f"FOCUSCRAWL_LEARNING_PAGE_QUANTILE must be a share in [0, 1), not {level}")
        page_cut = topic_model.page_quantile("positive", level) if topic_model is not None and level > 0 else None
        return cls(settings.getfloat("FOCUSCRAWL_LEARNING_ON_TOPIC_PP"),
                   calibrated=judge == "calibrated" and topic_model is not None, on_topic_p=on_topic_p,
                   page_cut=page_cut)


def _logit_exact(p: float) -> float:
    return math.log(p / (1.0 - p))
