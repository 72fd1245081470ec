"""The page analysis gives the same run directory in the crawl process and on the worker pool.

Two deterministic crawls (one request at a time) of the same local web with the bundled
model, ``FOCUSCRAWL_ANALYSIS_WORKERS=0`` and ``=1``: same pages.tsv rows (but the fetch
time), same sentences, same images.tsv rows (in download order) and records, same links log and LM
counts; the second crawl really analysed its pages in a worker process.
"""
from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

from tests.support.crawl import crawl
from tests.support.localweb import LocalWeb, Page, png_bytes

CAT = ("The tabby cat sleeps on the warm sofa while the kitten chases a ball of wool.",
       "A Maine Coon is a large domestic cat breed with a long fluffy tail and tufted ears.",
       "Football fans crowded the stadium to watch the final match of the season.")


def site(n: int = 8) -> dict[str, Page]:
    pages = {"/robots.txt": Page(b"User-agent: *\nAllow: /\n", "text/plain")}
    for i in range(n):
        text = " ".join(CAT[(i + k) % 3] for k in range(3 + i % 2))
        links = "".join(f'<li><a href="/p{j}">{CAT[j % 3].split()[1]} page {j}</a></li>'
                        for j in range(n) if j != i)
        figures = "".join(
            f'<figure><img src="/img{i}-{k}.png" alt="cat picture {i} {k}" width="640" height="480">'
            f"<figcaption>{CAT[(i + k) % 3]}</figcaption></figure>" for k in range(2))
        shared = '<p><img src="/shared.png" alt="our cat logo" width="640" height="480"></p>'
        body = (f"<html><head><title>Page {i}</title></head><body><nav><ul>{links}</ul></nav>"
                f"<main><h1>Cats {i}</h1><p>{text}</p>{figures}{shared}</main></body></html>")
        pages[f"/p{i}"] = Page(body)
        for k in range(2):
            pages[f"/img{i}-{k}.png"] = Page(png_bytes(640, 480, (i * 20, k * 90, 50)), "image/png")
    pages["/shared.png"] = Page(png_bytes(640, 480, (1, 2, 3)), "image/png")
    # a near-duplicate of page 0
    pages["/p0-copy"] = Page(pages["/p0"].body.replace(b"Cats 0", b"Cats 0 again"))
    pages["/p1"] = Page(pages["/p1"].body.replace(b"</ul>", b'<li><a href="/p0-copy">cats again</a></li></ul>'))
    return pages


def tsv(path: Path, drop=("fetched_at",)) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: v for k, v in r.items() if k not in drop} for r in csv.DictReader(fh, delimiter="\t")]


def records(out: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted((out / "records").glob("*/*.json"))}


def test_pool_and_in_process_analysis_write_the_same_run(tmp_path):
    runs = {}
    with LocalWeb(site()) as web:
        for workers in (0, 1):
            tmp = tmp_path / f"w{workers}"
            tmp.mkdir()
            stats, proc = crawl(web, tmp, f"{web.base}/p0", settings={"FOCUSCRAWL_ANALYSIS_WORKERS": workers},
                                model="", keywords="", timeout=180)
            assert proc.returncode == 0, proc.stderr[-3000:]
            runs[workers] = (tmp / "out", stats)
    (a, stats_a), (b, stats_b) = runs[0], runs[1]
    pages = tsv(a / "pages.tsv")
    assert len(pages) == 9 and pages == tsv(b / "pages.tsv")
    assert all(float(p["perplexity"]) > 0 for p in pages)
    assert any(p["near_duplicate_of"] for p in pages)  # SimHash ran (in the worker for b)
    assert gzip.decompress((a / "sentences.txt.gz").read_bytes()) == gzip.decompress(
        (b / "sentences.txt.gz").read_bytes())
    # rows are written as downloads finish (concurrently): the same rows, keyed by URL
    images = {r["image_url"]: r for r in tsv(a / "images.tsv", drop=())}
    assert len(images) == 17 and images == {r["image_url"]: r for r in tsv(b / "images.tsv", drop=())}
    assert records(a) == records(b)
    assert (a / "links.tsv").read_text() == (b / "links.tsv").read_text()
    for key in ("focuscrawl/lm/queries", "focuscrawl/images/kept", "focuscrawl/links/found", "focuscrawl/neardup/near_duplicates"):
        assert stats_a.get(key) == stats_b.get(key), key
    assert stats_a.get("focuscrawl/analysis/pool_pages") is None
    assert stats_b["focuscrawl/analysis/pool_pages"] == 9

