"""One record per image URL, the image perplexity log, and the merge state (SPEC §6 steps 5, 7).

``ImageStore`` is built by ``RunState`` with the run directory and driven by one component,
``focuscrawl.pipelines.image_records.ImageRecordsPipeline`` (merge, commit, drop, the images
recovered after a kill). Its state survives a
resume (``JOBDIR/focuscrawl/images.seen`` and checkpointed offsets). A committed image's
record and its later sightings are lines appended to ``sightings.log``, folded into the record
files (``records/<sha1[:2]>/<sha1>.json``) at close, at ``SIGHTINGS_FOLD_BYTES`` and on
reopening a killed run: rewriting a record on every sighting cost more than the crawl's own
work on an image. The record's fields: docs/OUTPUT.md.
"""
from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from focuscrawl import settings as defaults
from focuscrawl.items import ImageItem
from focuscrawl.output.files import FileWriter, LineLog, atomic_write_bytes, iter_lines, prefetch
from focuscrawl.output.records import (SIGHTINGS_LOG, compact_json, folded_json, logged_record_line, parse_logged,
                                       read_sightings_log, record_path, sighting_key, split_logged_record)
from focuscrawl.output.run import RunOutput
from focuscrawl.output.tsv import row
from focuscrawl.rights.licenses import rights_columns

logger = logging.getLogger(__name__)

SIGHTING_FIELDS = ("page_url", "page_depth", "page_perplexity", "near_duplicate_page", "alt", "title",
                   "src_guess", "alt_scores", "title_scores", "src_scores", "html_width", "html_height",
                   "css_class", "style", "extension", "contexts", "extra_contexts", "language", "rights")
IMAGE_FIELDS = ("image_url", "first_seen", "final_score", "final_context", "image_path", "record_path",
                "width", "height", "image_format", "image_size", "image_sha1", "image_status", "rights")

PENDING, WRITTEN, DROPPED = "P", "W", "D"
PENDING_FILE = "images.pending"
#: ``images.pending`` is rewritten with the images still pending at a checkpoint once it is
#: this big and 4 times what they need (each accepted image appends its item, ~1 KB)
PENDING_COMPACT_BYTES = 1 << 20
#: the sightings log is folded into the records at the first checkpoint after it reaches this
#: size (and always at close): each fold writes every record it touches once
SIGHTINGS_FOLD_BYTES = 64 << 20
#: records a fold reads ahead and writes behind on its threads (their memory, not the log's, is
#: what a fold holds besides the log's lines)
FOLD_RECORDS_AHEAD = 8


def image_columns(max_parents: int, max_siblings: int) -> list[str]:
    """images.tsv columns (docs/OUTPUT.md): the thesis log's columns, then ours."""
    cols = ["first_seen", "final_score", "final_context",
            "alt_pp", "alt_wpp", "title_pp", "title_wpp", "src_pp", "src_wpp",
            "image_path", "record_path", "alt", "title", "src_guess"]
    for kind, k in (("parent", max_parents), ("sibling", max_siblings)):
        for i in range(k):
            cols += [f"{kind}_{i}_pp", f"{kind}_{i}_wpp"]
    cols += ["image_url", "page_url", "width", "height", "image_format", "image_size",
             "html_width", "html_height", "near_duplicate_page", "language", "image_status"]
    return cols + list(rights_columns())


def image_row(item: Any, max_parents: int, max_siblings: int) -> list[Any]:
    def pp(scores, key="perplexity"):
        return (scores or {}).get(key)

    item = dict(item)  # a Scrapy Item's get() is Python code (Mapping.get): 40 of them an image
    values = [item.get("first_seen"), item.get("final_score"), item.get("final_context")]
    for name in ("alt", "title", "src"):
        s = item.get(f"{name}_scores")
        values += [pp(s), pp(s, "weighted")]
    values += [item.get("image_path"), item.get("record_path"), item.get("alt"), item.get("title"),
               item.get("src_guess")]
    by_kind: dict[tuple[str, int], dict] = {(c["kind"], c["level"]): c for c in item.get("contexts") or ()}
    for kind, k in (("parent", max_parents), ("sibling", max_siblings)):
        for i in range(k):
            s = (by_kind.get((kind, i)) or {}).get("scores")
            values += [pp(s), pp(s, "weighted")]
    values += [item.get("image_url"), item.get("page_url"), item.get("width"), item.get("height"),
               item.get("image_format"), item.get("image_size"), item.get("html_width"),
               item.get("html_height"), bool(item.get("near_duplicate_page")), item.get("language"),
               item.get("image_status")]
    rights = item.get("rights") or {}
    return values + [rights.get(name, "") for name in rights_columns()]


def sighting_of(item: Any) -> dict[str, Any]:
    """One page's view of an image, with the final score that sighting alone gives (set on
    every sighting by ``FinalScorePipeline``, before the merge)."""
    values = item if type(item) is dict else dict(item)  # one pass over a Scrapy Item, not 20 get()s
    s = {f: values.get(f) for f in SIGHTING_FIELDS}
    s["final_score"], s["final_context"] = values.get("final_score"), values.get("final_context")
    return s


class _Entry:
    __slots__ = ("order", "status", "pending", "count")

    def __init__(self, order: int, status: str) -> None:
        self.order, self.status, self.pending = order, status, []
        #: sightings its record file holds (None: not known yet in this session)
        self.count: int | None = None


class ImageStore:
    def __init__(self, run: RunOutput, stats, max_parents: int = defaults.FOCUSCRAWL_IMAGE_MAX_PARENTS,
                 max_siblings: int = defaults.FOCUSCRAWL_IMAGE_MAX_SIBLINGS,
                 max_sightings: int = defaults.FOCUSCRAWL_IMAGE_MAX_SIGHTINGS) -> None:
        self.run, self.stats = run, stats
        self.max_parents, self.max_siblings, self.max_sightings = max_parents, max_siblings, max_sightings
        self.entries: dict[str, _Entry] = {}
        self.next_order = 0
        self.log = run.line_log("images.tsv", "\t".join(image_columns(max_parents, max_siblings)))
        self.seen = run.state_log("images.seen")
        self.pending_log: LineLog | None = None
        #: the images.pending line of each image not yet written or dropped (what compaction keeps)
        self._pending_lines: dict[str, str] = {}
        self._pending_bytes = 0
        self.recovered: list[ImageItem] = []
        self._record_dirs: set[str] = set()
        self.sightings = run.line_log(SIGHTINGS_LOG)
        run.register(self)

    # -- Checkpointed: images.seen, images.pending, sightings.log ------------------------------
    def restore(self) -> None:
        """The merge state as of the last checkpoint, the images in flight at a kill, and the
        sightings a killed session logged (cut back to its checkpoint with JOBDIR) folded."""
        if self.seen is not None:
            self._load_seen()
            self._load_pending()
        self.fold()

    def checkpoint(self) -> None:
        if self.seen is not None:
            self._compact_pending()
        self._fold_when_big()

    def _load_seen(self) -> None:
        for line in self.seen.lines():
            status, order, url = line.split("\t")[:3]
            self.entries[url] = _Entry(int(order), status)
            self.next_order = max(self.next_order, int(order) + 1)
        if self.entries:
            logger.info("resumed image state: %d image URLs seen", len(self.entries))

    def _load_pending(self) -> None:
        """First sightings accepted but never committed (a kill during their download).

        ``images.pending`` is not cut back to the checkpoint: an image accepted just
        before a kill is still there, and is handed back to the pipelines
        (``recovered``) unless ``images.seen`` knows it.
        """
        path = self.run.state_dir / PENDING_FILE
        if path.exists():
            kept, recovered_urls = [], set()
            for line in iter_lines(path):
                try:
                    fields = json.loads(line)
                except ValueError:
                    continue
                url = fields.get("image_url")
                if url and url not in self.entries and url not in recovered_urls:
                    recovered_urls.add(url)
                    self.recovered.append(ImageItem(**{k: v for k, v in fields.items() if k in ImageItem.fields}))
                    kept.append(line)
                    self._pending_line(url, line)
            atomic_write_bytes(path, "".join(f"{k}\n" for k in kept).encode("utf-8", "replace"))
            if self.recovered:
                self.stats.set_value("focuscrawl/images/recovered_pending", len(self.recovered))
                logger.warning("%d images accepted before an unclean stop but never written are queued again",
                               len(self.recovered))
        self.pending_log = self.run.guard(LineLog(path))

    def _pending_line(self, url: str, line: str | None) -> None:
        """Remember (``line``) or forget (``None``) the images.pending line of ``url``."""
        old = self._pending_lines.pop(url, None)
        if old is not None:
            self._pending_bytes -= len(old) + 1
        if line is not None:
            self._pending_lines[url] = line
            self._pending_bytes += len(line) + 1

    def _compact_pending(self) -> None:
        """After a checkpoint every written or dropped image is in the checkpointed images.seen,
        so images.pending needs only the lines of the images still pending: rewritten with them
        (temp file + rename: a kill keeps the old file or the new) once it has grown enough."""
        log = self.pending_log
        if log is None or log.offset < max(PENDING_COMPACT_BYTES, 4 * self._pending_bytes):
            return
        atomic_write_bytes(log.path, "".join(f"{line}\n" for line in self._pending_lines.values())
                           .encode("utf-8", "replace"))
        log.close()
        self.pending_log = self.run.guard(LineLog(log.path))
        self.stats.inc_value("focuscrawl/images/pending_compacted")

    def take_recovered(self) -> list[ImageItem]:
        """The recovered first sightings, once (the spider middleware yields them at start)."""
        items, self.recovered = self.recovered, []
        return items

    def close(self) -> None:
        """At a clean close nothing is pending any more: the sightings log is folded into the
        records, ``images.pending`` emptied. After a failed write of the run they stay as a kill
        leaves them (the resume folds the log and downloads the pending images again)."""
        if self.run.failure is None:
            self.fold()
        if self.pending_log is not None:
            if self.run.failure is None and not any(e.status == PENDING for e in self.entries.values()):
                # what stays pending: recovered images the stop came before (a page budget
                # reached first), handed back again by the next resume
                left = [line for url, line in self._pending_lines.items() if url not in self.entries]
                if left:
                    atomic_write_bytes(self.pending_log.path, "".join(f"{line}\n" for line in left)
                                       .encode("utf-8", "replace"))
                else:
                    self.pending_log.truncate(0)
            self.pending_log.close()
            self.pending_log = None

    # -- merge (ImageRecordsPipeline) ----------------------------------------------
    def first_sighting(self, item: Any) -> bool:
        """``True`` (and order and record path set) for a new image URL; else merge it here."""
        url = item["image_url"]
        entry = self.entries.get(url)
        if entry is None:
            self.entries[url] = _Entry(self.next_order, PENDING)
            item["first_seen"] = self.next_order
            item["record_path"] = record_path(url)
            self.next_order += 1
            if self.pending_log is not None:  # survives a kill during the download
                line = compact_json(dict(item))
                self.pending_log.write_lines([line])
                self._pending_line(url, line)
            return True
        self._merge(url, entry, sighting_of(item))
        return False

    def _merge(self, url: str, entry: _Entry, sighting: dict[str, Any]) -> None:
        if entry.status == DROPPED:
            self.stats.inc_value("focuscrawl/images/merge/into_dropped")
            return
        if entry.status == PENDING:
            entry.pending.append(sighting)
            self.stats.inc_value("focuscrawl/images/merge/pending")
            return
        rel = record_path(url)
        if entry.count is None:  # first later sighting this session: how full is the record?
            entry.count = self._record_count(rel)
        # a full record (as last written: logged sightings may be repeats the fold drops) only
        # counts it: a short line
        line = {"over_limit": 1} if entry.count >= self.max_sightings else {"sighting": sighting}
        self.sightings.write_lines([f"{rel}\t{compact_json(line)}"])
        self.stats.inc_value("focuscrawl/images/merge/logged")

    def _record_count(self, rel: str) -> int:
        try:
            return len(json.loads(self.run.path(rel).read_text(encoding="utf-8"))["sightings"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0  # the fold says what is wrong with it

    def _fold_when_big(self) -> None:
        if self.sightings.offset >= SIGHTINGS_FOLD_BYTES:
            self.fold()

    def fold(self) -> None:
        """Write the sightings log into the records, each touched record read (unless the log
        holds it whole: a record not folded yet) and written once (atomically; the files on
        threads, as a merge does), then empty the log (its checkpoint first: docs/OUTPUT.md)."""
        if not self.sightings.offset:
            return
        by_record = read_sightings_log(self.sightings.path, self.sightings.offset)
        with ThreadPoolExecutor(4, thread_name_prefix="fold-records") as pool:
            # a few records ahead only: a full one is ~0.5 MB of JSON and several times that parsed
            writer = FileWriter(pool, pending=FOLD_RECORDS_AHEAD)
            records = prefetch(pool, self._fold_base, list(by_record.items()), ahead=FOLD_RECORDS_AHEAD)
            for rel, (found, new, payloads) in zip(by_record, records):
                if found is None:
                    continue
                data, record = found
                if record is None:  # a new record and nothing after it: its bytes as logged
                    writer.submit(self._write_record, rel, data)
                    self.stats.inc_value("focuscrawl/images/merge/new_records")
                    continue
                before = len(record["sightings"]), record.get("sightings_over_limit")
                lines = parse_logged(payloads, keep_text=True)
                texts = {id(line["sighting"]): text for text, line in lines if "sighting" in line}
                changed = self._add_sightings(record, [line["sighting"] for _, line in lines if "sighting" in line],
                                              sum(line.get("over_limit", 0) for _, line in lines))
                if changed or new:
                    added = [texts[id(s)] for s in record["sightings"][before[0]:]]
                    writer.submit(self._write_record, rel, folded_json(data, record, before, added))
                    self.stats.inc_value("focuscrawl/images/merge/merged" if changed
                                         else "focuscrawl/images/merge/new_records")
                entry = self.entries.get(record.get("image_url"))
                if entry is not None:
                    entry.count = len(record["sightings"])
            writer.close()
        self.run.empty_log(SIGHTINGS_LOG)
        self.stats.inc_value("focuscrawl/images/merge/folds")

    def _fold_base(self, logged: tuple[str, list[str]]
                   ) -> tuple[tuple[bytes, dict | None] | None, bool, list[str]]:
        """What a fold starts a record from: its bytes and the record (``None``: a new record
        with nothing logged after it, written as it is; ``None`` instead of both: its file
        cannot be read), whether the log holds it whole (a new record: written even if
        nothing is added), and its other logged lines."""
        rel, payloads = logged
        text, later = split_logged_record(payloads)
        if text is not None:
            data = text.encode("utf-8", "replace")
            return (data, json.loads(data) if later else None), True, later
        path = self.run.path(rel)
        try:
            data = path.read_bytes()
            return (data, json.loads(data)), False, later
        except (OSError, ValueError) as exc:
            self.stats.inc_value("focuscrawl/images/merge/record_missing")
            logger.warning("cannot merge into record %s: %s", path, exc)
            return None, False, later

    def _write_record(self, rel: str, data: bytes) -> None:
        atomic_write_bytes(self._record_file(rel), data, False)

    def _add_sightings(self, record: dict[str, Any], sightings: list[dict[str, Any]], over_limit: int = 0) -> bool:
        keys = {sighting_key(s) for s in record["sightings"]}
        changed = False
        for s in sightings:
            if sighting_key(s) in keys:
                self.stats.inc_value("focuscrawl/images/merge/repeated")
                continue
            if len(record["sightings"]) >= self.max_sightings:
                over_limit += 1
            else:
                record["sightings"].append(s)
                keys.add(sighting_key(s))
                changed = True
        if over_limit:
            record["sightings_over_limit"] = record.get("sightings_over_limit", 0) + over_limit
            self.stats.inc_value("focuscrawl/images/merge/over_limit", over_limit)
            changed = True
        return changed

    # -- commit (ImageRecordsPipeline, item_scraped) -------------------------------
    def commit(self, item: Any) -> None:
        """Log the record and write the images.tsv row of a first sighting, then checkpoint."""
        url = item["image_url"]
        entry = self.entries.get(url)
        if entry is None:  # a recovered first sighting: later ones merge into it from now on
            entry = self.entries[url] = _Entry(item.get("first_seen", self.next_order), PENDING)
        values = dict(item)
        record = {f: values.get(f) for f in IMAGE_FIELDS}
        record["html_width"], record["html_height"] = values.get("html_width"), values.get("html_height")
        record["sightings"] = [sighting_of(values)]
        if entry.pending:
            self._add_sightings(record, entry.pending)
        self.sightings.write_lines([logged_record_line(record_path(url), record)])
        self.log.write_lines([row(image_row(item, self.max_parents, self.max_siblings))])
        entry.status, entry.pending, entry.count = WRITTEN, [], len(record["sightings"])
        if self.seen is not None:
            self.seen.write_lines([f"{WRITTEN}\t{entry.order}\t{url}"])
            self._pending_line(url, None)
        self.run.commit()

    def _record_file(self, relative: str) -> Path:
        """The record's path, its folder made once (256 folders: one mkdir each)."""
        path = self.run.path(relative)
        if path.parent not in self._record_dirs:
            os.makedirs(path.parent, exist_ok=True)
            self._record_dirs.add(path.parent)
        return path

    def drop(self, url: str, reason: str) -> None:
        """A first sighting that will never be written (download failed); later ones are not kept."""
        entry = self.entries.get(url)
        if entry is None:
            return
        if entry.pending:
            self.stats.inc_value("focuscrawl/images/merge/into_dropped", len(entry.pending))
        entry.status, entry.pending = DROPPED, []
        if self.seen is not None:
            self.seen.write_lines([f"{DROPPED}\t{entry.order}\t{url}\t{reason}"])
            self._pending_line(url, None)
            self.run.commit()
