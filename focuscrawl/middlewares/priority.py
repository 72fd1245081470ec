"""Spider middleware that scores every out-link by the crawl mode and sets its priority.

Modelled on Scrapy's ``DepthMiddleware``. The page's document perplexity (or, in a
calibrated crawl, its log-odds) is read from the page's analysis
(``response.meta["page_analysis"]``, ``focuscrawl.analysis.page_analysis``), which the
spider leaves *before* yielding anything (so the order of the spider's output, and other
middlewares that add or drop items, do not matter). For each Request:

* ``unfocused``: breadth-first, ``priority = -depth`` (FIFO within a depth);
* ``document``: the score is the page's perplexity (inherited by all its links);
* ``keywords``: ``link_score(PP_d, PP(anchor), kw(anchor))`` (SPEC §5);
* ``learning`` (beyond the thesis): the ``keywords`` score is computed and logged, but
  the priority is the online link learner's score (``focuscrawl.focus.link_learner``):
  every judged page trains it on the link that led there; the frontier re-ranks its top
  when the model changes (``focuscrawl.frontier.RerankingPriorityQueue``).

In focused modes the score is mapped to a bucket priority (seeds above all) and a
link scoring above ``FOCUSCRAWL_LINK_RAZOR`` is dropped. The request keeps
``link_score``, ``link_bucket``, ``anchor``, ``anchor_perplexity``,
``anchor_keyword_score`` and ``parent_perplexity`` in its meta. A page without
scorable text has no perplexity **(choice)**: its links inherit the score of the
link that led to it, or the razor value for a seed (kept, lowest bucket).

With ``FOCUSCRAWL_LINKS_LOG`` every link gets a ``links.tsv`` row. A response's rows travel
in its page's item (field ``PageItem.link_rows``) to ``PageLogWriterPipeline``, which writes them in the
batch of the page's ``pages.tsv`` row, under the same JOBDIR checkpoint: a resume never
repeats the links of a page it crawls again. A response without a page item logs none.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, AsyncIterator, Iterable, Iterator

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from focuscrawl.analysis import page_analysis
from focuscrawl.items import PageItem
from focuscrawl.focus.link_learner import (LEARNER_FILE, PRIORITY_STEPS, PageJudge, feature_prefixes,
                                          learner_state_path, link_features, link_learner, url_host)
from focuscrawl.focus.links import (CALIBRATED_BUCKET_PROBABILITIES, ODDS_FLOOR, bucket_index, bucket_name,
                                    bucket_priority, calibrated_link_logit, link_score, odds_against,
                                    probability_to_odds, seed_priority)
from focuscrawl.crawl_scorer import crawl_topic_model, page_topic_model, topic_scorer
from focuscrawl.output.tsv import row

logger = logging.getLogger(__name__)

LINKS_LOG_COLUMNS = ("from", "to", "anchor", "doc_pp", "anchor_pp", "anchor_kw", "score",
                     "bucket", "priority", "followed", "learned", "features")
FOCUSED_MODES = ("keywords", "document", "learning")
LINKS_LOG_HEADER = "\t".join(LINKS_LOG_COLUMNS)
#: links.tsv is read by people and plots: scores to 6 significant digits
LINKS_LOG_FLOAT_DIGITS = 6

@dataclass(frozen=True)
class LinkDecision:
    """What the crawl does with one out-link (``score`` etc. ``None`` in ``unfocused``)."""

    score: float | None
    anchor_perplexity: float | None
    anchor_keyword_score: float | None
    bucket: str
    priority: int
    followed: bool
    #: mode ``learning``: the learner's score in (0, 1) (higher = earlier) and its features
    learned: float | None = None
    features: tuple[str, ...] | None = None


class LinkRanker:
    """The mode's link rule with its settings: ``decide(doc_pp, anchor, depth)``.

    Shared by ``LinkPriorityMiddleware`` and ``focuscrawl.shell.explain``. With a
    ``learner`` (mode ``learning``, or ``explain`` showing what a learner would do) the
    decision also carries the learned score, which sets the priority in mode ``learning``.
    """

    def __init__(self, mode: str, buckets: list[float], steps_per_decade: int, razor: float,
                 weights: dict[str, float], cache_size: int, scorer=None, topic=None, learner=None) -> None:
        self.mode = mode
        self.focused = self.mode in FOCUSED_MODES
        self.learner = learner
        self.last_vector = None  # the learner's vector of the last decided link
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
        self.seed_priority = (PRIORITY_STEPS + 1 if self.mode == "learning"
                              else seed_priority(self.buckets, self.steps))
        self.scorer = scorer
        #: the learner's feature groups (``FOCUSCRAWL_LEARNING_FEATURES``; ``None``: all)
        self.feature_prefixes: frozenset[str] | None = None
        # navigation anchors repeat on every page of a site: remember their scores
        self.anchor_score = lru_cache(maxsize=cache_size or 1)(self._anchor_score)

    @classmethod
    def from_settings(cls, settings, scorer=None, topic=None, learner=None) -> "LinkRanker":
        s = settings
        weights = dict(doc_weight=s.getfloat("FOCUSCRAWL_LINK_DOC_WEIGHT"),
                       anchor_weight=s.getfloat("FOCUSCRAWL_LINK_ANCHOR_WEIGHT"),
                       keyword_weight=s.getfloat("FOCUSCRAWL_LINK_KEYWORD_WEIGHT"),
                       anchor_max_pp=s.getfloat("FOCUSCRAWL_LINK_ANCHOR_MAX_PP"))
        ranker = cls(s.get("FOCUSCRAWL_MODE"), s.getlist("FOCUSCRAWL_PRIORITY_BUCKETS"),
                     s.getint("FOCUSCRAWL_PRIORITY_STEPS_PER_DECADE"), s.getfloat("FOCUSCRAWL_LINK_RAZOR"), weights,
                     s.getint("FOCUSCRAWL_LM_CACHE_SIZE"), scorer, topic, learner)
        groups = s.getlist("FOCUSCRAWL_LEARNING_FEATURES")
        ranker.feature_prefixes = feature_prefixes(groups) if groups else None  # unset: all groups
        return ranker

    def _anchor_score(self, anchor: str) -> tuple[float | None, float]:
        if self.topic is not None:  # (log-odds, 0): the keywords are inside the topic model's scorers
            return self.topic.logit(anchor), 0.0
        score = self.scorer.score(anchor)
        return score.perplexity, score.keyword_score

    def decide(self, doc_pp: float | None, anchor: str, depth: int = 0,
               inherited: float | None = None, *, url: str = "", parent_url: str = "",
               parent_topicality: float | None = None,
               grandparent_topicality: float | None = None) -> LinkDecision:
        """Score, bucket, priority and razor decision of a link found on a page with
        perplexity ``doc_pp`` (``None``: the page had no text; ``inherited``, the score of
        the link that led to the page, or the razor value stands in). The learner also
        sees the link's ``url``, the page's URL and the page's and its parent's topicality."""
        if not self.focused:
            return LinkDecision(None, None, None, "", -depth, True)
        if self.topic is not None:
            d = self._decide_calibrated(doc_pp, anchor, inherited)
        else:
            base = doc_pp if doc_pp is not None else (inherited if inherited is not None else self.razor)
            anchor_pp = anchor_kw = None
            if self.mode in ("keywords", "learning"):
                anchor_pp, anchor_kw = self.anchor_score(anchor)
                score = link_score(base, anchor_pp, anchor_kw, **self.weights)
            else:
                score = base
            d = self._decision(score, anchor_pp, anchor_kw)
        if self.learner is None:
            return d
        return self._learned(d, anchor, url, parent_url, parent_topicality, grandparent_topicality)

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
        if self.mode == "keywords":
            anchor_logit, _ = self.anchor_score(anchor)
        value = calibrated_link_logit(doc_logit, anchor_logit, self.weights["doc_weight"],
                                      self.weights["anchor_weight"])
        return self._decision(odds_against(value), anchor_logit, None)

    def _learned(self, d: LinkDecision, anchor: str, url: str, parent_url: str, parent_topicality: float | None,
                 grandparent_topicality: float | None) -> LinkDecision:
        """The decision with the learner's score (and, in mode ``learning``, its priority)."""
        features = tuple(link_features(anchor, url, parent_url, parent_topicality, grandparent_topicality, d.score,
                                       self.feature_prefixes))
        vector = self.learner.vector(list(features))
        learned = self.learner.score(None, d.score, url_host(url), vector)
        self.last_vector = vector
        priority = self.learner.priority(learned) if self.mode == "learning" and d.followed else d.priority
        return dataclasses.replace(d, priority=priority, learned=learned, features=features)


class LinkPriorityMiddleware(BaseSpiderMiddleware):
    """Scores out-links, sets ``request.priority``, razors; see the module docstring."""

    def __init__(self, stats, ranker: LinkRanker, judge: PageJudge | None = None, log_links: bool = False,
                 learner_paths: list[str] = ()) -> None:  # pylint: disable=super-init-not-called
        self.stats = stats
        self.ranker = ranker
        #: mode ``learning``: judges each page, which labels the link that led to it
        self.judge = judge
        #: links.tsv rows are made (and handed to the page writer with the page's item)
        self.log_links = log_links
        self.learner_paths = list(learner_paths)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "LinkPriorityMiddleware":
        s = crawler.settings
        mode = s.get("FOCUSCRAWL_MODE")
        learning = mode == "learning"
        topic = crawl_topic_model(crawler) if mode in ("keywords", "document") else None
        ranker = LinkRanker.from_settings(s, topic_scorer(crawler) if mode in ("keywords", "learning") else None,
                                          topic, link_learner(crawler) if learning else None)
        judge = PageJudge.from_settings(s, page_topic_model(crawler)) if learning else None
        out = s.get("FOCUSCRAWL_OUTPUT_DIR")
        learner_paths = [p for p in (learner_state_path(s), os.path.join(out, LEARNER_FILE) if out else None)
                         if p] if learning else []
        mw = cls(crawler.stats, ranker, judge, s.getbool("FOCUSCRAWL_LINKS_LOG") and bool(out), learner_paths)
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        return mw

    def spider_closed(self, spider=None) -> None:
        for path in self.learner_paths:  # JOBDIR: a resume goes on learning; run dir: explain()
            self.ranker.learner.save(path)
        if self.ranker.scorer is not None:  # anchors answered from the per-anchor cache
            info = self.ranker.anchor_score.cache_info()
            self.stats.set_value("focuscrawl/links/anchor_lookups", info.hits + info.misses)
            self.stats.set_value("focuscrawl/links/anchor_cache_hits", info.hits)

    # -- learning: every parsed page is a training example for the link that led to it ----
    def _topicality(self, response: Response | None) -> None:
        """Judge the page at its first output (the spider analyses it before yielding anything):
        ``response.meta["page_topicality"]`` is a feature of its links."""
        if self.judge is None or response is None or "page_topicality" in response.meta:
            return
        analysis = page_analysis(response)
        if analysis is not None:
            response.meta["page_topicality"] = self.judge.topicality(analysis.score.weighted, analysis.topic_logit)

    def get_processed_item(self, item, response: Response | None):
        """The page's item (after its links; the near-duplicate middleware has marked it):
        train the learner. A near-duplicate of an earlier page counts as off topic: it
        brings nothing new (an archive calendar of an on-topic blog is a trap, not a find)."""
        if self.judge is None or response is None or not isinstance(item, PageItem):
            return item
        self._topicality(response)
        topicality = response.meta.get("page_topicality")
        if topicality is None:
            self.stats.inc_value("focuscrawl/learning/unjudged")
            return item
        on_topic = self.judge.on_topic(topicality) and not item.get("near_duplicate_of")
        host = url_host(response.url)
        if self.ranker.learner.observe(None, host, on_topic, vector=response.meta.get("link_vector"),
                                       thesis_score=response.meta.get("link_score")):
            self.stats.inc_value("focuscrawl/learning/updates")
        self.stats.inc_value(f"focuscrawl/learning/judged_{'on' if on_topic else 'off'}_topic")
        return item

    # -- links.tsv: a response's rows go with its page item to the page writer -------------
    def process_spider_output(self, response: Response | None, result: Iterable[Any]) -> Iterator[Any]:
        rows: list[str] = []
        for o in result:
            if (o := self._processed(o, response, rows)) is not None:
                yield o

    async def process_spider_output_async(self, response: Response | None,
                                          result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        rows: list[str] = []
        async for o in result:
            if (o := self._processed(o, response, rows)) is not None:
                yield o

    def _processed(self, o: Any, response: Response | None, rows: list[str]) -> Any:
        """A request is decided and its links.tsv row kept in ``rows``; the page's item (after
        its links) takes them to the page writer, which writes them with the page's row."""
        if isinstance(o, Request):
            return self._decided(o, response, rows)
        if isinstance(o, PageItem) and rows:
            o["link_rows"] = rows.copy()
            rows.clear()
        return self.get_processed_item(o, response)

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        return self._decided(request, response, [])

    def _decided(self, request: Request, response: Response | None, rows: list[str]) -> Request | None:
        self._topicality(response)
        meta = request.meta
        if response is None or meta.get("seed"):
            request.priority = self.ranker.seed_priority
            meta["link_bucket"] = "seed"
            self.stats.inc_value("focuscrawl/links/seeds")
            return request
        analysis = page_analysis(response)
        doc_pp = (None if analysis is None
                  else analysis.topic_logit if self.ranker.topic is not None else analysis.score.perplexity)
        anchor = meta.get("anchor", "")
        d = self.ranker.decide(doc_pp, anchor, meta.get("depth", 0), response.meta.get("link_score"),
                               url=request.url, parent_url=response.url,
                               parent_topicality=response.meta.get("page_topicality"),
                               grandparent_topicality=response.meta.get("parent_topicality"))
        meta["parent_perplexity"] = doc_pp
        if d.learned is not None:  # the frontier re-scores it with a newer model (vector, host)
            meta["link_vector"], meta["link_learned"] = self.ranker.last_vector, d.learned
            meta["parent_topicality"] = response.meta.get("page_topicality")
        if self.ranker.focused:
            meta["link_score"], meta["link_bucket"] = d.score, d.bucket
            if d.anchor_perplexity is not None or d.anchor_keyword_score is not None:
                meta["anchor_perplexity"], meta["anchor_keyword_score"] = d.anchor_perplexity, d.anchor_keyword_score
            self.stats.inc_value(f"focuscrawl/links/bucket/{d.bucket}" if d.followed else "focuscrawl/links/razored")
        else:
            self.stats.inc_value("focuscrawl/links/queued")
        if d.followed:
            request.priority = d.priority
        if self.log_links:
            rows.append(row((response.url, request.url, anchor, doc_pp, d.anchor_perplexity, d.anchor_keyword_score,
                             d.score, d.bucket, d.priority if d.followed else "", int(d.followed), d.learned,
                             " ".join(d.features) if d.features else None), float_digits=LINKS_LOG_FLOAT_DIGITS))
        return request if d.followed else None
