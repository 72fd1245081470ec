"""Links the scheduler has seen already build no request (focuscrawl.frontier.KnownLinks):
a real crawl keeps every links.tsv row, in each page's link order, and retries a razored link.

Site (toy model, mode ``document``: a page's links inherit its perplexity; an off-topic
page's links are razored), every page with the same navigation links (home, about) and an
offsite link (dropped by scope on every page):

    seed.test/       NORMAL     home, off, p1, about, out
    seed.test/off    OFF_TOPIC  home, later (razored here), about, out
    seed.test/p1     ON_TOPIC   home, later (followed), p2, about, out
    seed.test/p2     ON_TOPIC   home, later, p3, about, out
    seed.test/p3     ON_TOPIC   home, later, about, out
    seed.test/later  ON_TOPIC   home, about
    seed.test/about  NORMAL     home
"""
from __future__ import annotations

from scrapy import Request

from tests.support.crawl import crawl, links_log
from tests.support.localweb import LocalWeb, Page, html
from tests.support.toymodel import NORMAL, OFF_TOPIC, ON_TOPIC

from focuscrawl.focus.ranker import LINK_META, LinkFacts
from focuscrawl.frontier import KnownLinks
from focuscrawl.middlewares.priority import in_link_order

S = "http://seed.test"
NAV = [("/", "home"), ("/about", "about")]
OUT = ("http://other.test/", "out")
LINKS = {
    "/": [NAV[0], ("/off", "off"), ("/p1", "one"), NAV[1], OUT],
    "/off": [NAV[0], ("/later", "later"), NAV[1], OUT],
    "/p1": [NAV[0], ("/later", "later"), ("/p2", "two"), NAV[1], OUT],
    "/p2": [NAV[0], ("/later", "later"), ("/p3", "three"), NAV[1], OUT],
    "/p3": [NAV[0], ("/later", "later"), NAV[1], OUT],
    "/later": NAV,
    "/about": [NAV[0]],
}
TEXT = {"/": NORMAL, "/off": OFF_TOPIC, "/p1": ON_TOPIC, "/p2": ON_TOPIC, "/p3": ON_TOPIC, "/later": ON_TOPIC,
        "/about": NORMAL}


def site() -> dict:
    return {("seed.test", path): Page(html(path, TEXT[path], links)) for path, links in LINKS.items()}


def test_a_scheduled_link_builds_no_request_but_keeps_its_rows_and_a_razored_one_is_retried(tmp_path):
    with LocalWeb(site()) as web:
        stats, proc = crawl(web, tmp_path, f"{S}/", mode="document", domains="seed.test")
    assert proc.returncode == 0, proc.stderr[-3000:]
    requested = web.pages_requested()
    assert sorted(requested) == sorted(f"seed.test{p}" for p in LINKS) and len(requested) == len(set(requested))
    # later was razored on the off-topic page (crawled first) and still followed from p1
    assert requested.index("seed.test/off") < requested.index("seed.test/p1")
    rows = links_log(tmp_path)
    later = [(r["from"], r["followed"]) for r in rows if r["to"] == f"{S}/later"]
    assert later[0] == (f"{S}/off", "0") and (f"{S}/p1", "1") in later
    # every page has a row for each of its in-scope links, in the page's link order
    for path in LINKS:
        assert [r["to"] for r in rows if r["from"] == f"{S}{path}"] == [
            f"{S}{href}" for href, _ in LINKS[path] if href.startswith("/")]
    # a link whose URL an earlier row followed (so it reached the scheduler) built no request;
    # the seed's own URL, scheduled as a seed, is filtered by the dupefilter once, then known
    followed: set[str] = set()
    skipped = 0
    for r in rows:
        skipped += r["to"] in followed
        if r["followed"] == "1":
            followed.add(r["to"])
    assert skipped > len(LINKS) and stats["focuscrawl/links/known_skipped"] == skipped
    assert stats["dupefilter/filtered"] == 1
    # scope still sees the offsite link on every page that has it (scope drops are never known)
    assert stats["focuscrawl/scope/offsite"] == sum(OUT in links for links in LINKS.values())
    # the counters count every row, skipped or not: the off-topic page's three links razored
    assert stats["focuscrawl/links/razored"] == sum(r["followed"] == "0" for r in rows) == 3
    assert sum(v for k, v in stats.items() if k.startswith("focuscrawl/links/bucket/")) == len(rows) - 3


def test_links_past_the_depth_limit_stay_unlogged_even_when_known(tmp_path):
    """Scrapy's DepthMiddleware drops every link of a page at DEPTH_LIMIT before the link
    middleware sees it: a known link there (home, about) gets no row either."""
    with LocalWeb(site()) as web:
        stats, proc = crawl(web, tmp_path, f"{S}/", mode="document", domains="seed.test",
                            settings={"DEPTH_LIMIT": 1})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {r["from"] for r in links_log(tmp_path)} == {f"{S}/"}
    assert stats["depth/request_ignored_count"] > 0 and "focuscrawl/links/known_skipped" not in stats


def test_known_links_are_out_links_the_scheduler_was_given_most_recent_first():
    known = KnownLinks(2)
    link = Request(f"{S}/a", meta={LINK_META: LinkFacts("a")})
    known.scheduled(link)
    known.scheduled(Request(f"{S}/seed", meta={"seed": True}))  # not an out-link
    known.scheduled(Request(f"{S}/other", meta={LINK_META: LinkFacts()}))  # decided, but no page's link
    known.scheduled(Request(f"{S}/retry", meta={LINK_META: LinkFacts("r")}, dont_filter=True))  # not in the seen-set
    known.scheduled(Request(f"{S}/moved", meta={LINK_META: LinkFacts("m"), "redirect_urls": [f"{S}/b"]}))  # scope never saw it
    assert known.known(f"{S}/a") and len(known) == 1
    for path in ("/b", "/c"):
        known.known(f"{S}/a")
        known.scheduled(Request(f"{S}{path}", meta={LINK_META: LinkFacts(path)}))
    assert [known.known(f"{S}{p}") for p in ("/a", "/b", "/c")] == [True, False, True]  # /b least recent


def test_rows_of_known_links_go_back_to_the_page_link_order():
    links = {f"{S}/1": "", f"{S}/a b": "", f"{S}/2": "", f"{S}/3": "", f"{S}/4": ""}
    # requests' rows (URL made safe by Scrapy: a%20b), then the known links' rows
    rows = [(f"{S}/a%20b", "ab"), (f"{S}/3", "3"), (f"{S}/1", "1"), (f"{S}/2", "2"), (f"{S}/4", "4")]
    assert [r for _, r in in_link_order(rows, 2, links)] == ["1", "ab", "2", "3", "4"]
