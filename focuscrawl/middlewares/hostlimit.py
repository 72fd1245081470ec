"""Downloader middleware: at most ``FOCUSCRAWL_MAX_PAGES_PER_HOST`` pages from one host."""
from __future__ import annotations

from collections import Counter

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached


class HostPageLimitMiddleware:
    """Counts requests sent per host (robots.txt and retries not counted) and ignores
    the ones over the limit (stat ``focuscrawl/scope/host_limit``). Placed after
    ``RobotsTxtMiddleware`` so that disallowed URLs do not use up a host's pages."""

    def __init__(self, limit: int, stats) -> None:
        self.limit = limit
        self.stats = stats
        self.sent: Counter[str] = Counter()

    @classmethod
    def from_crawler(cls, crawler):
        limit = crawler.settings.getint("FOCUSCRAWL_MAX_PAGES_PER_HOST")
        if limit <= 0:
            raise NotConfigured
        return cls(limit, crawler.stats)

    def process_request(self, request: Request) -> None:
        parts = urlparse_cached(request)
        if parts.path == "/robots.txt" or request.meta.get("retry_times"):
            return None
        host = (parts.hostname or "").lower()
        if self.sent[host] >= self.limit:
            self.stats.inc_value("focuscrawl/scope/host_limit")
            raise IgnoreRequest(f"host {host} reached {self.limit} pages")
        self.sent[host] += 1
        return None
