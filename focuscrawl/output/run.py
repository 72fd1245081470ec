"""The crawl's run directory (``FOCUSCRAWL_OUTPUT_DIR``) and its JOBDIR checkpoint.

One ``RunOutput`` per crawler, shared by the writers (``run_output(crawler)``).
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
import weakref
from pathlib import Path
from typing import Callable, Iterator

from scrapy import signals
from scrapy.crawler import Crawler

from focuscrawl.output.files import GzipLog, LineLog, AppendFile, atomic_write_bytes, iter_tsv, job_state_dir

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


class RunOutput:
    def __init__(self, directory: str | Path, jobdir: str | Path | None = None,
                 checkpoint_interval: float = 0.0) -> None:
        self.checkpoint_interval = checkpoint_interval
        self._last_checkpoint = float("-inf")  # the first commit always checkpoints (not uptime-dependent)
        self.dir = Path(directory).resolve()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state_dir = job_state_dir(jobdir)
        self._offsets: dict[str, int] = {}
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            self._offsets = checkpoint_offsets(jobdir, self.dir)
        self.resumed = bool(self._offsets)
        self._logs: dict[str, AppendFile] = {}
        #: Called after every checkpoint: what was written before it survives a kill and a resume.
        self.checkpoint_listeners: list[Callable[[], None]] = []
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
            self._logs[key] = factory(self._offsets.get(key))
        return self._logs[key]

    def line_log(self, name: str, header: str | None = None) -> LineLog:
        """The log ``name`` (opened once; a later caller's ``header`` is still written or checked)."""
        log = self._open(name, lambda off: LineLog(self.dir / name, header, off))
        if header is not None:
            log.ensure_header(header)
        return log

    def committed_rows(self, name: str) -> Iterator[dict[str, str]]:
        """Rows of the TSV log ``name`` that a resumed crawl already committed (the log is cut
        back to its checkpoint first), streamed; none for a new crawl. Lets limits that count
        pages (budget, per-host) go on counting where the interrupted session stopped."""
        if not self.resumed:
            return iter(())
        self.line_log(name)
        return iter_tsv(self.path(name))

    def gzip_log(self, name: str) -> GzipLog:
        return self._open(name, lambda off: GzipLog(self.dir / name, off))

    def state_log(self, name: str) -> LineLog | None:
        """A log in ``JOBDIR/focuscrawl/`` checkpointed with the outputs; ``None`` without JOBDIR."""
        if self.state_dir is None:
            return None
        return self._open(STATE_PREFIX + name, lambda off: LineLog(self.state_dir / name, None, off))

    def commit(self, force: bool = False) -> None:
        """Checkpoint every log's offset, then tell ``checkpoint_listeners``.

        At most one checkpoint per ``checkpoint_interval`` seconds unless ``force``:
        after a kill, what came after the last one is cut back and redone (pages by
        the frontier journal, images from ``images.pending``). Without JOBDIR nothing
        is cut back: every whole line written is kept, so every call is a checkpoint.
        """
        if self.state_dir is not None:
            now = time.monotonic()
            if not force and now - self._last_checkpoint < self.checkpoint_interval:
                return
            self._last_checkpoint = now
            state = {"output_dir": str(self.dir), "files": {k: log.offset for k, log in self._logs.items()}}
            atomic_write_bytes(self.state_dir / OFFSETS_FILE, json.dumps(state, indent=1).encode("utf-8"))
        for listener in self.checkpoint_listeners:
            listener()

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
        self._logs[name].truncate(0)

    def close(self) -> None:
        if not self._logs:
            return
        self.commit(force=True)
        for log in self._logs.values():
            log.close()
        self._logs.clear()


_runs: "weakref.WeakKeyDictionary[Crawler, RunOutput | None]" = weakref.WeakKeyDictionary()


def run_output(crawler: Crawler) -> RunOutput | None:
    """The crawler's run directory, or ``None`` when ``FOCUSCRAWL_OUTPUT_DIR`` is empty."""
    if crawler in _runs:
        return _runs[crawler]
    directory = crawler.settings.get("FOCUSCRAWL_OUTPUT_DIR") or ""
    run = RunOutput(directory, crawler.settings.get("JOBDIR") or None,
                    crawler.settings.getfloat("FOCUSCRAWL_CHECKPOINT_INTERVAL")) if directory else None
    _runs[crawler] = run
    if run is None:
        logger.info("FOCUSCRAWL_OUTPUT_DIR is empty: no run directory is written, images are not downloaded")
    else:
        logger.info("run directory %s%s", run.dir, " (resumed)" if run.resumed else "")
        crawler.signals.connect(lambda *a, **kw: run.close(), signal=signals.spider_closed, weak=False)
    return run
