"""Redirects without Scrapy's RefererMiddleware (REFERER_ENABLED = False): no start-up
warning about the missing middleware, and a redirected image download keeps the
Referer (its page) it was sent with."""
from __future__ import annotations

from tests.support.crawl import crawl
from tests.support.localweb import LocalWeb, Page, png_bytes
from tests.support.toymodel import ON_TOPIC

MISSING_REFERER_WARNING = "found no scrapy.spidermiddlewares.referer.RefererMiddleware"


def test_redirects_keep_the_referer_and_log_no_warning(tmp_path):
    pages = {
        "/robots.txt": Page(b"User-agent: *\nAllow: /\n", "text/plain"),
        "/start": Page("", status=301, headers={"Location": "/page"}),
        "/page": Page(f'<html><body><p>{ON_TOPIC}</p><img src="/old.png" alt="a tabby cat" '
                      f'width="640" height="480"></body></html>'),
        "/old.png": Page("", status=302, headers={"Location": "/new.png"}),
        "/new.png": Page(png_bytes(), "image/png"),
    }
    with LocalWeb(pages) as web:
        stats, proc = crawl(web, tmp_path, f"{web.base}/start")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert MISSING_REFERER_WARNING not in proc.stderr
    assert stats["downloader/response_status_count/301"] == 1 and stats["focuscrawl/images/written"] == 1
    assert web.referers["127.0.0.1/page"] is None  # pages are fetched without a Referer
    assert web.referers["127.0.0.1/new.png"] == f"{web.base}/page"  # kept across the redirect
