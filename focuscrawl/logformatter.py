"""Scrapy's log messages, without the ones no log handler would write.

Scrapy logs each response ("Crawled (200)"), each item ("Scraped from") and each
dropped item (the image records drop every later sighting of an image at DEBUG).
Scrapy leaves the root logger at NOTSET and filters in its handler (``LOG_LEVEL``), so
every one of those messages builds a ``LogRecord`` (caller lookup and all) that the
handler then throws away: at ~8 messages a page that was ~2% of the crawl thread
(py-spy, benchmarks/crawl_throughput.py).
"""
from __future__ import annotations

import logging
from typing import Any

from scrapy.logformatter import LogFormatter

#: The loggers Scrapy's engine and scraper log these messages with.
ENGINE_LOGGER, SCRAPER_LOGGER = logging.getLogger("scrapy.core.engine"), logging.getLogger("scrapy.core.scraper")


class LevelLogFormatter(LogFormatter):
    """``LogFormatter`` that returns ``None`` (Scrapy's documented "do not log") for a
    per-response or per-item message that no handler would write at its level, as
    configured when the message comes (``LOG_LEVEL``, ``-v``, the user's logging
    config); every other message is Scrapy's own."""

    engine_logger, scraper_logger = ENGINE_LOGGER, SCRAPER_LOGGER

    def crawled(self, *args: Any, **kwargs: Any) -> Any:
        return _if_written(self.engine_logger, super().crawled(*args, **kwargs))

    def scraped(self, *args: Any, **kwargs: Any) -> Any:
        return _if_written(self.scraper_logger, super().scraped(*args, **kwargs))

    def dropped(self, *args: Any, **kwargs: Any) -> Any:
        return _if_written(self.scraper_logger, super().dropped(*args, **kwargs))


def _if_written(logger: logging.Logger, message: Any) -> Any:
    return message if message is None or writes(logger, message["level"]) else None


def writes(logger: logging.Logger, level: int) -> bool:
    """Whether a record of ``level`` on ``logger`` reaches a handler that takes it
    (the logger levels, then the handler levels along the propagation chain, as
    ``Logger.callHandlers``; handler filters are not consulted: then it says yes)."""
    if not logger.isEnabledFor(level):
        return False
    found = False
    current: logging.Logger | None = logger
    while current is not None:
        for handler in current.handlers:
            found = True
            if level >= handler.level:
                return True
        current = current.parent if current.propagate else None
    return not found and logging.lastResort is not None and level >= logging.lastResort.level
