"""Near-duplicate pages: SimHash of each page's main text against all earlier pages.

``NearDuplicatePageMiddleware`` sees the spider's ``PageItem`` on its way out, looks up
the fingerprint of the page's normalised sentences (SPEC §10: 64-bit SimHash of
tf-weighted word n-grams), which the page analysis computed (``PageAnalysis.simhash``,
``response.meta["page_analysis"]``), and sets the item's ``near_duplicate_of`` to the URL
of the nearest earlier page within Hamming distance k (None otherwise). The page is checked
at its first output (its first link, else its item) and the answer kept in the page's
analysis (``PageAnalysis.near_duplicate_of``), where the link middleware, further out, reads
it for each of the page's links (``FOCUSCRAWL_NEARDUP_LINKS``). It runs before the image
middleware on output, which skips or marks the images of such pages (``FOCUSCRAWL_NEARDUP_IMAGES``).

With a JOBDIR the fingerprints and URLs are appended to
``JOBDIR/focuscrawl/neardup.fingerprints`` (a ``LineLog``: one whole line per page,
``<fingerprint hex>\t<url>``, behind a header naming the n-gram mode), so a resumed
crawl keeps comparing against every page seen before the stop. A line torn by a kill
is cut off when the file is opened. The file is not cut back to the outputs'
checkpoint: a page crawled again after a resume is recognised by its URL. The middleware
is a ``Checkpointed`` state registered with ``RunState`` (with or without a run directory):
``restore`` reads the file back, ``close`` closes it.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.utils.job import job_dir

from focuscrawl.analysis import page_analysis
from focuscrawl.dedup.index import SimHashIndex
from focuscrawl.dedup.simhash import parse_ngrams
from focuscrawl.items import PageItem
from focuscrawl.output.files import LineLog, iter_lines, job_state_dir
from focuscrawl.output.run_state import RunState

logger = logging.getLogger(__name__)

STATE_FILE = "neardup.fingerprints"


def state_header(ngrams: str) -> str:
    return f"focuscrawl-neardup 2 ngrams={ngrams}"


def _url_cell(url: str) -> str:
    """A URL as one cell (Scrapy's URLs hold no tab or newline; anything else is escaped)."""
    return url.replace("\t", "%09").replace("\n", "%0A").replace("\r", "%0D")


class NearDuplicatePageMiddleware(BaseSpiderMiddleware):
    """Sets ``PageItem["near_duplicate_of"]`` from a SimHash index of all earlier pages."""

    def __init__(self, stats, ngrams: str, max_distance: int, blocks: int,
                 state_path: Path | None = None, run=None) -> None:  # pylint: disable=super-init-not-called
        """``state_path``: the fingerprints of earlier pages are kept there and read back (``restore``);
        ``run``: what guards this file's writes (``RunState``, or a ``RunOutput``): a failed write
        stops the crawl, and the run's failed write stops this file's too."""
        try:
            self.ngrams = parse_ngrams(ngrams)
            self.index = SimHashIndex(max_distance, blocks)
        except ValueError as exc:
            raise ValueError(f"bad near-duplicate settings (FOCUSCRAWL_NEARDUP_*): {exc}") from None
        self.stats = stats
        self.urls: list[str] = []
        #: each page's id in the index (its latest fingerprint)
        self._ident_of: dict[str, int] = {}
        self.log: LineLog | None = None
        self.state_path = state_path
        self.run = run

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "NearDuplicatePageMiddleware":
        s = crawler.settings
        if not s.getbool("FOCUSCRAWL_NEARDUP_ENABLED"):
            raise NotConfigured("FOCUSCRAWL_NEARDUP_ENABLED is off")
        state_dir = job_state_dir(job_dir(s))
        run_state = crawler.get_extension(RunState)
        mw = cls(crawler.stats, str(s.get("FOCUSCRAWL_NEARDUP_NGRAMS")), s.getint("FOCUSCRAWL_NEARDUP_MAX_DISTANCE"),
                 s.getint("FOCUSCRAWL_NEARDUP_BLOCKS"), state_dir / STATE_FILE if state_dir else None, run_state)
        run_state.register(mw)
        return mw

    # -- Checkpointed: JOBDIR/focuscrawl/neardup.fingerprints ----------------------------------
    def restore(self) -> None:
        """Load the fingerprints of earlier sessions and open the file for appending."""
        if self.state_path is None:
            return
        ngrams = "+".join(map(str, self.ngrams))
        path = self.state_path
        header = state_header(ngrams)
        try:
            self.log = LineLog(path, header)  # a line torn by a kill is cut here
            if self.run is not None:  # a failed write stops it with the outputs (as a kill would)
                self.run.guard(self.log)
        except ValueError:
            raise ValueError(f"{path} was written with other near-duplicate settings "
                             f"({next(iter_lines(path), '')!r}, now {header!r}); use a new JOBDIR "
                             f"or the old FOCUSCRAWL_NEARDUP_NGRAMS") from None
        lines = self.log.lines()
        next(lines)  # the header
        for number, line in enumerate(lines, 2):
            fp, _, url = line.partition("\t")
            try:
                self.index.add(int(fp, 16))
            except ValueError:
                self.log.close()
                raise ValueError(f"{path} line {number} is not '<fingerprint hex>\\t<url>': "
                                 f"not a near-duplicate state file; use a new JOBDIR") from None
            self._ident_of[url] = len(self.urls)
            self.urls.append(url)
        if self.urls:
            self.stats.set_value("focuscrawl/neardup/fingerprints_loaded", len(self.urls))
            logger.info("Loaded %d page fingerprints from %s", len(self.urls), path)
        if self.log.cut_bytes:
            self.stats.inc_value("focuscrawl/neardup/torn_records")
            logger.warning("Cut a torn record (%d bytes) off %s", self.log.cut_bytes, path)

    def checkpoint(self) -> None:
        """Nothing to do: each page's line is written whole when it is checked."""

    def close(self) -> None:
        if self.log:
            self.log.close()

    def get_processed_request(self, request: Request, response: Response | None) -> Request:
        """A page's first link: the page is checked now, so that the link middleware can
        demote the links of a near-duplicate (``FOCUSCRAWL_NEARDUP_LINKS``)."""
        if response is not None and page_analysis(response) is not None:
            self._duplicate_of(response, response.url)
        return request

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        if isinstance(item, PageItem):
            item["near_duplicate_of"] = self._duplicate_of(response, item.get("url") or "")
        return item

    def _duplicate_of(self, response: Response | None, url: str) -> str | None:
        """The page checked once, at its first output; the answer is kept in its analysis
        (``PageAnalysis.near_duplicate_of``)."""
        analysis = page_analysis(response)
        if analysis is None:
            return self.check_page(url, None)
        if not analysis.near_duplicate_checked:
            analysis.near_duplicate_of = self.check_page(url, analysis.simhash)
            analysis.near_duplicate_checked = True
        return analysis.near_duplicate_of

    def check_page(self, url: str, fp: int | None) -> str | None:
        """Record one page by its fingerprint (``None``: no text, nothing to compare) and
        return the URL of an earlier near-identical page, if any."""
        if fp is None:
            self.stats.inc_value("focuscrawl/neardup/pages_without_text")
            return None
        self.stats.inc_value("focuscrawl/neardup/pages_checked")
        # the same page again (fetched again after a resume): its own fingerprint is not new,
        # and it is no near-duplicate of itself
        own = self._ident_of.get(url, -1)
        seen_before = own >= 0 and (int(self.index.fingerprints[own]) ^ fp).bit_count() \
            <= self.index.max_distance
        # checked before (fetched again after a kill lost its row): it meets the pages it met
        # then, those checked before it, as a crawl never killed does; not the later ones
        match = self.index.nearest(fp, before=own if own >= 0 else None)
        duplicate_of = self.urls[match[0]] if match is not None else None
        if duplicate_of == url:  # an older fingerprint of the page, of other content: the whole list
            duplicate_of = next((self.urls[i] for i, _ in self.index.query(fp) if i < own and self.urls[i] != url),
                                None)
            seen_before = True
        if duplicate_of is not None:
            self.stats.inc_value("focuscrawl/neardup/near_duplicates")
        if not seen_before:
            self.index.add(fp)
            self._ident_of[url] = len(self.urls)
            self.urls.append(url)
            if self.log:
                self.log.write_lines([f"{fp:016x}\t{_url_cell(url)}"])
        return duplicate_of
