"""``focuscrawl warc``: run extraction, scoring and the writers over WARC/ARC files."""
from __future__ import annotations

import argparse
import json
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
    p.set_defaults(func=cmd_warc)


def cmd_warc(args: argparse.Namespace) -> int:
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.project import get_project_settings

    from focuscrawl.archive.reader import ArchiveIndex

    for path in args.paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such archive: {path}")
    index = ArchiveIndex(args.paths)  # a file that is no archive: ArchiveError, exit 2
    if not index.html_refs():
        raise ValueError(f"no HTML responses in {', '.join(args.paths)}")
    settings = get_project_settings()
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"-s expects NAME=VALUE, got {item!r}")
        settings.set(name, value, priority="cmdline")
    spider_args = {"archives": index, "output": args.output}
    for name in ("mode", "model", "keywords", "topic"):
        if getattr(args, name):
            spider_args[name] = getattr(args, name)
    process = CrawlerProcess(settings, install_root_handler=True)
    crawler = process.create_crawler("archive")
    process.crawl(crawler, **spider_args)
    process.start()
    stats = crawler.stats.get_stats() or {}
    summary = {k: stats.get(k) for k in ("finish_reason", "archive/html_pages", "archive/responses",
                                         "archive/missing", "pages/written", "images/written")}
    print(json.dumps(summary))
    return 0 if stats.get("finish_reason") == "finished" else 1
