"""Run real Scrapy crawls from tests: in this process, or as a process of their own.

* ``crawl`` runs the ``focused`` spider to the end with the toy model against a
  ``LocalWeb``, in this process: on one asyncio reactor that runs for the whole session in
  a thread of its own (Scrapy's reactor cannot restart), with ``CrawlerRunner``, as an
  embedding script would. That saves the 3-5 s a process costs to import Scrapy, the
  language identifier and the models. Its log comes back as the ``stderr`` of a
  ``CompletedProcess``. (Not in the main thread: no SIGALRM extraction time limit.)
* ``focused_cmd``/``start_focused``: the crawl as a process (``tests/support/run_crawl.py``)
  that the caller waits for, signals or kills, forked from a server that has imported the
  crawl's modules (``tests/support/warmfork.py``).
* the link spider of the Redis tests: ``links_cmd``/``run_links``/``start_links``.
* ``on_reactor``: call a function on that reactor's thread and wait for its result (a
  Deferred's once it fires), for components that must run there.
"""
from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tests.support import warmfork
from tests.support.run_crawl import plain_stats
from tests.support.runfiles import read_tsv
from tests.support.toymodel import write_model

ROOT = Path(__file__).resolve().parents[2]
RUN_CRAWL = ROOT / "tests" / "support" / "run_crawl.py"
LINKSPIDER = ROOT / "tests" / "spiders_for_tests" / "linkspider.py"
# no delays, no progress lines, no analysis worker to start: for ``scrapy`` command lines
# (``-s NAME=VALUE``)
FAST = ["DOWNLOAD_DELAY=0", "AUTOTHROTTLE_ENABLED=False", "FOCUSCRAWL_PROGRESS_INTERVAL=0", "LOG_LEVEL=INFO",
        "FOCUSCRAWL_ANALYSIS_WORKERS=0"]


def focused_cmd(stats: Path, settings: dict, args: dict) -> list[str]:
    """The command that crawls with ``focused`` (``settings`` at cmdline priority,
    ``args`` as spider arguments) and writes the final stats to ``stats``."""
    return [sys.executable, str(RUN_CRAWL), str(stats), json.dumps(settings), json.dumps(args)]


def proxy_env(web) -> dict[str, str]:
    """This process's environment with ``web`` (a ``LocalWeb``) as the HTTP proxy."""
    return dict(os.environ, http_proxy=web.proxy, HTTP_PROXY=web.proxy, no_proxy="", NO_PROXY="")


def start_focused(stats: Path, settings: dict, args: dict, *, web=None, stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL, group: bool = False) -> subprocess.Popen:
    """Start a ``focused`` crawl (through ``web`` as proxy if given); the caller waits or kills it.
    ``group``: in a process group of its own, which the caller can signal as a terminal's
    Ctrl-C, ``timeout`` or systemd do (``os.killpg(proc.pid, ...)``)."""
    return warmfork.popen(focused_cmd(stats, settings, args), cwd=ROOT, env=proxy_env(web) if web else None,
                          stdout=stdout, stderr=stderr, text=True, start_new_session=group)


def crawl(web, tmp: Path, seeds: str, mode: str = "keywords", settings: dict | None = None,
          timeout: float = 60, **args) -> tuple[dict, subprocess.CompletedProcess]:
    """Crawl to the end with the toy model through ``web`` as proxy, in this process; returns
    (stats, a ``CompletedProcess`` with the return code and the log as ``stderr``)."""
    model, keywords = write_model(tmp)
    out = tmp / "out"
    base = {
        # one request at a time, and none started while a response is parsed: the
        # server then sees exactly the scheduler's best-first order
        "CONCURRENT_REQUESTS": 1, "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 1, "DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False,
        "FOCUSCRAWL_PROGRESS_INTERVAL": 0, "LOG_LEVEL": "INFO", "RETRY_ENABLED": False,
        "FOCUSCRAWL_LINKS_LOG": True, "FEEDS": {str(out / "items.jsonl"): {"format": "jsonlines"}},
        # pages analysed in the crawl's own process: a worker process costs seconds to start
        # (tests of the pool set 1)
        "FOCUSCRAWL_ANALYSIS_WORKERS": 0,
    }
    base.update(settings or {})
    spider_args = {"seeds": seeds, "mode": mode, "model": str(model), "keywords": str(keywords),
                   "output": str(out)}
    spider_args.update(args)
    return crawl_here(web, base, spider_args, timeout)


_reactor_thread: threading.Thread | None = None


def install_reactor() -> None:
    """Install Scrapy's asyncio reactor before anything imports the default one (conftest
    calls this at start-up, as Scrapy's own suite does); it runs once the first crawl needs it."""
    from scrapy.utils.reactor import install_reactor as install

    install("twisted.internet.asyncioreactor.AsyncioSelectorReactor")


def _running_reactor():
    """The session's reactor, running in a daemon thread (started on first use). Twisted's
    log goes to Python's logging, as ``CrawlerProcess`` sets it up."""
    global _reactor_thread
    import asyncio
    from logging.config import dictConfig

    from scrapy.utils.log import DEFAULT_LOGGING
    from twisted.internet import reactor
    from twisted.python import log as twisted_log

    if _reactor_thread is None:
        twisted_log.PythonLoggingObserver("twisted").start()
        dictConfig(DEFAULT_LOGGING)
        loop = reactor._asyncioEventloop

        def run() -> None:
            asyncio.set_event_loop(loop)
            reactor.run(installSignalHandlers=False)

        _reactor_thread = threading.Thread(target=run, daemon=True, name="test-reactor")
        _reactor_thread.start()
    return reactor


def on_reactor(fn, *args):
    """``fn(*args)`` called on the session's reactor thread; its result (that of the Deferred
    it returns, once fired; its exception raised here)."""
    from twisted.internet import threads

    return threads.blockingCallFromThread(_running_reactor(), fn, *args)


@contextmanager
def _proxy(web) -> Iterator[None]:
    """``web`` as the HTTP proxy of the crawls started inside (``HttpProxyMiddleware`` reads
    the environment when the crawler is built); ``None``: the environment as it is (a site
    on its own port)."""
    saved = dict(os.environ)
    if web is not None:
        os.environ.update(proxy_env(web))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def _captured_log(settings) -> Iterator[io.StringIO]:
    """The log records (and Python warnings) of the block, formatted as a crawl process's
    stderr: Scrapy's format, the crawl's ``LOG_LEVEL``."""
    from scrapy.utils.log import _get_formatter

    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(_get_formatter(handler, settings))
    handler.setLevel(settings.get("LOG_LEVEL"))
    root_level = logging.root.level
    logging.root.setLevel(logging.NOTSET)
    logging.root.addHandler(handler)
    logging.captureWarnings(True)
    try:
        yield buffer
    finally:
        logging.captureWarnings(False)
        logging.root.removeHandler(handler)
        logging.root.setLevel(root_level)


def crawl_here(web, settings: dict, spider_args: dict, timeout: float) -> tuple[dict, subprocess.CompletedProcess]:
    """Run ``focused`` in this process with ``settings`` at cmdline priority (as
    ``run_crawl.py`` does), through ``web`` as proxy unless it is ``None``; (stats, ``CompletedProcess`` with return code 1 and the traceback
    in ``stderr`` if the crawl failed)."""
    from scrapy.crawler import CrawlerRunner
    from twisted.internet import threads

    from focuscrawl.resources import project_settings

    reactor = _running_reactor()
    full = project_settings(settings)
    done = threading.Event()
    result: dict = {}

    def failed(failure) -> None:
        result["error"] = failure.getTraceback()

    def start() -> None:
        try:
            runner = CrawlerRunner(full)
            crawler = result["crawler"] = runner.create_crawler("focused")
            d = runner.crawl(crawler, **spider_args)
        except Exception:
            result["error"] = traceback.format_exc()
            done.set()
            return
        d.addErrback(failed)
        d.addBoth(lambda _: done.set())

    with _proxy(web), _captured_log(full) as log:
        reactor.callFromThread(start)
        if not done.wait(timeout):
            threads.blockingCallFromThread(reactor, lambda: result["crawler"].stop())
            done.wait(30)
            raise subprocess.TimeoutExpired(["crawl_here", spider_args["seeds"]], timeout, stderr=log.getvalue())
    crawler = result.get("crawler")
    stats = plain_stats(crawler) if crawler is not None and crawler._stats is not None else {}
    stderr = log.getvalue() + result.get("error", "")
    return stats, subprocess.CompletedProcess(["crawl_here"], 1 if "error" in result else 0, "", stderr)


def links_log(tmp: Path) -> list[dict]:
    """The rows of the crawl's ``links.tsv``."""
    return read_tsv(tmp / "out" / "links.tsv")


def items(tmp: Path) -> list[dict]:
    """The items the crawl exported (``FEEDS`` jsonlines); none if it wrote no file."""
    path = tmp / "out" / "items.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def scrapy_cmd(command: str, spider: str, *settings: str, **args) -> list[str]:
    """``scrapy crawl SPIDER`` (or ``runspider FILE``) with ``FAST`` and ``settings`` as ``-s``
    options and ``args`` as spider arguments (``-a``; ``None`` leaves one out)."""
    cmd = [sys.executable, "-m", "scrapy", command, spider]
    for name, value in args.items():
        if value is not None:
            cmd += ["-a", f"{name}={value}"]
    for s in FAST + list(settings):
        cmd += ["-s", s]
    return cmd


def links_cmd(start: str, *settings: str, out: Path | None = None) -> list[str]:
    return scrapy_cmd("runspider", str(LINKSPIDER), *settings, start=start, out=out)


def run_links(start: str, *settings: str, out: Path | None = None, timeout: int = 60):
    return warmfork.run(links_cmd(start, *settings, out=out), cwd=ROOT, capture_output=True,
                        text=True, timeout=timeout)


def start_links(start: str, *settings: str, out: Path | None = None, log: Path | None = None):
    err = open(log, "w") if log else subprocess.DEVNULL
    return warmfork.popen(links_cmd(start, *settings, out=out), cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=err, text=True)
