"""Extension that writes the crawl's Scrapy stats to ``stats.json`` in the run directory.

Written at ``engine_stopped``, after every ``spider_closed`` handler (LM counters,
finish reason) has updated the stats; atomically (temp file + ``os.replace``).
Scrapy's stats are per process: when a resumed crawl ends, the earlier session's
``stats.json`` is first appended to ``stats.sessions.jsonl`` (one line per session),
so no session's numbers are lost.

Every stat focuscrawl writes is named ``focuscrawl/<area>/<name>`` (docs/OUTPUT.md lists
them); Scrapy's own keys keep their names. ``read_stats`` reads a run's ``stats.json``
with today's keys, mapping those of runs made before the scheme.
"""
from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from focuscrawl.output.files import LineLog, atomic_write_bytes

logger = logging.getLogger(__name__)

SESSIONS_FILE = "stats.sessions.jsonl"

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
    engine stops. It writes whole files beside the logs, so it needs the folder only, not
    ``RunState`` (which extensions cannot reach while they are built)."""

    def __init__(self, directory: Path, stats) -> None:
        self.directory = directory
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "StatsFileWriter":
        directory = crawler.settings.get("FOCUSCRAWL_OUTPUT_DIR")
        if not directory:
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR")
        writer = cls(Path(directory).resolve(), crawler.stats)
        crawler.signals.connect(writer.write, signal=signals.engine_stopped)
        return writer

    def write(self) -> None:
        try:
            self._keep_earlier_session(self.directory)
            stats = {k: jsonable(v) for k, v in sorted(self.stats.get_stats().items())}
            atomic_write_bytes(self.directory / "stats.json", json.dumps(stats, indent=1).encode("utf-8"))
        except OSError as exc:  # a full disk (said once by the run's own writes): the earlier file is kept whole
            logger.warning("stats not written to %s: %s", exc.filename or self.directory / "stats.json",
                           exc.strerror or exc)

    @staticmethod
    def _keep_earlier_session(directory: Path) -> None:
        path = directory / "stats.json"
        if not path.exists():
            return
        try:
            earlier = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:  # not ours (written atomically): leave it to be replaced
            logger.warning("%s is not JSON; replaced without keeping it", path)
            return
        log = LineLog(directory / SESSIONS_FILE)  # a torn last line (a kill mid-write) is cut here
        try:
            lines = list(log.lines())
            # a kill between this append and the rewrite of stats.json: not twice
            if not lines or json.loads(lines[-1]).get("start_time") != earlier.get("start_time"):
                log.write_lines([json.dumps(earlier, sort_keys=True)])
        finally:
            log.close()
