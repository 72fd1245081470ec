"""Spider middleware that turns each page's ``<img>`` elements into ``ImageItem``s (SPEC §6 steps 1-4).

When the spider's ``PageItem`` for a response passes, it is yielded first, then one
``ImageItem`` per image that passes the HTML rules. Every ``<img>`` is counted in
``images/seen``; every drop in ``images/dropped/<reason>``, kept ones in
``images/kept``. Pages flagged ``near_duplicate_of`` (by the near-duplicate
middleware, which must sit closer to the spider) have their images marked or
skipped (``FOCUSCRAWL_NEARDUP_IMAGES``). At start it hands back the images a
killed crawl had accepted but not written (``ImageStore.take_recovered``), a few at a time.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Iterable, Iterator

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotSupported
from scrapy.http import Response
from scrapy.utils.response import get_base_url

from focuscrawl.images.extract import ContextSettings, image_items
from focuscrawl.images.rules import ImageRules
from focuscrawl.items import PageItem
from focuscrawl.output.images import image_store
from focuscrawl.scoring import topic_scorer

logger = logging.getLogger(__name__)

NEARDUP_MODES = ("mark", "skip")


class ImageExtractionMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.stats = crawler.stats
        self.crawler = crawler
        self.rules = ImageRules.from_settings(settings)
        self.context = ContextSettings.from_settings(settings)
        self.neardup = (settings.get("FOCUSCRAWL_NEARDUP_IMAGES") or "mark").lower()
        if self.neardup not in NEARDUP_MODES:
            raise ValueError(f"FOCUSCRAWL_NEARDUP_IMAGES must be one of {NEARDUP_MODES}, got {self.neardup!r}")
        self._scorer = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "ImageExtractionMiddleware":
        return cls(crawler)

    @property
    def scorer(self):
        if self._scorer is None:
            self._scorer = topic_scorer(self.crawler)
        return self._scorer

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """The seeds, then the images a killed crawl had accepted but never written
        (JOBDIR), at most ``FOCUSCRAWL_RECOVERED_IMAGES_IN_FLIGHT`` at a time: handed
        over all at once, slow image downloads would fill the downloader's per-host
        queues ahead of every page and a resumed crawl would commit no new page."""
        async for obj in start:
            yield obj
        store = image_store(self.crawler)
        recovered = store.take_recovered() if store is not None else []
        if not recovered:
            return
        limit = max(1, self.crawler.settings.getint("FOCUSCRAWL_RECOVERED_IMAGES_IN_FLIGHT", 1))
        in_flight: set[str] = set()

        def finished(item: Any, **kwargs: Any) -> None:
            if hasattr(item, "get"):
                in_flight.discard(item.get("image_url"))

        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            self.crawler.signals.connect(finished, signal=signal, weak=False)
        try:
            for item in recovered:
                while len(in_flight) >= limit:
                    await asyncio.sleep(0.05)
                in_flight.add(item.get("image_url"))
                self.stats.inc_value("images/recovered")
                yield item
        finally:
            for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
                self.crawler.signals.disconnect(finished, signal=signal)

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        for obj in result:
            yield obj
            if isinstance(obj, PageItem):
                yield from self.images_of(response, obj)

    async def process_spider_output_async(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for obj in result:
            yield obj
            if isinstance(obj, PageItem):
                for item in self.images_of(response, obj):
                    yield item

    def images_of(self, response: Response, page: PageItem) -> list:
        """The kept ImageItems of ``response`` (stats counted), following ``page``."""
        if page.get("near_duplicate_of") and self.neardup == "skip":
            self.stats.inc_value("images/pages_skipped_near_duplicate")
            return []
        try:
            root = response.selector.root
            base_url = get_base_url(response)
        except (AttributeError, NotSupported, ValueError, UnicodeError) as exc:
            self.stats.inc_value("images/pages_unparseable")
            logger.debug("no images from %s: %s", response.url, exc)
            return []
        decisions = image_items(root, page.get("url") or response.url, self.scorer, self.rules, self.context,
                                page_item=page, base_url=base_url)
        kept = []
        mark = bool(page.get("near_duplicate_of"))
        for d in decisions:
            self.stats.inc_value("images/seen")
            if d.reason is not None:
                self.stats.inc_value(f"images/dropped/{d.reason}")
                continue
            self.stats.inc_value("images/kept")
            if d.lazy:
                self.stats.inc_value("images/kept_lazy_src")
            if mark:
                d.item["near_duplicate_page"] = True
                self.stats.inc_value("images/kept_near_duplicate_page")
            kept.append(d.item)
        return kept
