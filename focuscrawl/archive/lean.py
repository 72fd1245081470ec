"""The lean archive path: an archive's pages replayed without the scheduler round trip.

A live crawl's pages go spider → scheduler (dupefilter, queue) → engine → downloader →
scraper. An archive's pages are all known up front, so ``LeanReplay`` hands each page's
request straight to the downloader (its middlewares and the archive handler: decompression,
``TdmRepMiddleware``'s site opt-out, stats, exactly as the engine would) and the response
straight to Scrapy's scraper (every spider middleware, the spider's ``parse``, every item
pipeline and writer). The pages are scraped one after the other in archive order, while
the analyses of the next ``CONCURRENT_REQUESTS`` pages already run on the analysis workers
(``FOCUSCRAWL_ANALYSIS_WORKERS``): one archive file keeps every core busy. What the page's
items and requests lead to (image requests, out-links the archive holds) still goes through
the engine as in a crawl, and the pages are marked seen by the scheduler's dupefilter first,
as the seeds of a crawl are when they are queued: a link to an archived page is a duplicate.

Not with ``JOBDIR`` (a resumable crawl's frontier journal records requests as the scheduler
queues them) or a shared Redis frontier: those replays take the engine path.
"""
from __future__ import annotations

from collections import deque
from typing import Any, AsyncIterator

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from focuscrawl.scrapy_compat import download_past_scheduler, release_from_engine


#: the spider middleware of the lean path (the archive spider adds it to SPIDER_MIDDLEWARES)
LEAN_MIDDLEWARE = "focuscrawl.archive.lean.LeanReplayMiddleware"


def lean_replay(settings) -> bool:
    """Whether a replay with these settings takes the lean path (``FOCUSCRAWL_ARCHIVE_LEAN``,
    no ``JOBDIR``, no Redis frontier)."""
    return (settings.getbool("FOCUSCRAWL_ARCHIVE_LEAN") and not settings.get("JOBDIR")
            and not settings.get("FOCUSCRAWL_REDIS_URL"))


def uncancellable(deferred: Deferred) -> Deferred:
    """A Deferred that fires with ``deferred``'s result, whose cancellation leaves ``deferred``
    running: a crawl stopped while the lean path waits (its start cancelled by the engine)
    must not cancel a scrape in the scraper's hands (the scraper would wait for it for ever)
    or a download in the downloader's."""
    out: Deferred = Deferred()

    def fire(result: Any) -> None:
        if not out.called:
            out.callback(result)

    deferred.addBoth(fire)
    return out


def discard(analysis: Any) -> None:
    """An analysis started ahead and not used: its failure, if any, is not an unhandled error."""
    if isinstance(analysis, Deferred):
        analysis.addErrback(lambda failure: None)


class LeanReplayMiddleware:
    """Spider middleware, last in ``process_start`` (next to the engine): takes the seed
    requests (``meta["seed"]``) that every other middleware's ``process_start`` has passed
    on, marks them seen by the scheduler's dupefilter as queueing them would (one already
    seen is dropped as the scheduler drops it), then downloads each, starts its analysis
    (``spider.analyse_ahead(response)``) and scrapes them in order, ``CONCURRENT_REQUESTS``
    pages ahead. Anything else the start yields goes on to the engine. The engine stays
    open while it runs: its start is not over. It keeps the crawler to use at run time: the
    engine's downloader, scheduler and scraper, and the spider."""

    def __init__(self, crawler: Crawler, ahead: int) -> None:
        self.crawler = crawler
        self.ahead = max(1, ahead)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "LeanReplayMiddleware":
        if not lean_replay(crawler.settings):
            raise NotConfigured
        return cls(crawler, crawler.settings.getint("CONCURRENT_REQUESTS"))

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        seeds: deque[Request] = deque()
        async for obj in start:
            if isinstance(obj, Request) and obj.meta.get("seed"):
                seeds.append(obj)
            else:
                yield obj
        await self.replay(self._unseen(seeds))

    def _unseen(self, requests: deque[Request]) -> deque[Request]:
        """The requests the dupefilter has not seen, taken out of ``requests``."""
        scheduler = self.crawler.engine.scheduler
        seen = getattr(scheduler, "df", None)
        unseen: deque[Request] = deque()
        while requests:
            request = requests.popleft()
            if seen is not None and not request.dont_filter and seen.request_seen(request):
                seen.log(request, self.crawler.spider)
            else:
                unseen.append(request)
        return unseen

    async def replay(self, requests: deque[Request]) -> None:
        """Replay ``requests``, taking each out as it starts: a scraped page's request (its
        meta holds the page's analysis) is not kept to the end of the file."""
        window: deque[tuple[Request, Deferred]] = deque()
        while requests:
            if not self.crawler.crawling:  # stopped (Ctrl-C, CloseSpider): no more pages
                break
            request = requests.popleft()
            window.append((request, deferred_from_coro(self._download(request))))
            if len(window) >= self.ahead:
                await self._scrape(*window.popleft())
        while window:
            request, download = window.popleft()
            if self.crawler.crawling:
                await self._scrape(request, download)
            else:
                await maybe_deferred_to_future(uncancellable(download))
                self.crawler.spider.forget_ahead(request.url)

    async def _download(self, request: Request) -> tuple[Response | Request | Failure]:
        """The page through the downloader and its middlewares (``ExecutionEngine._download``:
        the ``response_received`` signal, the crawled log line), its analysis started. In a
        tuple: a Deferred would take a failure it returns for its own."""
        engine = self.crawler.engine
        try:
            result = await maybe_deferred_to_future(download_past_scheduler(engine, request))
        except Exception:  # as the engine hands on a failed download: to the request's errback
            return (Failure(),)
        finally:
            release_from_engine(engine, request)
        if isinstance(result, Response):
            self.crawler.spider.analyse_ahead(result)
        return (result,)

    async def _scrape(self, request: Request, download: Deferred) -> None:
        """As the engine hands a download's outcome on: a request (a meta refresh) to the
        scheduler, a response or failure to the scraper, which ends when its items did."""
        (result,) = await maybe_deferred_to_future(uncancellable(download))
        engine = self.crawler.engine
        if isinstance(result, Request):
            engine.crawl(result)
            return
        self.crawler.stats.inc_value("focuscrawl/archive/lean_pages")
        await maybe_deferred_to_future(uncancellable(engine.scraper.enqueue_scrape(result, request)))
