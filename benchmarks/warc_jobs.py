"""Speed-up of ``focuscrawl warc --jobs N`` over ``--jobs 1`` on generated WARC files.

Writes ``--files`` WARC files of ``--pages`` pages each (the pages of
``crawl_throughput.py``'s web: ~12 sentences, ~20 links, 3 images, every image
stored too), replays them with ``--jobs 1`` and ``--jobs N`` (``--repeat`` interleaved
rounds), prints wall seconds, pages/s and the speed-up (target: >= 1.6x for 2 jobs
on >= 4 files), and checks that both merged run directories are identical (image files
too) and hold the same page rows as a replay without ``--jobs``.

    python benchmarks/warc_jobs.py [--files 4] [--pages 150] [--jobs 2] [--repeat 2]
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from warcio.warcwriter import WARCWriter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crawl_throughput import jpeg_bytes, page_html  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def write_archives(directory: Path, files: int, pages: int) -> list[str]:
    jpeg = jpeg_bytes()
    n_pages = files * pages
    paths = []
    for f in range(files):
        path = directory / f"bench-{f}.warc.gz"
        with open(path, "wb") as fh:
            writer = WARCWriter(fh, gzip=True)
            for i in range(f * pages, (f + 1) * pages):
                for url, ctype, body in [(f"http://bench.test/p/{i}", "text/html; charset=utf-8", page_html(i, n_pages))] + [
                        (f"http://bench.test/img/{i}-{k}.jpg", "image/jpeg", jpeg) for k in range(3)]:
                    payload = (f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
                               .encode() + body)
                    writer.write_record(writer.create_warc_record(
                        url, "response", payload=io.BytesIO(payload), length=len(payload),
                        warc_content_type="application/http; msgtype=response"))
        paths.append(str(path))
    return paths


def replay(paths: list[str], out: Path, jobs: int) -> tuple[float, float, dict]:
    """Wall and CPU seconds (the command and its processes, user + system) and the summary;
    ``jobs`` 0: no ``--jobs`` (every file in one process, with its analysis pool)."""
    cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", *paths, "-o", str(out), "--json",
           *(["--jobs", str(jobs)] if jobs else []), "-s", "LOG_LEVEL=WARNING", "-s", "FOCUSCRAWL_PROGRESS_INTERVAL=0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, json.loads(proc.stdout.strip().splitlines()[-1])


def run_files(out: Path) -> dict[str, bytes]:
    names = ["pages.tsv", "sentences.txt.gz", "images.tsv"]
    names += sorted(str(p.relative_to(out)) for p in (out / "records").glob("*/*.json"))
    names += sorted(str(p.relative_to(out)) for p in (out / "images").glob("*"))
    return {name: (out / name).read_bytes() for name in names if (out / name).exists()}


def page_rows(out: Path) -> dict[str, dict]:
    """pages.tsv rows by URL without ``depth`` (a replay without --jobs follows links
    between files, so its depths differ) and in no order."""
    with open(out / "pages.tsv", newline="", encoding="utf-8") as fh:
        return {r["url"]: {k: v for k, v in r.items() if k != "depth"} for r in csv.DictReader(fh, delimiter="\t")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--pages", type=int, default=150, help="pages per file")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="focuscrawl-warc-jobs-") as tmp:
        tmp = Path(tmp)
        paths = write_archives(tmp, args.files, args.pages)
        print(f"{args.files} WARC files x {args.pages} pages (3 images each); --jobs 1 vs --jobs {args.jobs}, "
              f"{args.repeat} interleaved rounds")
        speedups, seconds = [], {0: [], 1: [], args.jobs: []}
        outs = {}
        for n in range(args.repeat):
            for jobs in (0, 1, args.jobs):
                out = tmp / f"run-{jobs}-{n}"
                secs, cpu, summary = replay(paths, out, jobs)
                seconds[jobs].append(secs)
                summary.setdefault("pages", summary.get("focuscrawl/pages/written"))
                summary.setdefault("images", summary.get("focuscrawl/images/written"))
                outs[jobs] = out
                print(f"  round {n + 1} {f'--jobs {jobs}' if jobs else 'no --jobs'}: {secs:.1f} s, {summary['pages']} pages "
                      f"({summary['pages'] / secs:.1f} pages/s), {summary['images']} images, CPU {cpu:.1f} s "
                      f"({1000 * cpu / summary['pages']:.1f} ms a page)", flush=True)
            speedups.append(seconds[1][-1] / seconds[args.jobs][-1])
        same = run_files(outs[1]) == run_files(outs[args.jobs])
        med = statistics.median(speedups)
        print(f"speed-up --jobs {args.jobs} / --jobs 1: {med:.2f}x (rounds {min(speedups):.2f}-{max(speedups):.2f}; "
              f"target >= 1.6x: {'OK' if med >= 1.6 else 'BELOW TARGET'}); merged outputs identical: {same}")
        single = [one / many for one, many in zip(seconds[0], seconds[args.jobs])]
        print(f"speed-up --jobs {args.jobs} / no --jobs (one process, its analysis pool): "
              f"{statistics.median(single):.2f}x (rounds {min(single):.2f}-{max(single):.2f}); same pages.tsv rows "
              f"(depth aside): {page_rows(outs[0]) == page_rows(outs[args.jobs])}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
