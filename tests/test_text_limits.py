"""Hostile pages for the text layer (issue #16 "Text"): wrong charsets, absurd nesting,
broken markup, huge pages. Inputs are generated here; nothing large is committed."""
import gzip
import json
import subprocess
import sys

import pytest

from focuscrawl.text import extractors
from focuscrawl.text.html import clip_html, decode_page, parse_page

from tests.support.crawl import crawl, items
from tests.support.localweb import LocalWeb, Page
from tests.support import warmfork

LATIN1_PAGE = ("<html><head><meta charset='utf-8'><title>t</title></head><body>"
               "<p>Café naïve crème brûlée über alles, the cat sat on the mat and purred.</p>"
               "</body></html>").encode("latin-1")
DEEP = 100_000


def deep_page(depth: int = DEEP) -> str:
    return ("<html><body><p>before the nest</p>" + "<div>" * depth + "deep text here" + "</div>" * depth
            + "<p>after the nest</p></body></html>")


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``focuscrawl ARGS`` in a child process."""
    return warmfork.run([sys.executable, "-m", "focuscrawl.cli", *args], capture_output=True, text=True,
                        timeout=timeout)


# --- charsets -------------------------------------------------------------------------
def test_latin1_under_a_utf8_declaration_falls_back_per_document():
    page = decode_page(LATIN1_PAGE, "text/html; charset=utf-8")
    assert page.fallback and page.encoding == "cp1252" and "Café naïve" in page.text
    ok = decode_page("<p>Café naïve</p>".encode("utf-8"), "text/html; charset=utf-8")
    assert not ok.fallback and "Café naïve" in ok.text
    # one stray byte in a UTF-8 page: UTF-8 stays (the byte goes), no mojibake of the rest
    stray = decode_page("<p>Café naïve \xff</p>".encode("utf-8").replace(b"\xc3\xbf", b"\xff"))
    assert not stray.fallback and "Café naïve" in stray.text


def test_extract_keeps_accents_of_a_mislabelled_page(tmp_path):
    (tmp_path / "latin.html").write_bytes(LATIN1_PAGE)
    proc = run_cli("extract", str(tmp_path / "latin.html"), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "Café naïve crème brûlée" in (tmp_path / "out" / "latin.txt").read_text(encoding="utf-8")
    assert "charset fallback 1" in proc.stderr


def test_crawl_keeps_accents_of_a_mislabelled_page_and_counts_it(tmp_path):
    site = {("latin.test", "/"): Page(LATIN1_PAGE, "text/html; charset=utf-8")}
    with LocalWeb(site) as web:
        stats, proc = crawl(web, tmp_path, "http://latin.test/", extractor="fulltext")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats["focuscrawl/text/charset_fallback"] == 1
    [page] = [i for i in items(tmp_path) if i.get("url") == "http://latin.test/"]
    assert "café naïve crème brûlée" in " ".join(page["sentences"])


# --- nesting --------------------------------------------------------------------------
def test_parse_reports_nesting_past_the_parser_limit():
    assert parse_page(deep_page(3000)).too_deep
    assert not parse_page(deep_page(1000)).too_deep  # huge_tree: 2048 levels are read


@pytest.mark.parametrize("name", ["auto", "trafilatura", "justext", "fulltext", "article"])
def test_deeply_nested_page_text_is_recovered(name):
    page = extractors.extract_page(extractors.get_extractor(name), deep_page())
    for words in ("before the nest", "deep text here", "after the nest"):
        assert words in page.text
    # past the markup budget too: the nest is read flat, all of it
    cut = extractors.extract_page(extractors.get_extractor(name), deep_page(), max_tags=8192)
    assert cut.text == page.text and cut.notes == (extractors.TOO_DEEP,)
    assert len(page.text) < 1000  # no run of thousands of empty lines


def test_extract_counts_deep_pages(tmp_path):
    (tmp_path / "deep.html").write_text(deep_page())
    proc = run_cli("extract", "--extractor", "trafilatura", str(tmp_path / "deep.html"), "-o", str(tmp_path / "o"))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "too deep 1" in proc.stderr
    assert "deep text here" in (tmp_path / "o" / "deep.txt").read_text()


# --- broken markup: one line per skip, no library traceback -------------------------------
@pytest.mark.parametrize("name", ["article", "default", "canola"])
def test_boilerpy3_failures_are_one_line_reasons(tmp_path, name):
    (tmp_path / "empty.html").write_bytes(b"")
    (tmp_path / "blank.html").write_bytes(b"  \n ")
    (tmp_path / "noise.html").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "ok.html").write_text("<html><body><p>" + "The cat sat on the mat. " * 20 + "</p></body></html>")
    inputs = [str(tmp_path / f) for f in ("empty.html", "blank.html", "noise.html", "ok.html")]
    proc = run_cli("extract", "--extractor", name, *inputs, "-o", str(tmp_path / "o"))
    assert "Traceback" not in proc.stderr and "ERROR" not in proc.stderr
    skips = [line for line in proc.stderr.splitlines() if line.startswith("skipped ")]
    assert skips and proc.returncode == 1
    for line in skips:  # "skipped PATH: <Extractor> cannot read the page (<Error>: ...)"
        assert "cannot read the page (" in line and "()" not in line
    assert (tmp_path / "o" / "ok.txt").exists()


# --- size and time --------------------------------------------------------------------
def test_clip_cuts_before_a_tag_and_says_so():
    body = b"<p>" + b"x" * 50 + b"</p><p>" + b"y" * 50 + b"</p>"
    assert clip_html(body, 0) == (body, False) and clip_html(body, len(body)) == (body, False)
    cut, clipped = clip_html(body, 70)
    assert clipped and cut == b"<p>" + b"x" * 50 + b"</p>"


def test_markup_is_clipped_before_the_start_tag_past_the_budget_only():
    from focuscrawl.text.html import clip_markup

    page = "<p>" + "x" * 20 + "</p>"  # one start tag, one end tag
    assert clip_markup(page * 4, 4) == (page * 4, False)  # 8 '<' but 4 start tags: read whole
    assert clip_markup(page * 5, 4) == (page * 4, True)
    assert clip_markup(page * 4 + "a < b <3", 4) == (page * 4 + "a < b <3", False)  # '<' that opens no tag
    assert clip_markup(page * 5, 0) == (page * 5, False)


@pytest.mark.parametrize("extractor", ["auto", "trafilatura"])
def test_a_50mb_page_is_read_up_to_the_cap(tmp_path, extractor):
    """The page is read up to the cap only; with trafilatura too, whose fallbacks
    (readability) take the text of this page. (Its memory, a multiple of the cap, is
    measured by benchmarks/text_limits.py.)"""
    cap = 2 * 1024 * 1024
    para = "<p>" + "The cat sat on the mat and looked at the dog. " * 20 + "</p>\n"
    with open(tmp_path / "huge.html", "w") as fh:
        fh.write("<html><body>")
        for _ in range(50 * 1024 * 1024 // len(para)):
            fh.write(para)
        fh.write("</body></html>")
    options = ("--extractor", extractor, "--max-bytes", str(cap))
    proc = run_cli("extract", *options, str(tmp_path / "huge.html"), "-o", str(tmp_path / "h"))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert f"cut {tmp_path / 'huge.html'}: longer than {cap} bytes" in proc.stderr
    assert "truncated 1" in proc.stderr
    text = (tmp_path / "h" / "huge.txt").read_text()
    assert 0.5 * cap < len(text) < cap


def test_dense_markup_at_the_cap_is_parsed_up_to_the_markup_budget(tmp_path):
    """A page of the cap's size made of linked images (~70,000 elements: a tree of ~40 MB,
    trafilatura copies it three times) is parsed up to its max_bytes/256-th start tag, and
    noted as cut."""
    from focuscrawl.text.html import markup_budget

    cap = 1024 * 1024
    links = "".join(f'<a href="/p{i}"><img src="/i{i}.jpg" alt="cat {i}">cat {i}</a>\n' for i in range(cap // 50))
    (tmp_path / "dense.html").write_text(f"<html><body>{links}</body></html>"[:cap])
    proc = run_cli("extract", "--max-bytes", str(cap), str(tmp_path / "dense.html"), "-o", str(tmp_path / "d"))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "truncated 1" in proc.stderr  # within the byte cap, cut by the markup budget
    text = (tmp_path / "d" / "dense.txt").read_text()
    last = markup_budget(cap) // 2 - 2  # <html>, <body>, then two start tags per link
    assert f"cat {last}" in text and f"cat {last + 1}" not in text


def test_time_limit_skips_a_slow_page_with_a_reason(tmp_path):
    # 30k tiny blocks: jusText's neighbour search is quadratic (minutes); the limit stops it
    (tmp_path / "slow.html").write_text("<html><body>" + "<div>a</div>" * 30_000 + "</body></html>")
    proc = run_cli("extract", "--extractor", "justext", "--time-limit", "2", str(tmp_path / "slow.html"),
                   "-o", str(tmp_path / "o"), timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "skipped " in proc.stderr and "ran past the 2 s limit" in proc.stderr
    assert not (tmp_path / "o" / "slow.txt").exists()


def test_warc_keeps_accents_of_a_mislabelled_page_and_counts_it(tmp_path):
    from tests.support.archives import write_arc
    arc = write_arc(tmp_path / "x.arc.gz", [
        ("http://latin.test/", [("Content-Type", "text/html; charset=utf-8")], LATIN1_PAGE)])
    out = tmp_path / "out"
    proc = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "warc", str(arc), "-o", str(out),
                         "-s", "LOG_LEVEL=INFO"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["focuscrawl/text/charset_fallback"] == 1
    sentences = gzip.decompress((out / "sentences.txt.gz").read_bytes()).decode("utf-8")
    assert "café naïve crème brûlée" in sentences


# --- the crawl's page analysis: links, images and contexts under the markup budget --------
def analyse(path, cap: int) -> tuple[list[str], int, list[str], list[str]]:
    """``analyse_page`` (default extractor, images, the bundled model) of a file, as the
    crawl's analysis reads a page at the cap ``cap``: links, img count, image sources, notes."""
    from focuscrawl.analysis import AnalysisConfig, analyse_page
    from focuscrawl.text.html import markup_budget

    config = AnalysisConfig(text_max_tags=markup_budget(cap))
    page = analyse_page(path.read_text(encoding="utf-8"), "http://dense.test/", "http://dense.test/", 0, config,
                        config.scorer.load())
    return list(page.links), page.img_count, [d.src for d in page.images], list(page.notes)


def test_page_analysis_of_dense_markup_is_parsed_up_to_the_markup_budget(tmp_path):
    """The crawl's analysis of a page of the cap's size made of linked images (~80,000
    elements: a tree of ~20x the cap, and an image decision with contexts and scores for
    each) reads links and images up to the max_bytes/256-th start tag and notes the cut
    (its memory, a multiple of the cap: benchmarks/text_limits.py --analysis)."""
    from focuscrawl.text.html import markup_budget

    cap = 2 * 1024 * 1024
    links = "".join(f'<a href="/p{i}"><img src="/i{i}.jpg" alt="cat {i}">cat {i}</a>\n' for i in range(cap // 50))
    (tmp_path / "dense.html").write_text(f"<html><body>{links}</body></html>"[:cap])
    (tmp_path / "small.html").write_text("<html><body>" + "".join(links.splitlines(True)[:20]) + "</body></html>")
    small_links, small_imgs, _, small_notes = analyse(tmp_path / "small.html", cap)
    assert len(small_links) == small_imgs == 20 and small_notes == []
    found, img_count, images, notes = analyse(tmp_path / "dense.html", cap)
    n = markup_budget(cap) // 2 - 1  # <html>, <body>, then two start tags per link
    assert found == [f"http://dense.test/p{i}" for i in range(n)]
    assert img_count == n and images == [f"http://dense.test/i{i}.jpg" for i in range(n)]
    assert notes == ["truncated"]


@pytest.mark.parametrize("workers", [0, 1])
def test_crawl_reads_links_and_images_up_to_the_markup_budget_and_counts_the_page_once(tmp_path, workers):
    """FOCUSCRAWL_TEXT_MAX_BYTES = 64 KiB: 256 start tags. A 20 KB page of 600 links and then
    images is cut by the markup budget (not by its bytes): its first 253 links are found, the
    images after them are not parsed, and the page is counted once as truncated."""
    links = "".join(f'<a href="http://elsewhere.test/p{i}">cat page {i}</a>\n' for i in range(600))
    images = "".join(f'<img src="/cat{i}.png" alt="a cat" width="640" height="480">' for i in range(5))
    body = f"<html><head><title>cats</title></head><body><p>{links}</p>{images}</body></html>"
    site = {("dense.test", "/"): Page(body), ("dense.test", "/robots.txt"): Page(b"", "text/plain")}
    with LocalWeb(site) as web:
        stats, proc = crawl(web, tmp_path, "http://dense.test/", settings={
            "FOCUSCRAWL_TEXT_MAX_BYTES": 64 * 1024, "FOCUSCRAWL_ANALYSIS_WORKERS": workers,
            "FOCUSCRAWL_ALLOWED_DOMAINS": ["dense.test"]}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats["focuscrawl/text/truncated"] == 1
    n = 256 - 4 - 1  # <html>, <head>, <title>, <body>, <p>, then one start tag per link
    assert stats["focuscrawl/links/found"] == n
    [page] = [i for i in items(tmp_path) if i.get("url") == "http://dense.test/"]
    assert page["links"] == n and page["images"] == 0
    assert not any("/cat" in url for url in web.requests)
