"""Write failures (a full disk) and a second writer: the crawl stops with one clear line and
exit code 1, and a resume restores exactly what was committed.

The crawls are the real command (``focuscrawl crawl``) in a process of their own, on a local
site whose pages answer slowly; the full disk is injected at the file layer
(``tests/support/diskfull.py``: every write to the run directory fails with ENOSPC past a
byte limit, the crossing write written in part, as a real full disk does).
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from focuscrawl.settings import EXTENSIONS
from tests.support.crawl import ROOT, crawl_here, proxy_env
from tests.support.hostile import full_disk
from tests.support.localweb import LocalWeb
from tests.support.runfiles import read_tsv
from tests.support.toymodel import write_model
from tests.test_signals import N, slow_tree
from tests.support import warmfork

DISK_FULL = {"EXTENSIONS": json.dumps({**EXTENSIONS, "tests.support.diskfull.DiskFullAfter": 0})}


BASE = {"DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False, "CONCURRENT_REQUESTS": 2,
        "FOCUSCRAWL_ANALYSIS_WORKERS": 0, "FOCUSCRAWL_SENTENCES_BATCH_BYTES": 0,
        "FOCUSCRAWL_PROGRESS_INTERVAL": 0, "RETRY_ENABLED": False, "LOG_LEVEL": "INFO"}


def start_crawl(web, tmp: Path, out: Path | None, job: Path | None, log: Path, *, command: tuple = ("focuscrawl", "crawl"),
                spider_args: tuple = (), group: bool = False, **settings) -> subprocess.Popen:
    """``focuscrawl crawl`` (or ``command``: ``("scrapy", "crawl", "focused")``) of the slow site
    into ``out`` (None: no run directory; JOBDIR ``job``), its log appended to ``log``; ``group``: in a process group of
    its own, to be signalled as a terminal's Ctrl-C does."""
    model, keywords = write_model(tmp)
    settings = {**BASE, **({"JOBDIR": str(job)} if job else {}), **settings}
    words = ["-a", "seeds=http://cats.test/p0", "-a", f"model={model}", "-a", f"keywords={keywords}",
             "-a", f"output={out or ''}"]
    for name, value in settings.items():
        words += ["-s", f"{name}={value}"]
    for arg in spider_args:
        words += ["-a", arg]
    module = {"focuscrawl": "focuscrawl.cli", "scrapy": "scrapy"}[command[0]]
    env = dict(proxy_env(web), PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return warmfork.popen([sys.executable, "-m", module, *command[1:], *words], cwd=tmp, env=env,  # any folder
                          stdout=subprocess.DEVNULL, stderr=open(log, "a"), text=True, start_new_session=group)


def resume_here(web, tmp: Path, out: Path | None, job: Path, log: Path) -> dict:
    """The resume of a stopped crawl, to its end in this process (``crawl_here``: the same
    spider and components without a Scrapy start-up), the site answering at once; its log
    appended to ``log``; its stats."""
    for page in web.pages.values():
        page.delay = 0  # (the resume need not be slow)
    model, keywords = write_model(tmp)
    args = {"seeds": "http://cats.test/p0", "model": str(model), "keywords": str(keywords), "output": str(out or "")}
    stats, done = crawl_here(web, {**BASE, "JOBDIR": str(job)}, args, timeout=120)
    with open(log, "a") as f:
        f.write(done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    return stats


def sentences(out: Path) -> int:
    with gzip.open(out / "sentences.txt.gz", "rt", encoding="utf-8") as f:
        return sum(1 for _ in f)


def assert_whole_run(out: Path) -> None:
    """Every page and image once, and exactly the sentences the rows count."""
    pages = read_tsv(out / "pages.tsv")
    images = [r["image_url"] for r in read_tsv(out / "images.tsv")]
    assert Counter(r["url"] for r in pages).most_common(1)[0][1] == 1
    assert Counter(images).most_common(1)[0][1] == 1
    assert sorted(r["url"] for r in pages) == sorted(f"http://cats.test/p{i}" for i in range(N))
    assert sorted(images) == sorted(f"http://cats.test/u{i}.jpg" for i in range(N))
    assert sentences(out) == sum(int(r["sentences"]) for r in pages)
    for row in read_tsv(out / "images.tsv"):
        assert (out / row["image_path"]).is_file() and (out / row["record_path"]).is_file()


@pytest.mark.parametrize("jobdir_too", [False, True], ids=["output", "output-and-jobdir"])
def test_a_full_disk_stops_the_crawl_with_one_error_and_a_resume_restores_what_was_committed(tmp_path, jobdir_too):
    """The run directory's disk fills up mid-crawl: exit code 1, one ERROR line naming the
    file and the reason, no traceback; after space is freed the same command resumes to every
    page and image once, with exactly the sentences its rows count. Before, the crawl went on
    writing (a traceback per failed write, exit 0), its partly written lines shifted every
    later offset, failed image files were recorded as dropped, and the resume lost pages and
    images for good and kept sentences no row counts. ``jobdir_too``: the JOBDIR fills up too."""
    out, job, log = tmp_path / "out", tmp_path / "job", tmp_path / "crawl.log"
    with LocalWeb(slow_tree(delay=0.05)) as web:
        proc = start_crawl(web, tmp_path, out, job, log, TEST_DISK_FULL_AFTER_BYTES=40_000,
                           TEST_DISK_FULL_JOBDIR=jobdir_too, **DISK_FULL)
        assert proc.wait(120) == 1
        text = log.read_text()
        assert "Traceback" not in text, text[-3000:]
        errors = [line for line in text.splitlines() if "] ERROR:" in line]
        assert len(errors) == 1 and "No space left on device" in errors[0] and str(tmp_path) in errors[0], errors
        assert "cannot write" in errors[0] and "resume" in errors[0]
        committed = len(read_tsv(out / "pages.tsv"))
        assert 0 < committed < N
        resume_here(web, tmp_path, out, job, log)
    assert_whole_run(out)
    assert json.loads((out / "stats.json").read_text())["finish_reason"] == "finished"


def test_a_full_jobdir_without_a_run_directory_stops_the_crawl_with_one_error_and_a_resume_goes_on(tmp_path):
    """A crawl with a JOBDIR and no run directory, whose JOBDIR's disk fills up: exit code 1,
    one ERROR line naming the file and the reason, no traceback; the same command then resumes
    (the journal's recovery) and fetches the pages the first one had not. Before, every
    failed journal write was a traceback (39 here) and the crawl went on and ended with exit 0."""
    job, log = tmp_path / "job", tmp_path / "crawl.log"
    with LocalWeb(slow_tree(delay=0.02)) as web:
        proc = start_crawl(web, tmp_path, None, job, log, TEST_DISK_FULL_AFTER_BYTES=20_000,
                           TEST_DISK_FULL_JOBDIR=True, **DISK_FULL)
        assert proc.wait(120) == 1
        text = log.read_text()
        assert "Traceback" not in text and "never retrieved" not in text, text[-3000:]
        errors = [line for line in text.splitlines() if "] ERROR:" in line]
        assert len(errors) == 1 and "No space left on device" in errors[0] and str(job) in errors[0], errors
        assert "resume" in errors[0] and "Spider closed (write_failed)" in text
        pages = {f"cats.test/p{i}" for i in range(N)}
        fetched = set(web.requests) & pages
        assert 0 < len(fetched) < N
        resume_here(web, tmp_path, None, job, log)
        assert set(web.requests) & pages == pages
    assert "frontier: unclean stop detected" in log.read_text()


def test_a_second_crawl_on_a_run_directory_or_jobdir_in_use_is_refused_in_one_line(tmp_path):
    """While a crawl writes ``out`` with JOBDIR ``job``, a second one on the same output (another
    JOBDIR) or on the same JOBDIR (another output) is refused: one line naming the folder and
    the first crawl's pid, exit 1, no traceback, nothing of the first crawl's touched. Once the
    first is SIGKILLed nothing is left locked: the same command resumes it to every page once.
    Before, both crawls wrote the run at once (duplicate and lost rows, both exit 0). The
    site answers nothing while the second crawls are tried: a first crawl that ended in the
    meantime would rightly let its folders go."""
    out, job, log = tmp_path / "out", tmp_path / "job", tmp_path / "crawl.log"
    with LocalWeb(slow_tree(delay=0.1)) as web:
        first = start_crawl(web, tmp_path, out, job, log)
        try:
            deadline = time.monotonic() + 60
            while not (out / "pages.tsv").exists() or len(read_tsv(out / "pages.tsv")) < 2:
                assert time.monotonic() < deadline and first.poll() is None
                time.sleep(0.05)
            web.hold = threading.Event()  # the first crawl cannot end (and let its locks go) meanwhile
            for other_out, other_job, what in [(out, tmp_path / "job2", "output directory"),
                                               (tmp_path / "out2", job, "JOBDIR")]:
                second_log = tmp_path / f"second-{what}.log"
                second = start_crawl(web, tmp_path, other_out, other_job, second_log)
                assert second.wait(60) == 1
                text = second_log.read_text()
                refusals = [line for line in text.splitlines() if "in use by another crawl" in line]
                assert len(refusals) == 1 and f"pid {first.pid}" in refusals[0] and what in refusals[0], text[-2000:]
                assert "Traceback" not in text and "never retrieved" not in text, text[-2000:]
            assert first.poll() is None
        finally:
            first.kill()
            first.wait(30)
            if web.hold is not None:
                web.hold.set()
                web.hold = None
        assert not (tmp_path / "out2" / "pages.tsv").exists()
        resume_here(web, tmp_path, out, job, log)
    assert_whole_run(out)


def ended(proc: subprocess.Popen, timeout: float) -> int | None:
    """``proc``'s exit code, or None (killed) if it has not ended within ``timeout`` seconds:
    a crawl that hangs fails the test without outliving it."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)
        return None


def fan_site(n: int = 120) -> dict:
    """p0 links p1..p{n-1}, all with the same anchor (one priority: Scrapy's disk queue in the
    JOBDIR gets most of them); each page its own words and image."""
    pages = slow_tree(n, delay=0.02)
    links = "".join(f'<a href="/p{j}">cat page</a>' for j in range(1, n))
    p0 = pages[("cats.test", "/p0")]
    pages[("cats.test", "/p0")] = type(p0)(p0.body.replace(b"</body>", links.encode() + b"</body>"), delay=0)
    return pages


def test_a_full_jobdir_disk_stops_scrapys_disk_queue_too_with_one_error(tmp_path):
    """The JOBDIR on a real small tmpfs that fills up while Scrapy's disk queue is written:
    exit code 1, one ERROR line, no traceback; a resume (room made) crawls every page once.
    Before, every request queued after the disk was full was an asyncio "Task exception was
    never retrieved" traceback (528 in a probe of the test web)."""
    out, log = tmp_path / "out", tmp_path / "crawl.log"
    with full_disk(tmp_path / "disk", "1m") as disk, LocalWeb(fan_site()) as web:
        job = disk / "job"
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (1024 * 1024 - 48 * 1024))  # 48 KB left: the queue fills them
        proc = start_crawl(web, tmp_path, out, job, log, CONCURRENT_REQUESTS=1)
        assert ended(proc, 120) == 1, log.read_text()[-3000:]
        text = log.read_text()
        assert "Traceback" not in text and "never retrieved" not in text, text[-3000:]
        errors = [line for line in text.splitlines() if "] ERROR:" in line]
        assert len(errors) == 1 and "No space left on device" in errors[0] and str(job) in errors[0], errors
        filler.unlink()
        resume_here(web, tmp_path, out, job, log)
    pages = read_tsv(out / "pages.tsv")
    assert sorted(r["url"] for r in pages) == sorted(f"http://cats.test/p{i}" for i in range(120))


@pytest.mark.slow(12)
@pytest.mark.parametrize("limit", ["budget", "closespider"])
def test_images_recovered_by_a_resume_that_reaches_its_page_budget_are_all_written(tmp_path, limit):
    """A crawl killed while its pages' images download (accepted, not written) is resumed
    with a page budget it reaches before the recovered images are all handed back: the resume
    still writes every image of every page in pages.tsv, exits 0 with no error. Before, the
    budget closed the crawl at once: the images not yet handed back were lost for good
    (images.pending emptied at the clean close), and one arriving after the close was a
    "cannot write sightings.log: Bad file descriptor" error and exit 1, or the close waited for
    ever ("Closing spider (page_budget)", then nothing). ``closespider``: the resume is ended
    first by Scrapy's ``CLOSESPIDER_PAGECOUNT`` (which does not wait for them): it ends, and the
    images it had not handed back are written by the next resume."""
    out, job, log = tmp_path / "out", tmp_path / "job", tmp_path / "crawl.log"
    with LocalWeb(slow_tree(delay=0.02)) as web:
        for (host, path), page in web.pages.items():
            if path.endswith(".jpg"):
                page.delay = 60  # never downloaded before the kill
        settings = {"CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16}
        first = start_crawl(web, tmp_path, out, job, log, spider_args=("budget=30",), **settings)
        try:
            deadline = time.monotonic() + 60
            while not (out / "pages.tsv").exists() or len(read_tsv(out / "pages.tsv")) < 20:
                assert time.monotonic() < deadline and first.poll() is None, log.read_text()[-3000:]
                time.sleep(0.05)
        finally:
            first.kill()
            first.wait(30)
        assert len(read_tsv(out / "pages.tsv")) < 30
        for (host, path), page in web.pages.items():
            page.delay = 0.5 if path.endswith(".jpg") else 0  # the budget comes first
        second_log = tmp_path / "resume.log"
        resumes = [{"CLOSESPIDER_PAGECOUNT": 2}, {}] if limit == "closespider" else [{}]
        for more in resumes:
            resume = start_crawl(web, tmp_path, out, job, second_log, spider_args=("budget=30",), **settings, **more)
            assert ended(resume, 60) == 0, second_log.read_text()[-3000:]
            text = second_log.read_text()
            assert "] ERROR:" not in text and "Traceback" not in text, text[-3000:]
            assert "queued again" in text
    pages = read_tsv(out / "pages.tsv")
    assert len(pages) == 30
    images = [r["image_url"] for r in read_tsv(out / "images.tsv")]
    assert len(images) == len(set(images))
    # (also images of pages the kill came before: accepted, then written by the resume)
    assert {r["url"].replace("/p", "/u") + ".jpg" for r in pages} <= set(images)


def test_a_resume_whose_budget_is_already_spent_writes_every_recovered_image(tmp_path):
    """A crawl reaches its page budget (every row checkpointed) and is killed while its close
    waits for the images of its pages: the resume opens with the budget already spent, and
    must hand back the images the kill left pending before it closes: all written, exit 0.
    Its close is decided at ``spider_opened``, while the image middleware finds the image
    records in the same signal."""
    out, job, log = tmp_path / "out", tmp_path / "job", tmp_path / "crawl.log"
    with LocalWeb(slow_tree(delay=0.02)) as web:
        for (host, path), page in web.pages.items():
            if path.endswith(".jpg"):
                page.delay = 60  # never downloaded before the kill
        settings = {"CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
                    "FOCUSCRAWL_CHECKPOINT_INTERVAL": 0}
        first = start_crawl(web, tmp_path, out, job, log, spider_args=("budget=20",), **settings)
        try:
            deadline = time.monotonic() + 60
            while "Closing spider (page_budget)" not in log.read_text():
                assert time.monotonic() < deadline and first.poll() is None, log.read_text()[-3000:]
                time.sleep(0.05)
        finally:
            first.kill()
            first.wait(30)
        assert len(read_tsv(out / "pages.tsv")) == 20
        assert not (out / "images.tsv").exists() or not read_tsv(out / "images.tsv")
        for (host, path), page in web.pages.items():
            page.delay = 0
        resume_log = tmp_path / "resume.log"
        resume = start_crawl(web, tmp_path, out, job, resume_log, spider_args=("budget=20",), **settings)
        assert ended(resume, 60) == 0, resume_log.read_text()[-3000:]
        text = resume_log.read_text()
        assert "already spent" in text and "] ERROR:" not in text and "Traceback" not in text, text[-3000:]
    pages = read_tsv(out / "pages.tsv")
    assert len(pages) == 20
    images = [r["image_url"] for r in read_tsv(out / "images.tsv")]
    assert sorted(images) == sorted(r["url"].replace("/p", "/u") + ".jpg" for r in pages)


def test_a_full_jobdir_disk_met_while_the_scheduler_pops_stops_the_crawl_with_one_error(tmp_path):
    """Scrapy's disk queue finds the JOBDIR's disk full after the seed's page has queued the
    other 119 pages (``QueueDiskFullAfterPages``): no push writes any more, the pops do (the
    emptied queue saves its state at its close). Exit code 1, one ERROR line, no traceback;
    a resume crawls every page once. Before, the pop's OSError went up through the engine:
    an asyncio "Exception in callback" traceback, and the crawl went on."""
    out, job, log = tmp_path / "out", tmp_path / "job", tmp_path / "crawl.log"
    with LocalWeb(fan_site()) as web:
        proc = start_crawl(web, tmp_path, out, job, log, CONCURRENT_REQUESTS=1, TEST_QUEUE_DISK_FULL_AFTER_PAGES=1,
                           EXTENSIONS=json.dumps({**EXTENSIONS, "tests.support.diskfull.QueueDiskFullAfterPages": 0}))
        assert ended(proc, 120) == 1, log.read_text()[-3000:]
        text = log.read_text()
        assert "Traceback" not in text and "Exception in callback" not in text, text[-3000:]
        errors = [line for line in text.splitlines() if "] ERROR:" in line]
        assert len(errors) == 1 and "No space left on device" in errors[0] and str(job) in errors[0], errors
        assert "Spider closed (write_failed)" in text
        resume_here(web, tmp_path, out, job, log)
    pages = read_tsv(out / "pages.tsv")
    assert sorted(r["url"] for r in pages) == sorted(f"http://cats.test/p{i}" for i in range(120))
