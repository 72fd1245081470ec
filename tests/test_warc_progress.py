"""`focuscrawl warc` tells its progress on long runs: files, pages, pairs, rate, ETA."""
from __future__ import annotations

import re
import sys

from focuscrawl.extensions.progress import fetch_progress_line, files_progress_line
from tests.support.crawl import FAST, ROOT
from tests.support.localweb import CAT_TEXT
from tests.support import warmfork


def test_files_progress_line_says_files_pages_pairs_rate_and_time_left():
    assert files_progress_line(1, 4, 100, 400, 30, 10.0) == \
        "progress: 1/4 files, 100/400 pages (10.0 pages/s), 30 image-text pairs written, ETA 30s"
    # without a page total: the time left by files; at the end no ETA
    assert files_progress_line(1, 3, 50, 0, 0, 60.0).endswith("50 pages (0.8 pages/s), 0 image-text pairs written, ETA 2m")
    assert "ETA" not in files_progress_line(3, 3, 50, 50, 7, 5.0)


def test_fetch_progress_line_says_candidates_done_rate_and_time_left():
    assert fetch_progress_line(10, 40, 7, 5.0) == "progress: 10/40 candidates fetched (7 downloaded, 2.0 images/s), ETA 15s"
    assert "ETA" not in fetch_progress_line(40, 40, 30, 5.0)


def test_a_replay_logs_its_progress_against_the_archives_pages(tmp_path):
    from tests.support.archives import write_warc

    def page(n: int) -> bytes:
        return (f'<html><body><p>{CAT_TEXT}</p><img src="http://img.test/{n}.jpg" alt="a cat on the sofa {n}" '
                f'width="640" height="480"></body></html>').encode()

    warcs = [write_warc(tmp_path / f"{f}.warc.gz", [(f"http://p{f}.test/{n}", [("Content-Type", "text/html")],
                                                     page(n)) for n in range(3)]) for f in range(2)]
    for jobs in ("0", "2"):
        cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", *map(str, warcs), "-o", str(tmp_path / f"out{jobs}"),
               "--jobs", jobs]
        for s in FAST + ["FOCUSCRAWL_PROGRESS_INTERVAL=0.001"]:
            cmd += ["-s", s]
        proc = warmfork.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        total = "6" if jobs == "0" else "3"  # the archives' pages, or a job's file's
        assert re.search(rf"progress: \d+/{total} pages \([\d.]+ pages/s\), \d+ images written", proc.stderr), \
            proc.stderr[-3000:]
        if jobs == "2":
            assert "progress: 2/2 files, 6/6 pages (" in proc.stderr and ", 6 image-text pairs written" in proc.stderr
