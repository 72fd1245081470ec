"""Crawl scope and crawler-trap guards for the spider's out-links (before scoring).

A spider middleware so that out-of-scope links cost no LM query and do not show in
the link statistics. Seeds are exempt (the operator chose them). Maximum URL length
is Scrapy's own ``UrlLengthMiddleware`` (``URLLENGTH_LIMIT``); Scrapy's
``OffsiteMiddleware`` also applies ``FOCUSCRAWL_ALLOWED_DOMAINS`` to redirects.
"""
from __future__ import annotations

import logging
from typing import Iterable

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.utils.httpobj import urlparse_cached

from focuscrawl.urls import (QueryVariantLimit, SurtRules, domain_allowed, repeated_path_segment,
                             too_many_path_segments, trap_kind)

logger = logging.getLogger(__name__)

#: ``request.meta`` key: the kind of trap-like URL (``focuscrawl.urls.trap_kind``) a link is;
#: its host crawls only so many of them (``HostPageLimitMiddleware``)
TRAP_META = "focuscrawl_trap"


class ScopeMiddleware(BaseSpiderMiddleware):
    """Drops out-links outside ``FOCUSCRAWL_ALLOWED_DOMAINS``, matching
    ``FOCUSCRAWL_REJECT_SURTS``, or looking like traps (``FOCUSCRAWL_MAX_PATH_REPEATS``,
    ``FOCUSCRAWL_MAX_PATH_SEGMENTS``, ``FOCUSCRAWL_MAX_QUERY_VARIANTS``); each reason
    counted in ``focuscrawl/scope/*``. A link it keeps that only looks like a trap (a date
    archive, a repeated or deep path, a query variant: ``trap_kind``) is marked
    ``meta[TRAP_META]`` and counted in ``focuscrawl/scope/trap_like/<kind>``: the host limit
    gives such links ``FOCUSCRAWL_MAX_TRAP_PAGES_PER_HOST`` pages of a host at most."""

    def __init__(self, stats, allowed_domains: Iterable[str], reject_surts: Iterable[str], max_path_repeats: int,
                 max_path_segments: int, max_query_variants: int,
                 trap_path_segments: int = 0) -> None:  # pylint: disable=super-init-not-called
        self.stats = stats
        self.allowed = tuple(d.lower() for d in allowed_domains)
        self.reject = SurtRules(reject_surts)
        self.max_repeats = max_path_repeats
        self.max_segments = max_path_segments
        self.query_variants = QueryVariantLimit(max_query_variants)
        self.trap_segments = trap_path_segments

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "ScopeMiddleware":
        s = crawler.settings
        return cls(crawler.stats, s.getlist("FOCUSCRAWL_ALLOWED_DOMAINS"), s.getlist("FOCUSCRAWL_REJECT_SURTS"),
                   s.getint("FOCUSCRAWL_MAX_PATH_REPEATS"), s.getint("FOCUSCRAWL_MAX_PATH_SEGMENTS"),
                   s.getint("FOCUSCRAWL_MAX_QUERY_VARIANTS"), s.getint("FOCUSCRAWL_TRAP_PATH_SEGMENTS"))

    def _drop(self, reason: str, request: Request) -> None:
        self.stats.inc_value(f"focuscrawl/scope/{reason}")
        logger.debug("out of scope (%s): %s", reason, request.url)

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        if response is None:  # a seed
            return request
        parts = urlparse_cached(request)  # cached on the request: later components reuse it
        if self.allowed and not domain_allowed(parts.hostname or "", self.allowed):
            return self._drop("offsite", request)
        if self.reject.matches(parts):
            return self._drop("rejected", request)
        if repeated_path_segment(parts, self.max_repeats):
            return self._drop("path_repeats", request)
        if too_many_path_segments(parts, self.max_segments):
            return self._drop("path_segments", request)
        if not self.query_variants.admit(parts):
            return self._drop("query_variants", request)
        kind = trap_kind(parts, self.trap_segments, self.query_variants.last_variants > 1)
        if kind is not None:
            request.meta[TRAP_META] = kind
            self.stats.inc_value(f"focuscrawl/scope/trap_like/{kind}")
        return request
