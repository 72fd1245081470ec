"""A crawl tells its user what is happening: one progress line (pages against the budget,
rate, images, queue, time left, politeness) and one short summary at the end (what was
written where, why it stopped, the limits with the setting that raises each, opt-outs and
errors); Scrapy's raw stats dump only at DEBUG."""
from __future__ import annotations

from scrapy.core.downloader import Slot

from focuscrawl.extensions.progress import politeness_note, progress_line, run_pages
from focuscrawl.output.summary import crawl_summary
from tests.support.crawl import crawl
from tests.support.localweb import LocalWeb, Page, html
from tests.support.runfiles import read_tsv
from tests.support.toymodel import ON_TOPIC


def chain_site(hosts: int = 1, depth: int = 4) -> dict:
    """``depth`` pages in a chain on each of ``hosts`` hosts, the seed links each chain."""
    site = {("seed.test", "/"): Page(html("seed", ON_TOPIC, [(f"http://h{h}.test/0", "cat") for h in range(hosts)]))}
    for h in range(hosts):
        for d in range(depth):
            site[(f"h{h}.test", f"/{d}")] = Page(html(f"{h}-{d}", ON_TOPIC, [(f"/{d + 1}", "cat"), (f"/{d}b", "cat")]))
            site[(f"h{h}.test", f"/{d}b")] = Page(html(f"{h}-{d}b", ON_TOPIC))
    return site


def test_a_crawl_cut_short_by_the_depth_limit_says_so_and_dumps_no_raw_stats(tmp_path):
    with LocalWeb(chain_site()) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", settings={"DEPTH_LIMIT": 1})
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = proc.stderr
    assert stats["depth/request_ignored_count"] >= 1
    assert "crawl summary: 2 pages and 0 images written to " + str((tmp_path / "out").resolve()) in log
    assert "stopped: frontier empty: no link left to follow; the limits below left links unfollowed" in log
    assert f"{stats['depth/request_ignored_count']} links beyond the depth limit (DEPTH_LIMIT=1; raise it with -s)" \
        in log
    assert "Dumping Scrapy stats" not in log and "'downloader/request_count'" not in log
    assert "Crawled 0 pages" not in log  # Scrapy's LogStats is off: one progress line, ours
    assert "every counter: " + str((tmp_path / "out" / "stats.json").resolve()) in log


def test_a_crawl_stopped_by_the_domain_cap_names_the_setting_to_raise(tmp_path):
    with LocalWeb(chain_site(depth=6)) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", settings={"FOCUSCRAWL_MAX_PAGES_PER_DOMAIN": 3})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats["focuscrawl/scope/domain_limit"] >= 1
    assert (f"{stats['focuscrawl/scope/domain_limit']} requests over the per-domain cap "
            f"(FOCUSCRAWL_MAX_PAGES_PER_DOMAIN=3; raise it with -s)") in proc.stderr


def test_a_crawl_that_spends_its_budget_says_so(tmp_path):
    with LocalWeb(chain_site()) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", budget="3")
    assert "stopped: page budget reached (3 pages)" in proc.stderr
    assert run_pages(stats) == len(read_tsv(tmp_path / "out" / "pages.tsv")) == 3


def test_the_summary_lists_every_opt_out_counter_and_the_errors():
    stats = {"finish_reason": "finished", "focuscrawl/pages/written": 7, "focuscrawl/images/written": 2,
             "robotstxt/forbidden": 4, "focuscrawl/optout/robots_meta": 3, "focuscrawl/optout/tdmrep": 1,
             "focuscrawl/download_errors/TimeoutError": 2, "focuscrawl/images/dropped/too_small": 9}
    text = "\n".join(crawl_summary(stats, output="/runs/a"))
    assert "7 pages and 2 images written to /runs/a" in text
    assert "opt-outs (not fetched or not kept): robots.txt 4, robots_meta 3, tdmrep 1" in text
    assert "errors and skips: TimeoutError 2" in text
    assert "images not kept: too_small 9" in text
    assert "{" not in text  # no raw dict


def test_the_progress_line_has_the_budget_rate_and_time_left():
    line = progress_line(120, 500, 2.0, 1.9, 40, 1234)
    assert line == "progress: 120/500 pages (2.0 pages/s), 40 images written, queue 1,234, ETA 3m"
    assert "ETA" not in progress_line(120, 0, 2.0, 1.9, 40, 3)  # no budget, no time left


def test_the_progress_line_says_when_politeness_sets_the_rate():
    """Requests waiting in a host's download slot (its concurrency or delay) are politeness at work."""
    busy, idle = Slot(concurrency=2, delay=0.5, jitter=0), Slot(concurrency=2, delay=0, jitter=0)
    busy.queue.extend([("request", None)] * 5)
    settings = {"CONCURRENT_REQUESTS_PER_DOMAIN": 2, "AUTOTHROTTLE_ENABLED": True}
    note = politeness_note([busy, idle], settings)
    assert note == "; polite: 5 requests wait for 1 host (2 per host, 0.5s delay (AutoThrottle)), which sets the rate"
    assert politeness_note([idle], settings) == ""


def test_a_feed_says_which_items_are_pages_and_which_images(tmp_path):
    """``-O items.jsonl`` holds pages and images in crawl order: each says its ``type`` first."""
    from tests.support.crawl import items
    from tests.support.localweb import image_site

    with LocalWeb(image_site()) as web:
        stats, proc = crawl(web, tmp_path, f"{web.base}/page0",
                            settings={"FOCUSCRAWL_IMAGE_KICK_UNSPECIFIED": True})
    assert proc.returncode == 0, proc.stderr[-3000:]
    exported = items(tmp_path)
    kinds = {item["type"] for item in exported}
    assert kinds == {"page", "image"}, exported[:2]
    assert all(list(item)[0] == "type" for item in exported)
    assert all(("sentences" in item) == (item["type"] == "page") for item in exported)


def test_the_summary_of_a_crawl_without_a_run_directory_says_what_is_missing():
    text = "\n".join(crawl_summary({"finish_reason": "finished", "focuscrawl/pages/crawled": 5},
                                   extra_outputs=["items.jsonl"]))
    assert "crawl summary: 5 pages crawled; no run directory (-a output=DIR)" in text
    assert "also written: items.jsonl" in text and "every counter: the DEBUG log" in text
