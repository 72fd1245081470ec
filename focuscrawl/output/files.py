"""Files that are never half-written (docs/OUTPUT.md "Never half-written").

* ``LineLog``: a text log appended one whole line (or several) per ``os.write``,
  unbuffered, so a killed process leaves complete lines; on open a trailing
  partial line is cut.
* ``GzipLog``: a gzip file appended as one complete gzip member per write
  (concatenated members are one valid gzip stream); on open anything after the
  last complete member is cut.
* ``atomic_write_bytes``: temp file + fsync + ``os.replace`` for files rewritten whole.
* ``iter_lines`` / ``LineLog.lines``: the whole lines read back (a torn tail is not a
  line); ``iter_tsv``: a TSV's rows read back as dicts (``parse_float`` types a cell).
  ``focuscrawl.output.tsv`` formats the cells written.

Both logs know their byte ``offset`` so a JOBDIR checkpoint can record it and a
resumed crawl can truncate back to it, and how many bytes of a torn tail opening them
cut (``cut_bytes``). Every piece of focuscrawl's resume state lives in one folder,
``job_state_dir(JOBDIR)`` (Scrapy's own files stay beside it).
"""
from __future__ import annotations

import csv
import errno
import fcntl
import gzip
import logging
import math
import os
import sys
import threading
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

logger = logging.getLogger(__name__)

#: The JOBDIR subfolder that holds all of focuscrawl's resume state.
JOB_STATE_DIR = "focuscrawl"


def job_state_dir(jobdir: str | Path | None) -> Path | None:
    """``JOBDIR/focuscrawl`` (absolute), or ``None`` without a JOBDIR."""
    return Path(jobdir).resolve() / JOB_STATE_DIR if jobdir else None


#: The lock file of a run directory and of ``job_state_dir(JOBDIR)`` (``lock_directory``).
LOCK_FILE = ".focuscrawl.lock"


class DirectoryInUse(OSError):
    """Another live process holds the folder's lock (``lock_directory``)."""


class _LockFile:
    """A folder's open lock file, shared by every ``DirectoryLock`` of it in this process."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.holders = 1


#: the lock files this process holds, by real path (``lock_directory``)
_held: dict[str, _LockFile] = {}
_held_guard = threading.RLock()  # (re-entrant: a garbage-collected lock releases itself)


class DirectoryLock:
    """A folder's writer lock (``lock_directory``), held until ``release()`` (or until this
    object is garbage-collected)."""

    def __init__(self, key: str, lock_file: _LockFile) -> None:
        self._key = key
        self._lock_file: _LockFile | None = lock_file

    @property
    def held(self) -> bool:
        return self._lock_file is not None

    def release(self) -> None:
        """Let the folder go, once every lock of it in this process is released (idempotent)."""
        with _held_guard:
            lock_file, self._lock_file = self._lock_file, None
            if lock_file is None or _held.get(self._key) is not lock_file:
                return  # (a forked child's copy: closed at the fork)
            lock_file.holders -= 1
            if lock_file.holders == 0:
                del _held[self._key]
                os.close(lock_file.fd)

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001 - (at interpreter exit the module may be gone: the kernel releases it)
            pass


def _forget_locks_in_forked_child() -> None:
    """A forked child shares its parent's open lock files: it closes its copies without
    unlocking, so a lock stays its parent's and goes with the parent."""
    global _held_guard
    _held_guard = threading.RLock()  # (another thread may have held it at the fork)
    for lock_file in _held.values():
        os.close(lock_file.fd)
    _held.clear()


os.register_at_fork(after_in_child=_forget_locks_in_forked_child)


def lock_directory(directory: str | Path, what: str) -> DirectoryLock:
    """Take ``directory``'s writer lock (an exclusive ``flock`` of its ``LOCK_FILE``), held until
    released: one process writes a run directory or a JOBDIR at a time. The kernel releases
    it when the process ends, however (a SIGKILLed crawl leaves no stale lock). The lock
    belongs to one open file (``O_CLOEXEC``; a forked child closes its copy): no other open or
    close of the file lets it go, as a POSIX record lock would. The process may lock its
    folder again (every lock of a folder in a process shares that one open file; the last
    release lets it go). Raises ``DirectoryInUse``, naming the holder's pid, when another
    process holds it."""
    path = os.path.join(os.fspath(directory), LOCK_FILE)
    key = os.path.realpath(path)
    with _held_guard:
        lock_file = _held.get(key)
        if lock_file is not None:
            lock_file.holders += 1
            return DirectoryLock(key, lock_file)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise DirectoryInUse(f"the {what} {directory} is in use by another crawl (pid {holder}): "
                                 f"one crawl writes it at a time (wait for that one, stop it, or "
                                 f"give this one another {what})") from None
        try:  # who holds it, for the message of the next one
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError:  # (a full disk) the lock holds without it
            pass
        lock_file = _held[key] = _LockFile(fd)
        return DirectoryLock(key, lock_file)


def atomic_write_bytes(path: str | Path, data: bytes, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never a part.

    The temp file is fsynced before the rename (as the frontier journal's compaction is), so
    the new name never points at data the disk does not hold yet. ``fsync=False`` for the
    files a crawl writes per image (records, downloaded images): an fsync costs ~6 ms here,
    100x the write, and a killed process leaves them whole anyway (the rename alone does it).
    Plain ``os`` calls on ``str`` paths: the crawl writes three image record files a page
    through here, and ``open()`` + ``pathlib`` cost more than the write itself."""
    tmp = temp_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)  # or one made ahead
    try:
        _write_all(fd, data)
        if fsync:
            os.fsync(fd)
    except BaseException as exc:
        os.close(fd)
        os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # os.write names no file: say which one
            exc.filename = os.fspath(path)
        raise
    os.close(fd)
    os.replace(tmp, path)


def temp_path(path: str | Path) -> str:
    """The temp file ``atomic_write_bytes(path, ...)`` writes first (``.<name>.tmp<pid>``, beside it)."""
    folder, name = os.path.split(os.fspath(path))
    return os.path.join(folder, f".{name}.tmp{os.getpid()}")


def complete_lines_size(path: str | Path) -> int:
    """Byte length of the file up to and including its last newline."""
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb") as f:
        pos = size
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            chunk = f.read(step)
            i = chunk.rfind(b"\n")
            if i >= 0:
                return pos + i + 1
    return 0


def gzip_complete_size(path: str | Path, chunk: int = 1 << 20) -> int:
    """Byte length of the file's leading complete gzip members (the rest is a torn write)."""
    good = 0
    for good, _ in gzip_members(path, chunk):
        pass
    return good


def gzip_members(path: str | Path, chunk: int = 1 << 20) -> Iterator[tuple[int, int]]:
    """``(end offset, lines)`` of each leading complete gzip member of the file, streamed; a torn
    member ends the scan. ``GzipLog`` writes one member per batch, so the ends are batch ends."""
    pos = lines = 0
    d = zlib.decompressobj(wbits=31)
    with open(path, "rb") as f:
        buf = f.read(chunk)
        while buf:
            try:
                lines += d.decompress(buf, chunk).count(b"\n")
                while d.unconsumed_tail and not d.eof:
                    lines += d.decompress(d.unconsumed_tail, chunk).count(b"\n")
            except zlib.error:
                return
            if d.eof:
                pos += len(buf) - len(d.unused_data)
                yield pos, lines
                lines = 0
                buf = d.unused_data or f.read(chunk)
                d = zlib.decompressobj(wbits=31)
            else:
                pos += len(buf)
                buf = f.read(chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class AppendFile:
    """An unbuffered append-only file that starts at a known-good offset."""

    def __init__(self, path: str | Path, truncate_to: int | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        exists = self.path.exists()
        size = self.path.stat().st_size if exists else 0
        if truncate_to is None:
            truncate_to = self._good_size() if exists else 0
        elif size < truncate_to:
            raise ValueError(f"{self.path} is shorter ({size} bytes) than the "
                             f"{truncate_to} bytes the JOBDIR state recorded: the run directory does not "
                             f"belong to this JOBDIR (use the original output directory or a fresh JOBDIR)")
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.ftruncate(self.fd, truncate_to)
        self.offset = truncate_to
        #: bytes cut on open: a torn tail, or what came after the checkpoint
        self.cut_bytes = size - truncate_to
        #: called with the error of a failed write instead of raising it (``RunOutput.guard``)
        self.on_error: Callable[[OSError], None] | None = None
        #: writes are skipped (a write of the run failed: nothing more is written)
        self.stopped = False

    def _good_size(self) -> int:
        raise NotImplementedError

    def write_bytes(self, data: bytes) -> None:
        """Append ``data`` whole, or not at all: a failed write (a full disk writes part of it,
        then fails) is cut back, so the file keeps ending at ``offset``, on a whole line."""
        if not data or self.stopped:
            return
        try:
            _write_all(self.fd, data)
        except OSError as exc:
            try:
                os.ftruncate(self.fd, self.offset)  # frees space: works on a full disk
            except OSError:
                pass
            if exc.filename is None:  # os.write names no file: say which one
                exc.filename = str(self.path)
            if self.on_error is None:
                raise
            self.on_error(exc)
            return
        self.offset += len(data)

    def truncate(self, size: int = 0) -> None:
        """Cut the file back to ``size`` bytes (a checkpoint, or 0: empty it)."""
        os.ftruncate(self.fd, size)
        self.offset = size

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class LineLog(AppendFile):
    """A text log of whole lines; ``header`` is written to a new file and checked on an old one."""

    def __init__(self, path: str | Path, header: str | None = None, truncate_to: int | None = None) -> None:
        super().__init__(path, truncate_to)
        self.header: str | None = None
        if header is not None:
            self.ensure_header(header)

    def ensure_header(self, header: str) -> None:
        """Write ``header`` to an empty log, or check that the existing first line is it."""
        if self.header == header:
            return
        if self.offset == 0:
            self.write_lines([header])
        else:
            with open(self.path, "rb") as f:
                first = f.readline().decode("utf-8", "replace").rstrip("\n")
            if first != header:
                self.close()
                raise ValueError(f"{self.path} has other columns than this crawl writes "
                                 f"(settings changed?); use a new output directory")
        self.header = header

    def _good_size(self) -> int:
        return complete_lines_size(self.path)

    def write_lines(self, lines: list[str]) -> None:
        """Append whole lines (no newlines inside) with one write."""
        if lines:
            self.write_bytes(("\n".join(lines) + "\n").encode("utf-8", "replace"))

    def lines(self, errors: str = "strict") -> Iterator[str]:
        """The lines written so far (the header too), streamed."""
        return iter_lines(self.path, self.offset, errors)


def iter_lines(path: str | Path, end: int | None = None, errors: str = "strict") -> Iterator[str]:
    """The whole lines of ``path`` before byte ``end`` (default: all), without their newline.

    A last line without its newline (torn by a kill) is not a line; a missing file has none.
    """
    path = Path(path)
    if not path.exists():
        return
    if end is None:
        end = complete_lines_size(path)
    pos = 0
    with open(path, "rb") as f:
        for raw in f:
            pos += len(raw)
            if pos > end:
                return
            yield raw[:-1].decode("utf-8", errors)
            if pos == end:
                return


class GzipLog(AppendFile):
    """Lines appended as gzip members, one member per ``write_lines`` call; level 4 by default:
    on the sentences of real pages a third of level 6's CPU for 5% more bytes."""

    def __init__(self, path: str | Path, truncate_to: int | None = None, compresslevel: int = 4) -> None:
        super().__init__(path, truncate_to)
        self.compresslevel = compresslevel

    def _good_size(self) -> int:
        return gzip_complete_size(self.path)

    def write_lines(self, lines: list[str]) -> None:
        if lines:
            data = ("\n".join(lines) + "\n").encode("utf-8", "replace")
            self.write_bytes(gzip.compress(data, self.compresslevel, mtime=0))


#: Cells can hold a page's whole text, which csv's default 128 KiB limit would reject;
#: the largest limit a C long takes on every platform.
TSV_FIELD_SIZE_LIMIT = min(sys.maxsize, 2**31 - 1)


def iter_tsv(path: str | Path, *, raw: bool = False, errors: str = "strict",
             end: int | None = None) -> Iterator[Any]:
    """Rows of a TSV with a header line, streamed (``.gz`` read transparently); missing file = no rows.

    Rows are dicts by column name (blank lines skipped, as ``csv.DictReader`` does). With
    ``raw=True`` the header's list of names comes first, then every line as its list of
    cells (a blank line is ``[]``), for readers that check the column count themselves.
    ``errors`` is the decoding policy (``"replace"``: a bad byte becomes U+FFFD, row kept).
    A last line without its newline (torn by a kill, or still being written) is not a row
    (said in a warning); in a ``.gz`` file every line is whole (gzip members are). ``end``: only
    the rows before that byte offset (a JOBDIR checkpoint's; not for ``.gz``), as ``iter_lines``.
    This is the one TSV reader of focuscrawl; cells are never quoted (``QUOTE_NONE``).
    """
    path = Path(path)
    if not path.exists():
        return
    csv.field_size_limit(TSV_FIELD_SIZE_LIMIT)
    reader = csv.reader if raw else csv.DictReader
    if end is not None:
        yield from reader((line + "\n" for line in iter_lines(path, end, errors)), delimiter="\t",
                          quoting=csv.QUOTE_NONE)
        return
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors=errors, newline="") as fh:
        lines = fh if opener is gzip.open else _whole_lines(fh, path)  # a gzip file is never torn mid-line
        yield from reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)


def _whole_lines(fh: Iterator[str], path: Path) -> Iterator[str]:
    for line in fh:
        if line.endswith("\n"):
            yield line
        else:
            logger.warning("%s: the last line has no newline (torn by a kill, or still being written): "
                           "not read", path)


def read_tsv(path: str | Path) -> list[dict[str, str]]:
    """All rows of ``iter_tsv(path)``."""
    return list(iter_tsv(path))


#: Cells that mean "no value" in a numeric column.
MISSING_CELLS = frozenset({"", "none", "null", "nan", "-"})


def parse_float(value: Any, *, missing: float | None, strict: bool = False,
                finite: bool = False) -> float | None:
    """A numeric TSV cell (or JSON value) as a float; the caller says what "no number" gives.

    An absent value (``None``), a cell in ``MISSING_CELLS`` and NaN give ``missing``;
    so do +-inf when ``finite``. Anything else that is not a number raises ``ValueError``
    when ``strict`` (a text where a score belongs: the row is wrong), else gives ``missing``.
    """
    if value is None:
        return missing
    if isinstance(value, str):
        value = value.strip()
        if value.lower() in MISSING_CELLS:
            return missing
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        if strict:
            raise ValueError(str(exc)) from None
        return missing
    if math.isnan(number) or (finite and math.isinf(number)):
        return missing
    return number


class FileWriter:
    """Runs file writes on ``pool``'s threads, at most ``pending`` queued, the first error raised.

    Creating a file is a system call that waits for the file system (0.1-0.6 ms here) with
    the GIL released: a merge or a fold of the sightings log writes many, so threads overlap them."""

    def __init__(self, pool: ThreadPoolExecutor, pending: int = 256) -> None:
        self._pool = pool
        self._futures: deque = deque()
        self._pending = pending

    def submit(self, fn, *args) -> None:
        self._futures.append(self._pool.submit(fn, *args))
        while len(self._futures) > self._pending:
            self._futures.popleft().result()

    def close(self) -> None:
        try:
            while self._futures:
                self._futures.popleft().result()
        finally:
            for future in self._futures:
                future.cancel()


def prefetch(pool: ThreadPoolExecutor, fn, items: list, ahead: int = 256) -> Iterator:
    """``fn(item)`` of each item in order, up to ``ahead`` of them running on ``pool`` before
    they are asked for (opening a file waits for the file system with the GIL released)."""
    futures: deque = deque()
    for item in items:
        futures.append(pool.submit(fn, item))
        if len(futures) > ahead:
            yield futures.popleft().result()
    while futures:
        yield futures.popleft().result()
