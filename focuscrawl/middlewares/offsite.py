"""Scrapy's offsite filter, only in a crawl that has allowed domains.

Scrapy's ``OffsiteMiddleware`` checks every scheduled request (each link a page yields,
on the ``request_scheduled`` signal) against the spider's ``allowed_domains``, and lets
everything through when there are none, the focused crawl's default; the check alone
cost ~1.5% of the crawl process's CPU (benchmarks/crawl_throughput.py, docs/CRAWL.md).
"""
from __future__ import annotations

from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware as ScrapyOffsiteMiddleware
from scrapy.exceptions import NotConfigured


class OffsiteMiddleware(ScrapyOffsiteMiddleware):
    """Scrapy's ``OffsiteMiddleware``, not enabled when the spider has no ``allowed_domains``
    as the crawl starts (``FOCUSCRAWL_ALLOWED_DOMAINS`` for the ``focused`` spider)."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "OffsiteMiddleware":
        if not getattr(crawler.spider, "allowed_domains", None):
            raise NotConfigured
        return super().from_crawler(crawler)
