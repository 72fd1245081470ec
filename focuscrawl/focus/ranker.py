"""The link rule of a crawl mode: a link's score, bucket, Scrapy priority and razor decision.

``LinkRanker`` is built by the crawl's mode strategy (``focuscrawl.focus.modes``) and used
by ``focuscrawl.middlewares.priority.LinkPriorityMiddleware`` and ``focuscrawl.shell.explain``.
What the crawl knows of the link a request follows travels with the request as one
``LinkFacts`` in ``request.meta["focuscrawl_link"]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from functools import lru_cache

from focuscrawl.focus.link_learner import LEARNER_TERMS, PRIORITY_STEPS, feature_prefixes, link_features, url_host
from focuscrawl.focus.links import (CALIBRATED_BUCKET_PROBABILITIES, ODDS_FLOOR, bucket_index, bucket_name,
                                    bucket_priority, calibrated_link_logit, link_score, lowest_bucket_priority,
                                    odds_against, probability_to_odds, seed_priority)


@dataclass(frozen=True)
class LinkDecision:
    """What the crawl does with one out-link (``score`` etc. ``None`` in ``unfocused``)."""

    score: float | None
    anchor_perplexity: float | None
    anchor_keyword_score: float | None
    bucket: str
    priority: int
    followed: bool
    #: mode ``learning``: the learner's score in (0, 1) (higher = earlier), its features and
    #: their vector (``LinkLearner.vector``: the frontier re-scores the link with it)
    learned: float | None = None
    features: tuple[str, ...] | None = None
    vector: tuple | None = field(default=None, repr=False)


#: the Scrapy priorities of the learned rule (mode ``learning``): seeds above every link, whose
#: learned priorities go from 0 to ``PRIORITY_STEPS``
LEARNED_SEED_PRIORITY = PRIORITY_STEPS + 1
LEARNED_LOWEST_PRIORITY = 0


def demoted_priority(priority: int, seed_priority: int, lowest_priority: int) -> int:
    """``priority`` moved below every priority a followed link gets (from ``lowest_priority`` to
    below ``seed_priority``), order kept."""
    return priority - (seed_priority - lowest_priority)


#: ``request.meta`` key of a request's ``LinkFacts`` (as Scrapy's ``DepthMiddleware`` keeps ``depth``)
LINK_META = "focuscrawl_link"


@dataclass(slots=True)
class LinkFacts:
    """What the crawl knows of the link a request follows, in ``request.meta[LINK_META]``.

    The focused spider sets ``anchor`` on each out-link's request; the link middleware
    (``LinkPriorityMiddleware``) fills in the rest when it decides the link, and reads
    them back from the response of the page the link led to (the score a page without
    text inherits, the learner's training example, the grandparent's topicality); the
    re-ranking frontier re-scores ``vector`` and updates ``learned``. A seed's request has
    none (``meta["seed"]``). Pickled with the request into JOBDIR's queues and the
    frontier journal (a request read back from them with the facts in separate meta keys
    gets them gathered here: ``gather_link_facts``)."""

    #: the anchor text (``None``: a request the spider did not build from a page's link)
    anchor: str | None = None
    #: the link's score, bucket and its anchor's scores (focused modes; ``LinkDecision``)
    score: float | None = None
    bucket: str = ""
    anchor_perplexity: float | None = None
    anchor_keyword_score: float | None = None
    #: the score of the page it was found on, as the link was ranked with it
    parent_perplexity: float | None = None
    #: mode ``learning`` (or a learner's score shown): the features' vector, the learned score,
    #: the judge's topicality of the page it was found on, and its ``origin`` (that page's URL
    #: and the link's block on it; the learner's ``siblings`` and ``hubs``)
    vector: tuple | None = None
    learned: float | None = None
    parent_topicality: float | None = None
    origin: tuple[str, int] | None = None
    #: found on a near-duplicate page: the frontier's re-ranking keeps it below the others
    demoted: bool = False

    def __reduce__(self):
        """Pickled as its values, without the trailing defaults (every queued request carries one)."""
        values = [getattr(self, f.name) for f in _LINK_FACTS_FIELDS]
        while values and values[-1] == _LINK_FACTS_FIELDS[len(values) - 1].default:
            values.pop()
        return LinkFacts, tuple(values)


_LINK_FACTS_FIELDS = fields(LinkFacts)

#: the ``request.meta`` keys a link's facts were kept in before they went in one ``LinkFacts``
#: (a JOBDIR's queue may still hold such requests) -> the ``LinkFacts`` field of each
SEPARATE_LINK_META = {"anchor": "anchor", "link_score": "score", "link_bucket": "bucket",
                      "anchor_perplexity": "anchor_perplexity", "anchor_keyword_score": "anchor_keyword_score",
                      "parent_perplexity": "parent_perplexity", "link_vector": "vector", "link_learned": "learned",
                      "parent_topicality": "parent_topicality", "link_origin": "origin", "link_demoted": "demoted"}


def gather_link_facts(meta: dict) -> bool:
    """Move a queued request's link facts kept in separate ``meta`` keys (``SEPARATE_LINK_META``)
    into its one ``LinkFacts``, so that it is re-ranked, taught and inherited from as the
    crawl's other requests (a seed's keys are dropped: a seed has none). Returns whether
    there were any."""
    if LINK_META in meta or not meta.keys() & SEPARATE_LINK_META.keys():
        return False
    values = {name: meta.pop(key) for key, name in SEPARATE_LINK_META.items() if key in meta}
    if not meta.get("seed"):
        meta[LINK_META] = LinkFacts(**values)
    return True


def link_facts(request_or_response) -> LinkFacts | None:
    """The ``LinkFacts`` of a request, or of the request a response answers (``None``: none)."""
    request = getattr(request_or_response, "request", request_or_response)
    meta = getattr(request, "meta", None) if request is not None else None
    return meta.get(LINK_META) if meta is not None else None


class LinkRanker:
    """A crawl mode's link rule with its settings: ``decide(doc_pp, anchor, depth)``.

    Built by the crawl's mode strategy (``focuscrawl.focus.modes``), which says what the
    rule is: ``focused`` (else breadth-first), ``anchors`` (the anchor text's score enters
    the link's: SPEC §5), ``learned_priority`` (the learner's score sets the priority, mode
    ``learning``); used by ``LinkPriorityMiddleware`` and ``focuscrawl.shell.explain``. With a
    ``learner`` (mode ``learning``, or ``explain`` showing what a learner would do) the
    decision also carries the learned score.
    """

    def __init__(self, buckets: list[float], steps_per_decade: int, razor: float,
                 weights: dict[str, float], cache_size: int, scorer=None, topic=None, learner=None, *,
                 focused: bool = True, anchors: bool = False, learned_priority: bool = False) -> None:
        self.focused = focused
        self.anchors = anchors
        self.learned_priority = learned_priority
        self.learner = learner
        self.buckets = [float(b) for b in buckets]
        self.steps = steps_per_decade
        self.razor = razor
        self.floor = 1.0
        #: calibrated crawl: a topic model (focuscrawl.topic) scores pages and anchors in log-odds;
        #: link scores are odds against the topic, buckets and razor are probabilities
        self.topic = topic
        if topic is not None:
            self.buckets = [probability_to_odds(p) for p in CALIBRATED_BUCKET_PROBABILITIES]
            self.razor = probability_to_odds(topic.threshold("razor")) if topic.threshold("razor") > 0 else math.inf
            self.floor = ODDS_FLOOR
        #: doc_weight, anchor_weight, keyword_weight, anchor_max_pp of ``link_score``
        self.weights = dict(weights)
        self.seed_priority = (LEARNED_SEED_PRIORITY if learned_priority
                              else seed_priority(self.buckets, self.steps))
        #: the lowest priority a followed link gets (the learner's 0, or the last bucket's worst step)
        self.lowest_priority = (LEARNED_LOWEST_PRIORITY if learned_priority
                                else lowest_bucket_priority(self.steps))
        self.scorer = scorer
        #: the learner's feature groups (``FOCUSCRAWL_LEARNING_FEATURES``; ``None``: all)
        self.feature_prefixes: frozenset[str] | None = None
        #: a link's place on its page (``focuscrawl.analysis.LinkContext``) is read: for the
        #: ``context`` and ``block`` tokens, or for the learner's ``siblings`` and ``hubs`` terms
        self.link_contexts = False
        # navigation anchors repeat on every page of a site: remember their scores
        self.anchor_score = lru_cache(maxsize=cache_size or 1)(self._anchor_score)

    @classmethod
    def from_settings(cls, settings, scorer=None, topic=None, learner=None, **rule: bool) -> "LinkRanker":
        """The rule (``focused``, ``anchors``, ``learned_priority``) with the link settings."""
        s = settings
        weights = dict(doc_weight=s.getfloat("FOCUSCRAWL_LINK_DOC_WEIGHT"),
                       anchor_weight=s.getfloat("FOCUSCRAWL_LINK_ANCHOR_WEIGHT"),
                       keyword_weight=s.getfloat("FOCUSCRAWL_LINK_KEYWORD_WEIGHT"),
                       anchor_max_pp=s.getfloat("FOCUSCRAWL_LINK_ANCHOR_MAX_PP"))
        ranker = cls(s.getlist("FOCUSCRAWL_PRIORITY_BUCKETS"),
                     s.getint("FOCUSCRAWL_PRIORITY_STEPS_PER_DECADE"), s.getfloat("FOCUSCRAWL_LINK_RAZOR"), weights,
                     s.getint("FOCUSCRAWL_LM_CACHE_SIZE"), scorer, topic, learner, **rule)
        groups = s.getlist("FOCUSCRAWL_LEARNING_FEATURES")
        ranker.feature_prefixes = feature_prefixes(groups) if groups else None  # unset: all groups
        ranker.link_contexts = learner is not None and bool({"context", "block", *LEARNER_TERMS} & set(groups))
        return ranker

    def demoted(self, priority: int) -> int:
        """``priority`` moved below every link's priority, order kept: a link of a near-duplicate
        page (``FOCUSCRAWL_NEARDUP_LINKS = "demote"``) is fetched after every other link."""
        return demoted_priority(priority, self.seed_priority, self.lowest_priority)

    def _anchor_score(self, anchor: str) -> tuple[float | None, float]:
        if self.topic is not None:  # (log-odds, 0): the keywords are inside the topic model's scorers
            return self.topic.logit(anchor), 0.0
        score = self.scorer.score(anchor)
        return score.perplexity, score.keyword_score

    def decide(self, doc_pp: float | None, anchor: str, depth: int = 0,
               inherited: float | None = None, *, url: str = "", parent_url: str = "",
               parent_topicality: float | None = None,
               grandparent_topicality: float | None = None, context: str = "", block: str = "",
               learn: bool = True) -> LinkDecision:
        """Score, bucket, priority and razor decision of a link found on a page with
        perplexity ``doc_pp`` (``None``: the page had no text; ``inherited``, the score of
        the link that led to the page, or the razor value stands in). The learner also
        sees the link's ``url``, the page's URL, the page's and its parent's topicality and
        the words around the anchor (``context``) and its block's kind (``block``);
        ``learn=False``: without the learner's score, for a link nothing will queue or log
        (the learner only caches what it computes: leaving it out changes no decision)."""
        if not self.focused:
            return LinkDecision(None, None, None, "", -depth, True)
        if self.topic is not None:
            d = self._decide_calibrated(doc_pp, anchor, inherited)
        else:
            base = doc_pp if doc_pp is not None else (inherited if inherited is not None else self.razor)
            anchor_pp = anchor_kw = None
            if self.anchors:
                anchor_pp, anchor_kw = self.anchor_score(anchor)
                score = link_score(base, anchor_pp, anchor_kw, **self.weights)
            else:
                score = base
            d = self._decision(score, anchor_pp, anchor_kw)
        if self.learner is None or not learn:
            return d
        return self._learned(d, anchor, url, parent_url, parent_topicality, grandparent_topicality, context, block)

    def _decision(self, score: float, anchor_value: float | None, anchor_kw: float | None) -> LinkDecision:
        name = bucket_name(bucket_index(score, self.buckets), len(self.buckets) + 1)
        followed = not score > self.razor
        priority = bucket_priority(score, self.buckets, self.steps, self.floor) if followed else 0
        return LinkDecision(score, anchor_value, anchor_kw, name, priority, followed)

    def _decide_calibrated(self, doc_logit: float | None, anchor: str, inherited: float | None) -> LinkDecision:
        """``doc_logit``: the page's log-odds (``PageAnalysis.topic_logit``); ``inherited``: the odds of
        the link that led to a page without text. The score is the odds against the topic."""
        if doc_logit is None:
            odds = inherited if inherited is not None else min(self.razor, probability_to_odds(0.5))
            doc_logit = -math.log(max(odds, 1e-300))
        anchor_logit = None
        if self.anchors:
            anchor_logit, _ = self.anchor_score(anchor)
        value = calibrated_link_logit(doc_logit, anchor_logit, self.weights["doc_weight"],
                                      self.weights["anchor_weight"])
        return self._decision(odds_against(value), anchor_logit, None)

    def _learned(self, d: LinkDecision, anchor: str, url: str, parent_url: str, parent_topicality: float | None,
                 grandparent_topicality: float | None, context: str, block: str) -> LinkDecision:
        """The decision with the learner's score (and, in mode ``learning``, its priority)."""
        features = tuple(link_features(anchor, url, parent_url, parent_topicality, grandparent_topicality, d.score,
                                       self.feature_prefixes, context, block))
        vector = self.learner.vector(features)
        learned = self.learner.score(None, d.score, url_host(url), vector)
        priority = self.learner.priority(learned) if self.learned_priority and d.followed else d.priority
        return LinkDecision(d.score, d.anchor_perplexity, d.anchor_keyword_score, d.bucket, priority, d.followed,
                            learned, features, vector)
