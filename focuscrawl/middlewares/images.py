"""Spider middleware that turns each page's ``<img>`` elements into ``ImageItem``s (SPEC §6 steps 1-4).

When the spider's ``PageItem`` for a response passes, it is yielded first, then one
``ImageItem`` per image that passes the HTML rules. Every ``<img>`` is counted in
``focuscrawl/images/seen``; every drop in ``focuscrawl/images/dropped/<reason>``, kept ones in
``focuscrawl/images/kept``. Pages flagged ``near_duplicate_of`` (by the near-duplicate
middleware, which must sit closer to the spider) have their images marked or
skipped (``FOCUSCRAWL_NEARDUP_IMAGES``). At start it hands back the images a
killed crawl had accepted but not written, a few at a time, which it gets from their owner
(``ImageRecordsPipeline.take_recovered``, found at ``spider_opened``: the pipelines are built
after the spider middlewares).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Iterable, Iterator

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from focuscrawl.analysis import page_analysis
from focuscrawl.items import PageItem
from focuscrawl.pipelines.image_records import ImageRecordsPipeline
from focuscrawl.rights.policy import source_of
from focuscrawl.scrapy_compat import close_scraper_once_idle

logger = logging.getLogger(__name__)

NEARDUP_MODES = ("mark", "skip")


class ImageExtractionMiddleware:
    def __init__(self, stats, signals_manager, neardup: str, recovered_in_flight: int) -> None:
        self.stats = stats
        self.signals = signals_manager
        self.neardup = neardup.lower()
        if self.neardup not in NEARDUP_MODES:
            raise ValueError(f"FOCUSCRAWL_NEARDUP_IMAGES must be one of {NEARDUP_MODES}, got {self.neardup!r}")
        #: the image records' owner (``None``: no run directory), found at ``spider_opened``
        self.records: ImageRecordsPipeline | None = None
        self.recovered_in_flight = max(1, recovered_in_flight)
        #: recovered images not handed to the pipelines yet
        self.recovered_left = 0
        self.engine = None  # (at ``spider_opened``)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "ImageExtractionMiddleware":
        s = crawler.settings
        mw = cls(crawler.stats, crawler.signals, str(s.get("FOCUSCRAWL_NEARDUP_IMAGES")),
                 s.getint("FOCUSCRAWL_RECOVERED_IMAGES_IN_FLIGHT"))
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        return mw

    def spider_opened(self, spider) -> None:
        self.records = spider.crawler.get_item_pipeline(ImageRecordsPipeline)
        self.engine = spider.crawler.engine

    def handing_back(self) -> bool:
        """Images a killed crawl had accepted and not written are still to be handed to the
        pipelines: a stop that is not an interruption (the page budget) waits for them, as for
        the images of every page written."""
        return self.recovered_left > 0 or (self.records is not None and self.records.has_recovered())

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """The seeds, then the images a killed crawl had accepted but never written
        (JOBDIR), at most ``FOCUSCRAWL_RECOVERED_IMAGES_IN_FLIGHT`` at a time: handed
        over all at once, slow image downloads would fill the downloader's per-host
        queues ahead of every page and a resumed crawl would commit no new page."""
        async for obj in start:
            yield obj
        recovered = self.records.take_recovered() if self.records is not None else []
        if not recovered:
            return
        limit = self.recovered_in_flight
        in_flight: set[str] = set()

        def finished(item: Any, **kwargs: Any) -> None:
            if hasattr(item, "get") and item.get("image_url") in in_flight:
                in_flight.discard(item.get("image_url"))
                if self.engine is not None:
                    close_scraper_once_idle(self.engine.scraper)

        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            self.signals.connect(finished, signal=signal, weak=False)
        self.recovered_left = len(recovered)
        try:
            for item in recovered:
                # (a closing engine backs out for good: an image handed over then would keep
                # its close waiting for a download that never starts)
                while len(in_flight) >= limit or (self.engine is not None and self.engine.needs_backout()):
                    await asyncio.sleep(0.05)
                in_flight.add(item.get("image_url"))
                self.stats.inc_value("focuscrawl/images/recovered")
                self.recovered_left -= 1
                yield item
        finally:
            self.recovered_left = 0
            for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
                self.signals.disconnect(finished, signal=signal)

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
        """The kept ImageItems of ``response`` (stats counted), following ``page``.

        The decisions were made with the page's analysis (``focuscrawl.analysis``), left in
        ``response.meta`` by the spider."""
        if page.get("near_duplicate_of") and self.neardup == "skip":
            self.stats.inc_value("focuscrawl/images/pages_skipped_near_duplicate")
            return []
        analysis = page_analysis(response)
        if analysis is None:
            self.stats.inc_value("focuscrawl/images/pages_unparseable")
            logger.debug("no page analysis for %s: no images", response.url)
            return []
        kept = []
        mark = bool(page.get("near_duplicate_of"))
        withheld = (page.get("optout") or {}).get("images")
        tdm_policy = (page.get("rights") or {}).get("tdm_policy", "")
        rights = analysis.rights if analysis.rights is not None and (analysis.rights.declared() or tdm_policy) else None
        for d in analysis.images:
            self.stats.inc_value("focuscrawl/images/seen")
            if d.reason is not None:
                self.stats.inc_value(f"focuscrawl/images/dropped/{d.reason}")
                continue
            if withheld:  # the page's owner opted its images out
                self.stats.inc_value(f"focuscrawl/optout/images/{source_of(withheld[0])}")
                continue
            if rights is not None:
                image_rights = rights.image(d.item["image_url"])
                image_rights.tdm_policy = image_rights.tdm_policy or tdm_policy
                if not image_rights.empty():
                    d.item["rights"] = image_rights.as_dict()
            self.stats.inc_value("focuscrawl/images/kept")
            self.stats.inc_value(f"focuscrawl/language/images/{d.item.get('language') or 'unknown'}")
            if d.lazy:
                self.stats.inc_value("focuscrawl/images/kept_lazy_src")
            if mark:
                d.item["near_duplicate_page"] = True
                self.stats.inc_value("focuscrawl/images/kept_near_duplicate_page")
            kept.append(d.item)
        return kept
