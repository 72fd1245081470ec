"""``focuscrawl warc``: run extraction, scoring and the writers over WARC/ARC files."""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path


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
    p.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                   help="Scrapy/focuscrawl setting (repeatable)")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="Scrapy's INFO and DEBUG log too (default: focuscrawl's INFO lines, warnings, progress)")
    p.set_defaults(func=cmd_warc)


def _focuscrawl_info_and_warnings(record: logging.LogRecord) -> bool:
    """Quiet replay log: focuscrawl's own INFO lines (run directory, progress) and every
    warning; Scrapy's and Twisted's INFO/DEBUG chatter only with ``-v``."""
    return record.levelno >= logging.WARNING or record.name.startswith("focuscrawl")


def cmd_warc(args: argparse.Namespace) -> int:
    from scrapy.crawler import CrawlerProcess

    from focuscrawl.archive.reader import ArchiveIndex
    from focuscrawl.resources import project_settings

    for path in args.paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such archive: {path}")
    index = ArchiveIndex(args.paths)  # a file that is no archive: ArchiveError, exit 2
    if not index.html_refs():
        raise ValueError(f"no HTML responses in {', '.join(args.paths)}")
    settings = project_settings()
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"-s expects NAME=VALUE, got {item!r}")
        settings.set(name, value, priority="cmdline")
    spider_args = {"archives": index, "output": args.output}
    for name in ("mode", "model", "keywords", "topic"):
        if getattr(args, name):
            spider_args[name] = getattr(args, name)
    # one handler (the command's, from focuscrawl.cli): Scrapy's own root handler would
    # print every line a second time; Scrapy's chatter only with -v
    settings.set("LOG_INSTALL_ROOT_HANDLER", False, priority="cmdline")
    handlers = [] if getattr(args, "verbose", False) else list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(_focuscrawl_info_and_warnings)
    try:
        process = CrawlerProcess(settings)
        crawler = process.create_crawler("archive")
        process.crawl(crawler, **spider_args)
        process.start()
    finally:
        for handler in handlers:
            handler.removeFilter(_focuscrawl_info_and_warnings)
    stats = crawler.stats.get_stats() or {}
    summary = {k: stats.get(k) for k in ("finish_reason", "archive/html_pages", "archive/responses",
                                         "archive/missing", "pages/written", "images/written")}
    print(json.dumps(summary))
    return 0 if stats.get("finish_reason") == "finished" else 1
