"""The format of image records and of the sightings log, and their one reader (docs/OUTPUT.md).

An info record per image URL (``records/<sha1[:2]>/<sha1>.json``, compact JSON) holds its first
sightings with every text, context and score; ``sightings.log`` holds, one line each, the
records of committed images not yet written to their files and the later sightings not yet
folded into them (``focuscrawl.output.images.ImageStore`` writes both). ``RunRecords`` reads a
record as the fold would leave it, so every reader (rank and the exports, merge, eval) sees
the same record whether or not the crawl got to fold its log (a kill, or a running crawl).
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from focuscrawl.output.files import iter_lines

logger = logging.getLogger(__name__)

SIGHTINGS_LOG = "sightings.log"


def url_sha1(url: str) -> str:
    return hashlib.sha1(url.encode("utf-8", "replace")).hexdigest()


def record_path(url: str) -> str:
    """Record path of an image URL, relative to the run directory."""
    h = url_sha1(url)
    return f"records/{h[:2]}/{h}.json"


def sighting_key(s: dict[str, Any]) -> tuple:
    """Same page and same texts = the same sighting (a resumed crawl adds it once)."""
    parent0 = next((c.get("text") for c in s.get("contexts") or () if c.get("kind") == "parent"), None)
    return (s.get("page_url"), s.get("alt"), s.get("title"), parent0)


def read_sightings_log(path: str | os.PathLike, end: int | None = None) -> dict[str, list[str]]:
    """The whole lines of a sightings log (up to ``end``) by record path, in log order, their JSON
    unparsed (``parse_logged``): a fold holds up to ``SIGHTINGS_FOLD_BYTES`` of them at once.

    A line is ``<record path><TAB>{"record": {...}}`` (a committed image's record, not yet in
    its file), ``<record path><TAB>{"sighting": {...}}`` or ``<record path><TAB>{"over_limit": n}``.
    """
    by_record: dict[str, list[str]] = {}
    for text in iter_lines(path, end, errors="replace"):
        rel, tab, payload = text.partition("\t")
        if tab:
            by_record.setdefault(rel, []).append(payload)
    return by_record


def parse_logged(payloads: list[str], keep_text: bool = False) -> list:
    """The logged lines of one record (``read_sightings_log``) as dicts (with ``keep_text``:
    ``(sighting JSON text, dict)``, the text ``None`` unless the line is one ``_merge`` wrote);
    a line that is not one is skipped."""
    lines = []
    for payload in payloads:
        try:
            line = json.loads(payload)
        except ValueError:
            line = None
        if isinstance(line, dict):
            if keep_text:
                ours = payload.startswith(_SIGHTING_PREFIX) and payload.endswith("}") and len(line) == 1
                line = (payload[len(_SIGHTING_PREFIX):-1] if ours else None), line
            lines.append(line)
        else:
            logger.warning("a sightings log line that is not a sighting, skipped: %.80s", payload)
    return lines


def logged_record_line(rel: str, record: dict[str, Any]) -> str:
    """The sightings log's line of a committed image's record (``split_logged_record`` reads it)."""
    return f"{rel}\t{_RECORD_PREFIX}{compact_json(record)}}}"


def split_logged_record(payloads: list[str]) -> tuple[str | None, list[str]]:
    """The JSON text of the record a log holds whole for one record path (``None``: none, its
    file holds it), and the record's other logged lines. ``commit`` logs a record before any
    later sighting of it; a second record line (it cannot happen) is ignored."""
    for n, payload in enumerate(payloads):
        if payload.startswith(_RECORD_PREFIX) and payload.endswith("}"):
            return payload[len(_RECORD_PREFIX):-1], payloads[:n] + [
                p for p in payloads[n + 1:] if not p.startswith(_RECORD_PREFIX)]
    return None, payloads


class RunRecords:
    """The image records of a run directory as its crawl's fold would leave them: read from
    their files, or from the sightings log a killed (or running) crawl has not folded yet,
    with the later sightings that log holds. ``run_records`` gives one per state of the log."""

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self.dir = Path(run_dir)
        self._root = self.dir.resolve()
        self.logged = read_sightings_log(self.dir / SIGHTINGS_LOG)

    def read(self, rel: str) -> dict[str, Any]:
        """The record at ``rel`` (``record_path``). Raises ``OSError`` (neither file nor logged
        record) or ``ValueError`` (not JSON; a record with logged sightings that has no list of
        sighting objects; a path that leaves the run directory: ``images.tsv`` is not trusted)."""
        payloads = self.logged.get(rel)
        text, later = split_logged_record(payloads) if payloads else (None, [])
        record = json.loads(text if text is not None else self._file(rel).read_bytes())
        if not later:
            return record  # as read: the reader checks its shape
        sightings = record.get("sightings") if isinstance(record, dict) else None
        if not isinstance(sightings, list) or not all(isinstance(s, dict) for s in sightings):
            raise ValueError("not an image record: no list of sighting objects")
        return with_logged(record, later)

    def _file(self, rel: str) -> Path:
        """The record file ``rel`` names, resolved (links too): ``ValueError`` when it is not
        inside the run directory."""
        path = (self._root / rel).resolve()
        if not path.is_relative_to(self._root):
            raise ValueError("the path leaves the run directory")
        return path

    def logged_records(self) -> set[str]:
        """Record paths whose record the unfolded log holds (no file yet)."""
        return {rel for rel, payloads in self.logged.items() if split_logged_record(payloads)[0] is not None}


def run_records(run_dir: str | os.PathLike) -> RunRecords:
    """``RunRecords`` of ``run_dir``, read again only when its sightings log has changed (readers
    such as ``fill_context`` ask for one record at a time)."""
    try:
        st = os.stat(Path(run_dir, SIGHTINGS_LOG))
        state = st.st_size, st.st_mtime_ns
    except OSError:
        state = None
    return _run_records(str(Path(run_dir).resolve()), state)


@functools.lru_cache(maxsize=4)
def _run_records(run_dir: str, log_state: tuple[int, int] | None) -> RunRecords:
    return RunRecords(run_dir)


def with_logged(record: dict[str, Any], payloads: list[str]) -> dict[str, Any]:
    """``record`` as its fold would leave it, for readers of a run directory whose crawl was
    killed before folding its sightings log (``read_sightings_log``): the logged sightings it
    does not hold yet appended, the counted ones added to ``sightings_over_limit``."""
    keys = {sighting_key(s) for s in record["sightings"]}
    for line in parse_logged(payloads):
        s = line.get("sighting")
        if isinstance(s, dict) and sighting_key(s) not in keys:
            record["sightings"].append(s)
            keys.add(sighting_key(s))
        elif line.get("over_limit"):
            record["sightings_over_limit"] = record.get("sightings_over_limit", 0) + line["over_limit"]
    return record


#: how a logged sighting's line starts (``_merge``: compact JSON, its only key)
_SIGHTING_PREFIX = '{"sighting":'
#: how a logged record's line starts (``commit``: compact JSON, its only key)
_RECORD_PREFIX = '{"record":'


def folded_json(data: bytes, record: dict[str, Any], before: tuple[int, Any], added: list[str | None]) -> bytes:
    """``record_json(record)`` of a record read from ``data`` (its file, as ``record_json`` wrote
    it) to which a fold added the sightings whose logged JSON texts are ``added`` (and maybe
    ``sightings_over_limit``); ``before``: its sightings and ``sightings_over_limit`` as read.

    The added texts are spliced in before the sightings list's end: a record of 100 sightings
    of ~5 KB is not encoded again for each fold that adds to it. A compact JSON text nested in
    another is the same text, so the bytes are ``record_json``'s; a file that does not end as
    ``record_json`` ends a record (keys after the sightings, another layout) is encoded whole."""
    count, over = before
    now = record.get("sightings_over_limit")
    layout = ["sightings"] if now is None else ["sightings", "sightings_over_limit"]
    tail = b"]}" if over is None else f'],"sightings_over_limit":{over}}}'.encode()
    if (None in added or (over is not None and type(over) is not int) or list(record)[-len(layout):] != layout
            or not data.endswith(tail)):
        return record_json(record)
    new_tail = b"]}" if now is None else f'],"sightings_over_limit":{now}}}'.encode()
    spliced = ",".join(added).encode("utf-8", "replace")
    return b"".join((data[:-len(tail)], b"," if count and spliced else b"", spliced, new_tail))


#: ``json.dumps(obj, ensure_ascii=False, separators=(",", ":"))``, the same text: one encoder made
#: once (``dumps`` builds one a call) and no check for circular references (items and records are
#: trees), the C encoder's bookkeeping of every dict and list it enters. The crawl encodes a
#: sighting (~3.5 KB, ~25 floats) for each image a page shows: the image shape's costliest
#: Python work in the crawl process after the pipelines themselves
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def record_json(record: dict[str, Any]) -> bytes:
    """The bytes of an image record file (compact: the C encoder, no indent)."""
    return compact_json(record).encode("utf-8", "replace")
