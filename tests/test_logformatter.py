"""LevelLogFormatter: Scrapy's messages that no handler would write are not built, the others are Scrapy's own."""
import logging

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import DropItem
from scrapy.http import HtmlResponse
from scrapy.logformatter import LogFormatter
from scrapy.utils.test import get_crawler

from focuscrawl.logformatter import ENGINE_LOGGER, SCRAPER_LOGGER, LevelLogFormatter, writes

REQUEST = Request("http://127.0.0.1/p")
RESPONSE = HtmlResponse("http://127.0.0.1/p", body=b"<html></html>", request=REQUEST)
ITEM = {"url": "http://127.0.0.1/p"}
MERGED, BAD = DropItem("merged", log_level="DEBUG"), DropItem("bad")


def messages(formatter):
    spider = get_crawler(Spider)._create_spider("s")
    return {"crawled": formatter.crawled(REQUEST, RESPONSE, spider),
            "scraped": formatter.scraped(ITEM, RESPONSE, spider),
            "dropped_debug": formatter.dropped(ITEM, MERGED, RESPONSE, spider),
            "dropped_warning": formatter.dropped(ITEM, BAD, RESPONSE, spider)}


def formatter_logging_at(level, logger_level=logging.NOTSET):
    """The formatter with loggers of their own (pytest's capture handlers sit on the real ones):
    as Scrapy sets logging up, the loggers let everything through and the handler has the level."""
    parent, child = logging.Logger("scrapy", logger_level), logging.Logger("scrapy.core.engine")
    parent.addHandler(logging.StreamHandler())
    parent.handlers[0].setLevel(level)
    child.parent = parent
    formatter = LevelLogFormatter()
    formatter.engine_logger = formatter.scraper_logger = child
    return formatter


@pytest.mark.parametrize("level", [logging.INFO, logging.WARNING])
def test_messages_no_handler_writes_are_skipped(level):
    got = messages(formatter_logging_at(level))
    assert got["crawled"] is None and got["scraped"] is None and got["dropped_debug"] is None
    assert got["dropped_warning"] == messages(LogFormatter())["dropped_warning"]  # written: Scrapy's message
    assert got["dropped_warning"]["level"] == logging.WARNING


def test_when_debug_is_written_every_message_is_scrapys_own():
    got = messages(formatter_logging_at(logging.DEBUG))
    assert got == messages(LogFormatter()) and all(m is not None for m in got.values())


def test_writes_follows_logger_levels_and_propagation():
    assert writes(formatter_logging_at(logging.DEBUG).engine_logger, logging.DEBUG)
    # a logger's level, e.g. logging.basicConfig(level=INFO)
    logger = formatter_logging_at(logging.DEBUG, logger_level=logging.INFO).engine_logger
    assert not writes(logger, logging.DEBUG) and writes(logger, logging.INFO)
    logger = formatter_logging_at(logging.DEBUG).engine_logger
    logger.propagate = False  # no handler reached: logging's last resort (WARNING) writes
    assert not writes(logger, logging.INFO) and writes(logger, logging.WARNING)


def test_the_formatter_watches_the_loggers_scrapy_logs_these_messages_with():
    import scrapy.core.engine
    import scrapy.core.scraper

    assert scrapy.core.engine.logger is ENGINE_LOGGER and scrapy.core.scraper.logger is SCRAPER_LOGGER
