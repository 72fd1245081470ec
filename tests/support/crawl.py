"""Run crawls as real Scrapy processes (one reactor each) from tests.

Two launchers, one per spider:

* ``focused``: ``focused_cmd``/``start_focused`` run ``tests/support/run_crawl.py``
  (the ``focused`` spider with a settings dict and spider arguments, stats dumped as
  JSON); ``crawl`` runs it to the end with the toy model against a ``LocalWeb``.
* the link spider of the Redis tests: ``links_cmd``/``run_links``/``start_links``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.runfiles import read_tsv
from tests.support.toymodel import write_model

ROOT = Path(__file__).resolve().parents[2]
RUN_CRAWL = ROOT / "tests" / "support" / "run_crawl.py"
LINKSPIDER = ROOT / "tests" / "spiders_for_tests" / "linkspider.py"
# no delays, no progress lines: for ``scrapy`` command lines (``-s NAME=VALUE``)
FAST = ["DOWNLOAD_DELAY=0", "AUTOTHROTTLE_ENABLED=False", "FOCUSCRAWL_PROGRESS_INTERVAL=0", "LOG_LEVEL=INFO"]


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
    return subprocess.Popen(focused_cmd(stats, settings, args), cwd=ROOT, env=proxy_env(web) if web else None,
                            stdout=stdout, stderr=stderr, text=True, start_new_session=group)


def crawl(web, tmp: Path, seeds: str, mode: str = "keywords", settings: dict | None = None,
          timeout: float = 60, **args) -> tuple[dict, subprocess.CompletedProcess]:
    """Crawl to the end with the toy model through ``web`` as proxy; returns (stats, process)."""
    model, keywords = write_model(tmp)
    out = tmp / "out"
    base = {
        # one request at a time, and none started while a response is parsed: the
        # server then sees exactly the scheduler's best-first order
        "CONCURRENT_REQUESTS": 1, "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 1, "DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False,
        "FOCUSCRAWL_PROGRESS_INTERVAL": 0, "LOG_LEVEL": "INFO", "RETRY_ENABLED": False,
        "FOCUSCRAWL_LINKS_LOG": True, "FEEDS": {str(out / "items.jsonl"): {"format": "jsonlines"}},
    }
    base.update(settings or {})
    spider_args = {"seeds": seeds, "mode": mode, "model": str(model), "keywords": str(keywords),
                   "output": str(out)}
    spider_args.update(args)
    stats_path = tmp / "stats.json"
    proc = subprocess.run(focused_cmd(stats_path, base, spider_args), cwd=ROOT, env=proxy_env(web),
                          capture_output=True, text=True, timeout=timeout)
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    return stats, proc


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
    return subprocess.run(links_cmd(start, *settings, out=out), cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def start_links(start: str, *settings: str, out: Path | None = None, log: Path | None = None):
    err = open(log, "w") if log else subprocess.DEVNULL
    return subprocess.Popen(links_cmd(start, *settings, out=out), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=err, text=True)
