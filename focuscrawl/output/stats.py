"""Extension that writes the crawl's Scrapy stats to ``stats.json`` in the run directory.

Written at ``engine_stopped``, after every ``spider_closed`` handler (LM counters,
finish reason) has updated the stats; atomically (temp file + ``os.replace``).
Scrapy's stats are per process: when a resumed crawl ends, the earlier session's
``stats.json`` is first appended to ``stats.sessions.jsonl`` (one line per session),
so no session's numbers are lost. A session ended by a kill writes no ``stats.json``: its
stats as of its last checkpoint (``stats.checkpoint.json``, written with every JOBDIR
checkpoint of the run directory, less what the resume redoes: ``RunOutput.uncommitted_counts``,
so they count what the run kept) go to ``stats.sessions.jsonl`` when the next session starts. Summed over the sessions, the
counters are the run's. Without JOBDIR the run directory is checkpointed after every write
and the stats at most once per ``FOCUSCRAWL_CHECKPOINT_INTERVAL`` (all the stats as JSON
with every page and image would be a large part of the crawl's own work): a killed
session's counts then miss at most that last interval.

Every stat focuscrawl writes is named ``focuscrawl/<area>/<name>`` (docs/OUTPUT.md lists
them); Scrapy's own keys keep their names. ``read_stats`` reads a run's ``stats.json``
with today's keys, mapping those of runs made before the scheme.
"""
from __future__ import annotations

import json
import logging
import time
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Callable

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from focuscrawl.output.files import LineLog, atomic_write_bytes

logger = logging.getLogger(__name__)

SESSIONS_FILE = "stats.sessions.jsonl"
#: the running session's stats as of the run's last checkpoint (removed after ``stats.json``)
CHECKPOINT_FILE = "stats.checkpoint.json"
#: the finish reason a session ended by a kill gets in ``stats.sessions.jsonl``
KILLED = "killed"

def read_stats(path: str | Path) -> dict[str, Any]:
    """A run's ``stats.json``. Raises ``OSError`` when unreadable and ``ValueError`` when it
    is not a JSON object."""
    stats = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(stats, dict):
        raise ValueError(f"{path}: not a JSON object of stats")
    return stats


def summed_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The stats of runs made in parts (``focuscrawl warc --jobs``, ``focuscrawl merge``) as one
    run's: every counter summed, a value all parts share kept (the topic bundle), the finish
    reason ``finished`` only when every part finished."""
    merged: dict[str, Any] = {}
    for key in sorted({key for part in parts for key in part}):
        values = [part[key] for part in parts if key in part]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            merged[key] = sum(values)
        elif key == "finish_reason":
            merged[key] = "finished" if set(values) == {"finished"} else "; ".join(map(str, values))
        elif all(v == values[0] for v in values):
            merged[key] = values[0]
    return merged


def jsonable(value):
    if isinstance(value, datetime):
        return value.isoformat()
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


class StatsFileWriter:
    """Extension: ``stats.json`` (and ``stats.sessions.jsonl``) in the run directory when the
    engine stops, and ``stats.checkpoint.json`` with every checkpoint of the run directory
    (a state registered with ``RunState`` at ``spider_opened``: extensions cannot reach it
    while they are built)."""

    def __init__(self, directory: Path, stats, run_state: Callable[[], Any] | None = None,
                 interval: float = 0.0) -> None:
        """``run_state``: finds the crawler's ``RunState`` (at ``spider_opened``); ``interval``:
        the least seconds between two stats checkpoints of a run directory without JOBDIR."""
        self.directory = directory
        self.stats = stats
        self.run_state = run_state
        self.interval = interval
        self._throttled = False  # a run directory without JOBDIR (checkpointed after every write)
        self._output = None  # the run directory (``RunOutput``) this writes into, at ``spider_opened``
        self._last_checkpoint = float("-inf")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "StatsFileWriter":
        from focuscrawl.output.run_state import RunState

        directory = crawler.settings.get("FOCUSCRAWL_OUTPUT_DIR")
        if not directory:
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR")
        writer = cls(Path(directory).resolve(), crawler.stats, partial(crawler.get_extension, RunState),
                     crawler.settings.getfloat("FOCUSCRAWL_CHECKPOINT_INTERVAL"))
        crawler.signals.connect(writer.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(writer.write, signal=signals.engine_stopped)
        return writer

    def spider_opened(self, spider=None) -> None:
        run_state = self.run_state() if self.run_state is not None else None
        if run_state is not None and run_state.output is not None and run_state.output.dir == self.directory:
            self._throttled = run_state.output.state_dir is None
            self._output = run_state.output
            run_state.register(self)

    # --- Checkpointed --------------------------------------------------------------------------
    def restore(self) -> None:
        """A session killed before: its checkpointed stats join ``stats.sessions.jsonl`` (after
        the ``stats.json`` of the session before it, so the lines stay in session order)."""
        path = self.directory / CHECKPOINT_FILE
        if not path.exists():
            return
        self._keep_earlier_session(self.directory)
        try:
            killed = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:  # written atomically: not ours
            logger.warning("%s is not JSON; a killed session's stats are lost", path)
            killed = None
        if isinstance(killed, dict):
            killed.setdefault("finish_reason", KILLED)
            self._append_session(self.directory, killed)
        path.unlink()

    def checkpoint(self) -> None:
        """The session's stats now that the run's rows up to here are kept (an ``OSError`` stops
        the crawl as any failed write of the run does)."""
        if self._throttled:
            now = time.monotonic()
            if now - self._last_checkpoint < self.interval:
                return
            self._last_checkpoint = now
        # without the counts of work the resume would redo (pages of an unwritten batch, images
        # not yet written): summed over the sessions, each is counted once
        redone = self._output.uncommitted_counts() if self._output is not None else {}
        # no fsync: a kill leaves the renamed file whole; a power loss costs stats only, not rows
        atomic_write_bytes(self.directory / CHECKPOINT_FILE, self._stats_json(redone), fsync=False)

    def close(self) -> None:
        pass  # stats.json comes at engine_stopped, after every spider_closed handler

    def _stats_json(self, less: dict[str, int] | None = None) -> bytes:
        """The stats as JSON, each counter named in ``less`` lowered by its value there."""
        stats = {k: jsonable(v) for k, v in sorted(self.stats.get_stats().items())}
        for key, n in (less or {}).items():
            if n and isinstance(stats.get(key), int):
                stats[key] -= n
        return json.dumps(stats, indent=1).encode("utf-8")

    def write(self) -> None:
        try:
            self._keep_earlier_session(self.directory)
            atomic_write_bytes(self.directory / "stats.json", self._stats_json())
            (self.directory / CHECKPOINT_FILE).unlink(missing_ok=True)  # stats.json says it all now
        except OSError as exc:  # a full disk (said once by the run's own writes): the earlier file is kept whole
            logger.warning("stats not written to %s: %s", exc.filename or self.directory / "stats.json",
                           exc.strerror or exc)

    @classmethod
    def _keep_earlier_session(cls, directory: Path) -> None:
        path = directory / "stats.json"
        if not path.exists():
            return
        try:
            earlier = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:  # not ours (written atomically): leave it to be replaced
            logger.warning("%s is not JSON; replaced without keeping it", path)
            return
        cls._append_session(directory, earlier)

    @staticmethod
    def _append_session(directory: Path, stats: dict) -> None:
        """``stats`` as a line of ``stats.sessions.jsonl`` unless a line of its session (same
        ``start_time``) is there: a kill between this append and the next write, not twice."""
        log = LineLog(directory / SESSIONS_FILE)  # a torn last line (a kill mid-write) is cut here
        try:
            started = {json.loads(line).get("start_time") for line in log.lines()}
            if stats.get("start_time") not in started:
                log.write_lines([json.dumps(stats, sort_keys=True)])
        finally:
            log.close()
