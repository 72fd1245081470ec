"""Speed of the image half of a crawl: extraction per page, and images/s through the pipelines.

    python benchmarks/image_pipelines.py [--data ../shared/data] [--pages 40] [--images 10]

Part 1 (real pages, no crawl): ``image_items`` (HTML rules, thesis context, LM
scores) over the article-extraction-benchmark pages, against lxml parsing of the
same pages as baseline.

Part 2 (real crawl of a local web on 127.0.0.1, focused spider, bundled model):
the same site crawled without a run directory (no merge/download/writers: the
baseline) and with one; prints pages/s, images written per second and the ratio.
"""
from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lxml import html as lhtml  # noqa: E402

from focuscrawl.images.extract import image_items  # noqa: E402
from focuscrawl.lm.scorer import TopicScorer  # noqa: E402
from focuscrawl.topic.model import default_keywords_path, default_model_path  # noqa: E402


def part1(data: Path) -> None:
    pages = [gzip.decompress(p.read_bytes()) for p in sorted((data / "article-extraction-benchmark" / "html").glob("*.html.gz"))]
    scorer = TopicScorer.from_files(default_model_path(), default_keywords_path())
    t0 = time.perf_counter()
    roots = [lhtml.fromstring(p) for p in pages]
    parse = time.perf_counter() - t0
    t0 = time.perf_counter()
    seen = kept = 0
    reasons: dict[str, int] = {}
    for root in roots:
        for d in image_items(root, "http://example.test/", scorer):
            seen += 1
            kept += d.reason is None
            if d.reason:
                reasons[d.reason] = reasons.get(d.reason, 0) + 1
    extract = time.perf_counter() - t0
    print(f"part 1: {len(pages)} real pages, {seen} <img>, {kept} kept; drops {dict(sorted(reasons.items()))}")
    print(f"  lxml parse (baseline): {parse * 1000 / len(pages):.2f} ms/page")
    print(f"  image_items:           {extract * 1000 / len(pages):.2f} ms/page, {seen / extract:.0f} <img>/s, "
          f"{extract / parse:.2f}x parse time")


def part2(n_pages: int, n_images: int, concurrency: int, repeat: int) -> None:
    from tests.support.crawl import crawl
    from tests.support.imagesite import image_bytes
    from tests.support.localweb import LocalWeb, Page

    site = {}
    for i in range(n_pages):
        imgs = "".join(f'<p>cat number {j} sits on the mat.</p><img src="/img/{i}-{j}.jpg" alt="a cat {i} {j}" '
                       f'width="600" height="400">' for j in range(n_images))
        links = "".join(f'<a href="/p{k}">cat page {k}</a>' for k in (i + 1, i + 2) if k < n_pages)
        site[("bench.test", f"/p{i}")] = Page(f"<html><body><div><p>The cat sat on the mat and purred.</p>"
                                              f"{imgs}</div>{links}</body></html>")
        for j in range(n_images):
            site[("bench.test", f"/img/{i}-{j}.jpg")] = Page(image_bytes("JPEG", color=(i % 256, j * 20 % 256, 90)),
                                                              "image/jpeg")
    settings = {"CONCURRENT_REQUESTS": concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency, "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 5_000_000,
                "LOG_LEVEL": "WARNING", "FEEDS": {}, "FOCUSCRAWL_LINKS_LOG": False}
    results = {}
    with LocalWeb(site) as web:
        for name, output, jobdir in (("baseline (no run dir)", "", False), ("with image pipelines", None, False),
                                     ("pipelines + JOBDIR", None, True)):
            for _ in range(repeat):  # best of N: the machine is shared
                with tempfile.TemporaryDirectory() as tmp:
                    tmp = Path(tmp)
                    extra = {} if output is None else {"output": ""}
                    run_settings = {**settings, "JOBDIR": str(tmp / "job")} if jobdir else settings
                    t0 = time.perf_counter()
                    stats, proc = crawl(web, tmp, "http://bench.test/p0", settings=run_settings, timeout=600,
                                        model=str(default_model_path()), keywords=str(default_keywords_path()),
                                        **extra)
                    wall = time.perf_counter() - t0
                    if proc.returncode != 0:
                        raise SystemExit(proc.stderr[-2000:])
                    best = results.get(name)
                    if best is None or float(stats["elapsed_time_seconds"]) < float(best[1]["elapsed_time_seconds"]):
                        results[name] = (wall, stats)
    base_crawl = float(results["baseline (no run dir)"][1]["elapsed_time_seconds"])
    print(f"part 2: local crawl, {n_pages} pages x {n_images} images (600x400 JPEG), focused spider, "
          f"concurrency {concurrency}, best of {repeat}; "
          f"crawl time = Scrapy's elapsed_time_seconds (no start-up), wall = whole subprocess")
    for name, (wall, stats) in results.items():
        written = stats.get("focuscrawl/images/written", 0)
        secs = float(stats["elapsed_time_seconds"])
        print(f"  {name:24s} crawl {secs:6.2f} s (wall {wall:5.2f} s)  pages {stats.get('focuscrawl/pages/crawled', 0)}  "
              f"{stats.get('focuscrawl/pages/crawled', 0) / secs:6.1f} pages/s  images kept {stats.get('focuscrawl/images/kept', 0)}  "
              f"written {written}  {written / secs:6.1f} images/s  ratio {secs / base_crawl:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--images", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=32,
                    help="CONCURRENT_REQUESTS(_PER_DOMAIN): image downloads are latency-bound")
    ap.add_argument("--repeat", type=int, default=3, help="crawls per variant; the fastest counts")
    args = ap.parse_args()
    part1(args.data)
    part2(args.pages, args.images, args.concurrency, args.repeat)


if __name__ == "__main__":
    main()
