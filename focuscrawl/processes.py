"""Child processes that stop with their parent and leave the terminal's signals to it.

A worker process (the crawl's analysis pool, ``train-lm``'s pool, ``warc --jobs``'s job
processes) belongs to the command that started it:

* Ctrl-C, ``timeout`` and systemd signal the whole process group. A worker that died of
  that signal would break the pool under the pages still being analysed: a worker
  ignores SIGINT and SIGTERM and lets its parent decide when it ends (pool shutdown, EOF
  on its pipe).
* A parent killed with SIGKILL cannot shut its pool down, and a worker blocked on its
  task queue (whose both ends it holds) would wait for ever: on Linux the kernel kills it
  with its parent (``prctl(PR_SET_PDEATHSIG)``); elsewhere a thread polls the parent.

A command that owns temporary files stops on SIGTERM as on Ctrl-C (``exit_on_sigterm``):
its ``finally`` blocks remove them, where the default action would end it on the spot.

A crawl told to stop ignores the stop signals that come once its engine has stopped
(``ignore_stop_signals_once_stopped``): everything is written by then, and Python's exit
puts the default action back under Scrapy's handler, so a second Ctrl-C 0.3 s after the
first killed the finished process (exit -2) instead of being the no-op it was meant as.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

_PR_SET_PDEATHSIG = 1


GROUP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held() -> Iterator[None]:
    """Start child processes inside: the group's SIGINT and SIGTERM are held (blocked) in the
    meantime, so a child inherits them blocked and ``worker_process`` ignores them before it
    lets them through (a Ctrl-C while it imports would kill it otherwise); this process gets
    a signal that came meanwhile when the block ends."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, GROUP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def worker_process(parent: int, ignore: tuple[int, ...] = GROUP_SIGNALS) -> None:
    """Call first in a child process: ignore the group's ``ignore`` signals and die with
    ``parent`` (the pid of the process that started this one, read in the parent: a parent
    that died before this call is noticed too)."""
    for signum in ignore:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, GROUP_SIGNALS)  # held by ``signals_held`` until now
    if not _kill_with_parent():
        threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()
    if os.getppid() != parent:  # the parent died before the kernel was asked
        os._exit(1)


def _kill_with_parent() -> bool:
    """Linux: SIGKILL this process when its parent dies; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def ignore_stop_signals_once_stopped() -> None:
    """After a crawl's engine stopped: if a stop signal came (Scrapy's handler is now its
    "force" handler), ignore further SIGINT/SIGTERM, as Scrapy does after the second one. A
    crawl that ended by itself keeps its handlers (an embedding script's Ctrl-C still works)."""
    from scrapy.crawler import AsyncCrawlerProcess, CrawlerProcessBase

    forced = {getattr(CrawlerProcessBase, "_signal_kill", None),
              getattr(AsyncCrawlerProcess, "_signal_kill_reactorless", None)} - {None}
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in GROUP_SIGNALS:
        if getattr(signal.getsignal(signum), "__func__", None) in forced:
            signal.signal(signum, signal.SIG_IGN)


def exit_on_sigterm() -> None:
    """SIGTERM raises ``SystemExit(143)`` in the main thread (the shell's code for it), so
    that context managers and ``finally`` blocks run as they do on Ctrl-C."""
    signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum, frame) -> None:
    raise SystemExit(128 + signum)


#: Exit codes of the commands that crawl (``focuscrawl crawl``, ``scrapy crawl focused``,
#: ``focuscrawl demo``, ``focuscrawl warc``; docs/OUTPUT.md "Exit codes"): finished (also at
#: the page budget or a ``CLOSESPIDER_*`` limit), failed (a write of the run failed, a crawl
#: that could not start), bad input (usage, a file that is not what it should be); an
#: interrupted crawl exits with ``128 + the signal`` as a shell reports it (Ctrl-C 130, SIGTERM 143).
EXIT_FINISHED = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

#: finish reasons of a crawl that failed (``RunState``'s ``write_failed``, Scrapy's ``start_error``)
FAILED_REASONS = frozenset({"write_failed", "start_error"})


@contextmanager
def interruptible(stopped: Callable[[], bool], stop: Callable[[int], None]) -> Iterator[None]:
    """Inside, the first Ctrl-C or SIGTERM calls ``stop(signum)`` (a clean stop: the work ends,
    what is finished is kept); one that comes once ``stopped()`` raises ``KeyboardInterrupt``."""
    def interrupted(signum, frame) -> None:
        if stopped():
            raise KeyboardInterrupt
        stop(signum)

    handlers = {signum: signal.signal(signum, interrupted) for signum in GROUP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def record_stop_signals(process, shutdown_timeout: float = 0.0) -> list[int]:
    """The stop signals a Scrapy ``CrawlerProcess`` gets from now on, in order (filled as they
    come). Its log calls are wrapped, not its handlers: a handler is compared with Scrapy's own
    (``ignore_stop_signals_once_stopped``). ``shutdown_timeout`` > 0: a clean stop that has not
    ended that many seconds after the first signal (a download or a page that never ends) is
    made the unclean one a second Ctrl-C makes (``_stop_unfinished``)."""
    received: list[int] = []
    for name in ("_log_shutdown", "_log_kill"):
        log = getattr(process, name, None)
        if log is not None:
            setattr(process, name, lambda signum, log=log: (received.append(signum), log(signum))[1])
    log_shutdown = getattr(process, "_log_shutdown", None)
    if shutdown_timeout > 0 and log_shutdown is not None:
        def on_shutdown(signum: int) -> None:
            from twisted.internet import reactor

            log_shutdown(signum)
            if len(received) == 1:
                reactor.callLater(shutdown_timeout, _stop_unfinished, process, signum, shutdown_timeout)

        process._log_shutdown = on_shutdown
    return received


def _stop_unfinished(process, signum: int, timeout: float) -> None:
    """The clean stop asked for ``timeout`` seconds ago has not ended: stop as on a second signal
    (Scrapy's ``_signal_kill``: the reactor stops, nothing more is written; a JOBDIR resume
    crawls again what was not committed)."""
    import logging

    logging.getLogger(__name__).warning(
        "the crawl did not stop within %g s of %s (FOCUSCRAWL_SHUTDOWN_TIMEOUT): stopping it now, as a "
        "second Ctrl-C does; run the same command (same JOBDIR) to resume", timeout, signal.Signals(signum).name)
    process._signal_kill(signum, None)


def crawl_exit_code(finish_reason: str | None, stop_signals: list[int], failed: bool = False) -> int:
    """The exit code of a crawl command: failed (``failed``: a write failed or the crawl did
    not start, or a failed finish reason) before interrupted (the first stop signal) before
    finished."""
    if failed or finish_reason in FAILED_REASONS:
        return EXIT_FAILED
    if stop_signals:
        return 128 + stop_signals[0]
    return EXIT_FINISHED if finish_reason else EXIT_FAILED


#: the janitor of ``removed_when_gone``: it waits for the end of its standard input (the owner's
#: end closes when the owner ends, however), then removes the paths it was given
_JANITOR = """
import os, shutil, sys
sys.stdin.buffer.read()
for path in sys.argv[1:]:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass
"""


def janitor(*paths: "str | os.PathLike[str]"):
    """Start the janitor of the temporary ``paths`` (files or folders): a small process (a
    session of its own: the group's signals do not reach it) that holds the other end of a
    pipe and removes them at its end of file, which comes when this process ends however it
    ends, SIGKILL and the out-of-memory killer included (they run no ``finally``, no
    ``atexit``). Closing the returned process's ``stdin`` has it remove them now."""
    import subprocess

    return subprocess.Popen([sys.executable, "-I", "-S", "-c", _JANITOR, *map(os.fspath, paths)],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


@contextmanager
def removed_when_gone(*paths: "str | os.PathLike[str]") -> Iterator[None]:
    """Temporary ``paths`` removed when the block is left, or when this process is killed in
    it (``janitor``)."""
    import subprocess

    cleaner = janitor(*paths)
    try:
        yield
    finally:
        cleaner.stdin.close()
        try:
            cleaner.wait(10)
        except subprocess.TimeoutExpired:  # a slow disk: it finishes on its own
            pass
