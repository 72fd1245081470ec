"""Scope and trap rules (pure functions)."""
from __future__ import annotations

import pytest
import scrapy
from w3lib.url import safe_url_string

from focuscrawl import settings as defaults
from focuscrawl.urls import (QueryVariantLimit, request_url, SurtRules, domain_allowed, excerpt,
                             host_surt, repeated_path_segment, surt, trap_kind, surt_prefix, too_many_path_segments,
                             url_problem)


def test_surt_form():
    assert surt("https://en.wikipedia.org/wiki/Cat") == "(org,wikipedia,en,)/wiki/Cat"
    assert surt("http://Example.COM:8080") == "(com,example,)/"
    assert surt("http://a.b/x?q=1") == "(b,a,)/x?q=1"
    assert host_surt("maps.googleapis.com.") == "(com,googleapis,maps,"


def test_rule_forms():
    assert surt_prefix("http://(org,wikipedia,") == "(org,wikipedia,"
    assert surt_prefix("wikipedia.org") == "(org,wikipedia,"
    assert surt_prefix("(Org,Wikipedia,") == "(org,wikipedia,"


def test_thesis_reject_rules():
    rules = SurtRules(defaults.FOCUSCRAWL_REJECT_SURTS)
    for url in ["https://en.wikipedia.org/wiki/Cat", "http://wikipedia.org/", "https://www.amazon.com/dp/1",
                "https://www.amazon.co.uk/x", "https://amazon.de/", "https://maps.googleapis.com/maps/api/js"]:
        assert rules.matches(url), url
    for url in ["https://amazonia.com/", "https://www.catster.com/", "https://googleapis.com/",
                "https://fonts.googleapis.com/css", "https://notwikipedia.org/", "https://amazon.fr/"]:
        assert not rules.matches(url), url
    assert not SurtRules([]).matches("https://en.wikipedia.org/")


def test_surt_rules_decided_per_host_match_the_whole_surt():
    """The per-host shortcut gives what matching each URL's whole SURT gives, for host
    rules, path rules (``(com,example,)/private``) and hosts asked again (cached)."""
    rules = ["(org,wikipedia,", "(com,example,)/private", "(com,example,)/", "(com,ex", "(net,a,b,)/x?q",
             "http://(de,shop,)/cart"]
    urls = ["https://en.wikipedia.org/wiki/Cat", "http://example.com/private/1", "http://example.com/public",
            "http://example.com", "http://www.example.com/private", "http://exam.com/", "http://b.a.net/x?q=1",
            "http://b.a.net/x", "http://b.a.net/y?q", "https://shop.de/cart/1", "https://shop.de/Cart",
            "http://EXAMPLE.com:8080/private", "http://exa.org/"]
    for subset in (rules, rules[1:2], rules[4:5], rules[5:]):
        matcher = SurtRules(subset, hosts_cached=4)
        prefixes = tuple(surt_prefix(r) for r in subset)
        for url in urls * 2:
            assert matcher.matches(url) == surt(url).startswith(prefixes), (subset, url)


def test_allowed_domains():
    assert domain_allowed("www.catster.com", ["catster.com"])
    assert domain_allowed("catster.com", ["catster.com", "cattime.com"])
    assert not domain_allowed("notcatster.com", ["catster.com"])
    assert domain_allowed("anything.org", [])


def test_trap_like_urls_by_kind():
    assert trap_kind("http://a/cal/2026/3", 6) == "calendar"
    assert trap_kind("http://a/2026/03/15/", 6) == "calendar"
    assert trap_kind("http://a/events/2026-03", 6) == "calendar"
    assert trap_kind("http://a/2026/03/a-dated-post/", 6) is None  # a post, not a date archive
    assert trap_kind("http://a/tag/cats/0/tag/cats/", 6) == "repeats"
    assert trap_kind("http://a/a/b/c/d/e/f/g", 6) == "deep"
    assert trap_kind("http://a/a/b/c/d/e/f/g", 0) is None
    assert trap_kind("http://a/page/7?sid=123", 6) == "query"  # a session id
    assert trap_kind("http://a/list?sort=2&page=3", 6) is None  # the first query of its path
    assert trap_kind("http://a/list?sort=2&page=3", 6, query_variant=True) == "query"
    assert trap_kind("http://a/page/7", 6, query_variant=True) is None
    assert trap_kind("http://a/article/2015", 6) is None


def test_query_variant_limit_says_how_many_variants_a_path_has():
    limit = QueryVariantLimit(10)
    assert limit.admit("http://a/list?x=1") and limit.last_variants == 1
    assert limit.admit("http://a/list?x=1") and limit.last_variants == 1
    assert limit.admit("http://a/list?x=2") and limit.last_variants == 2
    assert limit.admit("http://a/other") and limit.last_variants == 0


def test_repeated_path_segments():
    assert repeated_path_segment("http://a/x/y/x/y/x/", 2) == "x"
    assert repeated_path_segment("http://a/2020/01/01/post", 2) is None
    assert repeated_path_segment("http://a/x/x/x", 0) is None


def test_query_variants_are_limited_per_path():
    limit = QueryVariantLimit(2)
    assert limit.admit("http://a/list?p=1") and limit.admit("http://a/list?p=2")
    assert limit.admit("http://a/list?p=1")  # seen before: still admitted
    assert not limit.admit("http://a/list?p=3")
    assert limit.admit("http://a/other?p=3") and limit.admit("http://b/list?p=3")
    assert limit.admit("http://a/list")  # no query
    assert QueryVariantLimit(0).admit("http://a/list?p=99")


def test_query_variant_limit_keeps_at_most_max_paths_keys_least_recently_used_out():
    limit = QueryVariantLimit(1, max_paths=2)
    assert limit.admit("http://a/1?q=a") and not limit.admit("http://a/1?q=b")
    assert limit.admit("http://a/2?q=a")
    assert not limit.admit("http://a/1?q=c")  # /1 used again: now /2 is the oldest
    assert limit.admit("http://a/3?q=a")  # a third path: /2 is forgotten, /1 kept
    assert len(limit._seen) == 2
    assert not limit.admit("http://a/1?q=d")
    assert limit.admit("http://a/2?q=b")  # forgotten: counts again from zero
    for i in range(1000):
        limit.admit(f"http://a/p{i}?q=a")
    assert len(limit._seen) == 2


def test_url_problem_names_what_would_fail_later():
    assert url_problem("http://a.test/x?y=1") is None
    assert url_problem("https://[::1]:8080/") is None
    assert "IPv6" in url_problem("http://[::1:bad/")
    assert "Port out of range" in url_problem("http://127.0.0.1:99999/")
    assert url_problem("http://ex.test:8o/x")  # port not a number
    assert url_problem("http://:80/") == "no host"
    assert url_problem("ftp://a.test/").startswith("not an http(s) URL")
    assert url_problem("a.test/page") == "not an absolute URL"
    assert url_problem("http://a.test/\x00") == "control character in the URL"


def test_paths_that_grow_without_repeating_are_caught_by_their_segment_count():
    deep = "http://a.test/" + "/".join(f"d{i}" for i in range(13))
    assert too_many_path_segments(deep, 12)
    assert not too_many_path_segments(deep.rsplit("/", 1)[0], 12)  # 12 segments pass
    assert not too_many_path_segments("http://a.test/a//////////////////b", 12)  # empty segments do not count
    assert not too_many_path_segments(deep, 0)  # 0 disables the guard


def test_excerpt_is_short_escaped_and_one_line():
    assert excerpt(b"\x00" * 10_000, 4) == "\\x00\\x00\\x00\\x00... (10000 chars)"
    assert "\n" not in excerpt("a\nb")


def test_registered_domain_is_public_suffix_aware_and_offline():
    from focuscrawl.urls import _public_suffixes, registered_domain

    assert registered_domain("a.b.example.co.uk") == "example.co.uk"
    assert registered_domain("WWW.Example.COM.") == "example.com"
    assert registered_domain("cats.github.io") == "cats.github.io"  # a private suffix: each site its own
    assert registered_domain("7.sub.example.test") == "example.test"  # no known suffix: the last two labels
    assert registered_domain("127.0.0.1") == "127.0.0.1" and registered_domain("[::1]") == "::1"
    extractor = _public_suffixes()
    assert extractor.suffix_list_urls == () and extractor.fallback_to_snapshot  # the bundled list, never a fetch


#: URLs that ``safe_url_string`` keeps: ``request_url`` returns them without w3lib
_SAFE_URLS = [
    "http://a.com/", "https://a.com/x/y.html", "http://a.com/a;b?c;d", "http://a.com/~x", "http://a.com/a%20b",
    "http://a.com/a?b=c&d=e", "http://a.com//x", "http://a.com/a@b:c=d", "http://a.com/!$&()*+,",
    "http://a.com/?!$&()*+,;=:@/?", "http://a.com/%2e%2e/x", "http://xn--bcher-kva.ch/", "http://1.com/",
]
#: URLs w3lib rewrites (or might): ``request_url`` asks w3lib
_OTHER_URLS = [
    "http://a.com", "http://A.com/", "http://a.com:80/", "http://a.com:8080/x", "http://a.com/./x", "http://a.com/a/../b",
    "http://a.com/a/..", "http://a.com/%zz", "http://a.com/?", "http://a.com/?a'b", "http://a.com/a b", "http://a.com/a|b",
    "http://a.com/ä", "http://bücher.ch/", "http://a..b/", "http://0x7f.1/", "http://127.0.0.1/", "http://1.2.3/",
    "http://a.com/a?b=c d", "http://a.com/a?b=%", "http://u@a.com/", "https://a.com:443/", "http://123/",
    "http://a.com/\\x", "http://a.com/a^b", "http://a.com/a`b", "http://a.com/a{b}", "http://a.com/[x]", "http://[::1]/",
    "http://a.com/x#frag", "http://a.com/a\tb", "http://a.com/a<b>", 'http://a.com/a"b',
]


@pytest.mark.parametrize("url", _SAFE_URLS + _OTHER_URLS)
def test_request_url_is_the_url_of_scrapys_request(url):
    """The fast path (a URL safe already is returned as it is) never differs from w3lib, nor
    from the URL of the request Scrapy builds."""
    assert request_url(url) == safe_url_string(url) == scrapy.Request(url).url
    if url in _SAFE_URLS:
        assert request_url(url) is url
