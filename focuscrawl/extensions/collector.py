"""Python's cyclic garbage collector set for a crawl (``FOCUSCRAWL_GC_*``; docs/CRAWL.md).

A crawl process holds ~200,000 container objects that live as long as it does (modules,
the language model's and the topic bundle's objects, settings, components) and makes
dozens of short-lived ones a page (requests, deferreds, items, response objects). With
CPython's defaults (a young collection every 700 net container allocations; a full one
whenever the old generation grew by a quarter) the collector took ~15% of the crawl
process's CPU (``perf``): the young collections promote each page's in-flight objects,
and every full collection walks everything loaded at start again.

At ``spider_opened`` (everything loaded, the resume state read) the objects alive are
moved out of the collector's reach (``gc.freeze``) and the young generation's threshold
is raised; at ``spider_closed`` both are put back, so that a process that runs more
crawls (a test session, a job process) collects what this one left.
"""
from __future__ import annotations

import gc

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured


class CollectorTuning:
    """Freezes the heap at ``spider_opened`` and sets the young generation's threshold."""

    def __init__(self, freeze: bool, threshold: int) -> None:
        self.freeze = freeze
        self.threshold = threshold
        self._saved: tuple[int, ...] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "CollectorTuning":
        s = crawler.settings
        ext = cls(s.getbool("FOCUSCRAWL_GC_FREEZE"), s.getint("FOCUSCRAWL_GC_THRESHOLD"))
        if not ext.freeze and ext.threshold <= 0:
            raise NotConfigured
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider=None) -> None:
        if self.freeze:
            gc.collect()  # the garbage of the start first: nothing of it is kept for good
            gc.freeze()
        if self.threshold > 0:
            self._saved = gc.get_threshold()
            gc.set_threshold(self.threshold, *self._saved[1:])

    def spider_closed(self, spider=None) -> None:
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None
        if self.freeze:
            gc.unfreeze()
