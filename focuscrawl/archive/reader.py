"""Read HTTP responses out of WARC and ARC files (gzipped or not) with warcio.

SPEC §8 rules for archive input: the body is exactly what the *archive record*
holds (its length comes from the record, a stale or lying ``Content-Length`` in the
stored HTTP header is replaced); the charset comes from the HTTP header or is
detected from the body (Scrapy's ``TextResponse`` via w3lib: header, BOM, ``<meta>``,
detection). NUL stripping and whitespace collapsing happen in the text layer
(``focuscrawl.text.html.decode_html`` and ``focuscrawl.text.normalize``), the same
for crawled and archived pages.
"""
from __future__ import annotations

import calendar
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from scrapy.http import Headers, Response
from scrapy.responsetypes import responsetypes
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.timeutils import iso_date_to_datetime

#: Record types that carry an HTTP response (``response`` in WARC; ARC records are
#: converted to ``response`` by warcio's ``arc2warc``).
RESPONSE_TYPES = frozenset({"response"})
_DROP_HEADERS = (b"Content-Length", b"Transfer-Encoding")


class ArchiveError(ValueError):
    """An archive file that cannot be read at all (not WARC/ARC, wrong gzip framing)."""


@dataclass(frozen=True)
class RecordRef:
    """Where an HTTP response record lives: file, byte offset, and what it is."""

    path: str
    offset: int
    url: str
    status: int
    content_type: str
    length: int  # record length in the (possibly compressed) file
    date: float = 0.0  # capture time (WARC-Date, unix seconds; 0 = unknown)


def _target_uri(record) -> str:
    uri = record.rec_headers.get_header("WARC-Target-URI") or ""
    return uri.strip().strip("<>")


def _capture_time(record) -> float:
    try:
        moment = iso_date_to_datetime(record.rec_headers.get_header("WARC-Date") or "")
        return calendar.timegm(moment.utctimetuple()) + moment.microsecond / 1e6
    except (ValueError, TypeError, OverflowError, IndexError):
        return 0.0


def _status(record) -> int:
    try:
        return int((record.http_headers.get_statuscode() or "0")[:3])
    except (ValueError, AttributeError):
        return 0


def iter_refs(path: str | os.PathLike, stats: dict | None = None) -> Iterator[RecordRef]:
    """Every HTTP response record of a WARC/ARC file, in file order (no bodies read)."""
    stats = stats if stats is not None else {}
    path = str(path)
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh, arc2warc=True)
        try:
            for record in it:
                kind = record.rec_type
                stats[f"records/{kind}"] = stats.get(f"records/{kind}", 0) + 1
                if kind not in RESPONSE_TYPES:
                    continue
                if record.http_headers is None:  # dns: records of ARC/WARC crawls
                    stats["records/skipped_no_http"] = stats.get("records/skipped_no_http", 0) + 1
                    continue
                url = _target_uri(record)
                if not url.startswith(("http://", "https://")):
                    stats["records/skipped_non_http"] = stats.get("records/skipped_non_http", 0) + 1
                    continue
                status = _status(record)
                ctype = record.http_headers.get_header("Content-Type") or ""
                offset, length = it.get_record_offset(), it.get_record_length()
                yield RecordRef(path, offset, url, status, ctype, length, _capture_time(record))
        except Exception as exc:  # warcio raises bare Exceptions for framing errors
            if "ArchiveLoadFailed" in type(exc).__name__ or "gzip" in str(exc).lower():
                raise ArchiveError(f"{path}: {exc}".strip()) from exc
            raise


def _record_body(record, max_size: int) -> tuple[bytes, bool]:
    """The HTTP payload as stored (de-chunked, not decoded), at most ``max_size`` bytes."""
    stream = record.raw_stream
    if (record.http_headers.get_header("Transfer-Encoding") or "").lower() == "chunked":
        stream = ChunkedDataReader(stream, decomp_type=None)
    body = stream.read(max_size + 1) if max_size else stream.read()
    truncated = bool(max_size) and len(body) > max_size
    return (body[:max_size] if truncated else body), truncated


def response_from_record(record, url: str, max_size: int = 0) -> Response:
    """Build the Scrapy response (``HtmlResponse``, ``Response``, ...) of one record.

    ``Content-Encoding`` is kept when the body really is compressed, so Scrapy's
    ``HttpCompressionMiddleware`` decodes it with its usual size limits; a header
    that lies (archive stored the decoded body) is dropped. ``flags`` carries
    ``archive`` (and ``truncated`` when the body exceeded ``max_size``).
    """
    http = record.http_headers
    body, truncated = _record_body(record, max_size)
    headers = Headers()
    for name, value in http.headers:
        headers.appendlist(name, value)
    for name in _DROP_HEADERS:
        headers.pop(name, None)
    encoding = (headers.get(b"Content-Encoding") or b"").lower().strip()
    if encoding and not _looks_encoded(encoding, body):
        headers.pop(b"Content-Encoding", None)
    headers[b"Content-Length"] = str(len(body))
    cls = responsetypes.from_args(headers=headers, url=url, body=body)
    flags = ["archive"] + (["truncated"] if truncated else [])
    ip = record.rec_headers.get_header("WARC-IP-Address")
    response = cls(url=url, status=_status(record), headers=headers, body=body, flags=flags,
                   ip_address=_ip(ip))
    return response


def _ip(value: str | None):
    if not value:
        return None
    try:
        return ipaddress.ip_address(value.strip())
    except ValueError:
        return None


def _looks_encoded(encoding: bytes, body: bytes) -> bool:
    if encoding in (b"gzip", b"x-gzip"):
        return body[:2] == b"\x1f\x8b"
    return not _is_texty(body)  # deflate, br, zstd: no reliable magic; text-looking = plain


def _is_texty(body: bytes) -> bool:
    head = body[:512]
    return bool(head) and sum(32 <= b < 127 or b in (9, 10, 13) for b in head) > 0.9 * len(head)


def read_response(ref: RecordRef, max_size: int = 0) -> Response:
    """Read one record again from its file (random access by offset)."""
    with open(ref.path, "rb") as fh:
        fh.seek(ref.offset)
        record = next(iter(ArchiveIterator(fh, arc2warc=True)))
        return response_from_record(record, ref.url, max_size)


def iter_responses(path: str | os.PathLike, max_size: int = 0) -> Iterator[Response]:
    """Sequential read of every HTTP response of a file (one pass, no seeking)."""
    with open(str(path), "rb") as fh:
        for record in ArchiveIterator(fh, arc2warc=True):
            if record.rec_type in RESPONSE_TYPES and record.http_headers is not None:
                url = _target_uri(record)
                if url.startswith(("http://", "https://")):
                    yield response_from_record(record, url, max_size)


class ArchiveIndex:
    """URL -> record reference over several archive files (first capture wins).

    Only offsets are kept in memory; bodies are read again on demand, so a
    CommonCrawl file of several GB needs memory for its URLs only.
    """

    def __init__(self, paths: list[str | os.PathLike]):
        self.paths = [str(p) for p in paths]
        self.stats: dict[str, int] = {}
        self.refs: dict[str, RecordRef] = {}
        self.order: list[RecordRef] = []
        for path in self.paths:
            if not Path(path).is_file():
                raise FileNotFoundError(f"archive {path} does not exist")
            before = sum(v for k, v in self.stats.items() if k.startswith("records/"))
            for ref in iter_refs(path, self.stats):
                self.order.append(ref)
                if ref.url in self.refs:
                    self.stats["records/duplicate_url"] = self.stats.get("records/duplicate_url", 0) + 1
                    continue
                self.refs[ref.url] = ref
            if sum(v for k, v in self.stats.items() if k.startswith("records/")) == before:
                raise ArchiveError(f"{path}: no WARC or ARC records (not an archive?)")

    def __len__(self) -> int:
        return len(self.refs)

    def get(self, url: str) -> RecordRef | None:
        return self.refs.get(url)

    def html_refs(self) -> list[RecordRef]:
        """Captured HTML pages (status 200), first capture of each URL, in archive order."""
        seen: set[str] = set()
        out = []
        for ref in self.order:
            if ref.url in seen or self.refs.get(ref.url) is not ref:
                continue
            seen.add(ref.url)
            ctype = ref.content_type.lower()
            if ref.status == 200 and ("html" in ctype or "xhtml" in ctype):
                out.append(ref)
        return out
