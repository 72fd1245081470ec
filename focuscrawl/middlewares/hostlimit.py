"""Downloader middleware: at most ``FOCUSCRAWL_MAX_PAGES_PER_HOST`` pages from one host,
``FOCUSCRAWL_MAX_PAGES_PER_DOMAIN`` from one registered domain (subdomain traps) and
``FOCUSCRAWL_MAX_TRAP_PAGES_PER_HOST`` trap-like pages from one host."""
from __future__ import annotations

from collections import Counter

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached

from focuscrawl.middlewares.scope import TRAP_META
from focuscrawl.output.leases import ROW_COMMITTED_META
from focuscrawl.output.run_state import RunState
from focuscrawl.output.run import RunOutput
from focuscrawl.rights.policy import POLICY_FILES
from focuscrawl.urls import registered_domain, trap_kind

#: meta key: the host a request was counted for (until a later middleware ignores it)
COUNTED = "focuscrawl_counted_host"
#: meta key: the host a trap-like request was counted for among its trap-like pages
TRAP_COUNTED = "focuscrawl_counted_trap"


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
    ``RunState``'s run directory: its committed rows are counted at ``spider_opened``).

    Trap-like requests (``meta[TRAP_META]``, set by the scope middleware) have a smaller
    limit of their own per host, ``trap_limit`` (``focuscrawl/scope/trap_limit/<kind>``;
    those sent: ``focuscrawl/scope/trap_pages/<kind>``): a site's calendar, query variants
    and deep paths cannot spend the host's pages before its real pages are reached."""

    def __init__(self, limit: int, stats, run: RunOutput | None = None, domain_limit: int = 0,
                 trap_limit: int = 0, trap_segments: int = 0) -> None:
        self.limit = limit
        self.domain_limit = domain_limit
        self.trap_limit = trap_limit
        self.trap_segments = trap_segments
        self.sent_traps: Counter[str] = Counter()
        self.stats = stats
        self.run = run
        self.sent: Counter[str] = Counter()
        self.sent_domain: Counter[str] = Counter()

    @classmethod
    def from_crawler(cls, crawler):
        limit = crawler.settings.getint("FOCUSCRAWL_MAX_PAGES_PER_HOST")
        domain_limit = crawler.settings.getint("FOCUSCRAWL_MAX_PAGES_PER_DOMAIN")
        trap_limit = crawler.settings.getint("FOCUSCRAWL_MAX_TRAP_PAGES_PER_HOST")
        if limit <= 0 and domain_limit <= 0 and trap_limit <= 0:
            raise NotConfigured
        mw = cls(limit, crawler.stats, crawler.get_extension(RunState).output, domain_limit, trap_limit,
                 crawler.settings.getint("FOCUSCRAWL_TRAP_PATH_SEGMENTS"))
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        return mw

    def spider_opened(self, spider=None) -> None:
        if self.run is not None and self.run.resumed:
            for row in self.run.committed_rows("pages.tsv"):
                host = (row.get("host") or "").lower()
                self._count(host)
                # a query variant is not known from its URL alone: those count from this session on
                if trap_kind(row.get("url") or "", self.trap_segments) is not None:
                    self.sent_traps[host] += 1

    def _count(self, host: str, n: int = 1) -> None:
        self.sent[host] += n
        self.sent_domain[registered_domain(host)] += n

    def process_request(self, request: Request) -> None:
        parts = urlparse_cached(request)
        if parts.path in POLICY_FILES or request.meta.get("retry_times") or request.meta.get("focuscrawl_image") \
                or request.meta.get(ROW_COMMITTED_META):  # (another run's page: no row here)
            return None
        host = (parts.hostname or "").lower()
        if 0 < self.limit <= self.sent[host]:
            self.stats.inc_value("focuscrawl/scope/host_limit")
            raise IgnoreRequest(f"host {host} reached {self.limit} pages")
        domain = registered_domain(host)
        if 0 < self.domain_limit <= self.sent_domain[domain]:
            self.stats.inc_value("focuscrawl/scope/domain_limit")
            raise IgnoreRequest(f"domain {domain} reached {self.domain_limit} pages")
        kind = request.meta.get(TRAP_META)
        if kind is not None and self.trap_limit > 0:
            if self.sent_traps[host] >= self.trap_limit:
                self.stats.inc_value(f"focuscrawl/scope/trap_limit/{kind}")
                raise IgnoreRequest(f"host {host} reached {self.trap_limit} trap-like pages")
            self.sent_traps[host] += 1
            request.meta[TRAP_COUNTED] = host
            self.stats.inc_value(f"focuscrawl/scope/trap_pages/{kind}")
        self._count(host)
        request.meta[COUNTED] = host
        return None

    def process_response(self, request: Request, response):
        """Sent: the count stays (a retry or redirect copies no claim to give back)."""
        request.meta.pop(COUNTED, None)
        request.meta.pop(TRAP_COUNTED, None)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        """A counted request that a later middleware ignored (robots.txt) was not sent."""
        if isinstance(exception, IgnoreRequest) and (host := request.meta.pop(COUNTED, None)) is not None:
            self._count(host, -1)
            if (trap_host := request.meta.pop(TRAP_COUNTED, None)) is not None:
                self.sent_traps[trap_host] -= 1
                self.stats.inc_value(f"focuscrawl/scope/trap_pages/{request.meta[TRAP_META]}", -1)
        return None
