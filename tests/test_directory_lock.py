"""The writer lock of a run directory and of a JOBDIR (``lock_directory``): one process writes
a folder at a time, and the lock holds while its crawl writes, whatever else the process does
with the lock file. Each check asks a process of its own to take the lock."""
from __future__ import annotations

import json
import os

from focuscrawl.output.files import LOCK_FILE, lock_directory
from focuscrawl.settings import EXTENSIONS
from tests.support.crawl import crawl
from tests.support.localweb import LocalWeb
from tests.support.lockprobe import taken_elsewhere
from tests.test_signals import slow_tree


def test_the_lock_holds_through_any_other_open_and_close_of_its_file(tmp_path):
    """Reading the lock file (to see its holder's pid) and closing it again keeps the folder
    locked. A POSIX record lock (``lockf``) went with any close of its file in the process."""
    lock = lock_directory(tmp_path, "JOBDIR")
    assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"  # open, read, close
    os.close(os.open(tmp_path / LOCK_FILE, os.O_RDWR))
    assert not taken_elsewhere(tmp_path)
    lock.release()
    assert taken_elsewhere(tmp_path)


def test_every_lock_of_a_folder_in_a_process_holds_it_until_the_last_is_released(tmp_path):
    """A process may lock its folder again (two crawl components, a resume in one process);
    releasing one lock does not let the folder go while another is held. Before, the second
    lock opened the file again and its release dropped the first one's lock too."""
    first = lock_directory(tmp_path, "output directory")
    second = lock_directory(tmp_path, "output directory")
    second.release()
    second.release()  # (twice: still once)
    assert not taken_elsewhere(tmp_path)
    first.release()
    assert taken_elsewhere(tmp_path)
    again = lock_directory(tmp_path, "output directory")
    assert not taken_elsewhere(tmp_path)
    del again  # (garbage-collected: released)
    assert taken_elsewhere(tmp_path)


def test_a_forked_child_neither_keeps_nor_drops_its_parents_lock(tmp_path):
    """A child forked while the lock is held shares its open file: it closes its copy at the
    fork, so the lock stays the parent's while the child lives and after it ends, and goes
    when the parent releases it although the child lives on."""
    lock = lock_directory(tmp_path, "JOBDIR")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: waits until told, then ends
        os.close(write_end)
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    try:
        assert not taken_elsewhere(tmp_path)
        lock.release()
        assert taken_elsewhere(tmp_path)  # the child lives and holds nothing
        lock = lock_directory(tmp_path, "JOBDIR")
    finally:
        os.close(write_end)
        os.waitpid(pid, 0)
    assert not taken_elsewhere(tmp_path)  # the child's end dropped nothing
    lock.release()


def test_a_crawl_holds_its_locks_until_its_last_write(tmp_path):
    """The run directory and the JOBDIR stay locked until ``stats.json`` is written (at
    ``engine_stopped``), then another crawl may take them. Before, the locks went at
    ``spider_closed``, and a second crawl could start while the first wrote its stats."""
    report = tmp_path / "probe.json"
    settings = {"JOBDIR": str(tmp_path / "job"), "TEST_LOCK_PROBE_FILE": str(report),
                "EXTENSIONS": {**EXTENSIONS, "tests.support.lockprobe.LockProbe": 950}}
    with LocalWeb(slow_tree(n=3, delay=0)) as web:
        stats, proc = crawl(web, tmp_path, "http://cats.test/p0", settings=settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats["item_scraped_count"] >= 1
    assert json.loads(report.read_text()) == {"stats_written": True, "output directory": False, "JOBDIR": False}
    assert taken_elsewhere(tmp_path / "out") and taken_elsewhere(tmp_path / "job" / "focuscrawl")
