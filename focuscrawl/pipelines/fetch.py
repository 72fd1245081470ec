"""Download a replay's candidate pairs (``focuscrawl fetch``) and record each outcome in fetched.tsv.

``CandidateDownloadPipeline`` is the crawl's ``ImageDownloadPipeline`` (decompression-bomb and
size limits, broken images rejected, rights read from the file, opted-out responses dropped,
each counted under the same stats) over a finished run directory: image files go to its
``images/`` (written atomically before their row, so a file without a row is only inspected
again by the next fetch), and every outcome — downloaded with its real size, or the reason it
was not — is one whole line appended to ``fetched.tsv`` (``focuscrawl.corpus.FETCHED_COLUMNS``).
images.tsv is not touched: ``focuscrawl.corpus.iter_entries`` reads fetched.tsv over it.
"""
from __future__ import annotations

from pathlib import Path

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from focuscrawl.corpus import FETCHED_COLUMNS, FETCHED_TSV
from focuscrawl.images.rules import ImageRules
from focuscrawl.items import ImageItem
from focuscrawl.output.files import LineLog
from focuscrawl.output.tsv import row
from focuscrawl.pipelines.download import DOWNLOAD_ERROR, DOWNLOADED, ImageDownloadPipeline, ImageOptedOut
from focuscrawl.rights.policy import OptOutPolicy


def fetch_status(exc: BaseException) -> str:
    """The fetched.tsv status of a failed download: the stats' reason, ``opted_out:<optout>`` for an opt-out."""
    if isinstance(exc, ImageOptedOut):
        return f"opted_out:{exc.optout}"
    return getattr(exc, "reason", None) or DOWNLOAD_ERROR


def fetched_row(item: ImageItem, status: str) -> list:
    values = dict(item)
    rights = values.get("rights") or {}
    cells = {**{name: rights.get(name, "") for name in FETCHED_COLUMNS}, **values, "fetch_status": status}
    return [cells.get(name) for name in FETCHED_COLUMNS]


class CandidateDownloadPipeline(ImageDownloadPipeline):
    """The image download pipeline with a finished run directory (``spider.run_dir``) as its
    store and fetched.tsv as its log, one row per image whether it was downloaded or not."""

    def __init__(self, *args, log: LineLog, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log = log

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "CandidateDownloadPipeline":
        run_dir = Path(crawler.spider.run_dir)
        s = crawler.settings
        # a torn last line (a killed fetch) is cut on open; the header is checked
        log = LineLog(run_dir / FETCHED_TSV, "\t".join(FETCHED_COLUMNS))
        return cls(str(run_dir), crawler=crawler, run=None, max_bytes=s.getint("FOCUSCRAWL_IMAGE_MAX_BYTES"),
                   max_pixels=s.getint("FOCUSCRAWL_IMAGE_MAX_PIXELS"), formats=s.getlist("FOCUSCRAWL_IMAGE_FORMATS"),
                   rules=ImageRules.from_settings(s), optouts=OptOutPolicy.from_settings(s), log=log)

    def item_completed(self, results, item, info):
        self.stats.inc_value("focuscrawl/fetch/outcomes")
        try:
            item = super().item_completed(results, item, info)
        except DropItem:
            self.log.write_lines([row(fetched_row(item, fetch_status(results[0][1].value)))])
            raise
        self.log.write_lines([row(fetched_row(item, item.get("image_status") or DOWNLOADED))])
        return item

    def close_spider(self) -> None:
        self.log.close()
