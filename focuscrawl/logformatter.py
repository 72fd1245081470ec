"""Scrapy's log messages, without the ones the crawl's ``LOG_LEVEL`` discards anyway.

Scrapy logs each response ("Crawled (200)"), each item ("Scraped from") and each
dropped item (the merge pipeline drops every later sighting of an image at DEBUG) with
the root logger at NOTSET: every message builds a ``LogRecord`` (caller lookup and
all) that Scrapy's handler then throws away below ``LOG_LEVEL``. At ~8 messages a page
that was ~2% of the crawl thread (py-spy, benchmarks/crawl_throughput.py).
"""
from __future__ import annotations

import logging
from typing import Any

from scrapy.crawler import Crawler
from scrapy.logformatter import LogFormatter


class LevelLogFormatter(LogFormatter):
    """``LogFormatter`` that returns ``None`` (Scrapy's documented "do not log") for the
    per-response and per-item messages below ``level``; at ``LOG_LEVEL = "DEBUG"`` it
    logs everything, as Scrapy's own does."""

    def __init__(self, level: int = logging.NOTSET) -> None:
        self.level = level

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "LevelLogFormatter":
        return cls(log_level(crawler.settings.get("LOG_LEVEL")))

    def _at_level(self, message: Any) -> Any:
        return message if message is None or message["level"] >= self.level else None

    def crawled(self, *args: Any, **kwargs: Any) -> Any:
        return self._at_level(super().crawled(*args, **kwargs))

    def scraped(self, *args: Any, **kwargs: Any) -> Any:
        return self._at_level(super().scraped(*args, **kwargs))

    def dropped(self, *args: Any, **kwargs: Any) -> Any:
        return self._at_level(super().dropped(*args, **kwargs))


def log_level(value: Any) -> int:
    """A ``LOG_LEVEL`` setting as a number (``"INFO"`` -> 20); unknown or unset: NOTSET (log all)."""
    if isinstance(value, int):
        return value
    number = logging.getLevelName(str(value or "").upper())
    return number if isinstance(number, int) else logging.NOTSET
