"""A progress line every ``FOCUSCRAWL_PROGRESS_INTERVAL`` seconds (0 = off).

Like Scrapy's ``LogStats`` but with what a focused crawl operator watches: pages
parsed and pages/s since the last line, images written, items, requests waiting in the scheduler,
links razored and the LM cache hit rate.
"""
from __future__ import annotations

import logging
import time

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from focuscrawl.focus.modes import crawl_focus

logger = logging.getLogger(__name__)


class CrawlProgress:
    """A progress line every ``FOCUSCRAWL_PROGRESS_INTERVAL`` seconds.

    Takes the crawler because it uses it at run time, as Scrapy's ``AutoThrottle`` does: the
    engine's scheduler (the queue size; the engine does not exist yet when ``from_crawler``
    runs). The crawl's scorer (its cache counters) is the spider's, looked up with the line:
    the extension is enabled for any spider, and only the focused one has a scorer."""

    def __init__(self, crawler, interval: float) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.interval = interval
        self.task = None
        self._last = (0.0, 0)

    @classmethod
    def from_crawler(cls, crawler):
        interval = crawler.settings.getfloat("FOCUSCRAWL_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured
        ext = cls(crawler, interval)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider=None) -> None:
        self._last = (time.monotonic(), 0)
        self.task = create_looping_call(self.log)
        self.task.start(self.interval, now=False)

    def queue_size(self) -> int | None:
        scheduler = getattr(self.crawler.engine, "scheduler", None)
        try:
            return len(scheduler) if scheduler is not None else None
        except TypeError:  # a scheduler without __len__
            return None

    def line(self) -> str:
        now = time.monotonic()
        pages = self.stats.get_value("focuscrawl/pages/crawled", 0)
        then, pages_then = self._last
        rate = (pages - pages_then) / max(now - then, 1e-9)
        self._last = (now, pages)
        scorer = crawl_focus(self.crawler).scorer
        queries = scorer.queries
        hits = f"{scorer.cache_hits / queries:.0%}" if queries else "-"
        return (f"progress: {pages} pages ({rate:.1f} pages/s), "
                f"{self.stats.get_value('focuscrawl/images/written', 0)} images written, "
                f"{self.stats.get_value('item_scraped_count', 0)} items, queue {self.queue_size()}, "
                f"{self.stats.get_value('focuscrawl/links/razored', 0)} links razored, "
                f"LM {queries} queries ({hits} cached)")

    def log(self) -> None:
        logger.info(self.line())

    def spider_closed(self, spider=None, reason=None) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
