"""The ``fetch`` spider: a replay's candidate pairs fetched from the web (``focuscrawl fetch``).

It yields the candidates as the crawl's image items (the first sighting of each, from its info
record); ``CandidateDownloadPipeline`` requests their image URLs through every downloader
middleware of a crawl (robots.txt with its AI-crawler groups, TDMRep, redirects, the per-host
concurrency and delays of the project's settings, its User-Agent), scores them with the crawl's
``FinalScorePipeline`` and records each outcome in the run directory's fetched.tsv.
"""
from __future__ import annotations

from typing import Any, AsyncIterator

import scrapy
from scrapy import signals
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from focuscrawl.items import ImageItem

#: a fetch writes fetched.tsv and image files only: no run directory of its own (images.tsv,
#: stats.json and crawl.json of the run stay the replay's), no crawl summary
FETCH_SETTINGS = {
    "FOCUSCRAWL_OUTPUT_DIR": "",
    "FOCUSCRAWL_CRAWL_SUMMARY": False,
    # a candidate without HTML size (kept by the replay, unmeasured) meets the size limits here
    "FOCUSCRAWL_IMAGE_MEASURE_UNSIZED": True,
    "EXTENSIONS": {"focuscrawl.extensions.progress.FetchProgress": 500},
    "ITEM_PIPELINES": {"focuscrawl.pipelines.score.FinalScorePipeline": 100,
                       "focuscrawl.pipelines.fetch.CandidateDownloadPipeline": 300},
}

#: components of a crawl that have nothing to do in a fetch (they write a run directory of their
#: own, or treat pages): off, so that they do not warn that they are off
FETCH_COMPONENTS_OFF = {
    "EXTENSIONS": ("focuscrawl.output.stats.StatsFileWriter", "focuscrawl.output.manifest.CrawlManifest",
                   "focuscrawl.extensions.progress.CrawlSummary",
                   # its line counts pages written, which a fetch has none of
                   "focuscrawl.extensions.progress.CrawlProgress"),
    "SPIDER_MIDDLEWARES": ("focuscrawl.middlewares.priority.LinkPriorityMiddleware",),
}


class CandidateFetchSpider(scrapy.Spider):
    """``run_dir``: the run directory; ``candidates``: the image items to fetch, best first."""

    name = "fetch"

    def __init__(self, run_dir: str = "", candidates: list[ImageItem] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not run_dir:
            raise ValueError("the fetch spider needs run_dir (focuscrawl fetch RUN_DIR)")
        self.run_dir = run_dir
        self.candidates = list(candidates or [])
        #: candidates whose pipelines have not ended yet (``start`` waits for them)
        self.pending = len(self.candidates)
        self.all_processed: Deferred = Deferred()

    @classmethod
    def update_settings(cls, settings) -> None:
        super().update_settings(settings)
        for name, value in FETCH_SETTINGS.items():
            if name == "EXTENSIONS":  # added to the crawl's
                value = {**settings.getdict(name), **value}
            settings.set(name, value, priority="spider")
        for name, components in FETCH_COMPONENTS_OFF.items():
            settings.set(name, {**settings.getdict(name), **dict.fromkeys(components)}, priority="spider")

    @classmethod
    def from_crawler(cls, crawler, *args: Any, **kwargs: Any) -> "CandidateFetchSpider":
        spider = super().from_crawler(crawler, *args, **kwargs)
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(spider.item_processed, signal=signal)
        return spider

    def item_processed(self, *args: Any, **kwargs: Any) -> None:
        """A candidate's pipelines ended (written, dropped or failed)."""
        self.pending -= 1
        if self.pending <= 0 and not self.all_processed.called:
            self.all_processed.callback(None)

    async def start(self) -> AsyncIterator[ImageItem]:
        for item in self.candidates:
            yield item
        # Scrapy notices that a spider is idle on its next heartbeat (5 s) unless something wakes
        # it; an item yielded by start() wakes nothing when its pipelines finish, so start() ends
        # only once every candidate is processed: its end wakes the engine, which closes at once
        if self.candidates:
            await maybe_deferred_to_future(self.all_processed)
