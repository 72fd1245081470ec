"""``focuscrawl warc``: run extraction, scoring and the writers over WARC/ARC files.

With ``--jobs N`` every archive file is one job (its pages are the job's seeds; every
file still answers the job's requests, so an image stored in another file is found).
N job processes run the jobs, each process one after another in its reactor, each job
with its own crawler and run directory ``OUT/parts/<n>`` (image files go straight to
``OUT/images``), and ``focuscrawl merge`` builds ``OUT`` from the parts. Pages carry
their capture time as ``fetched_at``, so the merged run is the same for any N.
"""
from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Iterator

from focuscrawl.crawl_cli import on_error
from focuscrawl.output.merge import merge_runs
from focuscrawl.output.stats import jsonable, summed_stats
from focuscrawl.output.summary import crawl_summary
from focuscrawl.processes import (EXIT_FAILED, EXIT_FINISHED, interruptible, record_stop_signals, signals_held,
                                  worker_process)

#: the stats a replay's summary reports (summed over the jobs of `focuscrawl warc --jobs`)
SUMMARY_STATS = ("focuscrawl/archive/html_pages", "focuscrawl/archive/html_responses", "focuscrawl/archive/responses", "focuscrawl/archive/missing",
                 "focuscrawl/pages/written", "focuscrawl/images/written")
#: settings of each job with --jobs: the jobs use the cores, not an analysis pool each
JOB_SETTINGS = {"FOCUSCRAWL_ANALYSIS_WORKERS": 0}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("warc", help="replay WARC/ARC files through the focused crawl's extraction, "
                                    "scoring and writers (no network)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="WARC or ARC files (.gz or plain)")
    p.add_argument("-o", "--output", required=True, help="run directory (same files as a crawl)")
    p.add_argument("--mode", default=None, help="keywords | document | unfocused | learning (default: keywords: every archived page is a seed, the order decides nothing)")
    p.add_argument("--model", help="ARPA or KenLM binary model (default: bundled cats demo)")
    p.add_argument("--keywords", help="keyword file token;score")
    p.add_argument("--topic", help="topic bundle (focuscrawl topic build): its LM and keywords score the pages, "
                                   "and `focuscrawl rank` ranks the output with it")
    p.add_argument("--jobs", type=int, default=0, metavar="N",
                   help="one job per file, N processes at a time, parts merged into OUTPUT "
                        "(default: all files in this process)")
    add_process_arguments(p)
    p.set_defaults(func=cmd_warc)


def add_process_arguments(p: argparse.ArgumentParser) -> None:
    """``-s NAME=VALUE``, ``-v`` and ``--json`` of a command that runs its own Scrapy crawl
    (``warc``, ``fetch``): read with ``settings_from_pairs``, ``crawler_process`` and ``crawl_stats``."""
    p.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                   help="Scrapy/focuscrawl setting (repeatable), e.g. -s DOWNLOAD_DELAY=2")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="Scrapy's INFO and DEBUG log too (default: focuscrawl's INFO lines, warnings, progress)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object (for machines)")


def settings_from_pairs(items: list[str]) -> dict[str, str]:
    """``{NAME: VALUE}`` of ``-s NAME=VALUE`` arguments (a bad one: ValueError)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"-s expects NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def _focuscrawl_info_and_warnings(record: logging.LogRecord) -> bool:
    """Quiet replay log: focuscrawl's own INFO lines (run directory, progress) and every
    warning; Scrapy's and Twisted's INFO/DEBUG chatter only with ``-v``."""
    return record.levelno >= logging.WARNING or record.name.startswith("focuscrawl")


@contextmanager
def crawler_process(settings: dict, verbose: bool) -> Iterator:
    """A ``CrawlerProcess`` with the project's settings and ``settings``, logging through the
    root logger's handlers (the command's, see ``focuscrawl.cli``), filtered to focuscrawl's
    lines and warnings unless ``verbose``; the handlers are restored on exit."""
    from scrapy.crawler import CrawlerProcess

    from focuscrawl.resources import project_settings

    project = project_settings()
    for name, value in settings.items():
        project.set(name, value, priority="cmdline")
    # one handler (the command's, from focuscrawl.cli): Scrapy's own root handler would
    # print every line a second time; Scrapy's chatter only with -v
    project.set("LOG_INSTALL_ROOT_HANDLER", False, priority="cmdline")
    handlers = [] if verbose else list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(_focuscrawl_info_and_warnings)
    root = logging.getLogger()
    root_level = root.level
    if "LOG_LEVEL" in settings:  # -s LOG_LEVEL=...: Scrapy applies it only to its own root handler
        root.setLevel(project.get("LOG_LEVEL"))
    try:
        yield CrawlerProcess(project)
    finally:
        root.setLevel(root_level)
        for handler in handlers:
            handler.removeFilter(_focuscrawl_info_and_warnings)


def crawl_stats(crawler, stop_signals: list[int] = ()) -> dict:
    """A crawl's stats, as stats.json has them (sent from a job process to the command), with
    the first stop signal it got (``stop_signal``)."""
    stats = {k: jsonable(v) for k, v in (crawler.stats.get_stats() or {}).items()}
    if stop_signals:
        stats["stop_signal"] = stop_signals[0]
    return stats


def _summary(stats: dict) -> dict:
    """The replay's summary for ``--json``: its counts and how it ended: ``finish_reason``, the
    failed write if one failed (``write_failed``), the first stop signal (``stop_signal``)."""
    from focuscrawl.output.run_state import WRITE_FAILED_STAT  # (Scrapy's components: loaded with the crawl)

    summary = {"finish_reason": stats.get("finish_reason"), **{k: stats.get(k, 0) for k in SUMMARY_STATS}}
    if stats.get(WRITE_FAILED_STAT):
        summary["write_failed"] = stats[WRITE_FAILED_STAT]
    if stats.get("stop_signal"):
        summary["stop_signal"] = stats["stop_signal"]
    return summary


def exit_code(summary: dict) -> int:
    """The command's exit code (``focuscrawl.processes``): failed before interrupted before finished."""
    if summary.get("finish_reason") == "finished":
        return EXIT_FINISHED
    if summary.get("write_failed") or not summary.get("stop_signal"):
        return EXIT_FAILED
    return 128 + summary["stop_signal"]


def replay(index, output: str, settings: dict, spider_args: dict, verbose: bool = False,
           seed_files: list[str] | None = None) -> dict:
    """One replay in this process (one reactor): the ``archive`` spider over ``index`` (only
    the pages of ``seed_files`` when given; every file of the index answers requests)."""
    with crawler_process(settings, verbose) as process:
        stop_signals = record_stop_signals(process)
        crawler = process.create_crawler("archive")
        if seed_files:
            spider_args = {**spider_args, "seed_files": list(seed_files)}
        refused: list[BaseException] = []  # a bad --topic, --model, ...: one line, exit 2
        on_error(process.crawl(crawler, archives=index, output=output, **spider_args), refused)
        process.start()
    if refused:
        exc = refused[0]
        raise exc if isinstance(exc, OSError) else ValueError(str(exc).splitlines()[0] if str(exc) else exc)
    return crawl_stats(crawler, stop_signals)


def replay_file(path: str, part: str, archives: list[str] | None = None, settings: dict | None = None,
                spider_args: dict | None = None, verbose: bool = False) -> dict:
    """Replay the pages of the archive file ``path`` into the run directory ``part``, as one
    job of ``--jobs`` does (``focuscrawl merge`` / ``merge_runs`` builds a run of the parts):
    the other ``archives`` (default: none) answer its requests too (an image stored in
    another file). ``settings``: ``-s`` values (e.g. ``FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS=0``
    when the cores run other files); ``spider_args``: ``mode``, ``model``, ``keywords``,
    ``topic``. Returns the crawl's stats (``finish_reason`` ``finished`` when the part is
    whole). Runs a Twisted reactor, which starts once per process: call it in a process of
    its own (a fresh one per file, or ``python -m focuscrawl.cli warc PATH -o PART``)."""
    from focuscrawl.archive.reader import ArchiveIndex

    paths = list(dict.fromkeys([path, *(archives or [])]))
    settings = {"FOCUSCRAWL_CRAWL_SUMMARY": False, **(settings or {})}
    return replay(ArchiveIndex(paths), part, settings, dict(spider_args or {}), verbose, seed_files=[path])


def _index(paths: list[str]):
    from focuscrawl.archive.reader import ArchiveIndex

    index = ArchiveIndex(paths)  # a file that is no archive: ArchiveError, exit 2
    if not index.html_refs():
        raise ValueError(f"no HTML responses in {', '.join(paths)}")
    return index


def files_without_part(index) -> dict[str, str]:
    """Each archive file that gets no job with ``--jobs`` (its pages are its job's seeds), and why."""
    pages = {ref.path for ref in index.html_refs()}
    captures: dict[str, int] = {}
    for ref in index.order:
        if ref.status == 200 and "html" in ref.content_type.lower():
            captures[ref.path] = captures.get(ref.path, 0) + 1
    return {path: (f"its {captures[path]} HTML pages are all captured in an earlier file too (the first capture "
                   f"is replayed)" if captures.get(path) else "it holds no HTML page (images or other records only; "
                                                               "they still answer the other files' requests)")
            for path in index.paths if path not in pages}


def human_summary(summary: dict, output: str, stats: dict) -> str:
    """The replay in a few lines (``--json`` prints ``summary`` itself): what the archives held,
    then every crawl's summary (``focuscrawl.output.summary``) of the replay's ``stats`` (the
    jobs' summed)."""
    pages, responses = summary["focuscrawl/archive/html_pages"], summary.get("focuscrawl/archive/html_responses") or 0
    if summary.get("finish_reason") == "finished":
        lines = [f"warc: {summary['files']} archive files, {pages:,} HTML pages replayed into {output}"]
    else:  # stopped part-way: what the run directory holds, not what the archives do
        written = summary.get("pages", summary.get("focuscrawl/pages/written") or 0)
        lines = [f"warc: {summary['files']} archive files with {pages:,} HTML pages; {written:,} pages written "
                 f"into {output} before the replay ended ({summary.get('finish_reason')})"]
    if responses > pages:
        lines.append(f"  of {responses:,} HTML responses in the archives: each URL's first capture with status 200 is "
                     f"its page (other captures of a URL, redirects and errors are not)")
    if "parts" in summary:
        lines.append(f"  {summary['parts']} jobs (one per file with pages of its own) on {summary['jobs']} processes; "
                     f"{summary.get('parts_merged', summary['parts'])} parts merged: {summary['pages']:,} pages, "
                     f"{summary['images']:,} images")
        for path, why in summary["files_without_part"].items():
            lines.append(f"  {path}: no job of its own: {why}")
    lines.append(f"  archives: {summary['focuscrawl/archive/responses']:,} responses served, "
                 f"{summary['focuscrawl/archive/missing']:,} requests for URLs they do not hold "
                 f"(--json for this summary as JSON)")
    return "\n".join(lines + crawl_summary(stats, output=str(Path(output).resolve()), what="replay"))


def _progress_interval(settings: dict) -> float:
    """``FOCUSCRAWL_PROGRESS_INTERVAL`` as ``-s`` sets it, else the project's."""
    from focuscrawl.resources import project_settings

    return project_settings(settings).getfloat("FOCUSCRAWL_PROGRESS_INTERVAL")


def cmd_warc(args: argparse.Namespace) -> int:
    for path in args.paths:
        if Path(path).is_dir():
            raise ValueError(f"this is a folder, not an archive: {path} (give the files in it, e.g. {path}/*.warc.gz)")
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such archive: {path}")
    if args.jobs < 0:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    # the summary is printed here, once, of all the jobs together (not logged by each crawl)
    settings = {"FOCUSCRAWL_CRAWL_SUMMARY": False, **settings_from_pairs(args.set)}
    spider_args = {name: getattr(args, name) for name in ("mode", "model", "keywords", "topic")
                   if getattr(args, name)}
    verbose = getattr(args, "verbose", False)
    if not args.jobs:
        index = _index(args.paths)
        stats = replay(index, args.output, settings, spider_args, verbose)
        summary = {"files": len(index.paths), **_summary(stats)}
    else:  # the job processes start while this one reads the index
        from focuscrawl.output.files import lock_directory

        # one command writes the merged run (each job locks its own part): taken before any job starts
        Path(args.output).mkdir(parents=True, exist_ok=True)
        lock = lock_directory(args.output, "output directory")
        # every job writes its image files straight into the merged run (named by URL: same name, same bytes)
        job_settings = {**JOB_SETTINGS, "FOCUSCRAWL_IMAGE_STORE": str(Path(args.output).resolve()), **settings}
        try:
            jobs = JobProcesses(min(args.jobs, len(args.paths)), job_settings, spider_args, verbose)
            try:
                with jobs.interruptible():  # a Ctrl-C stops the jobs; their parts are still merged
                    index = _index(args.paths)
                    summary, stats = replay_jobs(index, Path(args.output), jobs, _progress_interval(settings))
            finally:
                jobs.close()
        finally:
            lock.release()
    print(json.dumps(summary) if args.json else human_summary(summary, args.output, stats))
    return exit_code(summary)


def _job_worker(conn: Connection, settings: dict, spider_args: dict, verbose: bool, parent: int,
                inherited: list[Connection], stop=None) -> None:
    """A job process of ``replay_jobs``: receives the index, then replays one file after
    another — ``(file, part)`` each, its summary sent back — until ``None`` or EOF. It dies
    with the command (``focuscrawl.processes``) and closes the command's pipe ends a fork
    copied into it (``inherited``): holding them, it would never see EOF and wait for ever.

    The crawls run one after the other in one reactor (Scrapy's "running multiple spiders in
    the same process" sequentially), so a process pays its start-up (interpreter, imports,
    reactor) once, not once a file; each crawl is a new ``Crawler`` with its own spider,
    components, stats and run directory, as in a process of its own.

    ``stop`` (an event the command sets when it is interrupted) stops the running crawl
    cleanly (as Ctrl-C does) whenever it is set: a job still starting when the group's Ctrl-C
    came (ignored until the reactor starts) does not replay its whole file; so does the
    process's own first Ctrl-C or SIGTERM (``_job_signal_handlers``)."""
    from focuscrawl.cli import configure_logging

    for end in inherited:
        end.close()
    # the group's Ctrl-C and SIGTERM stop its crawl cleanly once its handlers are installed (as
    # the reactor starts); before, half-way through imports or a crawl's start, they are ignored
    worker_process(parent)
    configure_logging(verbose)  # a spawned process starts without the command's handler (a forked one has it)
    try:
        index = conn.recv()
        task = conn.recv()
    except EOFError:  # the command stopped before it had work (e.g. a file that is no archive)
        return
    if task is None:
        return
    from twisted.internet import defer, task as twisted_task, threads  # (none installs a reactor)

    with crawler_process(settings, verbose) as process:
        stop_signals = record_stop_signals(process)
        received: list[int] = []  # this process's own stop signals

        def stopped() -> int:
            return stop.value if stop is not None and stop.value else (received[0] if received else 0)

        def start(task: tuple[str, str]):
            path, part = task
            crawler = process.create_crawler("archive")
            crawl = process.crawl(crawler, archives=index, output=part, seed_files=[path], **spider_args)
            watch = twisted_task.LoopingCall(_stop_when_set, stopped, crawler, stop_signals)
            watch.start(STOP_POLL_SECONDS, now=False)
            crawl.addBoth(lambda result: (watch.stop() if watch.running else None, result)[1])
            return path, crawler, crawl

        @defer.inlineCallbacks
        def run_tasks(path, crawler, crawl):
            try:
                while True:
                    try:
                        yield crawl
                        summary = crawl_stats(crawler, stop_signals)
                    except Exception as exc:  # this file's crawl failed to start: the others go on
                        logging.getLogger(__name__).error("%s: %s", path, exc)
                        summary = {"finish_reason": f"error: {exc}"}
                    conn.send(summary)
                    task = yield threads.deferToThread(conn.recv)
                    if task is None:
                        break
                    path, crawler, crawl = start(task)
            except (EOFError, BrokenPipeError):  # the command is gone (stopped, interrupted)
                pass
            finally:
                from twisted.internet import reactor

                # the reactor may not run yet (a first crawl that failed at once): stopping it
                # now would be a no-op, and the process would then wait for ever
                with suppress(RuntimeError):  # already stopping (Ctrl-C)
                    reactor.callWhenRunning(reactor.stop)

        run_tasks(*start(task))  # the first crawler installs the reactor the settings ask for
        _job_signal_handlers(received)
        process.start(stop_after_crawl=False, install_signal_handlers=False)


def _job_signal_handlers(received: list[int]) -> None:
    """A job process's Ctrl-C and SIGTERM (the group's, or its own): the first is appended to
    ``received`` and stops the running crawl cleanly (``_stop_when_set``); the process then
    sends the crawl's summary and ends as it does after its last file. Scrapy's own handler
    would stop the reactor as soon as the crawl stopped, sometimes before the summary was
    sent: the command took the job for dead and left its whole part out of the run. A second
    signal stops the process at once (its part is left out, as after a second Ctrl-C)."""
    from scrapy.utils.ossignal import install_shutdown_handlers

    def first(signum: int, _frame) -> None:
        received.append(signum)
        install_shutdown_handlers(second)

    def second(signum: int, _frame) -> None:
        from twisted.internet import reactor  # (installed by the first crawler by now)

        install_shutdown_handlers(signal.SIG_IGN)
        reactor.callFromThread(_stop_reactor)

    install_shutdown_handlers(first)


def _stop_reactor() -> None:
    from twisted.internet import reactor

    with suppress(RuntimeError):  # already stopping
        reactor.stop()


#: how often a job process looks whether the command was interrupted (``JobProcesses.stop``)
STOP_POLL_SECONDS = 0.2


def _stop_when_set(stopped, crawler, stop_signals: list[int]) -> None:
    """Stop ``crawler`` cleanly once the command or the job process is interrupted
    (``stopped()``: the signal, 0 until then)."""
    from scrapy.utils.defer import deferred_from_coro

    # once its engine runs (a crawl stopped while it starts never ends); ``stop`` clears ``crawling``: once
    signum = stopped()
    if signum and crawler.crawling and getattr(crawler.engine, "running", False):
        if not stop_signals:
            stop_signals.append(signum)
        deferred_from_coro(crawler.stop_async())


def _start_method() -> str:
    """``fork`` where it is safe: on Linux, before this process has a reactor (none is
    installed until a crawler is made) — a job process then starts with the command's
    modules imported (0.9 s less than a fresh interpreter, ``spawn``, which imports
    ``focuscrawl.cli`` and Scrapy again); elsewhere, or with a reactor, ``spawn``."""
    if sys.platform.startswith("linux") and "twisted.internet.reactor" not in sys.modules:
        return "fork"
    return "spawn"


class JobProcesses:
    """``n`` job processes (``_job_worker``), started ahead so that their start-up overlaps
    the command's own (reading the archives' index); ``run`` hands out one file at a time
    to whichever process is free."""

    def __init__(self, n: int, job_settings: dict, spider_args: dict, verbose: bool = False) -> None:
        method = _start_method()
        context = multiprocessing.get_context(method)
        self.processes = []
        #: the signal that interrupted the command (0: none), told to every job process
        self.stop = context.Value("i", 0, lock=False)
        for i in range(n):
            conn, child = context.Pipe()
            inherited = [c for _, c in self.processes] + [conn] if method == "fork" else []
            process = context.Process(target=_job_worker, name=f"focuscrawl-warc-job-{i}",
                                      args=(child, job_settings, spider_args, verbose, os.getpid(), inherited,
                                            self.stop))
            with signals_held():
                process.start()
            child.close()
            self.processes.append((process, conn))

    def run(self, index, tasks: list[tuple[str, str]], on_result=None) -> list[dict]:
        """The summary of each ``(file, part)`` task, in order; ``on_result(results)`` after each one ends."""
        results: list[dict] = [{"finish_reason": "not run: every job process died"}] * len(tasks)
        todo = deque(enumerate(tasks))
        busy: dict[Connection, int] = {}
        ended: list[dict] = []  # the results so far, in the order the tasks ended

        def next_task(conn: Connection) -> None:
            with suppress(BrokenPipeError):  # the process died: its next file goes to another
                if todo and not self.stop.value:
                    conn.send(todo[0][1])
                    busy[conn] = todo.popleft()[0]
                else:
                    conn.send(None)

        for _, conn in self.processes:
            with suppress(BrokenPipeError):
                conn.send(index)
                next_task(conn)
        while busy:
            for conn in wait(list(busy)):
                n = busy.pop(conn)
                try:
                    results[n] = conn.recv()
                except EOFError:  # the process died (killed, out of memory): its file failed, the others go on
                    results[n] = {"finish_reason": "job process died"}
                    continue
                finally:
                    ended.append(results[n])
                    if on_result is not None:
                        on_result(ended)
                next_task(conn)
        if self.stop.value:
            for n, result in enumerate(results):
                if result.get("finish_reason") != "finished":  # "shutdown": its crawl stopped as Ctrl-C stops one
                    results[n] = {**result, "finish_reason": "interrupted", "stop_signal": self.stop.value,
                                  "stopped_cleanly": result.get("finish_reason") == "shutdown"}
        return results

    def interruptible(self):
        """Inside, the first Ctrl-C or SIGTERM sets ``stop`` (the jobs stop their crawls cleanly,
        no file is handed out any more, the finished parts are merged); a second one raises
        ``KeyboardInterrupt``."""
        return interruptible(lambda: bool(self.stop.value), lambda signum: setattr(self.stop, "value", signum))

    def close(self) -> None:
        for process, conn in self.processes:
            conn.close()  # a process still waiting for work gets EOFError and ends
        for process, _ in self.processes:
            process.join()


class FilesProgress:
    """A progress line (``files_progress_line``) as the jobs of ``replay_jobs`` end, at most one
    every ``interval`` seconds (0: none): each job's crawl logs its own file's pages meanwhile."""

    def __init__(self, files: int, pages_total: int, interval: float) -> None:
        from focuscrawl.extensions.progress import files_progress_line

        self.line = files_progress_line
        self.files, self.pages_total, self.interval = files, pages_total, interval
        self.start = self.last = time.monotonic()

    def __call__(self, ended: list[dict]) -> None:
        now = time.monotonic()
        if self.interval <= 0 or (now - self.last < self.interval and len(ended) < self.files):
            return
        self.last = now
        pages = sum(r.get("focuscrawl/archive/html_pages") or 0 for r in ended)
        pairs = sum(r.get("focuscrawl/images/written") or 0 for r in ended)
        logging.getLogger(__name__).info(self.line(len(ended), self.files, pages, self.pages_total, pairs,
                                                   now - self.start))


def replay_jobs(index, output: Path, processes: JobProcesses, progress_interval: float = 0.0) -> tuple[dict, dict]:
    """One job per archive file holding pages, run on ``processes``, then the parts merged
    into ``output``: the summary and the jobs' stats summed. A progress line as the jobs end
    (``FilesProgress``, every ``progress_interval`` seconds at most)."""
    pages = index.html_refs()
    with_pages = {ref.path for ref in pages}
    files = [path for path in index.paths if path in with_pages]
    parts = [output / "parts" / f"{n:04d}" for n in range(len(files))]
    progress = FilesProgress(len(files), len(pages), progress_interval)
    results = processes.run(index, [(path, str(part)) for path, part in zip(files, parts)], progress)
    # a part whose crawl ended cleanly (finished, or stopped by Ctrl-C as a crawl is) is whole; one whose
    # job died or failed is left out: it may hold image rows whose pages' rows were never written
    whole = [part for part, r in zip(parts, results) if r.get("finish_reason") == "finished" or r.get("stopped_cleanly")]
    counts = merge_runs(whole, output)
    summary: dict = {"jobs": len(processes.processes), "parts": len(parts), "pages": counts["pages"],
                     "images": counts["images"], "parts_merged": len(whole)}
    # what the archives hold, from their index (also the files of jobs killed or interrupted
    # before their crawl counted them); what the replay did, summed over the jobs
    held = {"focuscrawl/archive/html_pages": len(pages), "focuscrawl/archive/html_responses": index.html_responses()}
    for key in SUMMARY_STATS:
        summary[key] = held[key] if key in held else sum(r.get(key) or 0 for r in results)
    from focuscrawl.output.run_state import WRITE_FAILED_STAT

    for key, stat in (("write_failed", WRITE_FAILED_STAT), ("stop_signal", "stop_signal")):  # the first job's
        found = [r[stat] for r in results if r.get(stat)]
        if found:
            summary[key] = found[0]
    summary.update(files=len(index.paths), files_without_part=files_without_part(index))
    failed = [f"{path}: {r.get('finish_reason')}" for path, r in zip(files, results) if r.get("finish_reason") != "finished"]
    summary["finish_reason"] = "finished" if not failed else "failed: " + "; ".join(failed)
    if processes.stop.value and failed:  # (a Ctrl-C after every job finished: the run is whole)
        summary["finish_reason"] = f"interrupted: {len(failed)} of {len(files)} files not replayed to their end " \
                                   f"(run the command again for the whole run)"
    if failed:  # files the unfinished jobs stored without their rows
        summary["image_files_removed"] = remove_unlisted_images(output)
    stats = summed_stats([{k: v for k, v in r.items() if k != "stop_signal"} for r in results])
    stats["finish_reason"] = summary["finish_reason"]
    return summary, stats


def remove_unlisted_images(run: Path) -> int:
    """Delete the image files of ``run/images`` that no ``images.tsv`` row names: the jobs store
    their files there straight away, and a job left out of the merge (interrupted, killed)
    leaves files without rows. Returns how many went."""
    from focuscrawl.output.files import iter_tsv

    listed = {row.get("image_path") for row in iter_tsv(run / "images.tsv", errors="replace")}
    removed = 0
    folder = run / "images"
    if folder.is_dir():
        for path in folder.iterdir():
            if path.is_file() and f"images/{path.name}" not in listed:
                path.unlink()
                removed += 1
    return removed
