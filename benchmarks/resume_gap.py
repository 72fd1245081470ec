"""The SIGKILL gap: how much work a killed crawl loses on resume, with and without the frontier journal.

    python benchmarks/resume_gap.py [--pages 60] [--kill-after 10,25,40]

A local web (a tree of N pages, each with one image) is crawled with JOBDIR and a
run directory; the crawl is killed with SIGKILL after K page rows, then resumed
with the same JOBDIR until it finishes. Reported per K, for
``FOCUSCRAWL_FRONTIER_JOURNAL`` on and off: pages and images missing compared with
the whole site, duplicated rows, pages fetched twice, and what the resumed crawl
said it recovered / could not recover.
"""
from __future__ import annotations

import argparse
import csv
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.support.localweb import LocalWeb, Page, png_bytes  # noqa: E402

TEXT = "The cat sleeps on the sofa and the kitten plays with the cat toy all day long."


def tree_site(n: int) -> dict[str, Page]:
    pages = {"/robots.txt": Page(b"User-agent: *\nAllow: /\n", "text/plain")}
    for i in range(n):
        links = "".join(f'<a href="/p{j}">cat page {j}</a>' for j in range(3 * i + 1, 3 * i + 4) if j < n)
        pages[f"/p{i}"] = Page(f'<html><body><div><p>{TEXT} Page {i}.</p><img src="/u{i}.png" alt="cat {i}" '
                               f'width="640" height="480"></div>{links}</body></html>'.encode())
        pages[f"/u{i}.png"] = Page(png_bytes(640, 480, (i % 250, 10, 10)), "image/png")
    return pages


def crawl_cmd(web, out: Path, job: Path, journal: bool) -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"seeds={web.base}/p0", "-a", f"output={out}"]
    for s in (f"JOBDIR={job}", "DOWNLOAD_DELAY=0.05", "RANDOMIZE_DOWNLOAD_DELAY=False", "AUTOTHROTTLE_ENABLED=False",
              "CONCURRENT_REQUESTS=4", "LOG_LEVEL=WARNING", "FOCUSCRAWL_PROGRESS_INTERVAL=0",
              "FOCUSCRAWL_SENTENCES_BATCH_BYTES=0", f"FOCUSCRAWL_FRONTIER_JOURNAL={journal}"):
        cmd += ["-s", s]
    return cmd


def column(path: Path, name: str) -> list[str]:
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return [r[name] for r in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)]


def one(n: int, kill_after: int, journal: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp, LocalWeb(tree_site(n)) as web:
        out, job = Path(tmp) / "out", Path(tmp) / "job"
        proc = subprocess.Popen(crawl_cmd(web, out, job, journal), cwd=REPO, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(column(out / "pages.tsv", "url")) < kill_after and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rows_at_kill = len(column(out / "pages.tsv", "url"))
        resumed = subprocess.run(crawl_cmd(web, out, job, journal), cwd=REPO, capture_output=True, text=True,
                                 timeout=300)
        stats = json.loads((out / "stats.json").read_text()) if (out / "stats.json").exists() else {}
        pages, images = column(out / "pages.tsv", "url"), column(out / "images.tsv", "image_url")
        fetched = Counter(p for p in web.fetched() if p.startswith("/p"))
        return {
            "journal": journal, "kill_after_rows": rows_at_kill, "resume_exit": resumed.returncode,
            "pages_missing": n - len(set(pages)), "images_missing": n - len(set(images)),
            "duplicate_page_rows": len(pages) - len(set(pages)),
            "duplicate_image_rows": len(images) - len(set(images)),
            "pages_fetched_twice": sum(1 for c in fetched.values() if c > 1),
            "recovered": stats.get("focuscrawl/frontier/recovered"),
            "recovered_pages_without_rows": stats.get("focuscrawl/frontier/recovered_pages_without_rows"),
            "unrecovered": stats.get("focuscrawl/frontier/unrecovered"),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--kill-after", default="10,25,40")
    args = parser.parse_args()
    results = [one(args.pages, int(k), journal) for k in args.kill_after.split(",") for journal in (True, False)]
    for r in results:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
