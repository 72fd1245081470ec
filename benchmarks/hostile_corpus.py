"""Hostile inputs at full size (issues #16, #31): peak RSS and time of `focuscrawl warc` over the
generated bad-input corpus; damaged topic bundles (`topic show`, `score --topic`), bad
`topic build` inputs, damaged run directories (`rank`, tests/support/damaged_runs.py),
`warc --jobs 2` with a file that is not an archive; and a crawl of the trap site with every
trap default. Every command runs in its own process group with a time limit: a hang is
counted and the group killed.

    python benchmarks/hostile_corpus.py [--huge-mib 1024] [--skip-trap] [--only archives,bundles,runs,jobs]

Inputs are generated into a temporary directory (tests/support/hostile.py: a gzip of
N MiB of zeros is ~N KB on disk) and removed afterwards; the trap site runs on
127.0.0.1. Prints one JSON line per measurement and a summary line per section
(tracebacks, hangs).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.damaged_runs import damaged_run_corpus  # noqa: E402
from tests.support.hostile import TrapSite, archive_corpus, damaged_bundles, warc_jobs_inputs  # noqa: E402
from tests.support.toymodel import build_topic_bundle, write_topic_corpora  # noqa: E402

CLI = [sys.executable, "-m", "focuscrawl.cli"]
SECTIONS = ("archives", "bundles", "runs", "jobs")

def measured(cmd: list[str], err: Path) -> tuple[int, float, float, int]:
    """(exit code, seconds, peak RSS MB, stderr bytes) of ``cmd`` run in a fresh parent."""
    wrapper = ("import resource, subprocess, sys\n"
               f"with open({str(err)!r}, 'wb') as e:\n"
               "    rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=e)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(rc)")
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], cwd=ROOT, capture_output=True, text=True)
    return proc.returncode, time.monotonic() - t, int(proc.stdout.split()[-1]) / 1024, err.stat().st_size


def bounded(cmd: list[str], timeout: float) -> tuple[int | None, float, str]:
    """(exit code or None for a hang, seconds, stderr) of ``cmd`` in its own process group."""
    t = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        code = None
    return code, time.monotonic() - t, err


def section(name: str, results: list[dict]) -> None:
    for r in results:
        print(json.dumps(r))
    print(json.dumps({"section": name, "commands": len(results), "tracebacks": sum(r["tracebacks"] for r in results),
                      "hangs": sum(r["exit"] is None for r in results)}))


def run_all(cases: dict[str, list[str]], timeout: float) -> list[dict]:
    results = []
    for case, cmd in cases.items():
        code, secs, err = bounded(cmd, timeout)
        results.append({"case": case, "exit": code, "seconds": round(secs, 1), "tracebacks": err.count("Traceback"),
                        "last_line": (err.strip().splitlines() or [""])[-1][:160]})
    return results


def bundle_cases(tmp: Path) -> dict[str, list[str]]:
    pos, neu = write_topic_corpora(tmp / "corpora")
    good = build_topic_bundle((pos, neu), tmp / "good")
    cases = {}
    for case, (folder, _) in damaged_bundles(good, tmp / "damaged").items():
        cases[f"topic show: {case}"] = CLI + ["topic", "show", str(folder)]
        cases[f"score --topic: {case}"] = CLI + ["score", "--topic", str(folder), "a cat on the sofa"]
    noise = tmp / "noise.bin"
    noise.write_bytes(os.urandom(300_000))
    build = CLI + ["topic", "build", "--order", "2", "--background-order", "2"]
    cases["topic build: neutral = positive"] = build + ["--positive", str(pos), "--neutral", str(pos), "-o",
                                                        str(tmp / "same")]
    cases["topic build: random binary positive"] = build + ["--positive", str(noise), "--neutral", str(neu),
                                                            "-o", str(tmp / "noise")]
    cases["topic build: a folder"] = build + ["--positive", str(pos.parent), "--neutral", str(neu), "-o",
                                              str(tmp / "folder")]
    cases["topic build: --order 9"] = CLI + ["topic", "build", "--order", "9", "--positive", str(pos), "--neutral",
                                             str(neu), "-o", str(tmp / "order9")]
    cases["train-lm: a folder"] = CLI + ["train-lm", "-o", str(tmp / "lm.arpa"), str(pos.parent)]
    cases["train-lm: -T FILE"] = CLI + ["train-lm", "-T", str(pos), "-o", str(tmp / "lm.arpa"), str(pos)]
    return cases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--huge-mib", type=int, default=1024, help="size of the zeros / long line / body (MiB)")
    ap.add_argument("--skip-trap", action="store_true")
    ap.add_argument("--only", default=",".join(SECTIONS), help="sections to run (default: all of %(default)s)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds before a command counts as hung")
    args = ap.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="focuscrawl-hostile-") as tmp:
        tmp = Path(tmp)
        if "archives" in only:
            t = time.monotonic()
            corpus = archive_corpus(tmp / "corpus", huge=args.huge_mib * 1024 * 1024)
            print(json.dumps({"generated_files": len(corpus), "seconds": round(time.monotonic() - t, 1),
                              "bytes_on_disk": sum(c["path"].stat().st_size for c in corpus.values())}))
            warc = CLI + ["warc"]
            for name, c in corpus.items():
                rc, secs, rss, err = measured(warc + [str(c["path"]), "-o", str(tmp / f"out-{name}")],
                                              tmp / f"{name}.err")
                text = (tmp / f"{name}.err").read_text(errors="replace")
                print(json.dumps({"warc": name, "exit": rc, "seconds": round(secs, 1), "peak_rss_mb": round(rss),
                                  "stderr_bytes": err, "tracebacks": text.count("Traceback")}))
        if "bundles" in only:
            section("bundles", run_all(bundle_cases(tmp / "bundles"), args.timeout))
        if "runs" in only:
            runs = damaged_run_corpus(tmp / "runs")
            results = run_all({name: CLI + ["rank", str(c["path"]), "-o", str(tmp / f"{name}.tsv")]
                               for name, c in runs.items()}, args.timeout)
            section("runs", [{**r, "expected_exit": runs[r["case"]]["exit"]} for r in results])
        if "jobs" in only:
            section("jobs", run_all({f"warc --jobs 2: {case}": CLI + ["warc", *map(str, files), "--jobs", "2", "-o",
                                                                      str(tmp / f"jobs-{n}")]
                                     for n, (case, files) in enumerate(warc_jobs_inputs(tmp / "jobs").items())},
                                    args.timeout))
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
