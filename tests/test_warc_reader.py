"""Reading WARC and ARC records into Scrapy responses (SPEC §8 rules)."""
from __future__ import annotations

import gzip

import pytest
from scrapy.http import HtmlResponse

from focuscrawl.archive.reader import ArchiveError, ArchiveIndex, iter_responses, read_response
from tests.support.archives import write_arc, write_warc

LATIN1_PAGE = "<html><body><p>Die Katze schläft auf dem Sofa.</p></body></html>".encode("latin-1")
META_PAGE = ('<html><head><meta charset="windows-1251"></head><body><p>Кошка спит</p></body></html>'
             .encode("cp1251"))


def captures():
    return [
        ("http://a.test/latin1", [("Content-Type", "text/html; charset=iso-8859-1"),
                                  ("Content-Length", "9999")], LATIN1_PAGE),  # header lies
        ("http://a.test/meta", [("Content-Type", "text/html")], META_PAGE),
        ("http://a.test/gz", [("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip")],
         gzip.compress(b"<html><body>gzipped</body></html>")),
        ("http://a.test/decoded", [("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip")],
         b"<html><body>stored decoded, header left</body></html>"),
        ("http://a.test/nul", [("Content-Type", "text/html; charset=utf-8")], b"<p>a\x00b   c</p>"),
        ("http://a.test/img.gif", [("Content-Type", "image/gif")], b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"),
    ]


@pytest.mark.parametrize("writer,name", [(write_warc, "x.warc.gz"), (write_warc, "x.warc"),
                                         (write_arc, "x.arc.gz"), (write_arc, "x.arc")])
def test_records_become_scrapy_responses(tmp_path, writer, name):
    path = writer(tmp_path / name, captures())
    got = {r.url: r for r in iter_responses(path)}
    assert list(got) == [c[0] for c in captures()]
    latin = got["http://a.test/latin1"]
    assert isinstance(latin, HtmlResponse)
    assert latin.body == LATIN1_PAGE  # length from the record, not the 9999 of the header
    assert latin.headers[b"Content-Length"] == str(len(LATIN1_PAGE)).encode()
    assert "schläft" in latin.text
    assert "Кошка" in got["http://a.test/meta"].text  # charset detected from <meta>
    assert got["http://a.test/gz"].headers.get(b"Content-Encoding") == b"gzip"  # left to HttpCompression
    assert got["http://a.test/decoded"].headers.get(b"Content-Encoding") is None  # lying header dropped
    assert got["http://a.test/img.gif"].body.startswith(b"GIF89a")
    assert not isinstance(got["http://a.test/img.gif"], HtmlResponse)
    assert all("archive" in r.flags for r in got.values())


def test_index_random_access_and_html_selection(tmp_path):
    warc = write_warc(tmp_path / "a.warc.gz", captures())
    arc = write_arc(tmp_path / "b.arc.gz", [("http://b.test/", [("Content-Type", "text/html")], b"<p>b</p>"),
                                            ("http://a.test/meta", [("Content-Type", "text/html")], b"other")])
    index = ArchiveIndex([warc, arc])
    assert len(index) == 7
    assert index.stats["records/duplicate_url"] == 1
    assert [r.url for r in index.html_refs()] == [
        "http://a.test/latin1", "http://a.test/meta", "http://a.test/gz", "http://a.test/decoded",
        "http://a.test/nul", "http://b.test/"]
    resp = read_response(index.get("http://a.test/meta"))
    assert resp.body == META_PAGE  # first capture wins
    assert read_response(index.get("http://a.test/img.gif"), max_size=4).flags == ["archive", "truncated"]


def test_not_an_archive_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.warc"
    bad.write_bytes(b"<html>not an archive</html>\n")
    with pytest.raises(ArchiveError):
        list(ArchiveIndex([bad]).refs)
    with pytest.raises(FileNotFoundError):
        ArchiveIndex([tmp_path / "missing.warc.gz"])
