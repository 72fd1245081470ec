"""Downloader middleware: at most ``FOCUSCRAWL_MAX_PAGES_PER_HOST`` pages from one host."""
from __future__ import annotations

from collections import Counter

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from focuscrawl.output.run import run_output


class HostPageLimitMiddleware:
    """Counts requests sent per host (robots.txt, retries and image downloads not counted)
    and ignores the ones over the limit (stat ``focuscrawl/scope/host_limit``). Placed
    after ``RobotsTxtMiddleware`` so that disallowed URLs do not use up a host's pages.
    A crawl resumed from JOBDIR starts from the pages per host ``pages.tsv`` has."""

    def __init__(self, limit: int, stats, crawler=None) -> None:
        self.limit = limit
        self.stats = stats
        self.crawler = crawler
        self.sent: Counter[str] = Counter()

    @classmethod
    def from_crawler(cls, crawler):
        limit = crawler.settings.getint("FOCUSCRAWL_MAX_PAGES_PER_HOST")
        if limit <= 0:
            raise NotConfigured
        mw = cls(limit, crawler.stats, crawler)
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        return mw

    def spider_opened(self, spider=None) -> None:
        run = run_output(self.crawler)
        if run is not None:
            self.sent.update((row.get("host") or "").lower() for row in run.committed_rows("pages.tsv"))

    def process_request(self, request: Request) -> None:
        parts = urlparse_cached(request)
        if parts.path == "/robots.txt" or request.meta.get("retry_times") or request.meta.get("focuscrawl_image"):
            return None
        host = (parts.hostname or "").lower()
        if self.sent[host] >= self.limit:
            self.stats.inc_value("focuscrawl/scope/host_limit")
            raise IgnoreRequest(f"host {host} reached {self.limit} pages")
        self.sent[host] += 1
        return None
