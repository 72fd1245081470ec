"""Resuming a large JOBDIR crawl: restart time, restart memory, lost and repeated rows.

A ``keywords`` crawl (everything as shipped, JOBDIR and a run directory) of
``--pages`` pages on the generated web of ``crawl_throughput.py`` (10 pages a crawled
page, ~20 links and 3 images each, served on 127.0.0.1) is stopped when
``pages.tsv`` has ``--stop-at`` (default half) of its rows, then started again on
the same JOBDIR and output directory and run to its page budget. Two stops:

* ``kill``: SIGKILL (as an OOM kill or a power cut): the frontier journal recovers
  the queue (``focuscrawl/frontier.py``);
* ``clean``: SIGINT (Scrapy finishes what is in flight and saves its queue).

Printed for each: ``frontier.log`` at the stop (MB, bytes a page row) and after the
restart; the restart's time to its first row of a page not in ``pages.tsv`` at the
stop, against the first session's start to its first row (the crawl's own start-up
cost: ratio); the restart's peak RSS (crawl + workers) up to that row, against the RSS
at the stop; the restart's recovery stats; and against the rows at the stop: committed
rows lost (a URL of ``pages.tsv``'s checkpoint at the stop that is not in the final one:
must be 0), rows repeated (final rows - distinct URLs: must be 0), rows after the
checkpoint (cut back by the restart, their pages queued again; a best-first crawl that
reaches its budget first leaves some of them queued) and the final row count (= ``--pages``).

    python benchmarks/resume_scale.py [--pages 10000] [--stop-at 5000] [--stops kill clean] [--ab SRC]

``--ab SRC``: the first session runs focuscrawl from the checkout ``SRC`` (e.g. ``git
archive main | tar -x -C SRC``), and its stopped state is restarted twice, from a copy
each time: by this checkout and by ``SRC`` (order alternating by round); this
checkout's numbers are printed against ``SRC``'s.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crawl_throughput import _tree_rss, crawl_result, start_crawl, start_server  # noqa: E402

STOP_SIGNAL = {"kill": signal.SIGKILL, "clean": signal.SIGINT}


def page_urls(path: Path, start: int = 0, end: int | None = None) -> list[str]:
    """The url column of ``pages.tsv``'s whole rows from byte ``start`` (0 or a row's start) to ``end``."""
    if not path.exists():
        return []
    with open(path, "rb") as f:
        column = f.readline().decode().split("\t").index("url")
        f.seek(max(start, f.tell()))
        lines = f.read(None if end is None else max(end - f.tell(), 0)).split(b"\n")[:-1]  # a torn last line is not a row
    return [line.decode("utf-8", "replace").split("\t")[column] for line in lines]


def checkpoint(job: Path) -> int:
    """Bytes of ``pages.tsv`` in the JOBDIR's last checkpoint (what a restart keeps)."""
    try:
        return json.loads((job / "focuscrawl" / "offsets.json").read_text())["files"]["pages.tsv"]
    except (OSError, KeyError, ValueError):
        return 0


class Watch:
    """Polls a crawl process: its tree RSS (peak) and ``pages.tsv`` until a condition holds."""

    def __init__(self, proc, pages_tsv: Path) -> None:
        self.proc, self.pages_tsv, self.start, self.peak = proc, pages_tsv, time.monotonic(), 0

    def until(self, done, timeout: float) -> float:
        """Seconds from the process start until ``done()`` (polled every 50 ms)."""
        deadline = self.start + timeout
        while time.monotonic() < deadline:
            self.peak = max(self.peak, _tree_rss(self.proc.pid))
            if done():
                return time.monotonic() - self.start
            if self.proc.poll() is not None:
                raise RuntimeError(f"the crawl ended ({self.proc.returncode}) before it was expected to: "
                                   f"{crawl_result(self.proc)}")
            time.sleep(0.05)
        raise RuntimeError(f"timed out after {timeout:.0f} s")


def rows(path: Path) -> int:
    return max(path.read_bytes().count(b"\n") - 1, 0) if path.exists() else 0


def scenario(stop: str, port: int, pages: int, stop_at: int, restarts: list[tuple[str, str | None]],
             extra: list[str]) -> list[dict]:
    """One crawl stopped at ``stop_at`` rows by ``stop``; then each of ``restarts`` (label, checkout)
    restarts it from a copy of the same stopped state and runs it to its end."""
    with tempfile.TemporaryDirectory(prefix="focuscrawl-resume-scale-") as tmp:
        try:
            return _scenario(Path(tmp), stop, port, pages, stop_at, restarts, extra)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; crawl log: {(Path(tmp) / 'crawl.log').read_text()[-2000:]}") from None


def _scenario(tmp: Path, stop: str, port: int, pages: int, stop_at: int, restarts: list[tuple[str, str | None]],
              extra: list[str]) -> list[dict]:
    """``scenario`` in the folder ``tmp``; the first session runs the last restart's checkout
    (with ``--ab``: the baseline, whose state both read)."""
    job, out, saved = tmp / "job", tmp / "out", tmp / "stopped"
    tsv, journal = out / "pages.tsv", job / "focuscrawl" / "frontier.log"
    settings = [*extra, f"FOCUSCRAWL_OUTPUT_DIR={out}"]
    log = open(tmp / "crawl.log", "w")  # not a pipe: nobody reads it while the crawl runs
    proc = start_crawl("keywords", port, pages, str(job), extra=settings, source=restarts[-1][1], stderr=log)
    watch = Watch(proc, tsv)
    first_row = watch.until(lambda: rows(tsv) >= 1, 600)
    watch.until(lambda: rows(tsv) >= stop_at, 3600)
    rss_at_stop = _tree_rss(proc.pid)
    proc.send_signal(STOP_SIGNAL[stop])
    proc.wait(600) if stop == "kill" else crawl_result(proc)
    at_stop = set(page_urls(tsv))
    stopped_rows = rows(tsv)
    journal_mb = journal.stat().st_size / 1024 ** 2
    kept = checkpoint(job)
    committed = set(page_urls(tsv, 0, kept))  # the rows a restart keeps
    if len(restarts) > 1:  # every restart starts from the same stopped state
        shutil.copytree(job, saved / "job", symlinks=True)
        shutil.copytree(out, saved / "out", symlinks=True)
    results = []
    for n, (label, source) in enumerate(restarts):
        if n:
            shutil.rmtree(job)
            shutil.rmtree(out)
            shutil.copytree(saved / "job", job, symlinks=True)
            shutil.copytree(saved / "out", out, symlinks=True)
        proc = start_crawl("keywords", port, pages, str(job), extra=settings, source=source, stderr=log)
        watch = Watch(proc, tsv)
        # a page not in pages.tsv at the stop (rows cut back to the checkpoint and crawled again do not count)
        to_new_row = watch.until(lambda: any(u not in at_stop for u in page_urls(tsv, kept)), 1200)
        restart_peak = watch.peak
        result = crawl_result(proc)
        final = page_urls(tsv)
        results.append({
            "label": label, "stop": stop, "stopped_rows": stopped_rows, "journal_mb": journal_mb,
            "journal_mb_after": journal.stat().st_size / 1024 ** 2 if journal.exists() else 0.0,
            "first_row_s": first_row, "to_new_row_s": to_new_row,
            "rss_at_stop_mb": rss_at_stop / 1024 ** 2, "restart_peak_mb": restart_peak / 1024 ** 2,
            "session_peak_mb": result["peak_rss_mb"], "frontier": result.get("frontier", {}),
            "final_rows": len(final), "repeated": len(final) - len(set(final)),
            "lost": len(committed - set(final)), "cut": len(at_stop - committed),
            "cut_not_rewritten": len(at_stop - committed - set(final)),
        })
    log.close()
    return results


def report(r: dict, label: str) -> None:
    f = r["frontier"]
    print(f"{label} {r['stop']:>5}: stopped at {r['stopped_rows']} rows; frontier.log {r['journal_mb']:.1f} MB "
          f"({r['journal_mb'] * 1024 ** 2 / max(r['stopped_rows'], 1):.0f} B/row), {r['journal_mb_after']:.1f} MB "
          f"at the end | restart to first new row {r['to_new_row_s']:.1f} s (first session to its first row "
          f"{r['first_row_s']:.1f} s: {r['to_new_row_s'] / r['first_row_s']:.2f}x) | restart peak RSS "
          f"{r['restart_peak_mb']:.0f} MB up to that row ({r['restart_peak_mb'] / r['rss_at_stop_mb']:.2f}x the "
          f"{r['rss_at_stop_mb']:.0f} MB at the stop), {r['session_peak_mb']:.0f} MB the whole session | rows: "
          f"{r['final_rows']} final, {r['lost']} committed rows lost, {r['repeated']} repeated, {r['cut']} cut back to "
          f"the checkpoint ({r['cut_not_rewritten']} of them still queued at the end) | recovered {f.get('recovered', 0)} "
          f"+ {f.get('recovered_pages_without_rows', 0)} pages, unrecovered {f.get('unrecovered', 0)}, recovery "
          f"{f.get('recovery_seconds', float('nan')):.2f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000, help="page budget of the crawl (50000: the scale target)")
    parser.add_argument("--stop-at", type=int, default=0, help="rows in pages.tsv at the stop (default: half)")
    parser.add_argument("--stops", nargs="+", choices=tuple(STOP_SIGNAL), default=list(STOP_SIGNAL))
    parser.add_argument("--repeat", type=int, default=1, help="rounds (each every stop, A/B interleaved)")
    parser.add_argument("--ab", metavar="SRC", help="also run each scenario with focuscrawl imported from SRC")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    stop_at = args.stop_at or args.pages // 2
    server, port = start_server(10 * args.pages)
    results: dict[str, list[dict]] = {}
    try:
        print(f"web: {10 * args.pages} pages on 127.0.0.1:{port}; keywords crawl of {args.pages} pages with JOBDIR, "
              f"stopped at {stop_at} rows, restarted to the end")
        for n in range(args.repeat):
            variants = [("this", None)] + ([("ab", args.ab)] if args.ab else [])
            for stop in args.stops:
                try:  # ABBA: every other round restarts the baseline first
                    rs = scenario(stop, port, args.pages, stop_at, variants if n % 2 == 0 else variants[::-1],
                                  args.set)
                except RuntimeError as exc:
                    print(f"{stop}: {exc}", flush=True)
                    continue
                for r in rs:
                    results.setdefault(f"{r['label']} {stop}", []).append(r)
                    report(r, r["label"])
    finally:
        server.terminate()
        server.wait()
    if args.ab:
        for stop in args.stops:
            pairs = list(zip(results[f"this {stop}"], results[f"ab {stop}"]))
            for key, name in (("to_new_row_s", "restart to first new row"), ("restart_peak_mb", "restart peak RSS"),
                                              ("journal_mb_after", "frontier.log at the end")):
                ratios = [a[key] / b[key] for a, b in pairs if b[key]]
                if ratios:
                    print(f"{stop}: {name}: this / ab {statistics.median(ratios):.2f}x "
                          f"(runs {min(ratios):.2f}-{max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
