"""Spider middleware that scores every out-link by the crawl mode and sets its priority.

Modelled on Scrapy's ``DepthMiddleware``. The page's document perplexity is read from
``response.meta["page_perplexity"]``, which the spider sets *before* yielding
anything (so the order of the spider's output, and other middlewares that add or
drop items, do not matter). For each Request:

* ``unfocused``: breadth-first, ``priority = -depth`` (FIFO within a depth);
* ``document``: the score is the page's perplexity (inherited by all its links);
* ``keywords``: ``link_score(PP_d, PP(anchor), kw(anchor))`` (SPEC §5).

In focused modes the score is mapped to a bucket priority (seeds above all) and a
link scoring above ``FOCUSCRAWL_LINK_RAZOR`` is dropped. The request keeps
``link_score``, ``link_bucket``, ``anchor``, ``anchor_perplexity``,
``anchor_keyword_score`` and ``parent_perplexity`` in its meta. A page without
scorable text has no perplexity **(choice)**: its links inherit the score of the
link that led to it, or the razor value for a seed (kept, lowest bucket).
"""
from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import TextIO

from scrapy import Request, signals
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from focuscrawl.lm.links import (CALIBRATED_BUCKET_PROBABILITIES, ODDS_FLOOR, bucket_index, bucket_name,
                                 bucket_priority, calibrated_link_logit, link_score, odds_against,
                                 probability_to_odds, seed_priority)
from focuscrawl.scoring import crawl_topic_model, topic_scorer

logger = logging.getLogger(__name__)

LINKS_LOG_COLUMNS = ("from", "to", "anchor", "doc_pp", "anchor_pp", "anchor_kw", "score",
                     "bucket", "priority", "followed")


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def drop_partial_last_line(path: str) -> None:
    """Cut a line a killed crawl left half-written, so that appending keeps whole lines."""
    if not os.path.exists(path):
        return
    with open(path, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        pos = size
        while pos > 0:
            step = min(65536, pos)
            f.seek(pos - step)
            chunk = f.read(step)
            i = chunk.rfind(b"\n")
            if i >= 0:
                f.truncate(pos - step + i + 1)
                return
            pos -= step
        f.truncate(0)


class LinksLog:
    """``links.tsv``: one whole, flushed line per scored link (append: a resumed crawl continues it)."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        drop_partial_last_line(path)
        new = not os.path.exists(path) or os.path.getsize(path) == 0
        self.file: TextIO = open(path, "a", encoding="utf-8", buffering=1)
        if new:
            self.file.write("\t".join(LINKS_LOG_COLUMNS) + "\n")

    def write(self, *values) -> None:
        line = "\t".join(_fmt(v).replace("\t", " ").replace("\n", " ").replace("\r", " ") for v in values)
        self.file.write(line + "\n")

    def close(self) -> None:
        self.file.close()


@dataclass(frozen=True)
class LinkDecision:
    """What the crawl does with one out-link (``score`` etc. ``None`` in ``unfocused``)."""

    score: float | None
    anchor_perplexity: float | None
    anchor_keyword_score: float | None
    bucket: str
    priority: int
    followed: bool


class LinkRanker:
    """The mode's link rule with its settings: ``decide(doc_pp, anchor, depth)``.

    Shared by ``LinkPriorityMiddleware`` and ``focuscrawl.shell.explain``.
    """

    def __init__(self, settings, scorer=None, topic=None) -> None:
        s = settings
        self.mode = s.get("FOCUSCRAWL_MODE")
        self.focused = self.mode in ("keywords", "document")
        self.buckets = [float(b) for b in s.getlist("FOCUSCRAWL_PRIORITY_BUCKETS")]
        self.steps = s.getint("FOCUSCRAWL_PRIORITY_STEPS_PER_DECADE")
        self.razor = s.getfloat("FOCUSCRAWL_LINK_RAZOR")
        self.floor = 1.0
        #: calibrated crawl: a topic model (focuscrawl.topic) scores pages and anchors in log-odds;
        #: link scores are odds against the topic, buckets and razor are probabilities
        self.topic = topic
        if topic is not None:
            self.buckets = [probability_to_odds(p) for p in CALIBRATED_BUCKET_PROBABILITIES]
            self.razor = probability_to_odds(topic.threshold("razor")) if topic.threshold("razor") > 0 else math.inf
            self.floor = ODDS_FLOOR
        self.weights = dict(
            doc_weight=s.getfloat("FOCUSCRAWL_LINK_DOC_WEIGHT"),
            anchor_weight=s.getfloat("FOCUSCRAWL_LINK_ANCHOR_WEIGHT"),
            keyword_weight=s.getfloat("FOCUSCRAWL_LINK_KEYWORD_WEIGHT"),
            anchor_max_pp=s.getfloat("FOCUSCRAWL_LINK_ANCHOR_MAX_PP"),
        )
        self.seed_priority = seed_priority(self.buckets, self.steps)
        self.scorer = scorer
        # navigation anchors repeat on every page of a site: remember their scores
        self.anchor_score = lru_cache(maxsize=s.getint("FOCUSCRAWL_LM_CACHE_SIZE") or 1)(self._anchor_score)

    def _anchor_score(self, anchor: str) -> tuple[float | None, float]:
        if self.topic is not None:  # (log-odds, 0): the keywords are inside the topic model's scorers
            return self.topic.logit(anchor), 0.0
        score = self.scorer.score(anchor)
        return score.perplexity, score.keyword_score

    def decide(self, doc_pp: float | None, anchor: str, depth: int = 0,
               inherited: float | None = None) -> LinkDecision:
        """Score, bucket, priority and razor decision of a link found on a page with
        perplexity ``doc_pp`` (``None``: the page had no text; ``inherited``, the score of
        the link that led to the page, or the razor value stands in)."""
        if not self.focused:
            return LinkDecision(None, None, None, "", -depth, True)
        if self.topic is not None:
            return self._decide_calibrated(doc_pp, anchor, inherited)
        base = doc_pp if doc_pp is not None else (inherited if inherited is not None else self.razor)
        anchor_pp = anchor_kw = None
        if self.mode == "keywords":
            anchor_pp, anchor_kw = self.anchor_score(anchor)
            score = link_score(base, anchor_pp, anchor_kw, **self.weights)
        else:
            score = base
        return self._decision(score, anchor_pp, anchor_kw)

    def _decision(self, score: float, anchor_value: float | None, anchor_kw: float | None) -> LinkDecision:
        name = bucket_name(bucket_index(score, self.buckets), len(self.buckets) + 1)
        followed = not score > self.razor
        priority = bucket_priority(score, self.buckets, self.steps, self.floor) if followed else 0
        return LinkDecision(score, anchor_value, anchor_kw, name, priority, followed)

    def _decide_calibrated(self, doc_logit: float | None, anchor: str, inherited: float | None) -> LinkDecision:
        """``doc_logit``: the page's log-odds (``page_topic_logit``); ``inherited``: the odds of
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


class LinkPriorityMiddleware(BaseSpiderMiddleware):
    """Scores out-links, sets ``request.priority``, razors; see the module docstring."""

    def __init__(self, crawler) -> None:
        super().__init__(crawler)
        s = crawler.settings
        self.stats = crawler.stats
        mode = s.get("FOCUSCRAWL_MODE")
        topic = crawl_topic_model(crawler) if mode in ("keywords", "document") else None
        self.ranker = LinkRanker(s, topic_scorer(crawler) if mode == "keywords" else None, topic)
        self.log: LinksLog | None = None
        out = s.get("FOCUSCRAWL_OUTPUT_DIR")
        self.log_path = os.path.join(out, "links.tsv") if s.getbool("FOCUSCRAWL_LINKS_LOG") and out else None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def spider_opened(self, spider=None) -> None:
        if self.log_path:
            self.log = LinksLog(self.log_path)

    def spider_closed(self, spider=None) -> None:
        if self.ranker.scorer is not None:  # anchors answered from the per-anchor cache
            info = self.ranker.anchor_score.cache_info()
            self.stats.set_value("focuscrawl/links/anchor_lookups", info.hits + info.misses)
            self.stats.set_value("focuscrawl/links/anchor_cache_hits", info.hits)
        if self.log:
            self.log.close()
            self.log = None

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        meta = request.meta
        if response is None or meta.get("seed"):
            request.priority = self.ranker.seed_priority
            meta["link_bucket"] = "seed"
            self.stats.inc_value("focuscrawl/links/seeds")
            return request
        doc_pp = response.meta.get("page_topic_logit" if self.ranker.topic is not None else "page_perplexity")
        anchor = meta.get("anchor", "")
        d = self.ranker.decide(doc_pp, anchor, meta.get("depth", 0), response.meta.get("link_score"))
        meta["parent_perplexity"] = doc_pp
        if self.ranker.focused:
            meta["link_score"], meta["link_bucket"] = d.score, d.bucket
            if d.anchor_perplexity is not None or d.anchor_keyword_score is not None:
                meta["anchor_perplexity"], meta["anchor_keyword_score"] = d.anchor_perplexity, d.anchor_keyword_score
            self.stats.inc_value(f"focuscrawl/links/bucket/{d.bucket}" if d.followed else "focuscrawl/links/razored")
        else:
            self.stats.inc_value("focuscrawl/links/queued")
        if d.followed:
            request.priority = d.priority
        if self.log:
            self.log.write(response.url, request.url, anchor, doc_pp, d.anchor_perplexity, d.anchor_keyword_score,
                           d.score, d.bucket, d.priority if d.followed else "", int(d.followed))
        return request if d.followed else None
