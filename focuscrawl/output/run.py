"""The crawl's run directory (``FOCUSCRAWL_OUTPUT_DIR``) and its JOBDIR checkpoint.

One ``RunOutput`` per crawler, owned by the ``RunState`` extension
(``crawler.get_extension(RunState).output``).
Every log's byte offset is checkpointed to ``JOBDIR/focuscrawl/offsets.json``
(temp file + ``os.replace``) after each committed unit (an image row, a batch of
pages). A resumed crawl truncates every log back to its checkpoint, so logs and
the persisted merge state always describe the same moment (docs/OUTPUT.md).
"""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Callable, Iterator, Protocol

from focuscrawl.output.files import (AppendFile, GzipLog, LineLog, atomic_write_bytes, iter_tsv, job_state_dir,
                                     lock_directory)

logger = logging.getLogger(__name__)

OFFSETS_FILE = "offsets.json"
STATE_PREFIX = "state:"


def checkpoint_offsets(jobdir: str | Path, directory: str | Path) -> dict[str, int]:
    """The byte offset of each log of the run ``directory`` at its last JOBDIR checkpoint ({}: none
    yet): what a crawl resumed on ``jobdir`` cuts the logs back to (a log not listed keeps its
    whole lines). Raises ``ValueError`` if ``jobdir`` checkpoints another run directory."""
    path = job_state_dir(jobdir) / OFFSETS_FILE
    if not path.exists():
        return {}
    state = json.loads(path.read_text(encoding="utf-8"))
    directory = Path(directory).resolve()
    if state.get("output_dir") != str(directory):
        raise ValueError(f"JOBDIR {jobdir} belongs to the run directory {state.get('output_dir')}, "
                         f"not {directory}: resume with the same output directory")
    return {k: int(v) for k, v in state.get("files", {}).items()}


class Checkpointed(Protocol):
    """A resumable state kept in the run directory or JOBDIR (docs/OUTPUT.md "Never
    half-written"), registered with ``RunOutput.register``. Its logs come from the
    ``RunOutput`` (cut back to the last checkpoint when opened); ``restore()``, called once
    by ``register``, reads its state back from them and repairs what a kill left beyond
    them; ``checkpoint()``, called after every checkpoint of the logs' offsets, writes the
    state's own part (whole files, ``atomic_write_bytes``) or tells who waits for it.
    A state registered with ``RunState.register`` (the one way for a component; it works
    without a run directory too) is also ``close()``d once, after the last checkpoint, at
    ``spider_closed``: what a clean stop leaves (a compacted journal, a saved model)."""

    def restore(self) -> None: ...

    def checkpoint(self) -> None: ...

    def close(self) -> None: ...


def committed_rows(path: Path, end: int | None = None) -> Iterator[dict[str, str]]:
    """Rows of a TSV log before byte ``end`` (its checkpoint; ``None``: every whole row), streamed:
    how ``RunOutput.committed_rows`` reads its own logs, and a Redis crawl a dead worker's."""
    return iter_tsv(path, errors="replace", end=end)


class RunOutput:
    def __init__(self, directory: str | Path, jobdir: str | Path | None = None,
                 checkpoint_interval: float = 0.0) -> None:
        self.checkpoint_interval = checkpoint_interval
        self._last_checkpoint = float("-inf")  # the first commit always checkpoints (not uptime-dependent)
        self.dir = Path(directory).resolve()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state_dir = job_state_dir(jobdir)
        self._offsets: dict[str, int] = {}
        #: the run directory's writer lock (``lock_directory``; ``RunState`` holds it too, until the
        #: crawl's last write)
        self._locks = [lock_directory(self.dir, "output directory")]  # before a log is cut back
        if self.state_dir is not None:
            try:
                self.state_dir.mkdir(parents=True, exist_ok=True)
                self._offsets = checkpoint_offsets(jobdir, self.dir)
            except BaseException:  # refused: the folder is not kept locked
                self._locks[0].release()
                raise
        self.resumed = bool(self._offsets)
        self._logs: dict[str, AppendFile] = {}
        #: each opened log's offset at the last checkpoint: what a kill now would keep
        self._committed: dict[str, int] = {}
        self._closed = False
        #: the resumable states, told after every checkpoint (what was written before it
        #: survives a kill and a resume)
        self._states: list[Checkpointed] = []
        #: the first write of the run that failed (a full disk, ...): nothing is written or
        #: checkpointed after it, so the JOBDIR holds what a kill at that moment would leave
        self.failure: OSError | None = None
        #: told of that failure once (``RunState`` stops the crawl)
        self.on_failure: Callable[[OSError], None] | None = None
        #: logs kept outside this object (JOBDIR states) that stop with the run's writes
        self._guarded: list[AppendFile] = []
        if self.resumed:
            self.remove_temp_files()

    def remove_temp_files(self) -> int:
        """Delete temp files a killed crawl left mid-``atomic_write_bytes`` (``.<name>.tmp<pid>``)."""
        removed = 0
        dirs = [self.dir, self.dir / "images"] + sorted((self.dir / "records").glob("*"))
        for d in dirs:
            if not d.is_dir():
                continue
            for entry in os.scandir(d):
                if entry.name.startswith(".") and ".tmp" in entry.name and entry.is_file():
                    os.unlink(entry.path)
                    removed += 1
        if removed:
            logger.info("removed %d temp files left by an interrupted crawl in %s", removed, self.dir)
        return removed

    def path(self, relative: str) -> Path:
        return self.dir / relative

    def _open(self, key: str, factory) -> AppendFile:
        if key not in self._logs:
            self._logs[key] = self.guard(factory(self._offsets.get(key)))
            self._committed.setdefault(key, self._logs[key].offset)  # cut back to the checkpoint
        return self._logs[key]

    def guard(self, log: AppendFile) -> AppendFile:
        """``log`` fails the run when a write to it fails (``fail``) and stops with the run's writes."""
        log.on_error = self.fail
        log.stopped = self.failure is not None or self._closed
        if not any(log is other for other in self._logs.values()):
            self._guarded.append(log)
        return log

    def fail(self, exc: OSError) -> None:
        """A write of the run failed: from now on nothing is written or checkpointed, so the
        last checkpoint stays what a resume restores (a failed write was cut back whole), as
        after a kill; said in one line, then ``on_failure`` stops the crawl."""
        if self.failure is not None:
            return
        self.failure = exc
        for log in [*self._logs.values(), *self._guarded]:
            log.stopped = True
        where = f" {exc.filename}" if exc.filename else ""
        advice = ("everything up to the last checkpoint is kept: make room and run the same command again "
                  "(same output and JOBDIR) to resume") if self.state_dir is not None else \
            "every whole row written is kept (without a JOBDIR a restart crawls from the seeds again)"
        logger.error("cannot write%s: %s; the crawl stops; %s", where, exc.strerror or exc, advice)
        if self.on_failure is not None:
            self.on_failure(exc)

    def line_log(self, name: str, header: str | None = None) -> LineLog:
        """The log ``name`` (opened once; a later caller's ``header`` is still written or checked)."""
        log = self._open(name, lambda off: LineLog(self.dir / name, header, off))
        if header is not None:
            log.ensure_header(header)
        return log

    def committed_rows(self, name: str) -> Iterator[dict[str, str]]:
        """Rows of the TSV log ``name`` that a kill now would keep, streamed: those before its
        last JOBDIR checkpoint (the log is opened, so cut back to it, first), every whole row
        without JOBDIR. The one reader of "the pages committed so far" (page limits of a
        resumed crawl, the frontier's recovery and compaction, a Redis worker's leases)."""
        if name not in self._committed and not self._closed:
            self.line_log(name)
        end = self._committed.get(name) if self.state_dir is not None else None
        return committed_rows(self.path(name), end)

    def committed_page_urls(self) -> set[str]:
        """URLs of the ``committed_rows`` of ``pages.tsv``."""
        return {row["url"] for row in self.committed_rows("pages.tsv")}

    def gzip_log(self, name: str) -> GzipLog:
        return self._open(name, lambda off: GzipLog(self.dir / name, off))

    def state_log(self, name: str) -> LineLog | None:
        """A log in ``JOBDIR/focuscrawl/`` checkpointed with the outputs; ``None`` without JOBDIR."""
        if self.state_dir is None:
            return None
        return self._open(STATE_PREFIX + name, lambda off: LineLog(self.state_dir / name, None, off))

    def commit(self, force: bool = False) -> None:
        """Checkpoint every log's offset, then every registered state (``Checkpointed.checkpoint``).

        At most one checkpoint per ``checkpoint_interval`` seconds unless ``force``:
        after a kill, what came after the last one is cut back and redone (pages by
        the frontier journal, images from ``images.pending``). Without JOBDIR nothing
        is cut back: every whole line written is kept, so every call is a checkpoint.
        """
        if self.failure is not None:
            return
        if self.state_dir is not None:
            now = time.monotonic()
            if not force and now - self._last_checkpoint < self.checkpoint_interval:
                return
            self._last_checkpoint = now
        try:
            if self.state_dir is not None:
                offsets = {k: log.offset for k, log in self._logs.items()}
                state = {"output_dir": str(self.dir), "files": offsets}
                atomic_write_bytes(self.state_dir / OFFSETS_FILE, json.dumps(state, indent=1).encode("utf-8"))
                self._committed.update(offsets)
            for state in self._states:
                state.checkpoint()
        except OSError as exc:
            self.fail(exc)

    def uncommitted_counts(self) -> dict[str, int]:
        """What the registered states added to the crawl's counters for work a kill now would
        see redone by the resume (their optional ``uncommitted_counts()``): the checkpointed
        stats leave it out, so that summed over the sessions every unit of work counts once."""
        total: dict[str, int] = {}
        for state in self._states:
            counts = getattr(state, "uncommitted_counts", None)
            for key, n in (counts() if counts is not None else {}).items():
                total[key] = total.get(key, 0) + n
        return total

    def register(self, state: Checkpointed) -> None:
        """Restore ``state`` from the last checkpoint now, and checkpoint it with the logs from now on."""
        state.restore()
        self._states.append(state)

    def empty_log(self, name: str) -> None:
        """Empty the log ``name`` (its lines went elsewhere): the checkpoint's offset of it is set
        to 0 first, so a kill in between leaves a checkpoint that cuts it to 0, never one
        beyond its end. The other logs keep their checkpointed offsets."""
        path = None if self.state_dir is None else self.state_dir / OFFSETS_FILE
        if path is not None and path.exists():
            state = json.loads(path.read_text(encoding="utf-8"))
            if state.get("files", {}).get(name):
                state["files"][name] = 0
                atomic_write_bytes(path, json.dumps(state, indent=1).encode("utf-8"))
        self._committed[name] = 0
        self._logs[name].truncate(0)

    def close(self) -> None:
        """The last checkpoint, then the logs closed; after a failed write only the latter.
        The directory's lock goes last (kept while another lock of it in this process is held)."""
        self._closed = True
        if self._logs:
            self.commit(force=True)
            for log in self._logs.values():
                log.close()
                log.stopped = True
            self._logs.clear()
        for log in self._guarded:
            # a write after the close (an item a stop left in the pipelines) is not made, as
            # after a kill at the close: writing a closed file would fail the finished run
            log.stopped = True
        for lock in self._locks:
            lock.release()
        self._locks = []
