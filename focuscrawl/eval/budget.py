"""``PageBudget``: stop a crawl after N pages (HTML pages, not image downloads).

Scrapy's ``CLOSESPIDER_PAGECOUNT`` counts every response, images included, so runs
that download different numbers of images would see different page budgets. The
evaluation compares modes at the same number of pages fetched.
"""
from __future__ import annotations

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from focuscrawl.items import PageItem


class PageBudget:
    def __init__(self, crawler: Crawler, budget: int) -> None:
        self.crawler = crawler
        self.budget = budget
        self.pages = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "PageBudget":
        budget = crawler.settings.getint("FOCUSCRAWL_EVAL_PAGE_BUDGET")
        if budget <= 0:
            raise NotConfigured
        ext = cls(crawler, budget)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        return ext

    def item_scraped(self, item, spider) -> None:
        if not isinstance(item, PageItem):
            return
        self.pages += 1
        if self.pages == self.budget:
            self.crawler.stats.set_value("focuscrawl/page_budget_reached", self.budget)
            self.crawler.engine.close_spider(spider, "page_budget")
