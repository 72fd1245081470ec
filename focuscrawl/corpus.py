"""Reading a run directory: the one place that knows the on-disk format of a crawl.

Ranking, export and the annotation app consume ``CorpusEntry`` objects and never
open ``images.tsv`` or the info records themselves, so a change of the writers'
format is absorbed here.

Format read (docs/ARCHITECTURE.md; written by ``focuscrawl.output.images``; records read with ``focuscrawl.output.records``):

* ``images.tsv``: tab-separated, one header line, one row per unique image in crawl
  order. Columns used by name: ``image_url``, ``page_url``, ``alt``, ``title``,
  ``final_score``, ``final_context`` (a label such as ``alt+parent-1``), ``image_path``,
  ``record_path``, ``first_seen``, ``width``, ``height``, ``language``. Every other numeric column
  (``alt_pp``, ``alt_wpp``, ``parent_1_wpp``, ...) except the size and flag columns in
  ``NON_SCORE_COLUMNS`` is a score and is carried through as it is.
* ``records/<sha1[:2]>/<sha1>.json``: the info record, read only for the text of the
  context the final score used (first sighting's ``contexts`` or ``extra_contexts``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from focuscrawl.output.files import iter_tsv, parse_float
from focuscrawl.output.records import run_records
from focuscrawl.rights.licenses import rights_columns

logger = logging.getLogger(__name__)

IMAGES_TSV = "images.tsv"

#: Columns of images.tsv that are not scores (texts, sizes, flags, order).
NON_SCORE_COLUMNS = frozenset({
    "image_url", "page_url", "alt", "title", "src_guess", "final_score", "final_context",
    "final_context_text", "image_path", "record_path", "image_sha1", "image_format", "extension",
    "css_class", "style", "host", "near_duplicate_page", "first_seen", "width", "height", "image_size",
    "html_width", "html_height", "language", "image_status",
}) | frozenset(rights_columns())

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
    width: int | None = None  # real size after download
    height: int | None = None
    image_size: int | None = None  # bytes of the downloaded file, as the crawl wrote it
    record_path: str = ""  # relative to the run directory
    language: str = ""  # ISO 639-1 code of its texts' language ("": unknown, or a run without language identification)
    #: ``downloaded``, ``not_archived`` (a replay's candidate pair: no image file); "": a run
    #: before the column (downloaded where it has an ``image_path``)
    image_status: str = ""
    #: licence, creator, ... (``focuscrawl.rights.licenses.Rights`` fields; "" where unknown)
    rights: dict[str, str] = field(default_factory=dict)
    #: why the info record could not be used ("" = fine or not read yet); it is not read again
    record_error: str = ""
    #: the images.tsv cells and the (name, index) of its score columns (shared by all rows);
    #: parsed on first use of ``scores``, as ranking needs only the final score
    row: list[str] = field(default_factory=list, repr=False, compare=False)
    score_columns: list[tuple[str, int]] = field(default_factory=list, repr=False, compare=False)
    _scores: dict[str, float | None] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def scores(self) -> dict[str, float | None]:
        """Every score of the images.tsv row by column name (None = missing)."""
        if self._scores is None:
            parsed = {}
            for name, i in self.score_columns:
                try:
                    parsed[name] = _number(self.row[i])
                except ValueError:
                    continue  # a text column this reader does not know: not a score
            self._scores = parsed
        return self._scores

    def image_file(self, run_dir: str | Path) -> Path | None:
        """The downloaded image inside ``run_dir``, or None (missing, or path escapes the run)."""
        if not self.image_path:
            return None
        root = Path(run_dir).resolve()
        path = (root / self.image_path).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            return None
        return path

    def image_file_damage(self, run_dir: str | Path) -> str:
        """Why the downloaded file the row names cannot be used as the crawl wrote it (missing:
        deleted after the crawl; another size than the crawl wrote: truncated), or "" (fine,
        or no file named)."""
        if not self.image_path or self.image_status == "not_archived":
            return ""
        path = self.image_file(run_dir)
        if path is None:
            return f"the downloaded file {self.image_path} is missing from the run directory"
        if self.image_size is not None:
            size = path.stat().st_size
            if size != self.image_size:
                return f"the downloaded file {self.image_path} has {size} of the {self.image_size} bytes the crawl wrote"
        return ""


def _number(value: str) -> float | None:
    """A score cell: float, or None for an empty/missing/NaN value. Raises ValueError if not numeric."""
    return parse_float(value, missing=None, strict=True)


def context_name(label: str) -> str:
    """The context part of a final-score label: ``alt+parent-1`` -> ``parent-1``; ``alt`` -> ``""``."""
    parts = [p for p in (label or "").split("+") if p and p not in {"alt", "title"}]
    return parts[-1] if parts else ""


def _or_empty(value: Any, empty: Any) -> Any:
    return empty if value is None else value


def _context_from_record(record: Any, name: str) -> str:
    """Text of the context ``name`` (``parent-1``, ``sibling-0`` or an extra extractor's name).
    Raises ``ValueError`` when the record is not of the writer's shape (``[]``,
    ``{"sightings": 5}``, ...): a damaged record is never half-read."""
    if not isinstance(record, dict):
        raise ValueError(f"not a JSON object but {type(record).__name__}")
    sightings = _or_empty(record.get("sightings"), [])
    if not isinstance(sightings, list) or not all(isinstance(s, dict) for s in sightings):
        raise ValueError("'sightings' is not a list of objects")
    text = None
    for rec in sightings + [record]:
        contexts = _or_empty(rec.get("contexts"), [])
        extras = _or_empty(rec.get("extra_contexts"), {})
        if not isinstance(contexts, list) or not all(isinstance(c, dict) for c in contexts):
            raise ValueError("'contexts' is not a list of objects")
        if not isinstance(extras, dict):
            raise ValueError("'extra_contexts' is not an object")
        if text is not None or not name:
            continue
        for ctx in contexts:
            if f"{ctx.get('kind')}-{ctx.get('level')}" == name:
                text = str(ctx.get("text") or "")
                break
        extra = extras.get(name)
        if text is None and isinstance(extra, dict):
            text = str(extra.get("text") or "")
    return text or ""


def fill_context(entries: Iterable[CorpusEntry], run_dir: str | Path) -> int:
    """Set ``context_text`` from the info records (for entries read with ``with_context=False``).

    Returns how many records were unreadable (missing, truncated) or of the wrong shape:
    their entries keep an unknown context, say why in ``record_error`` and are not read
    again, so a caller counts each damaged record once and warns in one line."""
    records = None  # the run's records, looked up once a call and only when one is read
    damaged = 0
    for entry in entries:
        name = context_name(entry.final_context)
        if entry.context_text or not name or not entry.record_path or entry.record_error:
            continue
        try:
            records = records or run_records(run_dir)
            entry.context_text = _context_from_record(records.read(entry.record_path), name)
        except (OSError, ValueError) as exc:
            entry.record_error = f"{entry.record_path}: {exc}"
            damaged += 1
    return damaged


def pair_text(entry: CorpusEntry) -> str:
    """The text of an image-text pair (an export's ``caption``): its ALT, else its title, else the chosen context."""
    return entry.alt or entry.title or entry.context_text


def is_score_column(name: str) -> bool:
    return name not in NON_SCORE_COLUMNS


def score_names(run_dir: str | Path) -> list[str]:
    """The run's score columns (images.tsv header order): every export of the run has
    them all, whether it holds images or none."""
    header = next(iter_tsv(Path(run_dir) / IMAGES_TSV, raw=True, errors="replace"), [])
    return [name for name in header if is_score_column(name)]


def check_run_dir(run_dir: str | Path) -> Path:
    """The run's image log; ``RunDirError`` if ``run_dir`` has none (not a run directory)."""
    tsv = Path(run_dir) / IMAGES_TSV
    if not tsv.is_file():
        raise RunDirError(f"{run_dir} is not a run directory: {IMAGES_TSV} is missing")
    return tsv


def iter_entries(run_dir: str | Path, with_context: bool = True) -> Iterator[CorpusEntry]:
    """Every row of the run's image log in file order (= crawl order), as ``CorpusEntry``.

    ``with_context=False`` skips reading the info records (fast; call ``fill_context``
    on the entries you keep). Rows with an unparsable score are skipped with a warning,
    never silently changed.
    """
    run_dir = Path(run_dir)
    tsv = check_run_dir(run_dir)
    rows = iter_tsv(tsv, raw=True, errors="replace")  # bad bytes: U+FFFD, row kept
    header = next(rows, None)
    if not header or "image_url" not in header:
        raise RunDirError(f"{tsv}: header has no image_url column")
    col = {name: i for i, name in enumerate(header)}
    score_columns = [(name, i) for i, name in enumerate(header) if is_score_column(name)]
    rights_names = rights_columns()

    def get(row: list[str], name: str) -> str:
        i = col.get(name)
        return row[i] if i is not None else ""

    for line_no, row in enumerate(rows, start=2):
        if len(row) != len(header):
            logger.warning("%s:%d: wrong number of columns, row skipped", tsv, line_no)
            continue
        try:
            first_seen = get(row, "first_seen").strip()
            entry = CorpusEntry(
                image_url=row[col["image_url"]], page_url=get(row, "page_url"), alt=get(row, "alt"),
                title=get(row, "title"), final_score=_number(get(row, "final_score")),
                final_context=get(row, "final_context"), context_text=get(row, "final_context_text"),
                image_path=get(row, "image_path"), first_seen=int(first_seen) if first_seen else line_no,
                width=_int(get(row, "width")), height=_int(get(row, "height")),
                image_size=_int(get(row, "image_size")), record_path=get(row, "record_path"), language=get(row, "language"),
                image_status=get(row, "image_status"),
                rights={name: get(row, name) for name in rights_names},
                row=row, score_columns=score_columns)
        except ValueError as exc:
            logger.warning("%s:%d: %s, row skipped", tsv, line_no, exc)
            continue
        if with_context and fill_context([entry], run_dir):
            logger.warning("%s: info record skipped: %s", tsv, entry.record_error)
        yield entry


def _int(value: str) -> int | None:
    try:
        return int(float(value)) if value.strip() else None
    except ValueError:
        return None
