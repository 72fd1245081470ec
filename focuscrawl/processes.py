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
from typing import Iterator

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
