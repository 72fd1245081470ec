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
import os
from typing import TextIO

from scrapy import Request, signals
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from focuscrawl.lm.links import bucket_index, bucket_name, bucket_priority, link_score, seed_priority
from focuscrawl.scoring import topic_scorer

logger = logging.getLogger(__name__)

LINKS_LOG_COLUMNS = ("from", "to", "anchor", "doc_pp", "anchor_pp", "anchor_kw", "score",
                     "bucket", "priority", "followed")


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


class LinksLog:
    """``links.tsv``: one whole, flushed line per scored link (append: a resumed crawl continues it)."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        new = not os.path.exists(path) or os.path.getsize(path) == 0
        self.file: TextIO = open(path, "a", encoding="utf-8", buffering=1)
        if new:
            self.file.write("\t".join(LINKS_LOG_COLUMNS) + "\n")

    def write(self, *values) -> None:
        line = "\t".join(_fmt(v).replace("\t", " ").replace("\n", " ").replace("\r", " ") for v in values)
        self.file.write(line + "\n")

    def close(self) -> None:
        self.file.close()


class LinkPriorityMiddleware(BaseSpiderMiddleware):
    """Scores out-links, sets ``request.priority``, razors; see the module docstring."""

    def __init__(self, crawler) -> None:
        super().__init__(crawler)
        s = crawler.settings
        self.stats = crawler.stats
        self.mode = s.get("FOCUSCRAWL_MODE")
        self.focused = self.mode in ("keywords", "document")
        self.buckets = [float(b) for b in s.getlist("FOCUSCRAWL_PRIORITY_BUCKETS")]
        self.steps = s.getint("FOCUSCRAWL_PRIORITY_STEPS_PER_DECADE")
        self.razor = s.getfloat("FOCUSCRAWL_LINK_RAZOR")
        self.weights = dict(
            doc_weight=s.getfloat("FOCUSCRAWL_LINK_DOC_WEIGHT"),
            anchor_weight=s.getfloat("FOCUSCRAWL_LINK_ANCHOR_WEIGHT"),
            keyword_weight=s.getfloat("FOCUSCRAWL_LINK_KEYWORD_WEIGHT"),
            anchor_max_pp=s.getfloat("FOCUSCRAWL_LINK_ANCHOR_MAX_PP"),
        )
        self.seed_priority = seed_priority(self.buckets, self.steps)
        self.scorer = topic_scorer(crawler) if self.mode == "keywords" else None
        self.log: LinksLog | None = None
        out = s.get("FOCUSCRAWL_OUTPUT_DIR")
        if s.getbool("FOCUSCRAWL_LINKS_LOG") and out:
            self.log_path = os.path.join(out, "links.tsv")
            crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
            crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def spider_opened(self, spider=None) -> None:
        self.log = LinksLog(self.log_path)

    def spider_closed(self, spider=None) -> None:
        if self.log:
            self.log.close()
            self.log = None

    # -- scoring -----------------------------------------------------------------
    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        meta = request.meta
        if response is None or meta.get("seed"):
            request.priority = self.seed_priority
            meta["link_bucket"] = "seed"
            self.stats.inc_value("focuscrawl/links/seeds")
            return request
        if not self.focused:
            request.priority = -meta.get("depth", 0)
            self.stats.inc_value("focuscrawl/links/queued")
            if self.log:
                self.log.write(response.url, request.url, meta.get("anchor", ""), response.meta.get("page_perplexity"),
                               None, None, None, "", request.priority, 1)
            return request

        doc_pp = response.meta.get("page_perplexity")
        meta["parent_perplexity"] = doc_pp
        base = doc_pp if doc_pp is not None else response.meta.get("link_score", self.razor)
        anchor_pp = anchor_kw = None
        if self.mode == "keywords":
            anchor_score = self.scorer.score(meta.get("anchor", ""))
            anchor_pp, anchor_kw = anchor_score.perplexity, anchor_score.keyword_score
            score = link_score(base, anchor_pp, anchor_kw, **self.weights)
            meta["anchor_perplexity"], meta["anchor_keyword_score"] = anchor_pp, anchor_kw
        else:
            score = base
        self.stats.inc_value("focuscrawl/links/scored")
        index = bucket_index(score, self.buckets)
        name = bucket_name(index, len(self.buckets) + 1)
        meta["link_score"], meta["link_bucket"] = score, name
        followed = not score > self.razor
        if followed:
            request.priority = bucket_priority(score, self.buckets, self.steps)
            self.stats.inc_value(f"focuscrawl/links/bucket/{name}")
        else:
            self.stats.inc_value("focuscrawl/links/razored")
        if self.log:
            self.log.write(response.url, request.url, meta.get("anchor", ""), doc_pp, anchor_pp, anchor_kw,
                           score, name, request.priority if followed else "", int(followed))
        return request if followed else None
