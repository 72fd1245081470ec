"""``focuscrawl warc --engine dask`` (a local cluster of N workers) against ``--jobs N``.

The files of ``warc_jobs.py`` (``--files`` WARC files of ``--pages`` pages, 3 stored images
each), replayed with ``--jobs N`` and with ``--engine dask --jobs N`` (``--repeat``
interleaved rounds): wall and CPU seconds (the command and every process under it), pages/s,
the engine's time over ``--jobs``'s, and whether the merged run directories are identical.

    python benchmarks/warc_engine.py [--files 4] [--pages 150] [--jobs 2] [--repeat 2]
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from warc_jobs import REPO, run_files, write_archives  # noqa: E402


def replay(paths: list[str], out: Path, jobs: int, engine: bool) -> tuple[float, float, dict]:
    """Wall and CPU seconds (user + system of the command and its processes) and the summary."""
    cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", *paths, "-o", str(out), "--json", "--jobs", str(jobs),
           *(["--engine", "dask"] if engine else []), "-s", "LOG_LEVEL=WARNING", "-s", "FOCUSCRAWL_PROGRESS_INTERVAL=0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, \
        json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--pages", type=int, default=150, help="pages per file")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="focuscrawl-warc-engine-") as tmp:
        tmp = Path(tmp)
        paths = write_archives(tmp, args.files, args.pages)
        print(f"{args.files} WARC files x {args.pages} pages (3 images each); --jobs {args.jobs} vs "
              f"--engine dask --jobs {args.jobs} (local cluster), {args.repeat} interleaved rounds")
        ratios, outs, same = [], {}, True
        for n in range(args.repeat):
            wall = {}
            for engine in (False, True):
                out = tmp / f"run-{engine}-{n}"
                secs, cpu, summary = replay(paths, out, args.jobs, engine)
                wall[engine], outs[engine] = secs, out
                print(f"  round {n + 1} {'--engine dask' if engine else '--jobs'}: {secs:.1f} s, {summary['pages']} "
                      f"pages ({summary['pages'] / secs:.1f} pages/s), {summary['images']} images, CPU {cpu:.1f} s "
                      f"({1000 * cpu / summary['pages']:.1f} ms a page), {summary['finish_reason']}", flush=True)
            ratios.append(wall[True] / wall[False])
            same = same and run_files(outs[True]) == run_files(outs[False])
        print(f"--engine dask / --jobs {args.jobs} wall time: {statistics.median(ratios):.2f}x "
              f"(rounds {min(ratios):.2f}-{max(ratios):.2f}); merged outputs identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
