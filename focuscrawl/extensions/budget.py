"""``PageBudget``: stop a crawl after N pages (HTML pages, not image downloads).

Scrapy's ``CLOSESPIDER_PAGECOUNT`` counts every response, images and robots.txt
included, so crawls that download different numbers of images would get different
page budgets; the evaluation compares modes at the same number of pages fetched.
The budget is the run's: a crawl resumed from JOBDIR counts the rows ``pages.tsv``
already has, and one resumed after its budget was spent stops at once.
"""
from __future__ import annotations

import logging

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro

from focuscrawl.items import PageItem
from focuscrawl.output.run import run_output

logger = logging.getLogger(__name__)


class PageBudget:
    def __init__(self, crawler: Crawler, budget: int) -> None:
        self.crawler = crawler
        self.budget = budget
        self.pages = 0
        self.closing = None  # the close in progress, kept so it is not garbage-collected

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "PageBudget":
        budget = crawler.settings.getint("FOCUSCRAWL_PAGE_BUDGET")
        if budget <= 0:
            raise NotConfigured
        ext = cls(crawler, budget)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        return ext

    def spider_opened(self, spider=None) -> None:
        run = run_output(self.crawler)
        self.pages = sum(1 for _ in run.committed_rows("pages.tsv")) if run is not None else 0
        if self.pages:
            self.crawler.stats.set_value("focuscrawl/budget/pages_before_resume", self.pages)
        if self.pages >= self.budget:
            logger.info("page budget %d already spent by the resumed run (%d pages)", self.budget, self.pages)
            self._close()

    def item_scraped(self, item) -> None:
        if not isinstance(item, PageItem):
            return
        self.pages += 1
        if self.pages == self.budget:
            self._close()

    def _close(self) -> None:
        self.crawler.stats.set_value("focuscrawl/page_budget_reached", self.budget)
        self.closing = deferred_from_coro(self.crawler.engine.close_spider_async(reason="page_budget"))
