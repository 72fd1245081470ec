"""``focuscrawl warc``: run extraction, scoring and the writers over WARC/ARC files.

With ``--jobs N`` every archive file is one job (its pages are the job's seeds; every
file still answers the job's requests, so an image stored in another file is found),
N jobs run at a time, each in its own process with its own reactor and run directory
``OUT/parts/<n>``, and ``focuscrawl merge`` builds ``OUT`` from the parts. Pages carry
their capture time as ``fetched_at``, so the merged run is the same for any N.
"""
from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from focuscrawl.output.merge import merge_runs

#: the stats a replay's summary reports (summed over the jobs of `focuscrawl warc --jobs`)
SUMMARY_STATS = ("focuscrawl/archive/html_pages", "focuscrawl/archive/responses", "focuscrawl/archive/missing",
                 "focuscrawl/pages/written", "focuscrawl/images/written")
#: settings of each job with --jobs: the jobs use the cores, not an analysis pool each
JOB_SETTINGS = {"FOCUSCRAWL_ANALYSIS_WORKERS": 0}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("warc", help="replay WARC/ARC files through the focused crawl's extraction, "
                                    "scoring and writers (no network)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="WARC or ARC files (.gz or plain)")
    p.add_argument("-o", "--output", required=True, help="run directory (same files as a crawl)")
    p.add_argument("--mode", default=None, help="keywords | document | unfocused (default: settings)")
    p.add_argument("--model", help="ARPA or KenLM binary model (default: bundled cats demo)")
    p.add_argument("--keywords", help="keyword file token;score")
    p.add_argument("--topic", help="topic bundle (focuscrawl topic build): its LM and keywords score the pages, "
                                   "and `focuscrawl rank` ranks the output with it")
    p.add_argument("--jobs", type=int, default=0, metavar="N",
                   help="one job per file, N processes at a time, parts merged into OUTPUT "
                        "(default: all files in this process)")
    p.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                   help="Scrapy/focuscrawl setting (repeatable)")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="Scrapy's INFO and DEBUG log too (default: focuscrawl's INFO lines, warnings, progress)")
    p.set_defaults(func=cmd_warc)


def _settings(items: list[str]) -> dict[str, str]:
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


def replay(index, output: str, settings: dict, spider_args: dict, verbose: bool = False) -> dict:
    """One replay in this process (one reactor): the ``archive`` spider over ``index``.

    Logs through the root logger's handlers (the command's, see ``focuscrawl.cli``),
    filtered to focuscrawl's lines and warnings unless ``verbose``."""
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
        process = CrawlerProcess(project)
        crawler = process.create_crawler("archive")
        process.crawl(crawler, archives=index, output=output, **spider_args)
        process.start()
    finally:
        root.setLevel(root_level)
        for handler in handlers:
            handler.removeFilter(_focuscrawl_info_and_warnings)
    stats = crawler.stats.get_stats() or {}
    return {k: stats.get(k) for k in ("finish_reason", *SUMMARY_STATS)}


def cmd_warc(args: argparse.Namespace) -> int:
    from focuscrawl.archive.reader import ArchiveIndex

    for path in args.paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such archive: {path}")
    if args.jobs < 0:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    index = ArchiveIndex(args.paths)  # a file that is no archive: ArchiveError, exit 2
    if not index.html_refs():
        raise ValueError(f"no HTML responses in {', '.join(args.paths)}")
    settings = _settings(args.set)
    spider_args = {name: getattr(args, name) for name in ("mode", "model", "keywords", "topic")
                   if getattr(args, name)}
    verbose = getattr(args, "verbose", False)
    if not args.jobs:
        summary = replay(index, args.output, settings, spider_args, verbose)
    else:
        summary = replay_jobs(index, Path(args.output), args.jobs, {**JOB_SETTINGS, **settings}, spider_args,
                              verbose)
    print(json.dumps(summary))
    return 0 if summary.get("finish_reason") == "finished" else 1


def _job_logging(verbose: bool) -> None:
    """A job process logs as the command does (``focuscrawl.cli``): a spawned process
    starts without the command's handler."""
    from focuscrawl.cli import configure_logging

    configure_logging(verbose)


def replay_jobs(index, output: Path, jobs: int, settings: dict, spider_args: dict, verbose: bool = False) -> dict:
    """One job per archive file holding pages, ``jobs`` processes at a time, then merged."""
    files = [path for path in index.paths if any(ref.path == path for ref in index.html_refs())]
    parts = [output / "parts" / f"{n:04d}" for n in range(len(files))]
    # spawn and one job per process: each job needs a fresh reactor
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), max_tasks_per_child=1,
                             initializer=_job_logging, initargs=(verbose,)) as pool:
        futures = [pool.submit(replay, index, str(part), settings, {**spider_args, "seed_files": [path]}, verbose)
                   for path, part in zip(files, parts)]
        results = [f.result() for f in futures]
    counts = merge_runs(parts, output)
    summary: dict = {"jobs": jobs, "parts": len(parts), "pages": counts["pages"], "images": counts["images"]}
    for key in SUMMARY_STATS:
        values = [r.get(key) for r in results if r.get(key) is not None]
        summary[key] = sum(values) if values else None
    failed = [f"{path}: {r.get('finish_reason')}" for path, r in zip(files, results) if r.get("finish_reason") != "finished"]
    summary["finish_reason"] = "finished" if not failed else "failed: " + "; ".join(failed)
    return summary
