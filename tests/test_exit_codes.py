"""The crawl commands' exit codes (docs/OUTPUT.md "Exit codes"): finished 0, failed 1 (a
write failed: tests/test_write_failures.py), bad input 2, interrupted 128 + the signal (Ctrl-C
130, SIGTERM 143), for ``focuscrawl crawl`` and ``scrapy crawl focused``, run as real
processes in a group of their own and signalled as a terminal does."""
from __future__ import annotations

import os
import signal
import time

import pytest

from tests.support.crawl import ROOT
from tests.support.localweb import LocalWeb
from tests.support.runfiles import read_tsv
from tests.test_signals import slow_tree
from tests.test_write_failures import start_crawl
from tests.support import warmfork

FOCUSCRAWL = ("focuscrawl", "crawl")
SCRAPY = ("scrapy", "crawl", "focused")


def wait_for_rows(out, proc, n: int = 2, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not (out / "pages.tsv").exists() or len(read_tsv(out / "pages.tsv")) < n:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)


@pytest.mark.parametrize("command, signals, code", [
    (FOCUSCRAWL, (signal.SIGINT,), 130),
    (FOCUSCRAWL, (signal.SIGTERM,), 143),
    (FOCUSCRAWL, (signal.SIGINT, signal.SIGINT), 130),
    (SCRAPY, (signal.SIGTERM,), 143),
], ids=["crawl-ctrl-c", "crawl-sigterm", "crawl-double-ctrl-c", "scrapy-sigterm"])
def test_an_interrupted_crawl_exits_with_128_plus_the_signal(tmp_path, command, signals, code):
    """Before, an interrupted crawl (even a forced double Ctrl-C) exited 0, as a finished one."""
    out, job, log = tmp_path / "out", tmp_path / "job", tmp_path / "crawl.log"
    with LocalWeb(slow_tree(delay=0.3)) as web:
        proc = start_crawl(web, tmp_path, out, job, log, command=command, group=True)
        try:
            wait_for_rows(out, proc)
            for signum in signals:
                os.killpg(proc.pid, signum)
                time.sleep(0.3)
            assert proc.wait(90) == code
        finally:
            proc.kill()
    assert "Traceback" not in log.read_text()


def test_a_finished_crawl_exits_0_and_bad_input_2_in_one_line(tmp_path):
    """A crawl to its end: 0. An unknown mode: one ``focuscrawl: error:`` line, exit 2 (before:
    asyncio's "Task exception was never retrieved" traceback and exit 1)."""
    out, log = tmp_path / "out", tmp_path / "crawl.log"
    with LocalWeb(slow_tree(n=4, delay=0)) as web:
        assert start_crawl(web, tmp_path, out, None, log).wait(90) == 0
        bad = tmp_path / "bad.log"
        assert start_crawl(web, tmp_path, tmp_path / "out2", None, bad, spider_args=("mode=nonsense",)).wait(90) == 2
    text = bad.read_text()
    errors = [line for line in text.splitlines() if line.startswith("focuscrawl: error:")]
    assert len(errors) == 1 and "nonsense" in errors[0], text[-2000:]
    assert "Traceback" not in text and "never retrieved" not in text, text[-2000:]


def test_warc_exit_codes_follow_how_its_replay_ended():
    """``focuscrawl warc``'s code from its summary: finished 0; a failed write 1 (also when a
    signal came too); interrupted 128 + the signal (before: 1, as a failure); failed 1."""
    from focuscrawl.archive.cli import exit_code

    assert exit_code({"finish_reason": "finished"}) == 0
    assert exit_code({"finish_reason": "write_failed", "write_failed": "No space left on device: x",
                      "stop_signal": signal.SIGINT}) == 1
    assert exit_code({"finish_reason": "shutdown", "stop_signal": signal.SIGINT}) == 130
    assert exit_code({"finish_reason": "failed: a.warc: job process died", "stop_signal": signal.SIGTERM}) == 143
    assert exit_code({"finish_reason": "failed: a.warc: job process died"}) == 1


def test_a_clean_stop_that_never_ends_is_made_unclean_after_the_shutdown_timeout(tmp_path):
    """SIGTERM while a page download hangs: Scrapy's clean stop waits for it (issue #44: "Closing
    spider (shutdown)" and alive > 105 s). After ``FOCUSCRAWL_SHUTDOWN_TIMEOUT`` the crawl stops
    as on a second signal, says so in one line and exits 143; a JOBDIR resume crawls the page."""
    from tests.support.localweb import Page, html

    site = {("cats.test", "/p0"): Page(html("cats", "The cat sleeps on the sofa.", [("/p1", "cat one"), ("/p2", "cat two")])),
            ("cats.test", "/p1"): Page(html("slow", "The kitten plays.", []), delay=120),
            ("cats.test", "/p2"): Page(html("cats", "The cat purrs.", []))}
    out, job, log = tmp_path / "out", tmp_path / "job", tmp_path / "crawl.log"
    with LocalWeb(site) as web:
        proc = start_crawl(web, tmp_path, out, job, log, group=True, DOWNLOAD_TIMEOUT=600,
                           FOCUSCRAWL_SHUTDOWN_TIMEOUT=3)
        try:
            deadline = time.monotonic() + 60
            while "cats.test/p1" not in web.requests:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
            time.sleep(0.5)
            os.killpg(proc.pid, signal.SIGTERM)
            started = time.monotonic()
            assert proc.wait(30) == 143
            assert time.monotonic() - started < 30
        finally:
            proc.kill()
    text = log.read_text()
    assert "Traceback" not in text and "did not stop within 3 s of SIGTERM" in text, text[-3000:]


def test_warc_given_a_folder_says_it_is_a_folder_exit_2(tmp_path):
    """``focuscrawl warc FOLDER``: one line saying it is a folder (and how to give its files),
    exit 2, no run directory made. Before: "no such archive", as for a name that does not exist."""
    import sys

    (tmp_path / "archives").mkdir()
    done = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "warc", "-o", str(tmp_path / "out"),
                         str(tmp_path / "archives")], capture_output=True, text=True, timeout=120,
                        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "is a folder" in lines[0] and "archives/*.warc.gz" in lines[0], done.stderr
    assert not (tmp_path / "out").exists()


def test_warc_with_a_bad_topic_bundle_is_one_error_exit_2_no_traceback(tmp_path):
    """``focuscrawl warc --topic B`` with a bundle of order -3: exit 2, the reason on a
    ``focuscrawl warc: error:`` line, no traceback. Before: four tracebacks (the spider's
    UsageError as an unhandled Deferred error, then "Crawler.stats is not set yet") and exit 1."""
    import json
    import shutil
    import sys

    from tests.support.hostile import good, write_records

    bundle = tmp_path / "bundle"
    shutil.copytree(ROOT / "models" / "cats", bundle)
    manifest = json.loads((bundle / "bundle.json").read_text())
    (bundle / "bundle.json").write_text(json.dumps({**manifest, "order": -3}))
    archive = write_records(tmp_path / "a.warc.gz", [good("http://ok.test/1", 1)], gz=True)
    done = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "warc", "--topic", str(bundle), "-o",
                         str(tmp_path / "out"), str(archive)], capture_output=True, text=True, timeout=120,
                        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])))
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("focuscrawl warc: error:")]
    assert len(errors) == 1 and "order is -3" in errors[0], done.stderr
