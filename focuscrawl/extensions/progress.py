"""What a crawl tells its user while it runs and when it ends.

``CrawlProgress`` replaces Scrapy's ``LogStats`` (off in ``focuscrawl.settings``): a line
every ``FOCUSCRAWL_PROGRESS_INTERVAL`` seconds with the run's pages (as written to
pages.tsv) against the budget (a replay: against the archives' pages), pages/s, images written, requests queued, the time left
at the crawl's rate, and a word when politeness (the per-host concurrency, delays,
AutoThrottle) is what sets that rate. ``CrawlSummary`` logs the summary of
``focuscrawl.output.summary`` when the crawl ends.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from focuscrawl.focus.modes import crawl_focus
from focuscrawl.output.summary import LIMITS, crawl_summary

logger = logging.getLogger(__name__)


def run_pages(stats: Mapping[str, Any]) -> int:
    """The run's pages so far: the rows written (pages.tsv) plus those of the sessions before a
    resume; without a run directory the pages parsed."""
    written = stats.get("focuscrawl/pages/written")
    pages = written if written is not None else stats.get("focuscrawl/pages/crawled", 0)
    return pages + stats.get("focuscrawl/budget/pages_before_resume", 0)


def duration(seconds: float) -> str:
    """``45s``, ``12m``, ``3h20m``: a time left, rounded for reading."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def politeness_note(slots: Iterable[Any], settings: Mapping[str, Any]) -> str:
    """A word when requests wait in the downloader for their host (its concurrency, its delay or
    AutoThrottle's): the crawl then goes as fast as politeness lets it, by design. ``slots``:
    the downloader's slots (``queue``: requests waiting; ``transferring``; ``delay``)."""
    waiting = hosts = 0
    delays = []
    for slot in slots:
        if slot.queue:
            waiting += len(slot.queue)
            hosts += 1
            delays.append(slot.delay)
    if not waiting:
        return ""
    parts = [f"{settings.get('CONCURRENT_REQUESTS_PER_DOMAIN')} per host"]
    if delays and max(delays) > 0:
        parts.append(f"{max(delays):.1f}s delay{' (AutoThrottle)' if settings.get('AUTOTHROTTLE_ENABLED') else ''}")
    return (f"; polite: {waiting} requests wait for {hosts} host{'s' if hosts != 1 else ''} "
            f"({', '.join(parts)}), which sets the rate")


def progress_line(pages: int, budget: int, rate: float, average_rate: float, images: int,
                  queue: int | None, politeness: str = "") -> str:
    """The progress line: pages against the budget, pages/s since the last line, images, queue,
    and the time left at the crawl's average rate."""
    of = f"/{budget:,}" if budget > 0 else ""
    left = ""
    if budget > 0 and pages < budget:
        left = f", ETA {duration((budget - pages) / average_rate)}" if average_rate > 0 else ", ETA -"
    queued = "-" if queue is None else f"{queue:,}"
    return (f"progress: {pages:,}{of} pages ({rate:.1f} pages/s), {images:,} images written, "
            f"queue {queued}{left}{politeness}")


def files_progress_line(files_done: int, files: int, pages: int, pages_total: int, pairs: int,
                        elapsed: float) -> str:
    """The progress line of a replay over many files (``focuscrawl warc --jobs``): files and
    pages done, image-text pairs written, pages/s so far and the time left at that rate
    (by pages when their total is known, else by files)."""
    rate = pages / elapsed if elapsed > 0 else 0.0
    if pages_total > 0:
        left = (pages_total - pages) / rate if rate > 0 else None
    else:
        left = (files - files_done) * elapsed / files_done if files_done else None
    eta = "" if files_done >= files else f", ETA {duration(left)}" if left is not None else ", ETA -"
    of = f"/{pages_total:,}" if pages_total > 0 else ""
    return (f"progress: {files_done:,}/{files:,} files, {pages:,}{of} pages ({rate:.1f} pages/s), "
            f"{pairs:,} image-text pairs written{eta}")


def fetch_progress_line(done: int, total: int, downloaded: int, elapsed: float) -> str:
    """The progress line of ``focuscrawl fetch``: candidates with an outcome of those requested,
    downloaded, images/s so far and the time left at that rate."""
    rate = done / elapsed if elapsed > 0 else 0.0
    left = "" if done >= total else f", ETA {duration((total - done) / rate)}" if rate > 0 else ", ETA -"
    return f"progress: {done:,}/{total:,} candidates fetched ({downloaded:,} downloaded, {rate:.1f} images/s){left}"


class FetchProgress:
    """``focuscrawl fetch``'s progress line every ``FOCUSCRAWL_PROGRESS_INTERVAL`` seconds, against
    the candidates it requests (``spider.candidates``; outcomes counted as ``focuscrawl/fetch/outcomes``)."""

    def __init__(self, stats, interval: float) -> None:
        self.stats, self.interval = stats, interval
        self.task = None
        self.start = 0.0
        self.total = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "FetchProgress":
        interval = crawler.settings.getfloat("FOCUSCRAWL_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured
        ext = cls(crawler.stats, interval)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider=None) -> None:
        self.total = len(getattr(spider, "candidates", ()))
        self.start = time.monotonic()
        self.task = create_looping_call(self.log)
        self.task.start(self.interval, now=False)

    def log(self) -> None:
        logger.info(fetch_progress_line(self.stats.get_value("focuscrawl/fetch/outcomes", 0), self.total,
                                        self.stats.get_value("focuscrawl/images/downloaded", 0),
                                        time.monotonic() - self.start))

    def spider_closed(self, spider=None, reason=None) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()


class CrawlProgress:
    """A progress line every ``FOCUSCRAWL_PROGRESS_INTERVAL`` seconds.

    Takes the crawler because it uses it at run time, as Scrapy's ``AutoThrottle`` does: the
    engine's scheduler (the queue size) and downloader (its slots), which do not exist yet
    when ``from_crawler`` runs."""

    def __init__(self, crawler: Crawler, interval: float, budget: int = 0) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.interval = interval
        self.budget = budget
        self.task = None
        self._start = (0.0, 0)
        self._last = (0.0, 0)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "CrawlProgress":
        interval = crawler.settings.getfloat("FOCUSCRAWL_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured
        ext = cls(crawler, interval, crawler.settings.getint("FOCUSCRAWL_PAGE_BUDGET"))
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider=None) -> None:
        # a replay knows its pages (the archives' seeds): their number is the line's target
        self.budget = self.budget or getattr(self.crawler.spider, "expected_pages", 0)
        self._start = self._last = (time.monotonic(), run_pages(self.stats.get_stats()))
        self.task = create_looping_call(self.log)
        self.task.start(self.interval, now=False)

    def queue_size(self) -> int | None:
        scheduler = getattr(self.crawler.engine, "scheduler", None)
        try:
            return len(scheduler) if scheduler is not None else None
        except TypeError:  # a scheduler without __len__
            return None

    def line(self) -> str:
        now = time.monotonic()
        stats = self.stats.get_stats()
        pages = run_pages(stats)
        then, pages_then = self._last
        start, pages_start = self._start
        self._last = (now, pages)
        downloader = getattr(self.crawler.engine, "downloader", None)
        slots = list(getattr(downloader, "slots", {}).values())
        return progress_line(pages, self.budget, (pages - pages_then) / max(now - then, 1e-9),
                             (pages - pages_start) / max(now - start, 1e-9),
                             stats.get("focuscrawl/images/written", 0), self.queue_size(),
                             politeness_note(slots, self.crawler.settings))

    def scorer_line(self) -> str:
        """The link razor's and the LM cache's counters (DEBUG): for tuning, not for following a crawl."""
        try:
            scorer = crawl_focus(self.crawler).scorer
        except RuntimeError:  # not the focused spider (scrapy shell's)
            return ""
        queries = scorer.queries
        hits = f"{scorer.cache_hits / queries:.0%}" if queries else "-"
        return (f"progress: {self.stats.get_value('focuscrawl/links/razored', 0)} links razored, "
                f"LM {queries} queries ({hits} cached)")

    def log(self) -> None:
        logger.info(self.line())
        if logger.isEnabledFor(logging.DEBUG) and (line := self.scorer_line()):
            logger.debug(line)

    def spider_closed(self, spider=None, reason=None) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()


class CrawlSummary:
    """Logs the crawl's summary (``focuscrawl.output.summary``) when the engine stops, after
    every ``spider_closed`` handler has set its stats (finish reason, counters). ``limits``:
    the values of the settings the summary names (``LIMITS``)."""

    def __init__(self, stats, limits: Mapping[str, Any], output: str | None, extra_outputs: list[str]) -> None:
        self.stats = stats
        self.limits = limits
        self.output = output
        self.extra_outputs = extra_outputs

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "CrawlSummary":
        settings = crawler.settings
        if not settings.getbool("FOCUSCRAWL_CRAWL_SUMMARY"):
            raise NotConfigured
        output = settings.get("FOCUSCRAWL_OUTPUT_DIR")
        ext = cls(crawler.stats, {setting: settings.get(setting) for _, _, setting in LIMITS},
                  str(Path(output).resolve()) if output else None,
                  [*settings.getdict("FEEDS"), settings.get("FOCUSCRAWL_WARC_DIR")])
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    def lines(self) -> list[str]:
        return crawl_summary(self.stats.get_stats(), self.limits, self.output, extra_outputs=self.extra_outputs)

    def engine_stopped(self) -> None:
        logger.info("\n".join(self.lines()))
