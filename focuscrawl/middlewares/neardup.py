"""Near-duplicate pages: SimHash of each page's main text against all earlier pages.

``NearDuplicatePageMiddleware`` sees the spider's ``PageItem`` on its way out,
fingerprints the page's normalised sentences (SPEC §10: 64-bit SimHash of
tf-weighted word n-grams) and sets ``near_duplicate_of`` to the URL of the nearest
earlier page within Hamming distance k (None otherwise). It runs before the image
middleware on output, which skips or marks the images of such pages
(``FOCUSCRAWL_NEARDUP_IMAGES``).

With a JOBDIR the fingerprints and URLs are appended to ``JOBDIR/neardup.fingerprints``
(one whole record per page, like Scrapy's ``requests.seen``), so a resumed crawl keeps
comparing against every page seen before the stop. A record torn by a kill is cut off
when the file is read back.
"""
from __future__ import annotations

import logging
import os
import struct
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.utils.job import job_dir

from focuscrawl.analysis import page_analysis
from focuscrawl.dedup.index import SimHashIndex
from focuscrawl.dedup.simhash import parse_ngrams, simhash
from focuscrawl.items import PageItem

logger = logging.getLogger(__name__)

STATE_FILE = "neardup.fingerprints"
_RECORD = struct.Struct("<QI")  # fingerprint, URL length; the UTF-8 URL follows


class FingerprintLog:
    """Append-only ``(fingerprint, url)`` records behind a header naming the n-gram mode.

    Each record is written with one ``os.write`` on an ``O_APPEND`` descriptor; a torn
    last record (killed process, full disk) is truncated away on open.
    """

    def __init__(self, path: Path, ngrams: str) -> None:
        self.path = path
        self.header = f"focuscrawl-neardup 1 ngrams={ngrams}\n".encode()
        self.truncated_bytes = 0
        self._fd: int | None = None

    def open(self) -> list[tuple[int, str]]:
        """Read back the stored records and open the file for appending."""
        records: list[tuple[int, str]] = []
        data = self.path.read_bytes() if self.path.exists() else b""
        good = 0
        if data:
            line_end = data.find(b"\n") + 1
            if line_end and data[:line_end] != self.header:
                raise ValueError(
                    f"{self.path} was written with other near-duplicate settings "
                    f"({data[:line_end].decode(errors='replace').strip()!r}, now "
                    f"{self.header.decode().strip()!r}); use a new JOBDIR or the old FOCUSCRAWL_NEARDUP_NGRAMS")
            if not line_end:  # the header itself was torn
                line_end = 0
            else:
                good = pos = line_end
                while pos + _RECORD.size <= len(data):
                    fp, length = _RECORD.unpack_from(data, pos)
                    end = pos + _RECORD.size + length
                    if end > len(data):
                        break
                    records.append((fp, data[pos + _RECORD.size:end].decode("utf-8")))
                    good = pos = end
        self.truncated_bytes = len(data) - good
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if self.truncated_bytes:
            os.ftruncate(self._fd, good)
        os.lseek(self._fd, 0, os.SEEK_END)
        if good == 0:
            os.write(self._fd, self.header)
        return records

    def append(self, fingerprint: int, url: str) -> None:
        raw = url.encode("utf-8")
        record = _RECORD.pack(fingerprint, len(raw)) + raw
        if self._fd is None:
            raise RuntimeError(f"{self.path} is not open")
        written = os.write(self._fd, record)
        if written != len(record):  # pragma: no cover - short write on a full disk
            raise OSError(f"short write to {self.path}")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class NearDuplicatePageMiddleware(BaseSpiderMiddleware):
    """Sets ``PageItem["near_duplicate_of"]`` from a SimHash index of all earlier pages."""

    def __init__(self, stats, ngrams: str, max_distance: int, blocks: int,
                 jobdir: str | None = None) -> None:  # pylint: disable=super-init-not-called
        """``jobdir``: the fingerprints of earlier pages are kept there and read back."""
        try:
            self.ngrams = parse_ngrams(ngrams)
            self.index = SimHashIndex(max_distance, blocks)
        except ValueError as exc:
            raise ValueError(f"bad near-duplicate settings (FOCUSCRAWL_NEARDUP_*): {exc}") from None
        self.stats = stats
        self.urls: list[str] = []
        self.log: FingerprintLog | None = None
        if jobdir:
            self.log = FingerprintLog(Path(jobdir) / STATE_FILE, "+".join(map(str, self.ngrams)))
            for fp, url in self.log.open():
                self.index.add(fp)
                self.urls.append(url)
            if self.urls:
                self.stats.set_value("focuscrawl/neardup/fingerprints_loaded", len(self.urls))
                logger.info("Loaded %d page fingerprints from %s", len(self.urls), self.log.path)
            if self.log.truncated_bytes:
                self.stats.inc_value("focuscrawl/neardup/torn_records")
                logger.warning("Cut a torn record (%d bytes) off %s", self.log.truncated_bytes, self.log.path)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "NearDuplicatePageMiddleware":
        s = crawler.settings
        if not s.getbool("FOCUSCRAWL_NEARDUP_ENABLED"):
            raise NotConfigured("FOCUSCRAWL_NEARDUP_ENABLED is off")
        mw = cls(crawler.stats, str(s.get("FOCUSCRAWL_NEARDUP_NGRAMS")), s.getint("FOCUSCRAWL_NEARDUP_MAX_DISTANCE"),
                 s.getint("FOCUSCRAWL_NEARDUP_BLOCKS"), job_dir(s))
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        return mw

    def spider_closed(self, spider: Any = None) -> None:
        if self.log:
            self.log.close()

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        if isinstance(item, PageItem):
            analysis = page_analysis(response)
            self.check_page(item, analysis.simhash if analysis is not None else None)
        return item

    def check_page(self, item: PageItem, fp: int | None = None) -> None:
        """Record one page and set its ``near_duplicate_of``; ``fp`` is its fingerprint
        (the page analysis computed it), else it is computed from the item's sentences."""
        url = item.get("url") or ""
        if fp is None:
            fp = simhash(" ".join(item.get("sentences") or ()).split(), self.ngrams)
        item["near_duplicate_of"] = None
        if fp is None:
            self.stats.inc_value("focuscrawl/neardup/pages_without_text")
            return
        self.stats.inc_value("focuscrawl/neardup/pages_checked")
        seen_before = False
        for ident, _distance in self.index.query(fp):
            other = self.urls[ident]
            if other == url:  # the same page again (fetched again after a resume)
                seen_before = True
                continue
            if item["near_duplicate_of"] is None:
                item["near_duplicate_of"] = other
        if item["near_duplicate_of"] is not None:
            self.stats.inc_value("focuscrawl/neardup/near_duplicates")
        if not seen_before:
            self.index.add(fp)
            self.urls.append(url)
            if self.log:
                self.log.append(fp, url)
