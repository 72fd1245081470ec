"""An extension for memory tests: the most page analyses alive in the crawl process at once.

``AnalysesAlive`` counts the ``PageAnalysis`` objects the garbage collector knows after each
response (from the ``TEST_ANALYSES_FROM``-th on: the earlier ones are the window filling up)
and keeps the largest count in the stat ``test/analyses_alive_max``. A replay that keeps
every page's analysis to the end of its file has as many alive as pages replayed.
"""
from __future__ import annotations

import gc
import os

from scrapy import signals
from scrapy.crawler import Crawler

from focuscrawl.analysis import PageAnalysis


class AnalysesAlive:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.start = int(os.environ.get("TEST_ANALYSES_FROM", "0"))
        self.responses = 0
        crawler.signals.connect(self.response_received, signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "AnalysesAlive":
        return cls(crawler)

    def response_received(self, response, request, spider) -> None:
        self.responses += 1
        if self.responses >= self.start:
            gc.collect()
            alive = sum(1 for obj in gc.get_objects() if isinstance(obj, PageAnalysis))
            self.stats.max_value("test/analyses_alive_max", alive)
