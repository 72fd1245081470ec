"""Run one ``focused`` crawl in this process and dump its stats as JSON (used by tests
in a subprocess: Scrapy's reactor cannot restart within one process).

    python tests/support/run_crawl.py STATS_JSON SETTINGS_JSON SPIDER_ARGS_JSON
"""
from __future__ import annotations

import json
import sys

from scrapy.crawler import CrawlerProcess
from scrapy.utils.project import get_project_settings


def main(stats_path: str, settings_json: str, args_json: str) -> int:
    settings = get_project_settings()
    # pages analysed in the crawl's own process unless the test asks for the worker pool: a
    # worker costs seconds to start
    settings.set("FOCUSCRAWL_ANALYSIS_WORKERS", 0, priority="project")
    settings.setdict(json.loads(settings_json), priority="cmdline")
    process = CrawlerProcess(settings)
    crawler = process.create_crawler("focused")
    process.crawl(crawler, **json.loads(args_json))
    process.start()
    with open(stats_path, "w", encoding="utf-8") as f:
        json.dump(plain_stats(crawler), f, indent=1, sort_keys=True)
    return 0


def plain_stats(crawler) -> dict:
    """The crawler's stats as JSON values (datetimes as strings), as the tests read them."""
    return {k: (v if isinstance(v, (int, float, str)) or v is None else str(v))
            for k, v in (crawler.stats.get_stats() or {}).items()}


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
