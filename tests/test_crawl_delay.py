"""robots.txt's Crawl-delay, obeyed by default: a host that asks for it gets its requests
(pages and images) no closer together, with AutoThrottle on (Scrapy's would shorten the delay
of a host that answers fast), while another host goes at the crawl's own pace; a longer one is
held to FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX, and 0 ignores it, as Scrapy does."""
from __future__ import annotations

import pytest

from tests.support.crawl import crawl
from tests.support.localweb import LocalWeb, Page, assert_paced, png_bytes
from tests.support.toymodel import ON_TOPIC


def paced_site(crawl_delay: str) -> dict:
    """slow.test (robots.txt: ``Crawl-delay``) and fast.test (none), each a home page, two
    pages and an image on each page."""
    pages = {}
    for host in ("slow.test", "fast.test"):
        links = "".join(f'<a href="/p{i}">cat page {i}</a>' for i in (1, 2))
        pages[(host, "/")] = Page(f"<html><body><p>{ON_TOPIC} Cats of {host}.</p>{links}</body></html>")
        for i in (1, 2):
            pages[(host, f"/p{i}")] = Page(
                f"<html><body><div><p>{ON_TOPIC} The tabby cat {i} sleeps.</p>"
                f'<img src="/u{i}.png" alt="a tabby cat {i} on a mat" width="640" height="480"></div></body></html>')
            pages[(host, f"/u{i}.png")] = Page(png_bytes(color=(i, 90, 30)), "image/png")
    pages[("slow.test", "/robots.txt")] = Page(f"User-agent: *\nCrawl-delay: {crawl_delay}\nAllow: /\n", "text/plain")
    return pages


def _gaps(web, host: str) -> list[float]:
    """Seconds between the arrivals of successive requests to ``host`` (its robots.txt first)."""
    times = [t for t, what in web.request_times if what.startswith(host + "/")]
    return [b - a for a, b in zip(times, times[1:])]


SETTINGS = {"CONCURRENT_REQUESTS": 8, "CONCURRENT_REQUESTS_PER_DOMAIN": 4, "ROBOTSTXT_OBEY": True,
            "AUTOTHROTTLE_ENABLED": True, "AUTOTHROTTLE_START_DELAY": 0, "DOWNLOAD_DELAY": 0}


def _crawl(tmp_path, crawl_delay: str, **settings):
    with LocalWeb(paced_site(crawl_delay)) as web:
        stats, proc = crawl(web, tmp_path, "http://slow.test/,http://fast.test/", settings=SETTINGS | settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # robots.txt, tdmrep.json, 3 pages, 2 images a host
    assert len(_gaps(web, "slow.test")) == 6 and len(_gaps(web, "fast.test")) == 6
    return stats, proc, web


def test_a_hosts_crawl_delay_spaces_its_pages_and_images_and_no_other_hosts(tmp_path):
    stats, proc, web = _crawl(tmp_path, "0.8")
    assert_paced(_gaps(web, "slow.test"), 0.8)
    assert min(_gaps(web, "fast.test")) < 0.4, _gaps(web, "fast.test")  # the crawl's own pace elsewhere
    assert stats["focuscrawl/politeness/crawl_delay_hosts"] == 1
    assert stats["focuscrawl/politeness/crawl_delay_max_seconds"] == 0.8
    assert "focuscrawl/politeness/crawl_delay_held_to_max" not in stats
    assert "  politeness: 1 hosts asked for a robots.txt Crawl-delay, obeyed (up to 0.8 s)" in proc.stderr


def test_a_longer_crawl_delay_is_held_to_the_maximum(tmp_path):
    stats, proc, web = _crawl(tmp_path, "3600", FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX=0.5)
    assert_paced(_gaps(web, "slow.test"), 0.5)
    assert stats["focuscrawl/politeness/crawl_delay_held_to_max"] == 1
    assert "robots.txt of slow.test asks for a Crawl-delay of 3600 s: held to 0.5 s" in proc.stderr
    assert "1 held to FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX" in proc.stderr


@pytest.mark.parametrize("settings", [{"FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX": 0}, {"ROBOTSTXT_OBEY": False}])
def test_crawl_delay_ignored_when_turned_off(tmp_path, settings):
    stats, proc, web = _crawl(tmp_path, "0.8", **settings)
    assert min(_gaps(web, "slow.test")) < 0.4, _gaps(web, "slow.test")
    assert "focuscrawl/politeness/crawl_delay_hosts" not in stats


@pytest.mark.parametrize("line", ["Crawl-delay: soon", "Crawl-delay: -5", "Crawl-delay: nan", "Crawl-delay: 1e999"])
def test_a_crawl_delay_that_is_no_positive_number_declares_nothing(tmp_path, line):
    site = paced_site("0")
    site[("slow.test", "/robots.txt")] = Page(f"User-agent: *\n{line}\n", "text/plain")
    with LocalWeb(site) as web:
        stats, proc = crawl(web, tmp_path, "http://slow.test/", settings=SETTINGS)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "focuscrawl/politeness/crawl_delay_hosts" not in stats


def leading_slow_site(pages_each: int = 8) -> dict:
    """slow.test (Crawl-delay 0.5 s) is the seed: its pages are the best links, and its home
    also links fast.test, whose pages rank lower."""
    from tests.support.toymodel import NORMAL

    pages = {}
    for host, text in (("slow.test", ON_TOPIC), ("fast.test", NORMAL)):
        links = "".join(f'<a href="http://{host}/p{i}">cat tabby kitten {i}</a>' for i in range(pages_each))
        if host == "slow.test":
            links += '<a href="http://fast.test/">more</a>'
        pages[(host, "/")] = Page(f"<html><body><p>{text}</p>{links}</body></html>")
        for i in range(pages_each):
            pages[(host, f"/p{i}")] = Page(f"<html><body><p>{text} page {i}</p></body></html>")
    pages[("slow.test", "/robots.txt")] = Page("User-agent: *\nCrawl-delay: 0.5\n", "text/plain")
    return pages


def test_a_host_that_asks_for_a_crawl_delay_does_not_hold_the_other_hosts(tmp_path):
    """Its best links wait, set aside, while the crawl fetches other hosts' pages; in Scrapy
    they filled CONCURRENT_REQUESTS and fast.test waited for all of slow.test (~4 s)."""
    with LocalWeb(leading_slow_site()) as web:
        stats, proc = crawl(web, tmp_path, "http://slow.test/", settings=SETTINGS | {"CONCURRENT_REQUESTS": 4})
    assert proc.returncode == 0, proc.stderr[-3000:]
    start = web.request_times[0][0]
    fast = [t - start for t, what in web.request_times if what.startswith("fast.test/p")]
    slow = [t - start for t, what in web.request_times if what.startswith("slow.test/p")]
    assert len(fast) == 8 and len(slow) == 8
    assert_paced(_gaps(web, "slow.test"), 0.5)  # still polite
    assert max(fast) < sorted(slow)[3], (fast, slow)  # the other host's pages before slow.test's 4th
    assert stats["focuscrawl/politeness/requests_set_aside"] > 0


def test_requests_set_aside_at_a_stop_are_crawled_by_the_resume_once(tmp_path):
    """A budget stop while slow.test's requests are set aside: with JOBDIR they are saved with
    the queue, and the resume crawls each of them, once."""
    from tests.support.runfiles import read_tsv

    job = tmp_path / "job"
    with LocalWeb(leading_slow_site()) as web:
        stats, proc = crawl(web, tmp_path, "http://slow.test/", settings=SETTINGS | {
            "CONCURRENT_REQUESTS": 4, "JOBDIR": str(job)}, budget=6)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert stats.get("focuscrawl/politeness/requests_set_aside", 0) > 0
        stats, proc = crawl(web, tmp_path, "http://slow.test/", settings=SETTINGS | {
            "CONCURRENT_REQUESTS": 4, "JOBDIR": str(job)}, budget=100)
        assert proc.returncode == 0, proc.stderr[-3000:]
    urls = [row["url"] for row in read_tsv(tmp_path / "out" / "pages.tsv")]
    assert len(urls) == len(set(urls)) == 18  # two homes, 16 pages: none lost, none twice


def test_requests_set_aside_at_a_kill_are_recovered_by_the_resume_once(tmp_path):
    """SIGKILL while slow.test's requests are set aside (popped from the queue, not yet
    downloaded): the frontier journal still has them as pending, and the resume crawls each
    page once."""
    import signal
    import time

    from tests.support.crawl import start_focused
    from tests.support.runfiles import read_tsv
    from tests.support.toymodel import write_model

    model, keywords = write_model(tmp_path)
    out, job = tmp_path / "out", tmp_path / "job"
    settings = SETTINGS | {"CONCURRENT_REQUESTS": 4, "JOBDIR": str(job), "LOG_LEVEL": "INFO",
                           "FOCUSCRAWL_SENTENCES_BATCH_BYTES": 0, "FOCUSCRAWL_PROGRESS_INTERVAL": 0,
                           "FOCUSCRAWL_ANALYSIS_WORKERS": 0}
    args = {"seeds": "http://slow.test/", "model": str(model), "keywords": str(keywords), "output": str(out)}
    with LocalWeb(leading_slow_site()) as web:
        proc = start_focused(tmp_path / "stats.json", settings, args, web=web,
                             stderr=open(tmp_path / "crawl.log", "a"))
        deadline = time.monotonic() + 60
        # killed once the other host is done and slow.test's pages still wait (0.5 s apart)
        while sum(1 for _, what in web.request_times if what.startswith("fast.test/p")) < 8:
            assert time.monotonic() < deadline and proc.poll() is None, (tmp_path / "crawl.log").read_text()[-3000:]
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        slow_before = sum(1 for _, what in web.request_times if what.startswith("slow.test/p"))
        assert slow_before < 8
        stats, done = crawl(web, tmp_path, "http://slow.test/", settings=settings)
        assert done.returncode == 0, done.stderr[-3000:]
    urls = [row["url"] for row in read_tsv(out / "pages.tsv")]
    assert len(urls) == len(set(urls)) == 18, sorted(urls)
