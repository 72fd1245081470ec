"""LevelLogFormatter: Scrapy's messages below LOG_LEVEL are not built, the others are Scrapy's own."""
import logging

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import DropItem
from scrapy.http import HtmlResponse
from scrapy.logformatter import LogFormatter
from scrapy.utils.test import get_crawler

from focuscrawl.logformatter import LevelLogFormatter, log_level


def formatter_and_spider(level):
    crawler = get_crawler(Spider, settings_dict={"LOG_LEVEL": level,
                                                 "LOG_FORMATTER": "focuscrawl.logformatter.LevelLogFormatter"})
    crawler.spider = crawler._create_spider("s")
    return LevelLogFormatter.from_crawler(crawler), crawler.spider


REQUEST = Request("http://127.0.0.1/p")
RESPONSE = HtmlResponse("http://127.0.0.1/p", body=b"<html></html>", request=REQUEST)
ITEM = {"url": "http://127.0.0.1/p"}
MERGED, BAD = DropItem("merged", log_level="DEBUG"), DropItem("bad")


def messages(formatter, spider):
    return {"crawled": formatter.crawled(REQUEST, RESPONSE, spider),
            "scraped": formatter.scraped(ITEM, RESPONSE, spider),
            "dropped_debug": formatter.dropped(ITEM, MERGED, RESPONSE, spider),
            "dropped_warning": formatter.dropped(ITEM, BAD, RESPONSE, spider)}


@pytest.mark.parametrize("level", ["INFO", "WARNING", 20])
def test_messages_below_the_log_level_are_skipped(level):
    got = messages(*formatter_and_spider(level))
    assert got["crawled"] is None and got["scraped"] is None and got["dropped_debug"] is None
    assert got["dropped_warning"]["level"] == logging.WARNING  # at or above the level: Scrapy's message


def test_at_debug_every_message_is_scrapys_own():
    formatter, spider = formatter_and_spider("DEBUG")
    got = messages(formatter, spider)
    plain = messages(LogFormatter(), spider)
    assert got == plain and all(m is not None for m in got.values())


def test_log_level_names_numbers_and_unknown():
    assert log_level("info") == logging.INFO and log_level(logging.ERROR) == logging.ERROR
    assert log_level(None) == logging.NOTSET and log_level("LOUD") == logging.NOTSET
