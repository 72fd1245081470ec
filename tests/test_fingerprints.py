"""The crawl's request fingerprinter: Scrapy's fingerprints, computed once per URL."""
from __future__ import annotations

from scrapy import Request
from scrapy.utils.request import RequestFingerprinter

from tests.support.crawler import focuscrawl_crawler

from focuscrawl.fingerprints import MAX_CACHED_BODY, CachingRequestFingerprinter

REQUESTS = [
    Request("http://a.test/p?b=2&a=1"), Request("http://a.test/p?a=1&b=2"), Request("http://a.test/p?a=1&b=2#frag"),
    Request("http://a.test/p?b=2&a=1", meta={"verbatim_url": True}), Request("http://a.test/p", method="POST"),
    Request("http://a.test/p", method="POST", body=b"x=1"), Request("http://a.test/p", method="POST", body=b"x=2"),
    Request("http://a.test/p", method="POST", body=b"y" * (MAX_CACHED_BODY + 1)),
    Request("http://A.test/%7Euser/caf\u00e9"), Request("http://a.test/p", headers={"Cookie": "s=1"}),
]


def test_same_fingerprints_as_scrapys_for_new_request_objects():
    ours, scrapys = CachingRequestFingerprinter(size=100), RequestFingerprinter()
    expected = [scrapys.fingerprint(r) for r in REQUESTS]
    for _ in range(2):  # the second time from the cache, for fresh Request objects
        copies = [r.replace() for r in REQUESTS]
        assert [ours.fingerprint(r) for r in copies] == expected
    assert len(set(expected)) == 8  # query order, fragment and headers do not count; method, body, verbatim do
    assert len(ours._cache) == len(REQUESTS) - 1  # the long body is not kept


def test_cache_is_bounded_and_keeps_the_recently_used():
    ours = CachingRequestFingerprinter(size=3)
    for url in ("http://a.test/1", "http://a.test/2", "http://a.test/3"):
        ours.fingerprint(Request(url))
    ours.fingerprint(Request("http://a.test/1"))  # used again: 2 is now the oldest
    ours.fingerprint(Request("http://a.test/4"))
    assert [key[1] for key in ours._cache] == ["http://a.test/3", "http://a.test/1", "http://a.test/4"]
    off = CachingRequestFingerprinter(size=0)
    assert off.fingerprint(Request("http://a.test/1")) == RequestFingerprinter().fingerprint(Request("http://a.test/1"))
    assert not off._cache


def test_is_the_crawls_fingerprinter():
    from focuscrawl.resources import project_settings

    assert project_settings().get("REQUEST_FINGERPRINTER_CLASS") == "focuscrawl.fingerprints.CachingRequestFingerprinter"
    assert CachingRequestFingerprinter.from_crawler(focuscrawl_crawler()).size == 20_000
