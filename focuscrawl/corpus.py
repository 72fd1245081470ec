"""Reading a run directory: the one place that knows the on-disk format of a crawl.

Ranking, export and the annotation app consume ``CorpusEntry`` objects and never
open ``images.tsv`` or the info records themselves, so a change of the writers'
format is absorbed here.

Format read (docs/ARCHITECTURE.md; written by ``focuscrawl.output.images``):

* ``images.tsv``: tab-separated, one header line, one row per unique image in crawl
  order. Columns used by name: ``image_url``, ``page_url``, ``alt``, ``title``,
  ``final_score``, ``final_context`` (a label such as ``alt+parent-1``), ``image_path``,
  ``record_path``, ``first_seen``, ``width``, ``height``. Every other numeric column
  (``alt_pp``, ``alt_wpp``, ``parent_1_wpp``, ...) except the size and flag columns in
  ``NON_SCORE_COLUMNS`` is a score and is carried through as it is.
* ``records/<sha1[:2]>/<sha1>.json``: the info record, read only for the text of the
  context the final score used (first sighting's ``contexts`` or ``extra_contexts``).
"""
from __future__ import annotations

import csv
import json
import logging
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

logger = logging.getLogger(__name__)

IMAGES_TSV = "images.tsv"

#: Columns of images.tsv that are not scores (texts, sizes, flags, order).
NON_SCORE_COLUMNS = frozenset({
    "image_url", "page_url", "alt", "title", "src_guess", "final_score", "final_context",
    "final_context_text", "image_path", "record_path", "image_sha1", "image_format", "extension",
    "css_class", "style", "host", "near_duplicate_page", "first_seen", "width", "height", "image_size",
    "html_width", "html_height",
})

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


class RunDirError(ValueError):
    """The directory is not a readable run directory."""


@dataclass
class CorpusEntry:
    """One image with its page, texts and every score, as the crawl logged it."""

    image_url: str
    page_url: str
    alt: str
    title: str
    final_score: float | None
    final_context: str  # which context the final score used, e.g. "parent-1"
    context_text: str  # the text of that context ("" if unknown)
    image_path: str  # relative to the run directory ("" if not downloaded)
    first_seen: int  # crawl order of the first sighting
    scores: dict[str, float | None] = field(default_factory=dict)
    width: int | None = None  # real size after download
    height: int | None = None

    def image_file(self, run_dir: str | Path) -> Path | None:
        """The downloaded image inside ``run_dir``, or None (missing, or path escapes the run)."""
        if not self.image_path:
            return None
        root = Path(run_dir).resolve()
        path = (root / self.image_path).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            return None
        return path


def _number(value: str) -> float | None:
    """A score cell: float, or None for an empty/missing/NaN value. Raises ValueError if not numeric."""
    value = value.strip()
    if value == "" or value.lower() in {"none", "null", "nan", "-"}:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def context_name(label: str) -> str:
    """The context part of a final-score label: ``alt+parent-1`` -> ``parent-1``; ``alt`` -> ``""``."""
    parts = [p for p in (label or "").split("+") if p and p not in {"alt", "title"}]
    return parts[-1] if parts else ""


def _context_from_record(record: dict[str, Any], name: str) -> str:
    """Text of the context ``name`` (``parent-1``, ``sibling-0`` or an extra extractor's name)."""
    if not name:
        return ""
    candidates = [s for s in record.get("sightings", []) if isinstance(s, dict)] + [record]
    for rec in candidates:
        for ctx in rec.get("contexts") or []:
            if f"{ctx.get('kind')}-{ctx.get('level')}" == name:
                return str(ctx.get("text") or "")
        extra = (rec.get("extra_contexts") or {}).get(name)
        if isinstance(extra, dict):
            return str(extra.get("text") or "")
    return ""


def _read_record(run_dir: Path, record_path: str) -> dict[str, Any] | None:
    if not record_path:
        return None
    root = run_dir.resolve()
    path = (root / record_path).resolve()
    if not path.is_relative_to(root):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        logger.warning("cannot read info record %s: %s", path, exc)
        return None


def iter_entries(run_dir: str | Path, with_context: bool = True) -> Iterator[CorpusEntry]:
    """Every row of the run's image log in file order (= crawl order), as ``CorpusEntry``.

    Rows with an unparsable score are skipped with a warning, never silently changed.
    """
    run_dir = Path(run_dir)
    tsv = run_dir / IMAGES_TSV
    if not tsv.is_file():
        raise RunDirError(f"{run_dir} is not a run directory: {IMAGES_TSV} is missing")
    with open(tsv, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        if not reader.fieldnames or "image_url" not in reader.fieldnames:
            raise RunDirError(f"{tsv}: header has no image_url column")
        for line_no, row in enumerate(reader, start=2):
            if None in row or any(v is None for v in row.values()):
                logger.warning("%s:%d: wrong number of columns, row skipped", tsv, line_no)
                continue
            try:
                entry = _entry(row, line_no)
            except ValueError as exc:
                logger.warning("%s:%d: %s, row skipped", tsv, line_no, exc)
                continue
            name = context_name(entry.final_context)
            if with_context and not entry.context_text and name:
                record = _read_record(run_dir, row.get("record_path", ""))
                if record is not None:
                    entry.context_text = _context_from_record(record, name)
            yield entry


def _entry(row: dict[str, str], line_no: int) -> CorpusEntry:
    scores = {}
    for name, value in row.items():
        if name in NON_SCORE_COLUMNS:
            continue
        try:
            scores[name] = _number(value)
        except ValueError:
            continue  # a text column this reader does not know: not a score
    first_seen = row.get("first_seen", "").strip()
    return CorpusEntry(
        image_url=row["image_url"],
        page_url=row.get("page_url", ""),
        alt=row.get("alt", ""),
        title=row.get("title", ""),
        final_score=_number(row.get("final_score", "")),
        final_context=row.get("final_context", ""),
        context_text=row.get("final_context_text", ""),
        image_path=row.get("image_path", ""),
        first_seen=int(first_seen) if first_seen else line_no,
        scores=scores,
        width=_int(row.get("width", "")),
        height=_int(row.get("height", "")),
    )


def _int(value: str) -> int | None:
    try:
        return int(float(value)) if value.strip() else None
    except ValueError:
        return None
