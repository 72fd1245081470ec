"""Image extraction, merge, download and writers in real crawls of a local web.

Real ``focused`` spider, real Scrapy pipelines, a real HTTP server on 127.0.0.1
(``LocalWeb`` as proxy), images made with Pillow; the toy model of tests/support/toymodel.py.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from scrapy.exceptions import DropItem

from focuscrawl.items import ImageItem
from tests.support.crawl import crawl, items
from tests.support.imagesite import image_bytes, png_bomb, truncated_jpeg
from tests.support.localweb import LocalWeb, Page
from tests.support.runfiles import read_tsv
from tests.support.toymodel import NORMAL, ON_TOPIC

from focuscrawl.output.images import image_columns
from focuscrawl.output.records import record_path, url_sha1
from focuscrawl.pipelines.writers import PAGE_COLUMNS

JPEG = image_bytes("JPEG")
PNG_B = image_bytes("PNG", (800, 600), (10, 200, 10))
GIF_C = image_bytes("GIF", (640, 480))
JPEG_D = image_bytes("JPEG", (700, 500), (0, 0, 255))
SETTINGS = {"FOCUSCRAWL_IMAGE_MAX_BYTES": 100_000, "FOCUSCRAWL_IMAGE_MAX_PIXELS": 1_000_000,
            "FOCUSCRAWL_IMAGE_MAX_PARENTS": 2, "FOCUSCRAWL_IMAGE_MAX_SIBLINGS": 1,
            "FOCUSCRAWL_SENTENCES_BATCH_BYTES": 0, "FOCUSCRAWL_IMAGE_EXTRA_CONTEXTS": ["par"]}


def img(src, alt="a cat", size='width="600" height="400"', extra=""):
    return f'<img src="{src}" alt="{alt}" {size} {extra}>'


def page(body: str) -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


def site() -> dict:
    home = page(f"""<div id="post"><p>{ON_TOPIC}</p>
      <div class="wp-caption"><a href="/p2">{img("/img/a.jpg", "tabby cat", extra='class="size-full" style="border: 0"')}</a>
      <p>kitten cat caption.</p></div>
      {img("/img/trunc.jpg")}{img("/img/bomb.png")}{img("/img/big.png")}{img("/img/bomb2.png")}
      {img("/img/html.jpg")}{img("/img/missing.jpg")}{img("/img/private/p.jpg")}{img("/img/moved.jpg")}
      {img("/img/small.jpg", size='width="50" height="50"')}{img("/img/noalt.jpg", alt="")}
      {img("/img/nosize.png", size="")}{img("/img/x.webp")}
      <a href="/latin">latin</a></div>""")
    p2 = page(f"""<div><p>{NORMAL}</p><span>{img("/img/a.jpg", "kitten on a mat")}</span>
      {img("http://other.test/b.png", "", extra='title="cat cat" width="800" height="600"')}</div>""")
    # declared UTF-8 but Latin-1 bytes, unclosed tags
    latin = ("<html><body><div><p>Das K\xe4tzchen cat cat cat cat.<table><td>"
             + img("/img/c.gif", "K\xe4tzchen cat") + "<td>cell").encode("latin-1")
    big = image_bytes("PNG", (400, 300), noise=True)
    assert len(big) > 100_000
    return {
        ("cats.test", "/"): Page(home),
        ("cats.test", "/robots.txt"): Page("User-agent: *\nDisallow: /img/private/\n", "text/plain"),
        ("cats.test", "/img/private/p.jpg"): Page(JPEG, "image/jpeg"),
        ("cats.test", "/img/moved.jpg"): Page(b"", "text/html", 301, {"Location": "http://cdn.test/new.jpg"}),
        ("cdn.test", "/new.jpg"): Page(JPEG_D, "image/jpeg"),
        ("cats.test", "/p2"): Page(p2),
        ("cats.test", "/latin"): Page(latin, "text/html; charset=utf-8"),
        ("cats.test", "/img/a.jpg"): Page(JPEG, "image/jpeg"),
        ("cats.test", "/img/trunc.jpg"): Page(truncated_jpeg(), "image/jpeg"),
        ("cats.test", "/img/bomb.png"): Page(png_bomb(), "image/png"),
        ("cats.test", "/img/bomb2.png"): Page(image_bytes("PNG", (1200, 1000), mode="1"), "image/png"),
        ("cats.test", "/img/big.png"): Page(big, "image/png"),
        ("cats.test", "/img/html.jpg"): Page(b"<html>oops</html>", "image/jpeg"),
        ("cats.test", "/img/c.gif"): Page(GIF_C, "image/gif"),
        ("other.test", "/b.png"): Page(PNG_B, "image/png"),
    }


def quiet(web: LocalWeb) -> LocalWeb:
    """No tracebacks from the server when the crawler cancels an oversized download."""
    web.server.handle_error = lambda *args: None
    return web


def fnum(value: str):
    return float(value) if value else None


def test_images_rules_merge_download_and_logs(tmp_path):
    with quiet(LocalWeb(site())) as web:
        stats, proc = crawl(web, tmp_path, "http://cats.test/", settings=SETTINGS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    assert "cats.test/img/private/p.jpg" not in web.requests  # robots.txt obeyed for images too
    # HTML rules: every <img> counted, each drop by reason
    assert stats["focuscrawl/images/seen"] == 13 + 2 + 1
    assert stats["focuscrawl/images/dropped/too_small"] == 1
    assert stats["focuscrawl/images/dropped/no_alt_title"] == 1
    assert stats["focuscrawl/images/dropped/size_unspecified"] == 1
    assert stats["focuscrawl/images/dropped/format"] == 1
    assert stats["focuscrawl/images/kept"] == 9 + 2 + 1
    # downloads: bad files counted and skipped
    for reason in ("truncated", "too_big_file", "not_an_image", "http_status", "filtered"):  # filtered: robots.txt
        assert stats[f"focuscrawl/images/failed/{reason}"] == 1, reason
    assert stats["focuscrawl/images/failed/decompression_bomb"] == 2
    assert stats["focuscrawl/images/merge/later_sightings"] == 1
    assert stats["focuscrawl/images/written"] == 4 and stats["focuscrawl/images/downloaded"] == 4

    rows = read_tsv(out / "images.tsv")
    assert list(rows[0]) == image_columns(2, 1)
    assert [(r["image_url"], r["first_seen"]) for r in rows] == [
        ("http://cats.test/img/a.jpg", "0"), ("http://cats.test/img/moved.jpg", "8"),
        ("http://other.test/b.png", "9"), ("http://cats.test/img/c.gif", "10")]
    a, moved, b, c = rows
    assert (out / moved["image_path"]).read_bytes() == JPEG_D  # redirect followed, kept under the page's URL
    assert (a["width"], a["height"], a["image_format"], a["html_width"]) == ("600", "400", "JPEG", "600")
    assert (b["width"], b["height"], b["image_format"]) == ("800", "600", "PNG")
    # Latin-1 bytes under the UTF-8 default: the page is re-decoded (charset fallback) before
    # its one parse, so the ALT text keeps its accent as the page text does; the image is kept
    assert c["alt"] == "K\xe4tzchen cat" and stats["focuscrawl/text/charset_fallback"] == 1
    # originals kept byte for byte
    assert (out / a["image_path"]).read_bytes() == JPEG
    assert a["image_path"] == f"images/{url_sha1('http://cats.test/img/a.jpg')}.jpg"
    assert (out / b["image_path"]).read_bytes() == PNG_B and (out / c["image_path"]).read_bytes() == GIF_C
    assert sorted(p.name for p in (out / "images").iterdir()) == sorted(
        Path(r["image_path"]).name for r in rows)
    # final score: geometric mean of ALT and parent-1 weighted PP
    assert a["final_context"] == "alt+parent-1"
    assert fnum(a["final_score"]) == pytest.approx((fnum(a["alt_wpp"]) * fnum(a["parent_1_wpp"])) ** 0.5)
    assert b["final_context"].startswith("title+")  # no ALT: the title stands in

    # the record of a.jpg holds both pages' contexts, first sighting first
    rec = json.loads((out / record_path("http://cats.test/img/a.jpg")).read_text())
    assert rec["record_path"] == a["record_path"] and rec["first_seen"] == 0
    assert [s["page_url"] for s in rec["sightings"]] == ["http://cats.test/", "http://cats.test/p2"]
    first, later = rec["sightings"]
    assert (first["alt"], later["alt"]) == ("tabby cat", "kitten on a mat")
    assert first["css_class"] == "size-full" and first["style"] == "border: 0"
    assert first["contexts"][0]["text"] == "kitten cat caption."  # parent-0: the caption div (<a> is empty)
    assert [(x["kind"], x["level"]) for x in first["contexts"]] == [("parent", 0), ("parent", 1), ("sibling", 0)]
    assert later["contexts"][0]["text"].startswith("cat qqq")
    assert first["extra_contexts"]["par"]["text"] == "kitten cat caption."  # extra extractor recorded
    assert later["final_score"] is not None
    assert rec["width"] == 600 and rec["image_sha1"] == hashlib.sha1(JPEG).hexdigest()
    assert rec["final_score"] == pytest.approx(fnum(a["final_score"]))
    assert not list(out.glob("records/*/.*tmp*"))

    # pages.tsv and sentences.txt.gz follow the PageItems in crawl order
    page_items = [i for i in items(tmp_path) if "sentences" in i]
    pages = read_tsv(out / "pages.tsv")
    assert list(pages[0]) == PAGE_COLUMNS
    assert [p["url"] for p in pages] == [i["url"] for i in page_items] == [
        "http://cats.test/", "http://cats.test/p2", "http://cats.test/latin"]
    assert [int(p["sentences"]) for p in pages] == [len(i["sentences"]) for i in page_items]
    sentences = gzip.decompress((out / "sentences.txt.gz").read_bytes()).decode().splitlines()
    assert sentences == [s for i in page_items for s in i["sentences"]]
    saved = json.loads((out / "stats.json").read_text())
    assert saved["focuscrawl/images/written"] == 4 and saved["finish_reason"] == "finished"


class DropPngs:
    """A project's own pipeline, after every focuscrawl stage: it gives up PNG images."""

    def process_item(self, item):
        if isinstance(item, ImageItem) and item["image_url"].endswith(".png"):
            raise DropItem("no PNG wanted")
        return item


def test_an_image_given_up_by_any_pipeline_is_not_written_wherever_that_pipeline_sits(tmp_path):
    """The image records' owner writes a first sighting once it has been through every
    pipeline and marks it dropped when any pipeline gives it up: a pipeline after the
    download (here at 900) decides as one before it would."""
    from focuscrawl import settings as project

    settings = dict(SETTINGS, JOBDIR=str(tmp_path / "job"),
                    ITEM_PIPELINES={**project.ITEM_PIPELINES, "tests.test_image_crawl.DropPngs": 900})
    with quiet(LocalWeb(site())) as web:
        stats, proc = crawl(web, tmp_path, "http://cats.test/", settings=settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "other.test/b.png" in web.requests  # downloaded, then given up
    rows = read_tsv(tmp_path / "out" / "images.tsv")
    assert [r["image_url"] for r in rows] == [
        "http://cats.test/img/a.jpg", "http://cats.test/img/moved.jpg", "http://cats.test/img/c.gif"]
    assert stats["focuscrawl/images/written"] == 3 and stats["focuscrawl/images/downloaded"] == 4
    assert not (tmp_path / "out" / record_path("http://other.test/b.png")).exists()
    seen = (tmp_path / "job" / "focuscrawl" / "images.seen").read_text().splitlines()
    assert [line.split("\t")[2:] for line in seen if "other.test/b.png" in line] == [["http://other.test/b.png", "dropped"]]
    assert (tmp_path / "job" / "focuscrawl" / "images.pending").read_bytes() == b""  # nothing left pending


def test_images_of_near_duplicate_pages_are_marked(tmp_path):
    """The real NearDuplicatePageMiddleware flags the copy; its new image is marked, the shared one merged."""
    text = " ".join(f"The cat number {w} sleeps on the warm sofa in the living room all day." for w in
                    ("one", "two", "three", "four", "five", "six", "seven", "eight"))
    def body(img_name, links=""):
        return page(f"<div><p>{text}</p>{img('/img/a.jpg', 'a cat')}{img(img_name, 'another cat')}</div>{links}")
    site = {("cats.test", "/"): Page(body("/img/b.jpg", '<a href="/copy">copy</a>')),
            ("cats.test", "/copy"): Page(body("/img/c.jpg")),
            ("cats.test", "/img/a.jpg"): Page(JPEG, "image/jpeg"),
            ("cats.test", "/img/b.jpg"): Page(JPEG, "image/jpeg"),
            ("cats.test", "/img/c.jpg"): Page(JPEG, "image/jpeg")}
    with quiet(LocalWeb(site)) as web:
        stats, proc = crawl(web, tmp_path, "http://cats.test/", settings={"FOCUSCRAWL_NEARDUP_IMAGES": "mark"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    pages = read_tsv(out / "pages.tsv")
    assert [(p["url"], p["near_duplicate_of"]) for p in pages] == [
        ("http://cats.test/", ""), ("http://cats.test/copy", "http://cats.test/")]
    rows = {r["image_url"].rsplit("/", 1)[1]: r for r in read_tsv(out / "images.tsv")}
    assert {k: r["near_duplicate_page"] for k, r in rows.items()} == {"a.jpg": "0", "b.jpg": "0", "c.jpg": "1"}
    assert stats["focuscrawl/images/kept_near_duplicate_page"] == 2
    rec = json.loads((out / rows["a.jpg"]["record_path"]).read_text())
    assert [s["near_duplicate_page"] for s in rec["sightings"]] == [False, True]
