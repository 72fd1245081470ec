"""Request fingerprints computed once per URL, not once per link.

Scrapy's ``RequestFingerprinter`` caches a fingerprint per ``Request`` object, but every
out-link of every page is a new ``Request``: a crawl fingerprints each link it finds
(the dupefilter), and a site's navigation links are found on every page. The
fingerprint (SHA1 of the method, ``canonicalize_url(url)`` and the body) depends on those
values and ``meta["verbatim_url"]`` only, so ``CachingRequestFingerprinter`` keeps the
last ``FOCUSCRAWL_FINGERPRINT_CACHE_SIZE`` of them keyed by those values: the same bytes
as Scrapy's, computed once per URL while it is in the cache.
"""
from __future__ import annotations

from collections import OrderedDict

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.request import RequestFingerprinter

#: bodies longer than this are fingerprinted each time (a key would keep them in memory)
MAX_CACHED_BODY = 256


class CachingRequestFingerprinter(RequestFingerprinter):
    """Scrapy's default fingerprinter with a bounded LRU cache keyed by (method, URL, body,
    ``verbatim_url``); ``size`` 0 turns the cache off."""

    def __init__(self, size: int = 0) -> None:
        super().__init__()
        self.size = size
        self._cache: OrderedDict[tuple, bytes] = OrderedDict()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "CachingRequestFingerprinter":
        return cls(crawler.settings.getint("FOCUSCRAWL_FINGERPRINT_CACHE_SIZE"))

    def fingerprint(self, request: Request) -> bytes:
        body = request.body
        if not self.size or len(body) > MAX_CACHED_BODY:
            return self._fingerprint(request)
        key = (request.method, request.url, body, bool(request.meta.get("verbatim_url")))
        cache = self._cache
        fp = cache.get(key)
        if fp is None:
            fp = cache[key] = self._fingerprint(request)
            if len(cache) > self.size:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        return fp
