"""`focuscrawl warc`: a live crawl written to WARC and replayed from it gives the same outputs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from focuscrawl.output.records import url_sha1
from tests.support.archives import write_arc
from tests.support.crawl import FAST, ROOT, scrapy_cmd
from tests.support.localweb import CAT_TEXT, LocalWeb, image_site, png_bytes
from tests.support.runfiles import keyed_rows as rows, sightings
from tests.support import warmfork

def warc_cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", *args, "--json"]
    for s in FAST:
        cmd += ["-s", s]
    return warmfork.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_replay_of_a_crawls_warcs_equals_the_crawl(tmp_path):
    live, replay, warcs = tmp_path / "live", tmp_path / "replay", tmp_path / "warcs"
    with LocalWeb(image_site()) as web:
        cmd = scrapy_cmd("crawl", "focused", f"FOCUSCRAWL_WARC_DIR={warcs}", "FOCUSCRAWL_WARC_MAX_SIZE=4000",
                         seeds=f"{web.base}/page0", output=live)
        proc = warmfork.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        served = len(web.requests)
    archives = sorted(str(p) for p in warcs.glob("*.warc.gz"))
    assert len(archives) >= 2  # rotated
    proc = warc_cli(*archives, "-o", str(replay))
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["finish_reason"] == "finished"
    assert summary["focuscrawl/archive/missing"] == 0  # every image the crawl fetched is in its WARCs
    live_pages, replay_pages = rows(live / "pages.tsv", "url"), rows(replay / "pages.tsv", "url")
    assert len(live_pages) == 4 and replay_pages == live_pages
    live_images, replay_images = rows(live / "images.tsv", "image_url"), rows(replay / "images.tsv", "image_url")
    assert len(live_images) == 5 and replay_images == live_images
    assert sightings(replay) == sightings(live)
    shared = sightings(live)[f"{web.base}/catshared.png"]
    assert len(shared) == 4  # the shared image's context from every page
    for r in replay_images.values():
        assert (replay / r["image_path"]).read_bytes() == (live / r["image_path"]).read_bytes()
    assert len(web.requests) == served  # the replay sent nothing to the server
    # the live crawl learnt its links (mode learning, the default); the replay, whose every
    # page is a seed, runs in mode keywords and gives the same rows
    assert (live / "link_learner.pkl").exists() and not (replay / "link_learner.pkl").exists()


def test_arc_input_with_lying_headers_and_missing_images(tmp_path):
    page = (f'<html><head><meta charset="iso-8859-1"></head><body><div><p>{CAT_TEXT} Die Katze schläft.</p>'
            '<img src="http://a.test/cat.png" alt="a cat on the sofa" width="640" height="480">'
            '<img src="http://a.test/gone.png" alt="a cat that was not archived" width="640" height="480">'
            '</div><a href="http://elsewhere.test/">away</a></body></html>').encode("latin-1")
    arc = write_arc(tmp_path / "x.arc.gz", [
        ("http://a.test/", [("Content-Type", "text/html"), ("Content-Length", "5")], page),
        ("http://a.test/cat.png", [("Content-Type", "image/png")], png_bytes()),
    ])
    out = tmp_path / "out"
    proc = warc_cli(str(arc), "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["focuscrawl/archive/missing"] == 1  # gone.png: counted, not fetched
    pages = rows(out / "pages.tsv", "url")
    assert int(pages["http://a.test/"]["size"]) == len(page)  # record length, not Content-Length: 5
    images = rows(out / "images.tsv", "image_url")
    assert sorted(images) == ["http://a.test/cat.png", "http://a.test/gone.png"]
    # the image the archive lacks is a candidate pair: its texts and scores, no file
    assert images["http://a.test/cat.png"]["image_status"] == "downloaded"
    gone = images["http://a.test/gone.png"]
    assert gone["image_status"] == "not_archived" and gone["image_path"] == "" and gone["alt_pp"]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["focuscrawl/archive/links_not_archived"] == 1
    # its own counter: images/failed/filtered means robots.txt or offsite (OUTPUT.md)
    assert stats["focuscrawl/images/candidates/not_archived"] == 1
    assert "focuscrawl/images/failed/not_archived" not in stats and "focuscrawl/images/failed/filtered" not in stats
    record = sightings(out)["http://a.test/cat.png"]
    assert "schläft" in record[0]  # latin-1 page decoded via its <meta> charset


def test_bad_archive_is_a_clear_error(tmp_path, capsys):
    from focuscrawl.cli import main
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(b"this is not an archive\n")
    assert main(["warc", str(bad), "-o", str(tmp_path / "out")]) == 2
    assert "bad.warc.gz" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert main(["warc", str(tmp_path / "missing.warc.gz"), "-o", str(tmp_path / "out")]) == 2
    assert "no such archive" in capsys.readouterr().err


def _small_warc(tmp_path: Path) -> Path:
    from tests.support.archives import write_warc

    captures = []
    for i in range(6):
        page = (f'<html><body><p>{CAT_TEXT} {i}</p><img src="/c{i}.png" alt="a cat on the sofa {i}" width="640" '
                f'height="480"><a href="/p{(i + 1) % 6}">next cat</a></body></html>')
        captures.append((f"http://a.test/p{i}", [("Content-Type", "text/html")], page.encode()))
        captures.append((f"http://a.test/c{i}.png", [("Content-Type", "image/png")], png_bytes(640, 480, (i, 2, 3))))
    return write_warc(tmp_path / "x.warc.gz", captures)


@pytest.mark.slow(12)
def test_replay_keeps_every_page_of_a_host_past_the_live_crawls_host_limit(tmp_path):
    """The live crawl stops a host at FOCUSCRAWL_MAX_PAGES_PER_HOST (500, a trap backstop);
    an archive is already bounded, and its pages are the user's data: all are replayed."""
    from focuscrawl.settings import FOCUSCRAWL_MAX_PAGES_PER_HOST
    from tests.support.archives import write_warc

    n = FOCUSCRAWL_MAX_PAGES_PER_HOST + 12
    captures = [(f"http://a.test/p{i}", [("Content-Type", "text/html")],
                 f"<html><body><p>{CAT_TEXT} {i}</p></body></html>".encode()) for i in range(n)]
    archive = write_warc(tmp_path / "big.warc.gz", captures)
    out = tmp_path / "out"
    proc = warc_cli(str(archive), "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(rows(out / "pages.tsv", "url")) == n
    # a limit the user sets still holds
    proc = warc_cli(str(archive), "-o", str(tmp_path / "capped"), "-s", "FOCUSCRAWL_MAX_PAGES_PER_HOST=7")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(rows(tmp_path / "capped" / "pages.tsv", "url")) == 7


def test_warc_log_is_quiet_once_and_has_progress(tmp_path):
    """Each log line once (no second root handler), none of Scrapy's DEBUG/INFO chatter
    without -v (there were ~1,400 lines for 16 records), focuscrawl's own progress line."""
    warc = _small_warc(tmp_path)
    cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", str(warc), "--json", "-s",
           "FOCUSCRAWL_PROGRESS_INTERVAL=0.001"]
    proc = warmfork.run(cmd + ["-o", str(tmp_path / "quiet")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert not [line for line in lines if not line.startswith(("INFO focuscrawl.", "WARNING "))], proc.stderr
    progress = [line for line in lines if "progress: " in line]
    assert progress and "pages/s" in progress[-1] and "images written" in progress[-1]
    assert len(set(lines) - set(progress)) == len(lines) - len(progress)  # nothing twice
    assert json.loads(proc.stdout.strip().splitlines()[-1])["focuscrawl/images/written"] == 6
    verbose = warmfork.run(cmd + ["-v", "-o", str(tmp_path / "verbose")], capture_output=True, text=True,
                           timeout=120)
    assert verbose.returncode == 0
    assert verbose.stderr.count("DEBUG scrapy.core.engine: Crawled (200) <GET http://a.test/p0>") == 1
    warnings_only = warmfork.run(cmd + ["-s", "LOG_LEVEL=WARNING", "-o", str(tmp_path / "warnings")],
                                 capture_output=True, text=True, timeout=120)
    assert warnings_only.returncode == 0
    assert "INFO" not in warnings_only.stderr and (tmp_path / "warnings" / "pages.tsv").exists()


def test_archive_images_without_html_size_are_measured(tmp_path):
    """An archive holds the bytes of images without width/height attributes: `warc`
    measures them and applies the size limits to the real size (the 2008 archive's
    images were all dropped as size_unspecified); the HTML rule is one setting away."""
    from tests.support.archives import write_warc

    page = (f'<html><body><p>{CAT_TEXT}</p>'
            '<img src="/big.png" alt="a big cat photo without size">'
            '<img src="/small.png" alt="a small cat icon without size">'
            '<img src="/sized.png" alt="a cat photo with size" width="640" height="480"></body></html>')
    warc = write_warc(tmp_path / "x.warc.gz", [
        ("http://a.test/", [("Content-Type", "text/html")], page.encode()),
        ("http://a.test/big.png", [("Content-Type", "image/png")], png_bytes(800, 600)),
        ("http://a.test/small.png", [("Content-Type", "image/png")], png_bytes(100, 80)),
        ("http://a.test/sized.png", [("Content-Type", "image/png")], png_bytes(640, 480)),
    ])
    proc = warc_cli(str(warc), "-o", str(tmp_path / "measured"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads((tmp_path / "measured" / "stats.json").read_text())
    assert stats["focuscrawl/images/size_measured/rescued"] == 1 and stats["focuscrawl/images/size_measured/dropped"] == 1
    assert stats["focuscrawl/images/failed/too_small"] == 1 and "focuscrawl/images/dropped/size_unspecified" not in stats
    images = rows(tmp_path / "measured" / "images.tsv", "image_url")
    assert sorted(images) == ["http://a.test/big.png", "http://a.test/sized.png"]
    assert (images["http://a.test/big.png"]["width"], images["http://a.test/big.png"]["html_width"]) == ("800", "")
    assert not (tmp_path / "measured" / "images" / f"{url_sha1('http://a.test/small.png')}.png").exists()
    proc = warc_cli(str(warc), "-o", str(tmp_path / "html-rule"), "-s", "FOCUSCRAWL_IMAGE_MEASURE_UNSIZED=False")
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads((tmp_path / "html-rule" / "stats.json").read_text())
    assert stats["focuscrawl/images/dropped/size_unspecified"] == 2 and "focuscrawl/images/size_measured/rescued" not in stats
    assert list(rows(tmp_path / "html-rule" / "images.tsv", "image_url")) == ["http://a.test/sized.png"]


def test_a_replay_of_pages_without_their_images_gives_ranked_candidates_img2dataset_reads(tmp_path):
    """An archive of pages only (as CommonCrawl's): every image that passes the rules is a
    candidate pair, ranked by its texts and exported with img2dataset's ``url`` and ``caption``."""
    import pyarrow.parquet as pq

    from focuscrawl.cli import main
    from tests.support.archives import write_warc

    def page(n: int, alt: str) -> bytes:
        return (f'<html><body><div><p>{CAT_TEXT}</p><img src="http://img.test/{n}.jpg" alt="{alt}" '
                f'width="640" height="480"></div></body></html>').encode()

    alts = {1: "quarterly revenue table of the finance department", 2: "a tabby cat sleeping on the sofa",
            3: "two kittens and a cat playing with a toy"}
    warc = write_warc(tmp_path / "pages.warc.gz", [(f"http://p{n}.test/", [("Content-Type", "text/html")],
                                                    page(n, alt)) for n, alt in alts.items()])
    out = tmp_path / "out"
    proc = warc_cli(str(warc), "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    images = rows(out / "images.tsv", "image_url")
    assert {r["image_status"] for r in images.values()} == {"not_archived"} and len(images) == 3
    target = tmp_path / "candidates.parquet"
    assert main(["rank", "--json", str(out), "--scoring", "thesis", "--min", "0", "--max", "1e12",
                 "--format", "parquet", "-o", str(target)]) == 0
    table = pq.read_table(target)
    assert str(table.schema.field("url").type) == "string" and str(table.schema.field("caption").type) == "string"
    exported = table.to_pylist()
    assert [r["status"] for r in exported] == ["not_fetched"] * 3
    assert {r["caption"] for r in exported} == set(alts.values())
    # ranked by their text: the off-topic caption last
    assert exported[-1]["url"] == "http://img.test/1.jpg"


def test_the_replay_summary_says_why_it_has_fewer_pages_than_html_responses(tmp_path):
    """"94 HTML pages" where the archive held 140 HTML responses, unexplained: a URL captured
    again is one page; the summary says so, and ends with every crawl's summary."""
    from tests.support.archives import write_warc

    page = f"<html><body><p>{CAT_TEXT}</p></body></html>".encode()
    html = [("Content-Type", "text/html")]
    warc = write_warc(tmp_path / "x.warc.gz", [("http://a.test/p0", html, page), ("http://a.test/p1", html, page),
                                               ("http://a.test/p0", html, page)])
    proc = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "warc", str(warc), "-o", str(tmp_path / "out"),
                         "-s", "FOCUSCRAWL_PROGRESS_INTERVAL=0"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].endswith("2 HTML pages replayed into " + str(tmp_path / "out"))
    assert lines[1].startswith("  of 3 HTML responses in the archives: each URL's first capture with status 200")
    assert f"replay summary: 2 pages and 0 images written to {(tmp_path / 'out').resolve()}" in lines
