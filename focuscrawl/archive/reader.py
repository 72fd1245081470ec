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

import atexit
import calendar
import ipaddress
import logging
import os
import shutil
import tempfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from scrapy.http import Headers, Request, Response
from scrapy.responsetypes import responsetypes
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import DecompressingBufferedReader
from warcio.timeutils import iso_date_to_datetime
from warcio.utils import BUFF_SIZE

from focuscrawl.processes import janitor
from focuscrawl.urls import excerpt, url_problem

logger = logging.getLogger(__name__)

#: Record types that carry an HTTP response (``response`` in WARC; ARC records are
#: converted to ``response`` by warcio's ``arc2warc``).
RESPONSE_TYPES = frozenset({"response"})
_DROP_HEADERS = (b"Content-Length", b"Transfer-Encoding")
#: Bounds on every read, so that a hostile file (a gzip of 1 GiB of zeros is one 1 GiB
#: "line") cannot exhaust memory: one header line (WARC, ARC or HTTP), and a record's
#: whole header block (the blank lines before it, its WARC and HTTP headers). Bodies
#: are read in BUFF_SIZE pieces and kept up to the caller's ``max_size``.
MAX_HEADER_LINE = 64 * 1024
MAX_HEADER_BLOCK = 1024 * 1024
#: Index stats of skipped records (``archive/<name>`` in the crawl stats), each logged
#: as one WARNING line.
BAD_TARGET_URI = "bad_target_uri"  # WARC-Target-URI not a usable http(s) URL (bad port, IPv6, ...)
TRUNCATED_RECORD = "truncated_record"  # the file ends before the record's Content-Length
LENGTH_MISMATCH = "length_mismatch"  # data follows the record where blank lines should be
NO_LENGTH = "no_content_length"  # a WARC record without a (valid) Content-Length
UNREADABLE = "unreadable_rest"  # damaged framing: the rest of the file cannot be read
RESYNCED = "resynced"  # records were read again after damaged framing (a bad Content-Length, ...)
#: a WARC gzipped whole (one gzip stream, not one member per record): read through an uncompressed copy
WHOLE_FILE_GZIP = "whole_file_gzip"


class ArchiveError(ValueError):
    """An archive file that cannot be read at all (not WARC/ARC, wrong gzip framing)."""


class HeaderTooLong(ValueError):
    """A header line or header block over its bound (``MAX_HEADER_LINE``/``_BLOCK``)."""


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
    #: the file the offset is in when not ``path``: the uncompressed copy of a WARC gzipped whole
    source: str = ""


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


class _BoundedReader(DecompressingBufferedReader):
    """warcio's (decompressing) reader whose ``readline`` stops at ``MAX_HEADER_LINE``
    bytes and, while ``counting``, at ``MAX_HEADER_BLOCK`` bytes of lines in a row.
    warcio reads every header and separator line with an unbounded ``readline``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.counting = True
        self.block = 0

    def readline(self, length=None):
        cap = MAX_HEADER_LINE + 1
        line = super().readline(cap if length is None or length <= 0 or length > cap else length)
        if len(line) > MAX_HEADER_LINE:
            raise HeaderTooLong(f"a header line longer than {MAX_HEADER_LINE} bytes: {excerpt(line, 40)}")
        if self.counting:
            self.block += len(line)
            if self.block > MAX_HEADER_BLOCK:
                raise HeaderTooLong(f"a record header block longer than {MAX_HEADER_BLOCK} bytes")
        return line


class _BoundedArchiveIterator(ArchiveIterator):
    """warcio's ``ArchiveIterator`` with bounded header reads, and per record whether
    its data ended before its ``Content-Length`` (``truncated``) or went on after it
    (``length_mismatch``). warcio writes the latter to stderr quoting the whole line."""

    def __init__(self, fileobj) -> None:
        super().__init__(fileobj, arc2warc=True)
        self.reader = _BoundedReader(self.fh, block_size=BUFF_SIZE)
        self.truncated = self.length_mismatch = False

    def _next_record(self, next_line):
        self.reader.counting = True
        try:
            return super()._next_record(next_line)
        finally:
            self.reader.counting = False  # the payload: read in pieces, never by line

    def read_to_end(self, record=None):
        if not self.record or self.member_info:
            return None
        self.truncated = self.length_mismatch = False
        self.reader.block, self.reader.counting = 0, True  # separator lines belong to the next block
        result = super().read_to_end(record)
        self.truncated = getattr(self.record.raw_stream, "limit", 0) > 0  # EOF before Content-Length
        return result

    def _consume_blanklines(self):
        """warcio's loop, with a flag instead of printing a line that can be megabytes long."""
        empty_size, first_line = 0, True
        while True:
            line = self.reader.readline()
            if not line:
                return None, empty_size
            if not line.rstrip() or first_line:
                empty_size += len(line)
                if line.rstrip():
                    self.length_mismatch = True
                first_line = False
                continue
            return line, empty_size


def _shorten(record: logging.LogRecord) -> bool:
    """Logging filter: warcio logs a WARC-Target-URI with spaces whole (up to a header line)."""
    record.msg, record.args = excerpt(record.getMessage(), 200), ()
    return True


logging.getLogger("warcio.recordloader").addFilter(_shorten)


def _count(stats: dict, key: str) -> None:
    stats[key] = stats.get(key, 0) + 1


def _find(fh, start: int, marker: bytes) -> int | None:
    """Offset of the first ``marker`` at or after ``start`` (read in 1 MiB pieces)."""
    fh.seek(start)
    tail, pos = b"", start
    while chunk := fh.read(1 << 20):
        data = tail + chunk
        found = data.find(marker)
        if found >= 0:
            return pos - len(tail) + found
        tail, pos = data[-len(marker):], pos + len(chunk)
    return None


def _next_warc_header(fh, start: int) -> int | None:
    """Offset of the next line starting ``WARC/1.`` at or after ``start``."""
    found = _find(fh, start, b"\nWARC/1.")
    return None if found is None else found + 1


def _next_gzip_member(fh, start: int) -> int | None:
    """Offset of the gzip member after the one at ``start`` (decompressed in bounded pieces
    and thrown away); ``None`` at the end of the file. A member too damaged to decompress
    ends at the next gzip magic after ``start``."""
    fh.seek(start)
    inflater, pos = zlib.decompressobj(31), start
    try:
        while not inflater.eof:
            chunk = fh.read(1 << 20)
            if not chunk:
                return None
            pos += len(chunk)
            data = chunk
            while data and not inflater.eof:
                inflater.decompress(data, 1 << 20)
                data = inflater.unconsumed_tail
        found = pos - len(inflater.unused_data)
    except zlib.error:
        found = _find(fh, start + 1, b"\x1f\x8b\x08")
    if found is None:
        return None
    fh.seek(found)
    return found if fh.read(1) else None


def _gzipped_whole(fh) -> bool:
    """Whether a gzip file's first member holds a second WARC record: the file was gzipped
    whole (warcio reads only its first record, and no record can be reached by offset).
    Read up to that record's ``WARC/1.`` line or the member's end, in bounded pieces."""
    fh.seek(0)
    if fh.read(2) != b"\x1f\x8b":
        return False
    fh.seek(0)
    inflater, tail = zlib.decompressobj(31), b"\n"  # (the first record's own line is no second one)
    try:
        while not inflater.eof and (chunk := fh.read(1 << 20)):
            while chunk and not inflater.eof:
                out = inflater.decompress(chunk, 1 << 20)
                chunk = inflater.unconsumed_tail
                if (tail + out).find(b"\nWARC/1.", 1) >= 0:
                    return True
                tail = (tail + out)[-8:]
    except zlib.error:
        pass  # a damaged first member: read as a file of members
    finally:
        fh.seek(0)
    return False


#: this process's folder of uncompressed copies (``_inflated_copy``), made once, and its janitor
_copies: list = []


def _remove_copies(pid: int) -> None:
    if os.getpid() == pid and _copies:  # (not in a forked job process)
        shutil.rmtree(_copies[0], ignore_errors=True)


def _inflated_copy(path: str, stats: dict) -> str:
    """An uncompressed copy of the gzip file ``path`` (its members in order), removed when
    this process ends (also by SIGKILL: ``focuscrawl.processes.janitor``). A stream that ends early (truncated) or goes on with data that is no
    gzip ends the copy there: one warning, counted as ``unreadable_rest``; the records before
    it are read (a record cut there is a ``truncated_record``)."""
    if not _copies:
        _copies.append(tempfile.mkdtemp(prefix="focuscrawl-archives-"))
        atexit.register(_remove_copies, os.getpid())
        _copies.append(janitor(_copies[0]))  # removed also when this process is killed
    target = os.path.join(_copies[0], f"{len(os.listdir(_copies[0]))}-{os.path.basename(path)}.warc")
    problem, copied = "", 0
    with open(path, "rb") as src, open(target, "wb") as dst:
        inflater, member_open = zlib.decompressobj(31), False
        try:
            while not problem and (data := src.read(1 << 20)):
                while data:
                    if not member_open and not data.startswith(b"\x1f\x8b"[:len(data)]):
                        problem = "data that is no gzip follows the gzip stream"
                        break
                    member_open = True
                    out = inflater.decompress(data, 1 << 20)
                    dst.write(out)
                    copied += len(out)
                    if inflater.eof:  # the next member (or the end)
                        data, inflater, member_open = inflater.unused_data, zlib.decompressobj(31), False
                    else:
                        data = inflater.unconsumed_tail
            if member_open and not problem:
                problem = "the gzip stream ends early (the file is truncated)"
        except zlib.error as exc:
            problem = f"the gzip stream is damaged ({exc})"
    if problem:
        _count(stats, UNREADABLE)
        logger.warning("archive: %s: %s after %d bytes uncompressed; the records before are used", path,
                       problem, copied)
    return target


@contextmanager
def _open_archive(path: str, stats: dict):
    """The open file to scan for ``path``'s records (its uncompressed copy if it is gzipped
    whole: counted ``whole_file_gzip``) and that file's path."""
    with open(path, "rb") as fh:
        whole = _gzipped_whole(fh)
    source = path
    if whole:
        _count(stats, WHOLE_FILE_GZIP)
        logger.info("archive: %s is gzipped whole, not a gzip member per record: read through an "
                    "uncompressed copy", path)
        source = _inflated_copy(path, stats)
    with open(source, "rb") as fh:
        yield fh, source


class _RecordScanner:
    """The HTTP response records of one open file, for sequential reading; every
    record it cannot use is a counted skip with one WARNING line. Damaged framing (a
    ``Content-Length`` too small, negative, not a number, or running past the end of
    the file; a header that cannot be parsed) would swallow every record after it:
    reading goes on at the next record (``focuscrawl/archive/resynced``) -- the next
    ``WARC/1.`` line of an uncompressed WARC, the next gzip member of a compressed
    file -- and ends (records before it are kept) only where there is none (an
    uncompressed ARC has no record marker). Damage in the very first record means the
    file is not an archive."""

    def __init__(self, fh, path: str, stats: dict) -> None:
        self.fh = fh
        self.gzip = fh.read(2) == b"\x1f\x8b"
        fh.seek(0)
        self.it = _BoundedArchiveIterator(fh)
        self.path, self.stats = path, stats
        self.records = 0
        self.start = 0  # where the current record (or the resync point) begins
        self.format = "warc"
        self.resync_at: int | None = None
        self.resynced = self.done = False  # resynced: counted once a record is read after it

    def __iter__(self) -> Iterator[tuple[object, str]]:
        records = iter(self.it)
        while not self.done:
            if self.resync_at is not None:
                self.fh.seek(self.resync_at)
                self.it, self.start, self.resync_at = _BoundedArchiveIterator(self.fh), self.resync_at, None
                records = iter(self.it)
            try:
                record = next(records)
            except StopIteration:
                return
            except Exception as exc:  # warcio raises bare Exceptions, zlib.error, EOFError, ...
                self._damaged(exc)
                continue
            self.records += 1
            self.start, self.format = self.it.offset, record.format
            if self.resynced:
                _count(self.stats, RESYNCED)
                self.resynced = False
            kind = record.rec_type
            _count(self.stats, f"records/{kind}")
            if kind not in RESPONSE_TYPES:
                continue
            if record.http_headers is None:  # dns: records of ARC/WARC crawls
                _count(self.stats, "records/skipped_no_http")
                continue
            url = _target_uri(record)
            if not url.startswith(("http://", "https://")):
                _count(self.stats, "records/skipped_non_http")
                continue
            if record.format == "warc" and record.length is None:
                self._skip(NO_LENGTH, url, "no Content-Length")
                self._resync()
                continue
            problem = url_problem(url)
            if problem:
                self._skip(BAD_TARGET_URI, url, problem)
                continue
            yield record, url

    def damaged(self, url: str) -> bool:
        """Read the current record to its end; ``True`` (counted, logged) if it is cut or
        its length lies. Call after the record's headers and body have been used."""
        try:
            self.it.read_to_end()
        except Exception as exc:  # the separator after the record is damaged
            self._damaged(exc)
            return True
        if self.it.truncated:
            self._skip(TRUNCATED_RECORD, url, f"the file ends before its Content-Length "
                       f"{self.it.record.length}")
            if not self.gzip:  # gzip: the lie ends with its member, the next one is read as usual
                self._resync()
            return True
        if self.it.length_mismatch:
            self._skip(LENGTH_MISMATCH, url, "data follows the record where its Content-Length ends")
            self._resync()
            return True
        return False

    def _next_record_start(self) -> int | None:
        """Where the record after the one at ``self.start`` begins, found without its framing."""
        if self.gzip:
            return _next_gzip_member(self.fh, self.start)
        if self.format != "warc":
            return None  # an uncompressed ARC has no record marker to find
        return _next_warc_header(self.fh, self.start + 1)

    def _resync(self) -> bool:
        """Go on reading at the next record after the damaged one; ``False``: there is none."""
        found = self._next_record_start()
        if found is None:
            return False
        logger.warning("archive: %s: reading goes on at byte %d, the next record after byte %d", self.path,
                       found, self.start)
        self.resync_at, self.resynced = found, True
        return True

    def _skip(self, reason: str, url: str, detail: str) -> None:
        _count(self.stats, reason)
        start = self.it.member_info[0] if self.it.member_info else self.it.offset
        logger.warning("archive: skipped a record (%s) of %s at byte %s: %s: %s", reason, self.path,
                       start, excerpt(url), detail)

    def _damaged(self, exc: BaseException) -> None:
        """Framing that cannot be read: the file is not an archive (first record), or reading
        goes on at the next record, or stops with the records before it."""
        message = str(exc) if isinstance(exc, HeaderTooLong) else excerpt(" ".join(str(exc).split()), 160)
        if not self.records:
            raise ArchiveError(f"{self.path}: not a readable WARC/ARC file: {type(exc).__name__}: {message}")
        logger.warning("archive: %s: damaged framing in or after the record at byte %s (%s)", self.path, self.start,
                       message)
        if self._resync():
            return
        self.done = True
        _count(self.stats, UNREADABLE)
        logger.warning("archive: stopped reading %s after %d records (%s at byte %s: %s); the "
                       "records before it are used", self.path, self.records, UNREADABLE,
                       self.it.offset, message)


def iter_refs(path: str | os.PathLike, stats: dict | None = None) -> Iterator[RecordRef]:
    """Every usable HTTP response record of a WARC/ARC file, in file order (bodies are
    read through, not kept); skipped records are counted in ``stats``."""
    stats = stats if stats is not None else {}
    path = str(path)
    with _open_archive(path, stats) as (fh, source):
        scanner = _RecordScanner(fh, path, stats)
        for record, url in scanner:
            status = _status(record)
            ctype = record.http_headers.get_header("Content-Type") or ""
            if scanner.damaged(url):
                continue
            offset, length = scanner.it.get_record_offset(), scanner.it.get_record_length()
            yield RecordRef(path, offset, url, status, ctype, length, _capture_time(record),
                            "" if source == path else source)


def _dechunk(stream, max_size: int) -> tuple[bytes, bool]:
    """A chunked body de-chunked with bounded reads (warcio's ``ChunkedDataReader`` reads
    a whole chunk at once, however large it claims to be); not chunked after all:
    the data as stored."""
    parts, size = [], 0
    while True:
        line = stream.readline(64)
        try:
            chunk = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            if not parts:  # not chunked: the body as stored
                rest = stream.read(max_size + 1 - len(line)) if max_size else stream.read()
                return _capped(line + rest, max_size)
            break
        if chunk <= 0:
            break
        while chunk > 0:
            piece = stream.read(min(chunk, BUFF_SIZE))
            if not piece:
                return _capped(b"".join(parts), max_size)
            parts.append(piece)
            size += len(piece)
            chunk -= len(piece)
            if max_size and size > max_size:
                return _capped(b"".join(parts), max_size)
        stream.read(2)  # CRLF after the chunk
    return _capped(b"".join(parts), max_size)


def _capped(body: bytes, max_size: int) -> tuple[bytes, bool]:
    truncated = bool(max_size) and len(body) > max_size
    return (body[:max_size] if truncated else body), truncated


def _record_body(record, max_size: int) -> tuple[bytes, bool]:
    """The HTTP payload as stored (de-chunked, not decoded), at most ``max_size`` bytes."""
    stream = record.raw_stream
    if (record.http_headers.get_header("Transfer-Encoding") or "").lower() == "chunked":
        return _dechunk(stream, max_size)
    return _capped(stream.read(max_size + 1) if max_size else stream.read(), max_size)


def response_from_record(record, url: str, max_size: int = 0, request: Request | None = None) -> Response:
    """Build the Scrapy response (``HtmlResponse``, ``Response``, ...) of one record, the
    response to ``request`` when given (built with it: ``response.replace(request=...)``
    would infer a text response's encoding from its body once more).

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
    return cls(url=url, status=_status(record), headers=headers, body=body, flags=flags, ip_address=_ip(ip),
               request=request)


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


def read_response(ref: RecordRef, max_size: int = 0, request: Request | None = None) -> Response:
    """Read one record again from its file (random access by offset; the index has
    already checked it), as the response to ``request``."""
    with open(ref.source or ref.path, "rb") as fh:
        fh.seek(ref.offset)
        record = next(iter(_BoundedArchiveIterator(fh)))
        return response_from_record(record, ref.url, max_size, request)


def iter_responses(path: str | os.PathLike, max_size: int = 0,
                   stats: dict | None = None) -> Iterator[Response]:
    """Sequential read of every usable HTTP response of a file (one pass, no seeking);
    skipped records are counted in ``stats``."""
    path, stats = str(path), stats if stats is not None else {}
    with _open_archive(path, stats) as (fh, _):
        scanner = _RecordScanner(fh, path, stats)
        for record, url in scanner:
            response = response_from_record(record, url, max_size)
            if not scanner.damaged(url):
                yield response


class ArchiveIndex:
    """URL -> record reference over several archive files (first capture wins).

    Only offsets are kept in memory; bodies are read again on demand, so a
    CommonCrawl file of several GB needs memory for its URLs only.
    """

    def __init__(self, paths: list[str | os.PathLike]):
        self.paths = [str(p) for p in paths]
        self.file_stats: dict[str, dict[str, int]] = {}  # path -> its records' counts
        self.refs: dict[str, RecordRef] = {}
        self.order: list[RecordRef] = []
        for path in self.paths:
            if not Path(path).is_file():
                raise FileNotFoundError(f"archive {path} does not exist")
            stats = self.file_stats.setdefault(path, {})
            for ref in iter_refs(path, stats):
                self.order.append(ref)
                if ref.url in self.refs:  # an earlier capture (this file or an earlier one) wins
                    _count(stats, "records/duplicate_url")
                    continue
                self.refs[ref.url] = ref
            if not any(k.startswith("records/") for k in stats):
                raise ArchiveError(f"{path}: no WARC or ARC records (not an archive?)")

    @property
    def stats(self) -> dict[str, int]:
        """The records' counts over every file."""
        return self.stats_of(self.paths)

    def stats_of(self, paths) -> dict[str, int]:
        """The records' counts of ``paths`` (each file counted once, as in one job's part)."""
        total: dict[str, int] = {}
        for path in dict.fromkeys(paths):
            for key, value in self.file_stats.get(path, {}).items():
                total[key] = total.get(key, 0) + value
        return total

    def __len__(self) -> int:
        return len(self.refs)

    def get(self, url: str) -> RecordRef | None:
        return self.refs.get(url)

    def html_responses(self, paths: Iterable[str] | None = None) -> int:
        """The HTML responses of ``paths`` (every file's if ``None``): each capture, redirects
        and errors included."""
        files = None if paths is None else set(paths)
        return sum(1 for ref in self.order if (files is None or ref.path in files) and "html" in ref.content_type.lower())

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
