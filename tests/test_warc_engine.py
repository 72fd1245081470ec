"""`focuscrawl warc --engine dask`: one task per archive file on a Dask cluster, the parts
shipped back and merged as `--jobs` merges them.

A local cluster (two workers) and a real scheduler and worker processes started on
127.0.0.1 give the same run directory as `--jobs 2`, byte for byte, with inputs read from
URLs (a local HTTP server) and from paths; a file that fails is reported with its reason
and the others are merged; a Ctrl-C stops the replays cleanly.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

from tests.support.localweb import LocalWeb, Page
from tests.support.net import free_port
from tests.support.processes import ctrl_c_once, descendants, wait_gone
from tests.test_warc_jobs import REPO, archives, run_files, tsv, warc
from tests.support import warmfork

TIMEOUT = 300


def warc_engine(*args: str, code: int = 0, log: list[str] | None = None) -> dict:
    """The summary of `warc --engine dask`; ``log``: its progress lines appended (one as each task ends)."""
    cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", *args, "--engine", "dask", "--json",
           "-s", f"FOCUSCRAWL_PROGRESS_INTERVAL={0.001 if log is not None else 0}"]
    proc = warmfork.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if log is not None:
        log += [line.split(": ", 1)[1] for line in proc.stderr.splitlines() if ": progress: " in line]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def served(paths: list[str]) -> LocalWeb:
    """A local HTTP server with each archive file at ``/<its name>``."""
    return LocalWeb({f"/{Path(p).name}": Page(Path(p).read_bytes(), "application/warc") for p in paths})


def test_local_cluster_with_url_inputs_merges_to_the_jobs_2_run(tmp_path):
    """Two inputs by URL, two by path, on a local cluster of two workers: the same run
    directory as `--jobs 2` (the image stored in another file than its page found, the
    shared image's record holding the sightings of all four tasks)."""
    paths = archives(tmp_path)
    with served(paths) as web:
        inputs = [f"{web.base}/{Path(paths[0]).name}", paths[1], f"{web.base}/{Path(paths[2]).name}", paths[3]]
        summary = warc_engine(*inputs, "-o", str(tmp_path / "dask"))
        assert sorted(web.fetched()) == ["/part0.warc.gz", "/part2.warc.gz"]  # once each: the workers share a copy
    assert summary["finish_reason"] == "finished" and summary["engine"] == "dask" and summary["jobs"] == 2
    assert (summary["parts"], summary["pages"], summary["images"]) == (4, 12, 13)
    jobs = warc(*paths, "-o", str(tmp_path / "jobs"), "--jobs", "2")
    assert {k: summary[k] for k in jobs if k != "jobs"} == {k: v for k, v in jobs.items() if k != "jobs"}
    engine_files = run_files(tmp_path / "dask")
    assert len(engine_files) == 3 + 13 + 13
    # the local workers share OUTPUT: parts written in place, image files straight into the run
    assert not list((tmp_path / "dask" / "parts").glob("*/images/*"))
    assert engine_files == run_files(tmp_path / "jobs")
    shared = tsv(tmp_path / "dask" / "images.tsv", "image_url")["http://site.test/shared.png"]
    assert len(json.loads((tmp_path / "dask" / shared["record_path"]).read_text())["sightings"]) == 12


def test_a_scheduler_and_worker_processes_on_127_0_0_1_merge_to_the_same_run(tmp_path):
    """`--scheduler ADDRESS` with a real Dask deployment (`dask scheduler`, `dask worker` with
    two worker processes): the tasks and their parts travel between processes; same run."""
    paths = archives(tmp_path)
    dask = str(Path(sys.executable).parent / "dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    log = open(tmp_path / "cluster.log", "w")
    cluster = [warmfork.popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", ":0", "--no-show"], stdout=log, stderr=log, env=env,
                              start_new_session=True)]
    try:
        cluster.append(warmfork.popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                                       "--host", "127.0.0.1", "--no-dashboard"], stdout=log, stderr=log, env=env,
                                      cwd=tmp_path, start_new_session=True))
        summary = warc_engine(*paths, "-o", str(tmp_path / "dask"), "--scheduler", address)
        assert summary["scheduler"] == address and summary["jobs"] == 2
    finally:
        for process in reversed(cluster):
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in cluster:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        log.close()
    assert summary["finish_reason"] == "finished", summary
    assert len(list((tmp_path / "dask" / "parts").glob("*/images/*"))) == 16  # sent back whole, image files too
    warc(*paths, "-o", str(tmp_path / "jobs"), "--jobs", "2")
    assert run_files(tmp_path / "dask") == run_files(tmp_path / "jobs")


def test_a_file_that_fails_is_reported_and_the_others_are_merged(tmp_path):
    """A file that is no archive and a URL that answers 404 (`--lookup own`: each task reads its
    own file): exit 1, the summary names both with their reason, the good file is merged; a
    progress line as each task ends."""
    paths = archives(tmp_path)[:1]
    junk = tmp_path / "junk.warc.gz"
    junk.write_bytes(b"this is no archive\n" * 50)
    with served(paths) as web:
        missing = f"{web.base}/gone.warc.gz"
        progress: list[str] = []
        summary = warc_engine(paths[0], str(junk), missing, "-o", str(tmp_path / "out"), "--lookup", "own", code=1,
                              log=progress)
    reason = summary["finish_reason"]
    assert reason.startswith("failed: ") and f"{junk}: error: " in reason and "not a readable WARC/ARC file" in reason
    assert f"{missing}: error: HTTPError: HTTP Error 404" in reason
    assert summary["pages"] == 3 and set(tsv(tmp_path / "out" / "pages.tsv", "url")) == {
        f"http://site.test/f0/p{i}" for i in range(3)}
    assert [line.split(",")[0] for line in progress] == ["progress: 1/3 files", "progress: 2/3 files",
                                                         "progress: 3/3 files"], progress
    assert progress[-1].startswith("progress: 3/3 files, 3 pages (") and "4 image-text pairs written" in progress[-1]
    assert "ETA" in progress[0]


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # ended meanwhile
        return b""


def test_a_ctrl_c_stops_the_replays_and_merges_the_finished_parts(tmp_path):
    """Ctrl-C to the command's group while the tasks' replays run: it ends interrupted (130)
    within seconds, without a traceback, no replay or forker process left, no image file
    without its row."""
    paths = archives(tmp_path)
    with open(tmp_path / "err.log", "w") as err, open(tmp_path / "out.txt", "w") as out:
        proc = warmfork.popen([sys.executable, "-m", "focuscrawl.cli", "warc", *paths, "-o", str(tmp_path / "out"),
                               "--engine", "dask", "--json"], cwd=REPO, stdout=out, stderr=err,
                              start_new_session=True)
        replays: set[int] = set()

        def replaying() -> bool:  # the workers' replay forkers and the replays they fork (one command line)
            replays.update(pid for pid in descendants(proc.pid) if b"focuscrawl.archive.engine" in cmdline(pid))
            return len(replays) >= 4

        code = ctrl_c_once(proc, replaying, settle=1.0)
    log = (tmp_path / "err.log").read_text()
    assert code == 130 and "Traceback" not in log, log[-3000:]
    assert not wait_gone(replays, 10)
    summary = json.loads((tmp_path / "out.txt").read_text().strip().splitlines()[-1])
    assert summary["finish_reason"].startswith("interrupted: ") and summary["stop_signal"] == signal.SIGINT
    rows = tmp_path / "out" / "images.tsv"
    listed = set(tsv(rows, "image_path")) if rows.exists() else set()
    assert {f"images/{p.name}" for p in (tmp_path / "out" / "images").glob("*")} == listed


def test_files_without_pages_of_their_own_get_no_part_as_with_jobs(tmp_path):
    """A copy of an earlier file (its pages captured there first) and a file of images only:
    their tasks replay nothing and the summary names them with the reason `--jobs` gives; the
    pages and images are those of `--jobs 1`."""
    from tests.support.archives import write_warc
    from tests.support.localweb import png_bytes
    from tests.test_warc_jobs import HTML, PNG, page

    crawl = [(f"http://site.test/f0/p{i}", HTML, page(0, i)) for i in range(3)]
    paths = [str(write_warc(tmp_path / "crawl.warc.gz", crawl)), str(write_warc(tmp_path / "copy.warc.gz", crawl)),
             str(write_warc(tmp_path / "other.warc.gz", [(f"http://site.test/f1/p{i}", HTML, page(1, i))
                                                         for i in range(2)])),
             str(write_warc(tmp_path / "pictures.warc.gz", [("http://site.test/img0-0.png", PNG, png_bytes(640, 480))]))]
    summary = warc_engine(*paths, "-o", str(tmp_path / "dask"))
    jobs = warc(*paths, "-o", str(tmp_path / "jobs"), "--jobs", "1")
    assert summary["finish_reason"] == jobs["finish_reason"] == "finished"
    assert summary["parts"] == jobs["parts"] == 2 and summary["pages"] == jobs["pages"] == 5
    assert summary["files_without_part"] == jobs["files_without_part"]
    assert set(summary["files_without_part"]) == {paths[1], paths[3]}
    for key in ("focuscrawl/archive/html_pages", "focuscrawl/archive/html_responses"):  # the copy's 3 responses too
        assert summary[key] == jobs[key], key
    assert summary["focuscrawl/archive/html_responses"] == 8
    assert run_files(tmp_path / "dask") == run_files(tmp_path / "jobs")


def test_without_dask_the_command_names_the_extra(tmp_path, monkeypatch, capsys):
    """Dask not installed: one line naming the extra that installs it, exit 2."""
    from focuscrawl.cli import main

    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the extra were not installed
    paths = archives(tmp_path)
    assert main(["warc", *paths, "-o", str(tmp_path / "out"), "--engine", "dask"]) == 2
    assert capsys.readouterr().err.strip() == (
        "focuscrawl warc: error: this needs distributed, an optional dependency: pip install 'focuscrawl[distributed]'")
