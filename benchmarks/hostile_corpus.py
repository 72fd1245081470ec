"""Hostile inputs at full size (issue #16): peak RSS and time of `focuscrawl warc` over the
generated bad-input corpus, `focuscrawl rank` over damaged run directories (issue #31), and
a crawl of the trap site with every trap default.

    python benchmarks/hostile_corpus.py [--huge-mib 1024] [--skip-trap]

Inputs are generated into a temporary directory (tests/support/hostile.py: a gzip of
N MiB of zeros is ~N KB on disk) and removed afterwards; the trap site runs on
127.0.0.1. Prints one JSON line per measurement.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.damaged_runs import damaged_run_corpus  # noqa: E402
from tests.support.hostile import TrapSite, archive_corpus  # noqa: E402

def measured(cmd: list[str], err: Path) -> tuple[int, float, float, int]:
    """(exit code, seconds, peak RSS MB, stderr bytes) of ``cmd`` run in a fresh parent."""
    wrapper = ("import resource, subprocess, sys\n"
               f"with open({str(err)!r}, 'wb') as e:\n"
               "    rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=e)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(rc)")
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], cwd=ROOT, capture_output=True, text=True)
    return proc.returncode, time.monotonic() - t, int(proc.stdout.split()[-1]) / 1024, err.stat().st_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--huge-mib", type=int, default=1024, help="size of the zeros / long line / body (MiB)")
    ap.add_argument("--skip-trap", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="focuscrawl-hostile-") as tmp:
        tmp = Path(tmp)
        t = time.monotonic()
        corpus = archive_corpus(tmp / "corpus", huge=args.huge_mib * 1024 * 1024)
        print(json.dumps({"generated_files": len(corpus), "seconds": round(time.monotonic() - t, 1),
                          "bytes_on_disk": sum(c["path"].stat().st_size for c in corpus.values())}))
        warc = [sys.executable, "-m", "focuscrawl.cli", "warc"]
        for name, c in corpus.items():
            rc, secs, rss, err = measured(warc + [str(c["path"]), "-o", str(tmp / f"out-{name}")], tmp / f"{name}.err")
            text = (tmp / f"{name}.err").read_text(errors="replace")
            print(json.dumps({"warc": name, "exit": rc, "seconds": round(secs, 1), "peak_rss_mb": round(rss),
                              "stderr_bytes": err, "tracebacks": text.count("Traceback")}))
        rank = [sys.executable, "-m", "focuscrawl.cli", "rank"]
        for name, c in damaged_run_corpus(tmp / "runs").items():
            rc, secs, rss, err = measured(rank + [str(c["path"]), "-o", str(tmp / f"{name}.tsv")], tmp / f"{name}.err")
            text = (tmp / f"{name}.err").read_text(errors="replace")
            print(json.dumps({"rank": name, "exit": rc, "expected_exit": c["exit"], "seconds": round(secs, 1),
                              "stderr_lines": len(text.splitlines()), "tracebacks": text.count("Traceback")}))
        if not args.skip_trap:
            with TrapSite() as site:
                settings = ["DOWNLOAD_DELAY=0", "AUTOTHROTTLE_ENABLED=False", "FOCUSCRAWL_PROGRESS_INTERVAL=0"]
                cmd = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"seeds={site.base}/page/0",
                       "-a", f"output={tmp / 'trap'}"]
                for s in settings:
                    cmd += ["-s", s]
                rc, secs, rss, err = measured(cmd, tmp / "trap.err")
                stats = json.loads((tmp / "trap" / "stats.json").read_text())
                pages = site.fetched()
                print(json.dumps({"trap_site": "defaults (no delay)", "exit": rc, "seconds": round(secs, 1),
                                  "finish_reason": stats.get("finish_reason"), "pages": len(pages),
                                  "trap_pages": sum(TrapSite.is_trap(p) for p in pages),
                                  "real_pages": len({p for p in pages if not TrapSite.is_trap(p)}),
                                  "peak_rss_mb": round(rss),
                                  "guards": {k: v for k, v in stats.items() if k.startswith("focuscrawl/scope/")
                                             or k.startswith("depth/")}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
