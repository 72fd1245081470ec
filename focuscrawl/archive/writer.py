"""Write every fetched response to rotating, gzipped WARC files (complete records only).

Each request/response pair is built in memory and appended with a single
unbuffered write to a ``GzipLog`` (``focuscrawl.output.files``); the file being
written is named ``*.warc.gz.open`` and renamed to ``*.warc.gz`` when it is rotated or
the crawl closes. A crawl killed mid-write leaves an ``.open`` file whose tail may be
partial: ``recover_open_files`` (run when the next crawl opens the same directory)
cuts it back to its last complete record, so every finished ``.warc.gz`` holds whole
records only. warcio builds and compresses the records (one gzip member each), so
they are appended as bytes (``write_bytes``, not ``write_lines``), and "complete
record" is "complete gzip member", which ``GzipLog`` finds on open. What is WARC's
own is the file's life: it is never resumed after a kill but closed (renamed), and
no JOBDIR checkpoint is kept (a WARC holds every response, also ones whose rows a
resumed crawl cuts back and fetches again).
"""
from __future__ import annotations

import io
import logging
import os
import time
from http import HTTPStatus
from pathlib import Path

from focuscrawl import settings as defaults

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from focuscrawl.output.files import GzipLog

logger = logging.getLogger(__name__)
OPEN_SUFFIX = ".open"
#: Hop-by-hop headers that no longer describe the stored body (Twisted de-chunks).
_SKIP_RESPONSE_HEADERS = {b"transfer-encoding"}


def _pairs(headers) -> list[tuple[str, str]]:
    out = []
    for name, values in headers.items():
        if name.lower() in _SKIP_RESPONSE_HEADERS:
            continue
        for value in values:
            out.append((name.decode("latin-1"), value.decode("latin-1")))
    return out


def recover_open_files(directory: Path) -> list[tuple[Path, int]]:
    """Truncate ``*.open`` files left by a killed crawl to whole records and close them.

    Returns ``(final path, bytes cut)`` for each recovered file.
    """
    recovered = []
    for path in sorted(directory.glob(f"*{OPEN_SUFFIX}")):
        log = GzipLog(path)  # cut back to the last complete gzip member = WARC record
        end, cut = log.offset, log.cut_bytes
        log.close()
        final = path.with_name(path.name[: -len(OPEN_SUFFIX)])
        if end == 0:
            path.unlink()
        else:
            os.replace(path, final)
        recovered.append((final, cut))
        logger.warning("WARC %s: recovered after an unclean stop, %d trailing bytes cut", final, cut)
    return recovered


class RotatingWarcWriter:
    """Appends request/response records to ``PREFIX-<time>-<pid>-<n>.warc.gz`` files."""

    def __init__(self, directory: str | os.PathLike, max_size: int,
                 prefix: str = defaults.FOCUSCRAWL_WARC_PREFIX):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_size = max_size
        self.prefix = prefix
        self.serial = 0
        self.files: list[Path] = []  # finished files
        self._log: GzipLog | None = None
        self._path: Path | None = None
        self.records = 0
        self.recovered = recover_open_files(self.directory)

    def _open(self) -> None:
        self.serial += 1
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        name = f"{self.prefix}-{stamp}-{os.getpid()}-{self.serial:05d}.warc.gz"
        self._path = self.directory / (name + OPEN_SUFFIX)
        self._log = GzipLog(self._path)
        info = WARCWriter(None, gzip=True).create_warcinfo_record(
            name, {"software": "focuscrawl (warcio)", "format": "WARC File Format 1.1"})
        self._append([info])

    def _append(self, records) -> None:
        buf = io.BytesIO()
        writer = WARCWriter(buf, gzip=True)
        for record in records:
            writer.write_record(record)
        self._log.write_bytes(buf.getvalue())  # one write per pair: complete records or nothing

    def write(self, request: Request, response: Response) -> None:
        if self._log is None:
            self._open()
        builder = WARCWriter(None, gzip=True)
        reason = HTTPStatus(response.status).phrase if response.status in HTTPStatus._value2member_map_ else "Unknown"
        http = StatusAndHeaders(f"{response.status} {reason}", _pairs(response.headers), protocol="HTTP/1.1")
        warc_headers = {}
        if response.ip_address is not None:
            warc_headers["WARC-IP-Address"] = str(response.ip_address)
        resp = builder.create_warc_record(response.url, "response", payload=io.BytesIO(response.body),
                                          length=len(response.body), http_headers=http,
                                          warc_headers_dict=warc_headers)
        path = request.url.split("/", 3)[3] if request.url.count("/") >= 3 else ""
        req_http = StatusAndHeaders(f"{request.method} /{path} HTTP/1.1", _pairs(request.headers),
                                    is_http_request=True)
        req = builder.create_warc_record(request.url, "request", payload=io.BytesIO(request.body or b""),
                                         length=len(request.body or b""), http_headers=req_http)
        req.rec_headers.add_header("WARC-Concurrent-To", resp.rec_headers.get_header("WARC-Record-ID"))
        self._append([resp, req])
        self.records += 1
        if self._log.offset >= self.max_size:
            self.close_file()

    def close_file(self) -> None:
        if self._log is None:
            return
        self._log.close()
        final = self._path.with_name(self._path.name[: -len(OPEN_SUFFIX)])
        os.replace(self._path, final)
        self.files.append(final)
        self._log = self._path = None


class WarcWriterMiddleware:
    """Downloader middleware: every response (pages, images, robots.txt) to WARC.

    Enabled by ``FOCUSCRAWL_WARC_DIR``. Sits next to the downloader (priority 950)
    so it stores the body as sent (still content-encoded) with its headers. Archived
    replays (``focuscrawl warc``) are not written again.
    """

    def __init__(self, stats, writer: RotatingWarcWriter) -> None:
        self.stats = stats
        self.writer = writer
        for path, cut in writer.recovered:
            stats.inc_value("focuscrawl/warc/recovered_files")
            stats.inc_value("focuscrawl/warc/recovered_bytes_cut", cut)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "WarcWriterMiddleware":
        directory = crawler.settings.get("FOCUSCRAWL_WARC_DIR")
        if not directory:
            raise NotConfigured  # off unless FOCUSCRAWL_WARC_DIR is set
        max_size = crawler.settings.getint("FOCUSCRAWL_WARC_MAX_SIZE")
        if max_size <= 0:
            raise ValueError(f"FOCUSCRAWL_WARC_MAX_SIZE must be > 0, got {max_size}")
        mw = cls(crawler.stats, RotatingWarcWriter(directory, max_size, crawler.settings.get("FOCUSCRAWL_WARC_PREFIX")))
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        return mw

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Response:
        if "archive" not in response.flags:
            self.writer.write(request, response)
            self.stats.inc_value("focuscrawl/warc/records")
            self.stats.inc_value("focuscrawl/warc/bytes", len(response.body))
        return response

    def spider_closed(self, spider: Spider) -> None:
        self.writer.close_file()
        self.stats.set_value("focuscrawl/warc/files", len(self.writer.files))
