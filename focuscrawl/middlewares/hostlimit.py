"""Downloader middleware: at most ``FOCUSCRAWL_MAX_PAGES_PER_HOST`` pages from one host and
``FOCUSCRAWL_MAX_PAGES_PER_DOMAIN`` from one registered domain (subdomain traps)."""
from __future__ import annotations

from collections import Counter

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from focuscrawl.output.run_state import RunState
from focuscrawl.output.run import RunOutput
from focuscrawl.rights.policy import POLICY_FILES
from focuscrawl.urls import registered_domain

#: meta key: the host a request was counted for (until a later middleware ignores it)
COUNTED = "focuscrawl_counted_host"


class HostPageLimitMiddleware:
    """Counts requests sent per host and per registered domain (public-suffix aware:
    ``n.example.co.uk`` counts for ``example.co.uk``; robots.txt, retries and image
    downloads not counted) and ignores the ones over either limit (stats
    ``focuscrawl/scope/host_limit``, ``focuscrawl/scope/domain_limit``). Placed before
    ``RobotsTxtMiddleware``, so that a capped domain's new hosts (a subdomain trap) get no
    robots.txt request either; a request that robots.txt or a later middleware ignores
    gives its place back (``process_exception``), so disallowed URLs do not use up a
    host's pages. A crawl
    resumed from JOBDIR starts from the pages per host ``pages.tsv`` has (``run``, the
    ``RunState``'s run directory: its committed rows are counted at ``spider_opened``)."""

    def __init__(self, limit: int, stats, run: RunOutput | None = None, domain_limit: int = 0) -> None:
        self.limit = limit
        self.domain_limit = domain_limit
        self.stats = stats
        self.run = run
        self.sent: Counter[str] = Counter()
        self.sent_domain: Counter[str] = Counter()

    @classmethod
    def from_crawler(cls, crawler):
        limit = crawler.settings.getint("FOCUSCRAWL_MAX_PAGES_PER_HOST")
        domain_limit = crawler.settings.getint("FOCUSCRAWL_MAX_PAGES_PER_DOMAIN")
        if limit <= 0 and domain_limit <= 0:
            raise NotConfigured
        mw = cls(limit, crawler.stats, crawler.get_extension(RunState).output, domain_limit)
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        return mw

    def spider_opened(self, spider=None) -> None:
        if self.run is not None and self.run.resumed:
            for row in self.run.committed_rows("pages.tsv"):
                self._count((row.get("host") or "").lower())

    def _count(self, host: str, n: int = 1) -> None:
        self.sent[host] += n
        self.sent_domain[registered_domain(host)] += n

    def process_request(self, request: Request) -> None:
        parts = urlparse_cached(request)
        if parts.path in POLICY_FILES or request.meta.get("retry_times") or request.meta.get("focuscrawl_image"):
            return None
        host = (parts.hostname or "").lower()
        if 0 < self.limit <= self.sent[host]:
            self.stats.inc_value("focuscrawl/scope/host_limit")
            raise IgnoreRequest(f"host {host} reached {self.limit} pages")
        domain = registered_domain(host)
        if 0 < self.domain_limit <= self.sent_domain[domain]:
            self.stats.inc_value("focuscrawl/scope/domain_limit")
            raise IgnoreRequest(f"domain {domain} reached {self.domain_limit} pages")
        self._count(host)
        request.meta[COUNTED] = host
        return None

    def process_response(self, request: Request, response):
        """Sent: the count stays (a retry or redirect copies no claim to give back)."""
        request.meta.pop(COUNTED, None)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        """A counted request that a later middleware ignored (robots.txt) was not sent."""
        if isinstance(exception, IgnoreRequest) and (host := request.meta.pop(COUNTED, None)) is not None:
            self._count(host, -1)
        return None
