"""``page_links`` joins root-relative and plain absolute hrefs without ``urljoin`` (the worker's
hot path): the URLs must stay exactly ``urljoin``'s, fragment dropped, for every href shape."""
from __future__ import annotations

from urllib.parse import urljoin

import pytest

from focuscrawl.analysis import page_links, parse_tree

HREFS = ["/p/12", "/a/b.html", "/a/./b", "/a/../b", "/..", "/.", "/a/..", "/a/...", "/.well-known/x",
         "/a?x=1", "/a?", "/a?#x", "/a#x", "/a?x#y", "/a?b?c", "//other.org/x", "/a;p", "/a//b", "/a%2e/b",
         "/a b", "/é/ü?ß=1", "rel/x", "../up", "?q=1", "https://other.org/x?", "HTTP://H.org/Y",
         "http://o.org/a/../b?x=1#f", "https://o.org?q", "http://o.org/a;p?x", "http:///x", "http:x",
         "http://[::1]:8/x", "http://o.org:81", "http://u:p@o.org/a b", "https://o.org/é",
         "http://o.org/\\a", "http://o.org/a?b#"]


def test_links_are_urljoins_of_their_hrefs():
    html = "<html><body>" + "".join(f'<a href="{h}">link {i}</a>' for i, h in enumerate(HREFS)) + "</body></html>"
    for base in ("http://127.0.0.1:8080/p/1", "https://Ex.COM/a/b/c.html?q=1#f", "http://u:p@h.org",
                 "HTTP://h.org/x/"):
        links, _ = page_links(parse_tree(html, base), base)
        expected: dict[str, str] = {}
        for i, href in enumerate(HREFS):
            url = urljoin(base, href).split("#", 1)[0]
            if url.startswith(("http://", "https://")):
                expected.setdefault(url, f"link {i}")
        assert list(links.items()) == list(expected.items()), base


def test_a_page_without_a_usable_base_joins_with_urljoin():
    html = '<a href="/p/1">one</a><a href="p/2">two</a>'
    assert page_links(parse_tree(html, "about:blank"), "about:blank")[0] == {}
    assert page_links(parse_tree(html, "ftp://h.org/d/"), "ftp://h.org/d/")[0] == {}


@pytest.mark.parametrize("html", ["<html><body><p>a<a href='/x'>b</a><img src='i.jpg' alt='c'></p></body></html>",
                                  "", "   ", "\x00<p>nul\x00</p>", "just text", "<!-- only a comment -->",
                                  "<?xml version='1.0'?><html><body>x</body></html>", "<p>unclosed <b>bold"])
def test_the_page_tree_is_the_tree_scrapy_builds(html):
    from lxml import etree
    from parsel import Selector

    scrapy_root = Selector(text=html, type="html", base_url="http://h.test/d/").root
    root = parse_tree(html, "http://h.test/d/")
    assert etree.tostring(root) == etree.tostring(scrapy_root) and root.base == scrapy_root.base


def test_anchor_texts_have_their_white_space_collapsed():
    html = "<p><a href='/a'>\n  the\u00a0tabby\u2003 <b>cat</b>\t</a><a href='/b'> </a></p>"
    assert page_links(parse_tree(html, "http://h.test/"), "http://h.test/")[0] == {
        "http://h.test/a": "the tabby cat", "http://h.test/b": ""}
