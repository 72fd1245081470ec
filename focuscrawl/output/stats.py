"""Extension that writes the crawl's Scrapy stats to ``stats.json`` in the run directory.

Written at ``engine_stopped``, after every ``spider_closed`` handler (LM counters,
finish reason) has updated the stats; atomically (temp file + ``os.replace``).
"""
from __future__ import annotations

import json
import logging
from datetime import datetime

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from focuscrawl.output.files import atomic_write_bytes
from focuscrawl.output.run import run_output

logger = logging.getLogger(__name__)


def _jsonable(value):
    if isinstance(value, datetime):
        return value.isoformat()
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


class StatsFileWriter:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.get("FOCUSCRAWL_OUTPUT_DIR"):
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR")
        self.crawler = crawler
        crawler.signals.connect(self.write, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "StatsFileWriter":
        return cls(crawler)

    def write(self) -> None:
        run = run_output(self.crawler)
        if run is None:
            return
        stats = {k: _jsonable(v) for k, v in sorted(self.crawler.stats.get_stats().items())}
        atomic_write_bytes(run.path("stats.json"), json.dumps(stats, indent=1).encode("utf-8"))
