"""Scope rules, trap guards, robots.txt and bad input on a small local web: the crawl
goes on, skips what it must, and counts every skip in the stats."""
from __future__ import annotations

import gzip
import socket
import subprocess
import sys

import pytest

from tests.support.crawl import ROOT, crawl, crawl_here, items
from tests.support.localweb import LocalWeb, Page, html
from tests.support.toymodel import ON_TOPIC, write_model
from tests.support import warmfork

LONG = "http://long.test/" + "x" * 300
BROKEN = b"<html><body><p>cat cat cat cat cat.<div><a href='/ok'>tabby</a><table><tr><td>\x00\xff\xfe<<<>>"
LATIN1 = "<html><body><p>cat cat caf\xe9 cat cat cat.</p></body></html>".encode("latin-1")


def scope_site() -> dict:
    links = [
        ("http://trap.test/a/b/a/b/a/", "cat"),
        ("http://q.test/list?p=1", "cat"), ("http://q.test/list?p=2", "cat"), ("http://q.test/list?p=3", "cat"),
        ("http://rejected.test/x", "cat"), ("http://www.rejected.test/y", "cat"),
        (LONG, "cat"),
        ("http://robots.test/private/page", "cat"), ("http://robots.test/public", "cat"),
        ("http://img.test/photo.jpg", "cat"), ("mailto:cat@example.test", "cat"), ("javascript:void(0)", "cat"),
        ("http://bin.test/file", "cat"), ("http://broken.test/", "cat"), ("http://latin.test/", "cat"),
        ("http://huge.test/", "cat"), ("http://gone.test/", "cat"),
        ("http://h.test/1", "cat"), ("http://h.test/2", "cat"), ("http://h.test/3", "cat"),
    ]
    leaf = Page(html("leaf", ON_TOPIC))
    return {
        ("seed.test", "/"): Page(html("seed", ON_TOPIC, links)),
        ("trap.test", "/a/b/a/b/a/"): leaf,
        ("q.test", "/list?p=1"): leaf, ("q.test", "/list?p=2"): leaf, ("q.test", "/list?p=3"): leaf,
        ("rejected.test", "/x"): leaf, ("www.rejected.test", "/y"): leaf,
        ("long.test", "/" + "x" * 300): leaf,
        ("robots.test", "/robots.txt"): Page("User-agent: *\nDisallow: /private\n", "text/plain"),
        ("robots.test", "/private/page"): leaf, ("robots.test", "/public"): leaf,
        ("img.test", "/photo.jpg"): Page(b"\xff\xd8\xff", "image/jpeg"),
        ("bin.test", "/file"): Page(gzip.compress(b"x" * 100), "application/octet-stream"),
        ("broken.test", "/"): Page(BROKEN, "text/html; charset=utf-8"),
        ("broken.test", "/ok"): leaf,
        ("latin.test", "/"): Page(LATIN1, "text/html; charset=utf-8"),
        ("huge.test", "/"): Page(html("huge", ON_TOPIC + " cat" * 20000)),
        ("h.test", "/1"): Page(html("leaf", ON_TOPIC), delay=0.4), ("h.test", "/2"): leaf, ("h.test", "/3"): leaf,
    }


def test_scope_traps_robots_and_bad_input(tmp_path):
    settings = {"FOCUSCRAWL_REJECT_SURTS": ["(test,rejected,"], "FOCUSCRAWL_MAX_QUERY_VARIANTS": 2,
                "URLLENGTH_LIMIT": 200, "FOCUSCRAWL_MAX_PAGES_PER_HOST": 2, "DOWNLOAD_MAXSIZE": 50_000,
                "DOWNLOAD_WARNSIZE": 0, "FOCUSCRAWL_PROGRESS_INTERVAL": 0.1}
    with LocalWeb(scope_site()) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", settings=settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    requested = set(web.pages_requested())
    for never in ["trap.test/a/b/a/b/a/", "q.test/list?p=3", "rejected.test/x", "www.rejected.test/y",
                  "robots.test/private/page", "img.test/photo.jpg", "h.test/3"]:
        assert never not in requested, never
    assert not any(r.startswith("long.test") for r in requested)
    for fetched in ["q.test/list?p=1", "q.test/list?p=2", "robots.test/public", "bin.test/file",
                    "broken.test/", "broken.test/ok", "latin.test/", "huge.test/", "h.test/1", "h.test/2"]:
        assert fetched in requested, fetched
    assert "robots.test/robots.txt" in web.requests
    assert stats["focuscrawl/scope/path_repeats"] == 1
    assert stats["focuscrawl/scope/query_variants"] == 1
    assert stats["focuscrawl/scope/rejected"] == 2
    assert stats["urllength/request_ignored_count"] == 1
    assert stats["robotstxt/forbidden"] == 1
    assert stats["focuscrawl/scope/host_limit"] == 1
    assert stats["focuscrawl/skipped/non_html"] == 1
    assert stats["focuscrawl/links/found"] == 17 + 1  # seed (no img/mailto/js) + broken.test's /ok
    assert stats["focuscrawl/download_errors/IgnoreRequest"] == 2  # robots + host limit
    # over DOWNLOAD_MAXSIZE: Scrapy cancels the download, the errback counts it
    assert stats["focuscrawl/download_errors/DownloadCancelledError"] == 1
    pages = {i["url"]: i for i in items(tmp_path) if "sentences" in i}
    assert "http://huge.test/" not in pages and "http://bin.test/file" not in pages
    assert pages["http://broken.test/"]["sentences"] == ["cat cat cat cat cat"]
    # Latin-1 bytes under charset=utf-8: decoded with the cp1252 fallback (issue #16), counted
    assert pages["http://latin.test/"]["sentences"] == ["cat cat café cat cat cat"]
    assert stats["focuscrawl/text/charset_fallback"] == 2  # and broken.test: its \xff\xfe are no UTF-8
    # seed, q.test x2, robots.test/public, broken.test x2, latin.test, h.test x2
    assert stats["focuscrawl/pages/crawled"] == len(pages) == 9
    assert stats["focuscrawl/download_errors/HttpError"] == 1  # gone.test: 404
    # the progress extension logged while h.test/1 was slow
    progress = [line for line in proc.stderr.splitlines() if "progress: " in line]
    assert progress and all("pages/s" in line and "queue " in line for line in progress)


def test_allowed_domains_and_page_budget(tmp_path):
    site = {
        ("seed.test", "/"): Page(html("seed", ON_TOPIC, [("/1", "cat"), ("/2", "cat"), ("/3", "cat"),
                                                         ("http://other.test/", "tabby")])),
        ("seed.test", "/1"): Page(html("1", ON_TOPIC)), ("seed.test", "/2"): Page(html("2", ON_TOPIC)),
        ("seed.test", "/3"): Page(html("3", ON_TOPIC)), ("other.test", "/"): Page(html("o", ON_TOPIC)),
    }
    with LocalWeb(site) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", domains="seed.test", budget="2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # budget of 2 HTML pages: the seed and /1, then the spider closes
    assert web.pages_requested() == ["seed.test/", "seed.test/1"]
    assert stats["focuscrawl/scope/offsite"] == 1
    assert stats["finish_reason"] == "page_budget"


@pytest.mark.parametrize("domains", ["seed.test", ""])
def test_redirect_off_the_allowed_domains_is_not_followed(tmp_path, domains):
    """Scrapy's offsite filter (focuscrawl.middlewares.offsite) keeps a redirect to another
    domain out when there are allowed domains, and is not even enabled when there are none."""
    site = {
        ("seed.test", "/"): Page(html("seed", ON_TOPIC, [("/jump", "cat")])),
        ("seed.test", "/jump"): Page("", status=301, headers={"Location": "http://other.test/"}),
        ("other.test", "/"): Page(html("o", ON_TOPIC)),
    }
    with LocalWeb(site) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", domains=domains)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ("other.test/" in web.pages_requested()) is not bool(domains)
    assert stats.get("offsite/filtered") == (1 if domains else None)


def scrapy_crawl(*args: str) -> subprocess.Popen:
    return warmfork.popen([sys.executable, "-m", "scrapy", "crawl", "focused", *args, "-s", "LOG_LEVEL=ERROR"],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_bad_arguments_stop_with_a_clear_message(tmp_path):
    """Each bad argument is one clear ERROR line and a failed start; the command (one case as a
    process) exits non-zero without a traceback. The other cases run in this process, where the
    same spider and components check them without a Scrapy start-up each."""
    model, _ = write_model(tmp_path)
    bad_model = tmp_path / "bad.arpa"
    bad_model.write_text("not a model\n")
    seed = {"seeds": "http://seed.test/"}
    cases = [
        ({**seed, "mode": "bogus"}, "unknown crawl mode 'bogus'"),
        ({"seeds": str(tmp_path / "missing.txt")}, "seeds file not found"),
        ({"seeds": "ftp://x.test/"}, "no usable seed among 1"),
        ({"seeds": "http://[::1:bad/"}, "no usable seed among 1"),
        ({"seeds": "http://127.0.0.1:99999/,http://:80/"}, "no usable seed among 2"),
        ({**seed, "model": str(tmp_path / "nope.arpa")}, "language model not found"),
        ({**seed, "model": str(bad_model)}, "cannot load language model"),
        ({**seed, "model": str(model), "extractor": "nope"}, "unknown text extractor"),
    ]
    proc = scrapy_crawl("-a", "seeds=http://seed.test/", "-s", "FOCUSCRAWL_LANGUAGES=en,xx")
    with LocalWeb({}) as web:
        for args, message in cases:
            _, done = crawl_here(web, {"LOG_LEVEL": "ERROR"}, args, timeout=60)
            assert done.returncode != 0, args
            assert f"cannot start the crawl: {message}" in done.stderr, (args, done.stderr[-2000:])
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "cannot start the crawl: FOCUSCRAWL_LANGUAGES: unknown language code(s) xx" in stderr, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]


def test_seed_on_a_refused_port_is_one_error_line_without_traceback(tmp_path):
    """A live seed whose host refuses connections: robots.txt and the page fail with one
    ERROR line each (Scrapy's robots.txt middleware alone would add ~60 lines of traceback)."""
    with socket.socket() as sock:  # a port nothing listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        model, keywords = write_model(tmp_path)
        proc = scrapy_crawl("-a", f"seeds=http://127.0.0.1:{port}/", "-a", f"model={model}",
                            "-a", f"keywords={keywords}", "-s", "RETRY_TIMES=0")
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    robots = [line for line in stderr.splitlines() if "robotstxt] ERROR" in line]
    assert len(robots) == 1 and f"127.0.0.1:{port}" in robots[0] and "refused" in robots[0], stderr[-2000:]


def test_extraction_error_is_counted_and_the_crawl_goes_on(tmp_path):
    site = {
        ("seed.test", "/"): Page(html("seed", ON_TOPIC + " " + ON_TOPIC, [("http://empty.test/", "cat"),
                                                                         ("http://next.test/", "cat")])),
        ("empty.test", "/"): Page(b""),  # boilerpy3 fails on an empty document
        ("next.test", "/"): Page(html("next", ON_TOPIC + " " + ON_TOPIC)),
    }
    with LocalWeb(site) as web:
        stats, proc = crawl(web, tmp_path, "http://seed.test/", extractor="article")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert web.pages_requested() == ["seed.test/", "empty.test/", "next.test/"]
    assert stats["focuscrawl/skipped/extraction_error"] == 1
    assert stats["focuscrawl/pages/crawled"] == 2
    assert "text extraction failed on http://empty.test/" in proc.stderr


def test_image_downloads_do_not_use_up_a_hosts_page_limit(tmp_path):
    from tests.support.imagesite import image_bytes

    jpeg = image_bytes("JPEG", (600, 400))
    figures = "".join(f'<img src="/{n}.jpg" alt="a cat {n}" width="600" height="400">' for n in "abc")
    site = {("pics.test", "/"): Page(html("pics", ON_TOPIC, [("/more", "cat")], extra=figures)),
            ("pics.test", "/more"): Page(html("more", ON_TOPIC))}
    site.update({("pics.test", f"/{n}.jpg"): Page(jpeg, "image/jpeg") for n in "abc"})
    with LocalWeb(site) as web:
        stats, proc = crawl(web, tmp_path, "http://pics.test/", settings={"FOCUSCRAWL_MAX_PAGES_PER_HOST": 2})
    assert proc.returncode == 0, proc.stderr[-3000:]
    requested = web.pages_requested()
    assert {"pics.test/", "pics.test/more", "pics.test/a.jpg", "pics.test/b.jpg", "pics.test/c.jpg"} <= set(requested)
    assert "focuscrawl/scope/host_limit" not in stats


def test_a_url_robots_txt_forbids_gives_its_place_under_the_host_limit_back(tmp_path):
    """The host limit counts a request before robots.txt is asked (a capped domain's new hosts
    get no robots.txt request); a request robots.txt then forbids was not sent and gives its
    place back: with a limit of 2, the seed, a forbidden link (crawled first: its anchor is
    on topic) and an allowed one, the allowed one is still fetched."""
    leaf = Page(html("leaf", ON_TOPIC))
    site = {("r.test", "/"): Page(html("seed", ON_TOPIC, [("/private", "cat cat cat kitten"), ("/public", "x")])),
            ("r.test", "/robots.txt"): Page("User-agent: *\nDisallow: /private\n", "text/plain"),
            ("r.test", "/private"): leaf, ("r.test", "/public"): leaf}
    with LocalWeb(site) as web:
        stats, proc = crawl(web, tmp_path, "http://r.test/", settings={"FOCUSCRAWL_MAX_PAGES_PER_HOST": 2})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats["robotstxt/forbidden"] == 1
    assert "r.test/public" in web.pages_requested() and "r.test/private" not in web.pages_requested()
    assert "focuscrawl/scope/host_limit" not in stats
