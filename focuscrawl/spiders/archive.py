"""The ``archive`` spider: the ``focused`` crawl replayed over WARC/ARC files.

    scrapy crawl archive -a archives=A.warc.gz,B.arc.gz -a output=DIR [-a mode=...] [-a follow=1]
    focuscrawl warc A.warc.gz B.arc.gz -o DIR

Every archived HTML page (status 200, first capture of its URL) is a seed; pages
and images are served from the archives by ``ArchiveDownloadHandler``, and the
focused spider's parsing, link scoring, image middleware, pipelines and writers do
the rest exactly as in a live crawl. The pages skip the scheduler
(``focuscrawl.archive.lean``, ``FOCUSCRAWL_ARCHIVE_LEAN``): each is downloaded and
scraped in archive order, its analysis started ahead on the analysis workers. A page's ``fetched_at`` is its capture time
(``WARC-Date``). Out-links are only followed when they are in
the archive (pages are all seeds already, so the dupefilter drops them); no request is
built for the others, counted as ``focuscrawl/archive/links_not_archived``.
"""
from __future__ import annotations

from typing import Any, AsyncIterator

from scrapy import Request, signals
from scrapy.http import HtmlResponse, Response
from scrapy.utils.response import get_base_url
from scrapy.exceptions import UsageError
from scrapy.settings import SETTINGS_PRIORITIES

from focuscrawl.archive.lean import LEAN_MIDDLEWARE, discard
from focuscrawl.archive.reader import ArchiveError, ArchiveIndex
from focuscrawl.items import PageItem
from focuscrawl.spiders.focused import FocusedSpider, readable_response, reported
from focuscrawl.urls import request_url

#: settings of a replay: no network, so no politeness delays; robots.txt rules were
#: applied (or not) by whoever made the archive; every archived page is replayed (the
#: live crawl's pages-per-host and per-domain backstops against traps would drop an
#: archive's pages past 500 a host; ``-s FOCUSCRAWL_MAX_PAGES_PER_HOST=N`` and
#: ``..._PER_DOMAIN=N`` still set them)
REPLAY_SETTINGS = {
    "ROBOTSTXT_OBEY": False,
    "FOCUSCRAWL_MAX_PAGES_PER_HOST": 0,
    "FOCUSCRAWL_MAX_PAGES_PER_DOMAIN": 0,
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "RETRY_ENABLED": False,
    # the archive holds the images' bytes: measure those without HTML size, do not drop them
    "FOCUSCRAWL_IMAGE_MEASURE_UNSIZED": True,
    # every archived page is a seed, so the crawl order decides nothing: no link learning
    "FOCUSCRAWL_MODE": "keywords",
}


#: pages of a replay per analysis worker it starts by default (``ArchiveSpider._size_analysis_pool``)
PAGES_PER_ANALYSIS_WORKER = 250


class ArchiveSpider(FocusedSpider):
    name = "archive"

    @classmethod
    def update_settings(cls, settings) -> None:
        super().update_settings(settings)
        for name, value in REPLAY_SETTINGS.items():
            settings.set(name, value, priority="spider")
        settings.set("FOCUSCRAWL_ANALYSIS_WORKERS", settings.getint("FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS"),
                     priority="spider")
        handler = "focuscrawl.archive.replay.ArchiveDownloadHandler"
        settings.set("DOWNLOAD_HANDLERS", {"http": handler, "https": handler}, priority="spider")
        # the lean path (FOCUSCRAWL_ARCHIVE_LEAN): last in process_start, next to the engine; at
        # spider priority, as a process's settings are applied again over a crawler's own
        middlewares = settings.getdict("SPIDER_MIDDLEWARES")
        middlewares.setdefault(LEAN_MIDDLEWARE, 1)
        settings.set("SPIDER_MIDDLEWARES", middlewares,
                     priority=max(settings.getpriority("SPIDER_MIDDLEWARES") or 0, SETTINGS_PRIORITIES["spider"]))

    @classmethod
    def from_crawler(cls, crawler, *args: Any, archives: str | list[str] | ArchiveIndex = "",
                     seed_files: str | list[str] = "", **kwargs: Any):
        """``archives``: comma-separated paths (``-a``), a list of paths, or a built index;
        ``seed_files``: only the pages captured in these of the archives are seeds (one job
        of ``focuscrawl warc --jobs``), all archives still answer requests (images)."""
        try:
            index, pages = cls._index(archives)
        except UsageError as exc:
            raise reported(exc, cls.name)
        files = set(seed_files if isinstance(seed_files, list) else seed_files.split(",")) if seed_files else None
        seeds = pages if files is None else [ref for ref in pages if ref.path in files]
        # the focused spider needs seeds; the archive's pages are the seeds
        crawler.settings.set("FOCUSCRAWL_SEEDS", pages[0].url, priority="spider")
        cls._size_analysis_pool(crawler.settings, len(seeds))
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.archive_index = index
        spider.seed_files = files
        spider.seed_urls = [ref.url for ref in seeds]
        spider.expected_pages = len(spider.seed_urls)  # the progress line's target (CrawlProgress)
        #: url -> ((html, base_url, depth), analysis or its Deferred): started by the lean path
        spider.analyses_ahead = {}
        crawler.signals.connect(spider._archive_stats, signal=signals.spider_opened)
        crawler.signals.connect(spider._forget_analyses, signal=signals.spider_closed)
        return spider

    @staticmethod
    def _size_analysis_pool(settings, pages: int) -> None:
        """A worker starts in ~1 s of CPU and pays that back over a few hundred pages: by
        default a replay gets one per ``PAGES_PER_ANALYSIS_WORKER`` pages, up to
        FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS; a value the user set is used as it is."""
        if settings.getpriority("FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS") > SETTINGS_PRIORITIES["project"]:
            return
        workers = min(settings.getint("FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS"), pages // PAGES_PER_ANALYSIS_WORKER)
        settings.set("FOCUSCRAWL_ANALYSIS_WORKERS", workers, priority="spider")

    @staticmethod
    def _index(archives: str | list[str] | ArchiveIndex) -> tuple[ArchiveIndex, list]:
        """The index and its HTML pages; ``UsageError`` when there is nothing to replay."""
        if isinstance(archives, ArchiveIndex):
            index, paths = archives, archives.paths
        else:
            paths = archives if isinstance(archives, list) else [p for p in archives.split(",") if p]
            if not paths:
                raise UsageError("no archives: pass -a archives=FILE.warc.gz[,FILE.arc.gz...]")
            try:
                index = ArchiveIndex(paths)
            except (ArchiveError, FileNotFoundError) as exc:
                raise UsageError(str(exc)) from exc
        pages = index.html_refs()
        if not pages:
            raise UsageError(f"no HTML responses in {', '.join(paths)}")
        return index, pages

    def link_request(self, url: str, anchor: str | None) -> Request | None:
        """An out-link's request only when the archives hold its URL (as the request would
        name it: Scrapy's ``safe_url_string``) and this job replays it; the others are
        counted, no request is built for them."""
        ref = self.archive_index.get(request_url(url))
        if ref is None:
            self.stats.inc_value("focuscrawl/archive/links_not_archived")
            return None
        if self.seed_files is not None and ref.path not in self.seed_files:
            self.stats.inc_value("focuscrawl/archive/links_other_job")  # that file's job replays it
            return None
        return super().link_request(url, anchor)

    async def parse(self, response: Response) -> AsyncIterator[Any]:
        """The focused spider's parse; a page's ``fetched_at`` is its capture time."""
        async for obj in super().parse(response):
            if isinstance(obj, PageItem):  # fetched when it was captured, not when replayed
                ref = self.archive_index.get(response.url)
                if ref is not None and ref.date:
                    obj["fetched_at"] = ref.date
            yield obj

    # -- the lean path ---------------------------------------------------------
    def analyse_ahead(self, response: Response) -> None:
        """Start the analysis of a downloaded page with the inputs ``parse`` will give it (the
        lean path: it runs on the workers while the pages before it are scraped)."""
        if not isinstance(response, HtmlResponse):
            return
        try:
            readable, _ = readable_response(response, self.text_max_bytes)
            html, base_url = readable.text, get_base_url(readable)
        except (UnicodeError, LookupError):  # parse counts and logs it
            return
        depth = response.meta.get("depth", 0)
        self.forget_ahead(response.url)
        self.analyses_ahead[response.url] = ((html, base_url, depth),
                                             super().analyse(html, response.url, base_url, depth))

    def forget_ahead(self, url: str) -> None:
        ahead = self.analyses_ahead.pop(url, None)
        if ahead is not None:
            discard(ahead[1])

    def analyse(self, html: str, url: str, base_url: str, depth: int):
        """The analysis the lean path started ahead for exactly these inputs, else a new one."""
        ahead = self.analyses_ahead.pop(url, None)
        if ahead is not None:
            inputs, analysis = ahead
            if inputs == (html, base_url, depth):
                return analysis
            discard(analysis)
        return super().analyse(html, url, base_url, depth)

    def _forget_analyses(self, spider=None) -> None:
        for url in list(self.analyses_ahead):
            self.forget_ahead(url)

    def _archive_stats(self, spider=None) -> None:
        """The records of the files this crawl replays (a job's own file, not every file's)."""
        files = self.archive_index.paths if self.seed_files is None else self.seed_files
        for key, value in self.archive_index.stats_of(files).items():
            self.stats.set_value(f"focuscrawl/archive/{key}", value)
        self.stats.set_value("focuscrawl/archive/html_pages", len(self.seed_urls))
        # every HTML response of those files: a URL captured again, redirects and errors are no pages
        self.stats.set_value("focuscrawl/archive/html_responses", self.archive_index.html_responses(files))
