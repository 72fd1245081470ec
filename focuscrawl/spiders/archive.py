"""The ``archive`` spider: the ``focused`` crawl replayed over WARC/ARC files.

    scrapy crawl archive -a archives=A.warc.gz,B.arc.gz -a output=DIR [-a mode=...] [-a follow=1]
    focuscrawl warc A.warc.gz B.arc.gz -o DIR

Every archived HTML page (status 200, first capture of its URL) is a seed; pages
and images are served from the archives by ``ArchiveReplayMiddleware``, and the
focused spider's parsing, link scoring, image middleware, pipelines and writers do
the rest exactly as in a live crawl. A page's ``fetched_at`` is its capture time
(``WARC-Date``). Out-links are only followed when they are in
the archive (pages are all seeds already, so the dupefilter drops them); others are
dropped and counted as ``focuscrawl/archive/links_not_archived``.
"""
from __future__ import annotations

from typing import Any, AsyncIterator

from scrapy import Request, signals
from scrapy.http import Response
from scrapy.exceptions import UsageError

from focuscrawl.archive.reader import ArchiveError, ArchiveIndex
from focuscrawl.items import PageItem
from focuscrawl.spiders.focused import FocusedSpider, reported

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


class ArchiveSpider(FocusedSpider):
    name = "archive"

    @classmethod
    def update_settings(cls, settings) -> None:
        super().update_settings(settings)
        for name, value in REPLAY_SETTINGS.items():
            settings.set(name, value, priority="spider")
        handler = "focuscrawl.archive.replay.ArchiveDownloadHandler"
        settings.set("DOWNLOAD_HANDLERS", {"http": handler, "https": handler}, priority="spider")

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
        # the focused spider needs seeds; the archive's pages are the seeds
        crawler.settings.set("FOCUSCRAWL_SEEDS", pages[0].url, priority="spider")
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.archive_index = index
        spider.seed_files = None
        if seed_files:
            spider.seed_files = set(seed_files if isinstance(seed_files, list) else seed_files.split(","))
            pages = [ref for ref in pages if ref.path in spider.seed_files]
        spider.seed_urls = [ref.url for ref in pages]
        spider.expected_pages = len(spider.seed_urls)  # the progress line's target (CrawlProgress)
        crawler.signals.connect(spider._archive_stats, signal=signals.spider_opened)
        return spider

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

    async def parse(self, response: Response) -> AsyncIterator[Any]:
        """The focused spider's parse; out-links the archive does not hold are dropped here
        (counted) instead of becoming requests that can only fail."""
        async for obj in super().parse(response):
            if isinstance(obj, Request):
                ref = self.archive_index.get(obj.url)
                if ref is None:
                    self.stats.inc_value("focuscrawl/archive/links_not_archived")
                    continue
                if self.seed_files is not None and ref.path not in self.seed_files:
                    self.stats.inc_value("focuscrawl/archive/links_other_job")  # that file's job replays it
                    continue
            if isinstance(obj, PageItem):  # fetched when it was captured, not when replayed
                ref = self.archive_index.get(response.url)
                if ref is not None and ref.date:
                    obj["fetched_at"] = ref.date
            yield obj

    def _archive_stats(self, spider=None) -> None:
        """The records of the files this crawl replays (a job's own file, not every file's)."""
        files = self.archive_index.paths if self.seed_files is None else self.seed_files
        for key, value in self.archive_index.stats_of(files).items():
            self.stats.set_value(f"focuscrawl/archive/{key}", value)
        self.stats.set_value("focuscrawl/archive/html_pages", len(self.seed_urls))
        # every HTML response of those files: a URL captured again, redirects and errors are no pages
        self.stats.set_value("focuscrawl/archive/html_responses", sum(
            1 for ref in self.archive_index.order if ref.path in files and "html" in ref.content_type.lower()))
