"""``focuscrawl warc --engine dask``: the archive replay spread over a Dask cluster.

One task per archive file, as with ``--jobs``: the task replays that file's pages (every
input file answering their requests, ``--lookup all``) into a run directory of its own,
which comes back to the command as a tarball (or is written in OUTPUT/parts when the workers
share OUTPUT: the local cluster, ``--shared-output``), and the parts are merged into OUTPUT
by ``focuscrawl merge``'s code: the same run directory as ``--jobs``. Without
``--scheduler`` a local cluster of ``--jobs`` workers (2 without) runs the tasks.

Dask, not PySpark or Ray: it installs from pip alone (PySpark needs a JVM on every machine;
Ray is a far larger install with its own object store), a local cluster runs in tests and CI,
and the same code runs on any Dask deployment (``dask scheduler``/``dask worker``, Kubernetes,
HPC batch systems).

Inputs are local paths or URLs: a worker opens a path itself (a shared file system) and
downloads a URL (http/https, or any protocol fsspec has installed) into its own cache for the
run. Each task runs its replay in a child process (forked by ``ReplayForker``): Twisted's
reactor runs once per process, and a worker process runs many tasks.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import io
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlsplit

from focuscrawl.archive import cli as archive_cli
from focuscrawl.archive.cli import (JOB_SETTINGS, SUMMARY_STATS, FilesProgress,
                                    exit_code, files_without_part, human_summary, remove_unlisted_images,
                                    settings_from_pairs)
from focuscrawl.output.merge import merge_runs
from focuscrawl.output.stats import summed_stats
from focuscrawl.processes import interruptible, worker_process

#: the engines ``--engine`` runs the archive path on
ENGINES = ("dask",)
#: workers of the local cluster when ``--jobs`` does not say
LOCAL_WORKERS = 2
#: how often a task asks the scheduler whether the command was interrupted while its replay
#: runs, and how often the command looks at its own Ctrl-C and the tasks that ended
STOP_POLL_SECONDS = 1.0
#: how often a task looks whether its replay's child process ended
CHILD_POLL_SECONDS = 0.2
#: the tail of a failed replay's log that explains it (the summary's reason)
LOG_TAIL_LINES = 5


def register(sub: argparse._SubParsersAction) -> None:
    """``warc`` as ``focuscrawl.archive.cli`` registers it, with the engine's arguments."""
    archive_cli.register(sub)
    p = sub.choices["warc"]
    p.add_argument("--engine", choices=ENGINES,
                   help="run one task per file on a distributed engine (dask), parts merged into OUTPUT as "
                        "with --jobs; PATHs may be http(s) URLs (pip install 'focuscrawl[distributed]')")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="the Dask scheduler, e.g. tcp://10.0.0.1:8786 (default: a local cluster of --jobs "
                        f"workers, {LOCAL_WORKERS} without --jobs)")
    p.add_argument("--lookup", choices=("all", "own"), default="all",
                   help="with --engine: which files answer a task's requests (images): every input file, as "
                        "with --jobs (each task reads them all), or its own file only (independent files, "
                        "e.g. CommonCrawl's: each task reads one)")
    p.add_argument("--shared-output", action="store_true",
                   help="with --scheduler: the workers see OUTPUT at the same path (a shared file system) and "
                        "write their parts there; default: each part is sent back to this command (the local "
                        "cluster always writes them in place)")
    p.set_defaults(func=cmd_warc)


def cmd_warc(args: argparse.Namespace) -> int:
    """``warc`` on the engine with ``--engine``, else ``focuscrawl.archive.cli``'s."""
    if not args.engine:
        if args.scheduler or args.lookup != "all" or args.shared_output:
            raise ValueError("--scheduler, --lookup and --shared-output need --engine dask")
        return archive_cli.cmd_warc(args)
    if args.jobs < 0:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    if args.scheduler and args.jobs:
        raise ValueError("--jobs sets the local cluster's workers; with --scheduler the cluster's workers run the tasks")
    sources = [input_source(path, must_exist=not args.scheduler) for path in args.paths]
    settings = {"FOCUSCRAWL_CRAWL_SUMMARY": False, **settings_from_pairs(args.set)}
    spider_args = {name: getattr(args, name) for name in ("mode", "model", "keywords", "topic")
                   if getattr(args, name)}
    verbose = getattr(args, "verbose", False)
    with dask_client(args.scheduler, args.jobs or LOCAL_WORKERS, verbose) as client:
        summary, stats = replay_on_cluster(client, sources, Path(args.output), {**JOB_SETTINGS, **settings},
                                           spider_args, verbose, args.lookup, progress_interval(settings),
                                           shared_output=args.shared_output or not args.scheduler)
    print(json.dumps(summary) if args.json else human_summary(summary, args.output, stats))
    return exit_code(summary)


def progress_interval(settings: dict) -> float:
    """``FOCUSCRAWL_PROGRESS_INTERVAL`` as ``-s`` sets it, else the project's."""
    from focuscrawl.resources import project_settings

    return project_settings(settings).getfloat("FOCUSCRAWL_PROGRESS_INTERVAL")


def input_source(path: str, must_exist: bool = True) -> str:
    """An input as every worker reads it: a URL as given, a local path made absolute (the
    workers' working directory is not the command's). ``must_exist``: the workers share this
    machine's files (the local cluster)."""
    if "://" in path and not path.startswith("file://"):
        return path
    local = Path(unquote(urlsplit(path).path) if path.startswith("file://") else path).resolve()
    if must_exist and not local.is_file():
        raise FileNotFoundError(f"no such archive: {path}")
    return str(local)


@contextmanager
def dask_client(address: str | None, workers: int, verbose: bool = False) -> Iterator:
    """A Dask client of the scheduler at ``address``, or of a local cluster of ``workers``
    one-thread workers in this process: a task only waits on its replay's child process, and
    worker threads leave the terminal's Ctrl-C to the command (worker processes would die of it)."""
    from distributed import Client, LocalCluster

    if not verbose:  # the cluster's INFO lines (workers starting, closing) are not the replay's
        logging.getLogger("distributed").setLevel(logging.WARNING)
    if address:
        with Client(address) as client:
            yield client
        return
    import dask

    # no statistical profiler sampling the command's threads (the tasks only wait on child processes)
    with dask.config.set({"distributed.worker.profile.enabled": False}), \
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, dashboard_address=None,
                         silence_logs=logging.DEBUG if verbose else logging.WARNING) as cluster, \
            Client(cluster) as client:
        yield client


def replay_on_cluster(client, sources: list[str], output: Path, settings: dict, spider_args: dict,
                      verbose: bool = False, lookup: str = "all", progress_interval: float = 0.0,
                      shared_output: bool = False) -> tuple[dict, dict]:
    """One task per input file on ``client``'s cluster (``replay_task``), the parts unpacked
    into ``output/parts`` and merged into ``output`` (``merge_runs``, as ``--jobs``): the
    summary and the tasks' stats summed, as ``replay_jobs`` returns them. ``shared_output``:
    the workers see ``output`` at the same path (the local cluster, a shared file system), and
    write their parts and image files there as ``--jobs`` does, none shipped. The first Ctrl-C
    or SIGTERM stops the running replays cleanly and starts no more (the finished parts are
    merged), a second one raises ``KeyboardInterrupt``."""
    from distributed import Event, wait

    if not sources:
        raise ValueError("no archives")
    run = uuid.uuid4().hex
    stop = Event(f"focuscrawl-warc-stop-{run}", client=client)
    output = output.resolve()
    if shared_output:  # the image files straight into the merged run (named by URL), as with --jobs
        settings = {"FOCUSCRAWL_IMAGE_STORE": str(output), **settings}
    tasks = [{"sources": sources if lookup == "all" else [source], "seed": source, "run": run,
              "settings": settings, "spider_args": spider_args, "verbose": verbose,
              "part": str(output / "parts" / f"{n:04d}") if shared_output else None}
             for n, source in enumerate(sources)]
    futures = client.map(replay_task, tasks, stop=stop.name, pure=False)
    index = {future.key: n for n, future in enumerate(futures)}
    results: list[dict] = [{}] * len(tasks)
    progress = FilesProgress(len(tasks), 0, progress_interval)
    ended: list[dict] = []
    stopped: list[int] = []
    with interruptible(lambda: bool(stopped), stopped.append):
        try:
            pending, told = set(futures), False
            while pending:
                if stopped and not told:
                    stop.set()  # running replays stop cleanly
                    told = True
                    running = {key for keys in client.processing().values() for key in keys}
                    waiting = [future for future in pending if future.key not in running]
                    client.cancel(waiting)  # and no other one starts
                    for future in waiting:
                        pending.discard(future)
                        results[index[future.key]] = {"stats": {"finish_reason": "interrupted: not started"}}
                try:
                    done, pending = wait(pending, timeout=STOP_POLL_SECONDS, return_when="FIRST_COMPLETED")
                except TimeoutError:  # none ended meanwhile
                    continue
                for future in done:
                    n = index[future.key]
                    try:
                        results[n] = _unpacked(future.result(), output / "parts" / f"{n:04d}")
                    except Exception as exc:  # its workers died (killed, out of memory): its file failed
                        results[n] = {"stats": {"finish_reason": f"task failed: {exc}"}}
                    future.release()  # the part is on disk: neither the worker nor the command keeps it
                    ended.append(results[n]["stats"])
                    progress(ended)
        finally:
            client.cancel(futures, force=True)  # (interrupted twice: no worker replays on for nothing)
            client.run(end_run, run)
    return _merged(sources, results, output, client, stopped)


def _unpacked(result: dict, part: Path) -> dict:
    """``result`` with its part (a tarball) unpacked into the folder ``part``, as it arrives:
    the command holds one part in memory at a time, not every part until the merge."""
    data = result.pop("part", None)
    if data is not None:
        shutil.rmtree(part, ignore_errors=True)  # this command's part of an earlier run
        part.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(part, filter="data")
        result["part_dir"] = str(part)
    return result


def _merged(sources: list[str], results: list[dict], output: Path, client, stopped: list[int]) -> tuple[dict, dict]:
    """The finished parts (``output/parts/<n>``, ``n`` the file's place among the inputs)
    merged as ``--jobs`` merges its parts; the summary and stats."""
    with_part = [(source, r) for source, r in zip(sources, results) if not r.get("no_part")]
    stats_of = [r["stats"] for _, r in with_part]
    # as with --jobs: a part whose replay ended cleanly (finished, or stopped as Ctrl-C stops a crawl)
    # is merged; one whose task failed is left out whole
    whole = [Path(r["part_dir"]) for _, r in with_part
             if r["stats"].get("finish_reason") in ("finished", "shutdown") and r.get("part_dir")]
    counts = merge_runs(whole, output)
    info = client.scheduler_info()
    summary: dict = {"engine": "dask", "scheduler": info.get("address", ""),
                     "jobs": sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()),
                     "parts": len(with_part), "pages": counts["pages"], "images": counts["images"],
                     "parts_merged": len(whole)}
    for key in SUMMARY_STATS:  # the files without a part too: their HTML responses
        summary[key] = sum(r["stats"].get(key) or 0 for r in results)
    from focuscrawl.output.run_state import WRITE_FAILED_STAT

    found = [s[WRITE_FAILED_STAT] for s in stats_of if s.get(WRITE_FAILED_STAT)]
    if found:
        summary["write_failed"] = found[0]
    if stopped:
        summary["stop_signal"] = stopped[0]
    summary.update(files=len(sources), files_without_part={s: r["no_part"] for s, r in zip(sources, results)
                                                           if r.get("no_part")})
    failed = [f"{source}: {r['stats'].get('finish_reason')}" for source, r in with_part
              if r["stats"].get("finish_reason") != "finished"]
    summary["finish_reason"] = "finished" if not failed else "failed: " + "; ".join(failed)
    if stopped:
        summary["finish_reason"] = f"interrupted: {len(failed)} of {len(with_part)} files not replayed to their end " \
                                   f"(run the command again for the whole run)"
    if failed:
        summary["image_files_removed"] = remove_unlisted_images(output)
    stats = summed_stats([{k: v for k, v in s.items() if k != "stop_signal"} for s in stats_of])
    stats["finish_reason"] = summary["finish_reason"]
    return summary, stats


# -- on a worker ---------------------------------------------------------------------------

def _inputs_folder(run: str) -> Path:
    """The folder where this machine's workers keep the run's downloaded inputs."""
    return Path(tempfile.gettempdir()) / f"focuscrawl-warc-inputs-{run}"


def end_run(run: str) -> None:
    """On every worker at the end of a run (``client.run``): the run's downloaded inputs
    removed from this machine, the replay forkers ended (the next run starts new ones)."""
    shutil.rmtree(_inputs_folder(run), ignore_errors=True)
    ReplayForker.close_all()


def local_copy(source: str, run: str) -> str:
    """A path on this machine of the input ``source``: a path itself, a URL downloaded once
    per machine and run (http/https with the standard library, other protocols with fsspec)."""
    if "://" not in source:
        if not Path(source).is_file():
            raise FileNotFoundError(f"no such archive on worker {socket.gethostname()}: {source} "
                                    f"(give the workers the file on a shared file system, or a URL)")
        return source
    folder = _inputs_folder(run)
    folder.mkdir(parents=True, exist_ok=True)
    name = os.path.basename(urlsplit(source).path) or "archive"
    target = folder / f"{hashlib.sha1(source.encode()).hexdigest()[:16]}-{name}"
    # one download per machine: the tasks of its workers that need the file wait for it
    with open(target.with_name(target.name + ".lock"), "wb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file():
            partial = target.with_name(target.name + ".part")
            try:
                if urlsplit(source).scheme in ("http", "https"):
                    from urllib.request import urlopen

                    with urlopen(source, timeout=60) as response, open(partial, "wb") as fh:
                        shutil.copyfileobj(response, fh, 1 << 20)
                else:
                    import fsspec

                    with fsspec.open(source, "rb") as remote, open(partial, "wb") as fh:
                        shutil.copyfileobj(remote, fh, 1 << 20)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
    return str(target)


def replay_task(task: dict, stop: str) -> dict:
    """A Dask task: replay the pages of ``task["seed"]`` in a child process, the run
    directory (its part) back as a gzipped tarball. Returns ``{"stats": the crawl's stats,
    "part": bytes | None, "no_part": why the file has none}``. ``stop`` names the Dask event
    the command sets when it is interrupted: the replay then stops cleanly (SIGINT, as Ctrl-C)."""
    from distributed import Event

    stop_event = Event(stop)
    if stop_event.is_set():
        return {"stats": {"finish_reason": "interrupted: not started"}}
    with tempfile.TemporaryDirectory(prefix="focuscrawl-warc-task-") as work:
        try:
            local = [local_copy(source, task["run"]) for source in task["sources"]]
        except Exception as exc:  # a URL that does not answer, a path the worker does not see
            return {"stats": {"finish_reason": f"error: {type(exc).__name__}: {exc}"}}
        names = dict(zip(local, task["sources"]))
        part = Path(task["part"] or Path(work) / "part")
        result_file, log_file = Path(work) / "result.json", Path(work) / "replay.log"
        spec = {"sources": local, "seed": local[task["sources"].index(task["seed"])], "part": str(part),
                "settings": task["settings"], "spider_args": task["spider_args"], "verbose": task["verbose"],
                "result": str(result_file), "log": str(log_file)}
        (Path(work) / "task.json").write_text(json.dumps(spec))
        forker = ReplayForker.of_this_thread()
        try:
            pid, code = forker.start(str(Path(work) / "task.json")), None
            signalled, asked = False, time.monotonic()
            while code is None:
                code = forker.wait(CHILD_POLL_SECONDS)
                if code is None and not signalled and time.monotonic() - asked >= STOP_POLL_SECONDS:
                    asked = time.monotonic()  # (a question to the scheduler: not at every look)
                    if stop_event.is_set():
                        os.kill(pid, signal.SIGINT)
                        signalled = True
        except ChildProcessError as exc:  # the forker died (killed): the next task starts another
            code = str(exc)
        log_text = log_file.read_text(errors="replace") if log_file.is_file() else ""
        for path, source in names.items():  # messages name the inputs, not this worker's copies
            log_text = log_text.replace(path, source)
        if result_file.is_file():
            result = json.loads(result_file.read_text())
        else:
            tail = [line for line in log_text.splitlines() if line.strip()][-LOG_TAIL_LINES:]
            result = {"stats": {"finish_reason": f"error: replay exited with {code}: "
                                                 + (" | ".join(tail) or "no log")}}
        stats = result["stats"]
        if "finish_reason" in stats and stats["finish_reason"] != "finished":
            for path, source in names.items():
                stats["finish_reason"] = str(stats["finish_reason"]).replace(path, source)
        if signalled and stats.get("finish_reason") != "finished":
            stats["finish_reason"] = "interrupted"
        out: dict = {"stats": stats, "no_part": result.get("no_part"), "part": None,
                     "worker": socket.gethostname()}
        if part.is_dir():
            (part / "replay.log").write_text(log_text)
        if task["part"]:  # written where the command reads it
            out["part_dir"] = task["part"]
        elif part.is_dir() and stats.get("finish_reason") == "finished":
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
                tar.add(part, arcname=".")
            out["part"] = buffer.getvalue()
        return out


#: this worker thread's ``ReplayForker``
_forkers = threading.local()


class ReplayForker:
    """A process with the replay's modules imported and no reactor that forks one child per
    replay (``_replay_process``), as ``--jobs`` forks its job processes: a task's replay
    starts without an interpreter's start and imports (about 1 s of CPU). One per worker
    thread (a thread runs one task at a time); it ignores the group's Ctrl-C and dies with
    that thread, its replays die with it (``focuscrawl.processes.worker_process``)."""

    def __init__(self) -> None:
        # unbuffered: ``select`` on the pipe sees every line not read yet
        self.process = subprocess.Popen([sys.executable, "-m", "focuscrawl.archive.engine", "--forker",
                                         str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, bufsize=0, start_new_session=True)

    #: every forker of this process (``close_all``)
    started: list["ReplayForker"] = []

    @classmethod
    def of_this_thread(cls) -> "ReplayForker":
        forker = getattr(_forkers, "forker", None)
        if forker is None or forker.process.poll() is not None:
            forker = _forkers.forker = cls()
            cls.started.append(forker)
        return forker

    @classmethod
    def close_all(cls) -> None:
        """End every forker of this process (idle: each waits for its next task)."""
        while cls.started:
            process = cls.started.pop().process
            process.stdin.close()  # its loop ends (once its replay ends: killed if one still runs)
            try:
                process.wait(2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def start(self, task_file: str) -> int:
        """The pid of a new replay of ``task_file``."""
        self.process.stdin.write(f"{task_file}\n".encode())
        return int(self._line())

    def wait(self, timeout: float) -> int | None:
        """The replay's exit code once it ended, ``None`` while it runs after ``timeout`` seconds."""
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        return int(self._line()) if ready else None

    def _line(self) -> str:
        line = self.process.stdout.readline()
        if not line:
            raise ChildProcessError(f"the replay forker ended ({self.process.wait()})")
        return line.decode()


def _forker_process(parent: int) -> int:
    """``python -m focuscrawl.archive.engine --forker PID``: ``ReplayForker``'s process."""
    worker_process(parent)  # the group's Ctrl-C is the command's; dies with its thread
    import focuscrawl.spiders.archive  # noqa: F401  (the crawl's modules, imported once: no reactor yet)

    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _forked_replay(line.decode().strip())
            finally:
                os._exit(code)
        out.write(f"{pid}\n".encode())
        out.flush()
        _, status = os.waitpid(pid, 0)
        out.write(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        out.flush()
    return 0


def _forked_replay(task_file: str) -> int:
    """A replay forked by ``_forker_process``: its output into the task's log, Ctrl-C back to
    Python's (Scrapy installs its handlers only over Python's own), then ``_replay_process``."""
    spec = json.loads(Path(task_file).read_text())
    log = os.open(spec["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return _replay_process(task_file)


def _replay_process(task_file: str) -> int:
    """A task's replay process (forked by ``ReplayForker``): ``TASK.json`` says what to replay,
    the result goes to the file it names."""
    from focuscrawl.archive.reader import ArchiveError, ArchiveIndex
    from focuscrawl.cli import configure_logging

    worker_process(os.getppid(), ignore=())  # dies with its task's worker; the task's SIGINT stops its crawl
    spec = json.loads(Path(task_file).read_text())
    configure_logging(spec["verbose"])
    result: dict
    try:
        index = ArchiveIndex(spec["sources"])
    except (ArchiveError, OSError) as exc:
        result = {"stats": {"finish_reason": f"error: {exc}"}}
    else:
        why = files_without_part(index).get(spec["seed"])
        if why:  # its HTML responses still count among the archives' (as with --jobs)
            result = {"stats": {"finish_reason": "finished",
                                "focuscrawl/archive/html_responses": index.html_responses([spec["seed"]])},
                      "no_part": why}
        else:
            result = {"stats": archive_cli.replay(index, spec["part"], spec["settings"], spec["spider_args"],
                                                  spec["verbose"], seed_files=[spec["seed"]])}
    Path(spec["result"]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":  # --forker PID
    sys.exit(_forker_process(int(sys.argv[2])))
