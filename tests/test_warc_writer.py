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
    assert f"{web.base}/.well-known/tdmrep.json" in urls  # the 404 too: a replay reads what the host said
    assert index.stats["records/response"] == 14  # 12 pages + robots.txt + tdmrep.json


def test_killed_writer_leaves_only_complete_records(tmp_path):
    from scrapy import Request
    from scrapy.http import HtmlResponse
    w = RotatingWarcWriter(tmp_path, max_size=10 ** 9)
    for i in range(5):
        url = f"http://example.test/{i}"
        w.write(Request(url), HtmlResponse(url, body=f"<p>page {i}</p>".encode() * 50))
    open_file, = tmp_path.glob(f"*{OPEN_SUFFIX}")
    size = open_file.stat().st_size
    with open(open_file, "ab") as fh:  # what SIGKILL mid-write would leave
        fh.write(b"\x1f\x8b\x08\x00 torn half record")
    # the process "dies": w is never closed, its file never renamed
    w2 = RotatingWarcWriter(tmp_path, max_size=10 ** 9)
    (final, cut), = w2.recovered
    assert cut == len(b"\x1f\x8b\x08\x00 torn half record")
    assert final.stat().st_size == size
    assert [r.url for r in iter_responses(final)] == [f"http://example.test/{i}" for i in range(5)]
    assert not list(tmp_path.glob(f"*{OPEN_SUFFIX}"))


def test_a_record_torn_inside_is_cut_at_the_record_before_it(tmp_path):
    """A kill inside the last pair's request record: the cut ends at a record boundary and
    every record left reads whole (warcio writes one gzip member per record)."""
    from scrapy import Request
    from scrapy.http import HtmlResponse
    from warcio.archiveiterator import ArchiveIterator
    w = RotatingWarcWriter(tmp_path, max_size=10 ** 9)
    for i in range(3):
        url = f"http://example.test/{i}"
        w.write(Request(url), HtmlResponse(url, body=f"<p>page {i}</p>".encode() * 50))
    open_file, = tmp_path.glob(f"*{OPEN_SUFFIX}")
    with open(open_file, "rb") as fh:
        it = ArchiveIterator(fh)
        ends = []
        for _record in it:
            it.read_to_end()
            ends.append(it.get_record_offset() + it.get_record_length())
    assert len(ends) == 1 + 2 * 3  # warcinfo, then response + request per page
    with open(open_file, "r+b") as fh:
        fh.truncate(ends[-1] - 10)  # the last request record loses its last 10 bytes
    (final, cut), = RotatingWarcWriter(tmp_path, max_size=10 ** 9).recovered
    assert final.stat().st_size == ends[-2] and cut == ends[-1] - 10 - ends[-2]
    with open(final, "rb") as fh:
        kinds = [r.rec_type for r in ArchiveIterator(fh)]
    assert kinds == ["warcinfo"] + ["response", "request"] * 2 + ["response"]
