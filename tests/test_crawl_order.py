"""Crawl order, buckets and razor of each mode on a small local web (real server, real Scrapy).

Site (toy model of tests/support/toymodel.py; CONCURRENT_REQUESTS=1 so the server sees the crawl order):

    seed.test/  text PP 3162, links in this order:
        a.test/ "click here" -> anchor PP 3162 > T_otx: PP_d           = 3162  normal
        b.test/ "qqq"        -> (0.7*3162 + 0.3*562)                   = 2382  normal
        c.test/ "tabby"      -> kw 0.85: (...)*(1-2.55) < 0 -> 1               high
        d.test/ "kitten"     -> (0.7*3162 + 0.3*5.62)*(1-0.3)          = 1550  medium
    c.test/     off-topic, PP 8.25e5, links:
        c.test/deep "click here" -> 8.25e5 > razor 3e4: dropped in focused modes
        c.test/kit  "tabby"      -> 1 (high): overtakes d.test/ although found later
"""
from __future__ import annotations

import pytest

from tests.support.crawl import crawl, items, links_log
from tests.support.localweb import LocalWeb, Page, html
from tests.support.toymodel import LOW, NORMAL, OFF_TOPIC, ON_TOPIC


def site() -> dict:
    return {
        ("seed.test", "/"): Page(html("seed", NORMAL, [
            ("http://a.test/", "click here"), ("http://b.test/", "qqq"),
            ("http://c.test/", "tabby"), ("http://d.test/", "kitten")])),
        ("a.test", "/"): Page(html("a", LOW)),
        ("b.test", "/"): Page(html("b", ON_TOPIC)),
        ("c.test", "/"): Page(html("c", OFF_TOPIC, [("/deep", "click here"), ("/kit", "tabby")])),
        ("c.test", "/kit"): Page(html("kit", ON_TOPIC)),
        ("c.test", "/deep"): Page(html("deep", ON_TOPIC)),
        ("d.test", "/"): Page(html("d", ON_TOPIC)),
    }


def test_keywords_mode_is_best_first_across_hosts(tmp_path):
    with LocalWeb(site()) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", mode="keywords")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # b (2382) before a (3162): both "normal", best-first inside the bucket
    assert web.pages_requested() == [
        "seed.test/", "c.test/", "c.test/kit", "d.test/", "b.test/", "a.test/"]
    log = {row["to"]: row for row in links_log(tmp_path)}
    assert {u: r["bucket"] for u, r in log.items()} == {
        "http://a.test/": "normal", "http://b.test/": "normal", "http://c.test/": "high",
        "http://d.test/": "medium", "http://c.test/deep": "low", "http://c.test/kit": "high"}
    assert float(log["http://b.test/"]["score"]) == pytest.approx(0.7 * 3162.28 + 0.3 * 562.34, rel=1e-4)
    assert float(log["http://d.test/"]["score"]) == pytest.approx((0.7 * 3162.28 + 0.3 * 5.6234) * 0.7, rel=1e-4)
    assert float(log["http://c.test/"]["score"]) == 1.0
    assert log["http://c.test/deep"]["followed"] == "0" and log["http://c.test/kit"]["followed"] == "1"
    assert stats["focuscrawl/links/razored"] == 1
    assert stats["focuscrawl/links/bucket/high"] == 2
    assert stats["focuscrawl/links/bucket/medium"] == 1
    assert stats["focuscrawl/links/bucket/normal"] == 2
    assert stats["focuscrawl/pages/crawled"] == 6
    assert stats["focuscrawl/lm/queries"] > 0
    # 6 anchors scored; "click here" and "tabby" twice: answered from the anchor cache
    assert stats["focuscrawl/links/anchor_lookups"] == 6
    assert stats["focuscrawl/links/anchor_cache_hits"] == 2
    pages = [i for i in items(tmp_path) if "sentences" in i]
    assert [p["url"] for p in pages][:2] == ["http://seed.test/", "http://c.test/"]
    assert pages[0]["perplexity"] == pytest.approx(3162.28, rel=1e-4)
    assert pages[0]["links"] == 4 and pages[0]["depth"] == 0 and pages[1]["depth"] == 1


def test_zero_steps_per_decade_is_fifo_inside_a_bucket(tmp_path):
    # one priority per bucket (Heritrix-style): a (3162) and b (2382) in link order
    with LocalWeb(site()) as web:
        _, proc = crawl(web, tmp_path, "http://seed.test/", mode="keywords",
                        settings={"FOCUSCRAWL_PRIORITY_STEPS_PER_DECADE": 0})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert web.pages_requested() == [
        "seed.test/", "c.test/", "c.test/kit", "d.test/", "a.test/", "b.test/"]


def test_document_mode_links_inherit_page_perplexity(tmp_path):
    with LocalWeb(site()) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", mode="document")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # all seed links score 3162 (normal, FIFO); c.test's links inherit 8.25e5: razored
    assert web.pages_requested() == ["seed.test/", "a.test/", "b.test/", "c.test/", "d.test/"]
    log = links_log(tmp_path)
    assert {r["bucket"] for r in log if r["from"] == "http://seed.test/"} == {"normal"}
    assert all(float(r["score"]) == pytest.approx(3162.28, rel=1e-4) for r in log if r["from"] == "http://seed.test/")
    assert stats["focuscrawl/links/razored"] == 2
    assert "focuscrawl/lm/queries" in stats


def test_unfocused_mode_is_breadth_first(tmp_path):
    with LocalWeb(site()) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", mode="unfocused")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert web.pages_requested() == [
        "seed.test/", "a.test/", "b.test/", "c.test/", "d.test/", "c.test/deep", "c.test/kit"]
    assert "focuscrawl/links/razored" not in stats


def look_alike_site() -> dict:
    """A seed links to a look-alike (toy PP 8.25: "dog dog ...") and a cat page in real
    English (toy PP ~1e4); each links on to one more page of its kind."""
    cat = "A grey kitten is sleeping on the sofa next to a tabby cat."
    return {
        ("seed.test", "/"): Page(html("seed", NORMAL, [("http://decoy.test/", "one"), ("http://good.test/", "two")])),
        ("decoy.test", "/"): Page(html("decoy", "dog dog dog dog dog.", [("/next", "next")])),
        ("decoy.test", "/next"): Page(html("decoy next", LOW)),
        ("good.test", "/"): Page(html("good", cat, [("/next", "next")])),
        ("good.test", "/next"): Page(html("good next", LOW)),
    }


@pytest.mark.parametrize("scoring, first, later", [("combined", "good.test/next", "decoy.test/next"),
                                                   ("thesis", "decoy.test/next", "good.test/next")])
def test_document_mode_with_a_bundle_orders_by_the_calibrated_page_probability(tmp_path, scoring, first, later):
    """SPEC's page perplexity prefers the look-alike's links; the bundle's calibrated
    probability of the page prefers the cat page's (FOCUSCRAWL_SCORING=thesis: SPEC's)."""
    from focuscrawl.resources import default_topic_path

    settings = {"FOCUSCRAWL_TOPIC": str(default_topic_path()), "FOCUSCRAWL_SCORING": scoring}
    with LocalWeb(look_alike_site()) as web:
        _, proc = crawl(web, tmp_path, "http://seed.test/", mode="document", settings=settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    order = web.pages_requested()
    assert order[:2] == ["seed.test/", "decoy.test/"] and order.index(first) < order.index(later)


def calendar_site() -> dict:
    """A blog's archive calendar: every month's page repeats the same on-topic layout (a
    near-duplicate of the first month's) and links the next month with a high-bucket anchor."""
    site = {("seed.test", "/"): Page(html("seed", NORMAL, [
        ("http://blog.test/archive/1", "tabby"), ("http://d.test/", "kitten")])),
        ("d.test", "/"): Page(html("d", LOW))}
    for month in range(1, 5):
        site[("blog.test", f"/archive/{month}")] = Page(html("archive", ON_TOPIC, [(f"/archive/{month + 1}", "tabby")]))
    return site


@pytest.mark.parametrize("mode", ["keywords", "learning"])
def test_links_of_a_near_duplicate_page_are_demoted(tmp_path, mode):
    """FOCUSCRAWL_NEARDUP_LINKS: with "keep" the calendar's month links (high bucket) go before
    d.test/ (medium) to the end of the calendar; with "demote" the links of the second month's
    page, a near-duplicate of the first's, go after every other link."""
    orders = {}
    for rule in ("keep", "demote"):
        run_dir = tmp_path / rule
        run_dir.mkdir()
        with LocalWeb(calendar_site()) as web:
            stats, proc = crawl(web, run_dir, "http://seed.test/", mode=mode,
                                settings={"FOCUSCRAWL_NEARDUP_LINKS": rule})
        assert proc.returncode == 0, proc.stderr[-3000:]
        orders[rule] = web.pages_requested()
        log = {row["to"]: row for row in links_log(run_dir)}
        demoted = stats.get("focuscrawl/links/neardup_demoted", 0)
        if rule == "demote":  # months 2-4 nearly repeat month 1: their links go last
            assert demoted == 3
            assert int(log["http://blog.test/archive/3"]["priority"]) < int(log["http://d.test/"]["priority"])
            assert log["http://blog.test/archive/3"]["bucket"] == log["http://blog.test/archive/2"]["bucket"]
        else:
            assert demoted == 0
    month = [f"blog.test/archive/{m}" for m in range(1, 6)]
    assert orders["keep"] == ["seed.test/", *month, "d.test/"]
    assert orders["demote"] == ["seed.test/", *month[:2], "d.test/", *month[2:]]
