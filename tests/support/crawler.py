"""A Scrapy test crawler with focuscrawl's settings.

Components read ``FOCUSCRAWL_*`` settings without fallbacks (their defaults live in
``focuscrawl/settings.py`` only), so a crawler built for a unit test starts from them.
Scrapy's ``get_crawler`` takes a dict and sets it with project priority; only the
``FOCUSCRAWL_*`` settings are taken, so that the crawler keeps Scrapy's own component
lists and reactor settings, plus the ``RunState`` extension (the owner of the run directory
that focuscrawl's components get from the crawler), enabled by its add-on.
"""
from __future__ import annotations

from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

from focuscrawl.output.run_state import RunStateAddon
from focuscrawl.resources import project_settings


class CallbackSpider(Spider):
    """A spider whose requests name its own methods as callback and errback (the tests of how
    a request is written to a queue or the frontier journal)."""

    name = "callbacks"

    def parse_page(self, response):
        pass

    def failed(self, failure):
        pass


def focuscrawl_crawler(spidercls: type[Spider] | None = None, **settings: Any) -> Crawler:
    """``get_crawler`` with every ``FOCUSCRAWL_*`` default of the project, then ``settings``."""
    project = project_settings()
    defaults = {name: project[name] for name in project if name.startswith("FOCUSCRAWL_")}
    return get_crawler(spidercls, {**defaults, "ADDONS": {RunStateAddon: 0}, **settings})


def focused_crawler(**settings: Any) -> Crawler:
    """A crawler with its focused spider built, as ``Crawler.crawl`` does it (the spider
    first, then the settings are frozen and the crawler's stats and extensions built):
    ``crawler.spider.focus`` is the mode strategy the link, queue and progress components
    read. The page analysis runs in this process."""
    from scrapy.utils.test import get_reactor_settings

    from focuscrawl.spiders.focused import FocusedSpider

    project = project_settings()
    defaults = {name: project[name] for name in project if name.startswith("FOCUSCRAWL_")}
    crawler = Crawler(FocusedSpider, {"TELNETCONSOLE_ENABLED": False, **get_reactor_settings(), **defaults,
                                      "ADDONS": {RunStateAddon: 0},
                                      "FOCUSCRAWL_SEEDS": "http://seed.test/", "FOCUSCRAWL_ANALYSIS_WORKERS": 0,
                                      **settings})
    crawler.spider = crawler._create_spider()
    crawler._apply_settings()
    return crawler
