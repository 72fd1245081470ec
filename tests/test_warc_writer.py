"""WARC output of a real crawl (subprocess, local HTTP server) and crash recovery."""
from __future__ import annotations

import gzip
from focuscrawl.archive.reader import ArchiveIndex, iter_responses
from focuscrawl.archive.writer import OPEN_SUFFIX, RotatingWarcWriter
from tests.support.crawl import run_links
from tests.support.localweb import LocalWeb, Page, link_site, png_bytes

def test_crawl_writes_rotating_warcs_with_every_response(tmp_path):
    pages = link_site(12)
    pages["/p1"] = Page(pages["/p1"].body, gzip=True)  # stored content-encoded, read back decoded
    pages["/p2"] = Page(pages["/p2"].body.replace(b"</body>", b'<img src="/cat.png"></body>'))
    pages["/cat.png"] = Page(png_bytes(), "image/png")
    warcdir = tmp_path / "warc"
    with LocalWeb(pages) as web:
        proc = run_links(f"{web.base}/p0", f"FOCUSCRAWL_WARC_DIR={warcdir}", "FOCUSCRAWL_WARC_MAX_SIZE=1500")
        assert proc.returncode == 0, proc.stderr[-3000:]
    files = sorted(warcdir.glob("*.warc.gz"))
    assert len(files) >= 3, "small max size must rotate files"
    assert not list(warcdir.glob(f"*{OPEN_SUFFIX}"))
    index = ArchiveIndex(files)
    urls = set(index.refs)
    assert {f"{web.base}/p{i}" for i in range(12)} <= urls
    assert f"{web.base}/robots.txt" in urls
    got = {r.url: r for f in files for r in iter_responses(f)}
    p1 = got[f"{web.base}/p1"]
    assert p1.headers.get(b"Content-Encoding") == b"gzip"
    assert gzip.decompress(p1.body) == pages["/p1"].body
    assert got[f"{web.base}/p3"].body == pages["/p3"].body
    assert index.stats["records/request"] == index.stats["records/response"]
    assert "'focuscrawl/warc/records': 13" in proc.stderr  # 12 pages + robots.txt


def test_killed_writer_leaves_only_complete_records(tmp_path):
    from scrapy import Request
    from scrapy.http import HtmlResponse
    w = RotatingWarcWriter(tmp_path, max_size=10 ** 9)
    for i in range(5):
        url = f"http://example.test/{i}"
        w.write(Request(url), HtmlResponse(url, body=f"<p>page {i}</p>".encode() * 50))
    open_file = w._path
    size = open_file.stat().st_size
    w._fh.write(b"\x1f\x8b\x08\x00 torn half record")  # what SIGKILL mid-write would leave
    w._fh.flush()
    w._fh = None  # the process "dies": nothing is closed or renamed
    w2 = RotatingWarcWriter(tmp_path, max_size=10 ** 9)
    (final, cut), = w2.recovered
    assert cut == len(b"\x1f\x8b\x08\x00 torn half record")
    assert final.stat().st_size == size
    assert [r.url for r in iter_responses(final)] == [f"http://example.test/{i}" for i in range(5)]
    assert not list(tmp_path.glob(f"*{OPEN_SUFFIX}"))
