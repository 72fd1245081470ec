"""The export formats of a ranked corpus: TSV, JSON lines, Parquet, WebDataset.

Every format carries the same row per image (``export_row``), so a WebDataset sample's
``.json`` is its Parquet row and its TSV line. Field names are img2dataset's where they
mean the same (``url``, ``caption``, ``key``, ``status``, ``error_message``, ``width``,
``height``, ``original_width``, ``original_height``, ``sha256``): loaders written for
img2dataset output read these. ``ROW_TYPES`` lists the fixed columns in order with their types
(``str`` = text): a new column goes there and into ``export_row``
(``tests/test_export.py`` checks they agree); the run's scores follow as
``score:<name>`` (float). One name, one meaning: ``final_score`` is images.tsv's (the crawl's
weighted perplexity, lower = more on topic) whatever the ranking; ``p_on_topic`` is the topic
bundle's calibrated P(on topic) the ranking used (empty when ranked by SPEC's score).

Formats with image bytes (``webdataset``; ``parquet`` with ``embed_images``) resize and
re-encode every image in worker processes (``focuscrawl.export.images``); the others
point at the downloaded file (``image_path``) and carry its size.
"""
from __future__ import annotations

import io
import json
import logging
import os
import tarfile
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from focuscrawl.cli import CommandError
from focuscrawl.corpus import CorpusEntry, pair_text, score_names
from focuscrawl.export.images import (FAILED_TO_DOWNLOAD, FAILED_TO_RESIZE, NOT_FETCHED, STATUSES, SUCCESS,
                                      ExportedImage,
                                      ImageOptions, export_images)
from focuscrawl.output.files import temp_path
from focuscrawl.output.tsv import row as tsv_row
from focuscrawl.rights.licenses import rights_columns
from focuscrawl.topic.images import THESIS_FINAL

logger = logging.getLogger(__name__)

FORMATS = ("tsv", "jsonl", "parquet", "webdataset")
#: the fixed columns, in order, and their types
ROW_TYPES: dict[str, type] = {
    "rank": int, "p_on_topic": float, "final_score": float, "url": str, "caption": str, "key": str, "page_url": str, "alt": str,
    "title": str, "final_context": str, "context_text": str, "language": str, "first_seen": int, "image_path": str,
    "status": str, "error_message": str, "original_width": int, "original_height": int, "width": int,
    "height": int, "sha256": str,
} | {name: str for name in rights_columns()}
#: the Parquet column of the image bytes (``embed_images``), Hugging Face's ``Image`` feature layout
IMAGE_COLUMN = "image"
DEFAULT_SHARD_SIZE = 1000


@dataclass(frozen=True)
class ExportOptions:
    """What ``rank`` writes: ``fmt`` to ``output``; ``images`` makes the image bytes of
    ``webdataset`` and of ``parquet`` with ``embed_images`` (on ``jobs`` worker processes)."""

    fmt: str
    output: Path
    images: ImageOptions
    embed_images: bool = False
    jobs: int = 1
    shard_size: int = DEFAULT_SHARD_SIZE

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise ValueError(f"unknown export format {self.fmt!r} (choose from {', '.join(FORMATS)})")
        if self.embed_images and self.fmt != "parquet":
            raise ValueError("--embed-images is for --format parquet (webdataset shards hold the images anyway)")
        if self.shard_size < 1:
            raise ValueError("--shard-size must be at least 1")
        if (self.fmt == "webdataset" and "%" not in str(self.output) and self.output.suffix != ".tar"
                and self.output.exists() and not self.output.is_dir()):
            raise ValueError(f"-o {self.output} is a file: webdataset writes shards into a folder, "
                             "beside X.tar, or by a pattern such as out-%06d.tar")

    @property
    def with_images(self) -> bool:
        """Whether the export holds image bytes (made by ``images``)."""
        return self.fmt == "webdataset" or self.embed_images


@dataclass
class ExportStats:
    """What an export wrote: rows, image samples and each status, as img2dataset counts them."""

    written: int = 0  # rows (TSV, JSON lines, Parquet) or samples (WebDataset)
    status: Counter = field(default_factory=Counter)  # SUCCESS / FAILED_TO_DOWNLOAD / FAILED_TO_RESIZE
    errors: Counter = field(default_factory=Counter)  # error message -> count
    files: list[str] = field(default_factory=list)  # the files written (WebDataset: each shard)
    #: why each downloaded file that is missing or truncated cannot be exported as the crawl wrote it
    damaged_image_files: list[str] = field(default_factory=list)

    def add(self, image: ExportedImage) -> None:
        self.status[image.status] += 1
        if image.error_message:
            self.errors[image.error_message] += 1

    def as_dict(self) -> dict:
        """img2dataset's ``_stats.json`` counts."""
        return {"count": sum(self.status.values()), "successes": self.status[SUCCESS],
                "failed_to_download": self.status[FAILED_TO_DOWNLOAD],
                "failed_to_resize": self.status[FAILED_TO_RESIZE], "not_fetched": self.status[NOT_FETCHED],
                "status_dict": dict(self.errors.most_common())}


def sample_key(rank_no: int) -> str:
    """The sample key: the rank, 9 digits (sorts as the ranking; unique in the export)."""
    return f"{rank_no:09d}"


def columns(scores: list[str]) -> list[str]:
    return list(ROW_TYPES) + [f"score:{name}" for name in scores]


def export_row(rank_no: int, entry: CorpusEntry, scores: list[str], image: ExportedImage) -> dict:
    """The one row of an image in every format (``columns(scores)`` in order)."""
    rescored = THESIS_FINAL in entry.scores  # ranked by a bundle: final_score is its P(on topic)
    row = {"rank": rank_no, "p_on_topic": entry.final_score if rescored else None,
           "final_score": entry.scores[THESIS_FINAL] if rescored else entry.final_score,
           "url": entry.image_url, "caption": pair_text(entry),
           "key": sample_key(rank_no), "page_url": entry.page_url, "alt": entry.alt, "title": entry.title,
           "final_context": entry.final_context, "context_text": entry.context_text, "language": entry.language,
           "first_seen": entry.first_seen,
           "image_path": entry.image_path, "status": image.status, "error_message": image.error_message,
           "original_width": image.original_width, "original_height": image.original_height,
           "width": image.width, "height": image.height, "sha256": image.sha256}
    for name in rights_columns():
        row[name] = entry.rights.get(name, "")
    for name in scores:
        row[f"score:{name}"] = entry.scores.get(name)
    return row


#: what an export says of a candidate pair (a replay's image that its archives do not hold)
CANDIDATE = ExportedImage(NOT_FETCHED, error_message="not in the archives: the url is to be fetched")


def _downloaded(entry: CorpusEntry, run_dir: Path) -> ExportedImage:
    """The downloaded file as it is (formats without image bytes): its size, no bytes, no hash."""
    if entry.image_status == "not_archived":
        return CANDIDATE
    if entry.image_file(run_dir) is None:
        return ExportedImage(FAILED_TO_DOWNLOAD, error_message="no downloaded file")
    return ExportedImage(SUCCESS, entry.width, entry.height, entry.width, entry.height)


def _damaged_file(entry: CorpusEntry, run_dir: Path) -> ExportedImage | None:
    """A downloaded file deleted or truncated after the crawl: its row says so (not "failed to
    download", not a success nor the picture's first part)."""
    damage = entry.image_file_damage(run_dir)
    if not damage:
        return None
    return ExportedImage(FAILED_TO_DOWNLOAD if entry.image_file(run_dir) is None else FAILED_TO_RESIZE,
                         error_message=damage)


def _rows(entries: list[CorpusEntry], run_dir: Path, scores: list[str], options: ExportOptions,
          stats: ExportStats) -> Iterator[tuple[dict, ExportedImage]]:
    damaged = [_damaged_file(e, run_dir) for e in entries]
    if options.with_images:
        paths = (str(p) if d is None and (p := e.image_file(run_dir)) is not None else None
                 for e, d in zip(entries, damaged))
        images: Iterable[ExportedImage] = export_images(paths, options.images, options.jobs)
    else:
        images = (_downloaded(e, run_dir) for e in entries)
    for i, (image, entry, damage) in enumerate(zip(images, entries, damaged), 1):  # images first: their pool ends with them
        if entry.image_status == "not_archived":
            image = CANDIDATE
        elif damage is not None:
            image = damage
            stats.damaged_image_files.append(damage.error_message)
        stats.add(image)
        yield export_row(i, entry, scores, image), image


@contextmanager
def _replacing(path: Path, mode: str = "wb", **kwargs):
    """A file written under a temp name and renamed to ``path`` when complete (never half-written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        with open(tmp, mode, **kwargs) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_tsv(rows: Iterable[tuple[dict, ExportedImage]], out: Path, names: list[str]) -> int:
    written = 0
    with _replacing(out, "w", encoding="utf-8", newline="") as fh:
        fh.write("\t".join(names) + "\n")
        for row, _ in rows:
            fh.write(tsv_row((row[c] for c in names), squeeze=True) + "\n")
            written += 1
    return written


def write_jsonl(rows: Iterable[tuple[dict, ExportedImage]], out: Path) -> int:
    written = 0
    with _replacing(out, "w", encoding="utf-8") as fh:
        for row, _ in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            written += 1
    return written


def parquet_schema(names: list[str], embed_images: bool):
    """The Parquet schema of ``names`` (``ROW_TYPES``, ``score:*`` float64) and,
    with ``embed_images``, the ``image`` column as Hugging Face's ``Image`` feature stores it
    (struct of ``bytes`` and ``path``), declared in the ``huggingface`` schema metadata so
    ``datasets.load_dataset("parquet", ...)`` decodes it to a picture."""
    import pyarrow as pa

    arrow = {int: pa.int64(), float: pa.float64(), str: pa.string()}
    hf = {int: "int64", float: "float64", str: "string"}
    kinds = [ROW_TYPES.get(name, float) for name in names]  # score:<name> columns are floats
    fields = [pa.field(name, arrow[kind]) for name, kind in zip(names, kinds)]
    features = {name: {"dtype": hf[kind], "_type": "Value"} for name, kind in zip(names, kinds)}
    if embed_images:
        fields.append(pa.field(IMAGE_COLUMN, pa.struct([("bytes", pa.binary()), ("path", pa.string())])))
        features[IMAGE_COLUMN] = {"_type": "Image"}
    metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode("utf-8")}
    return pa.schema(fields, metadata=metadata)


def write_parquet(rows: Iterable[tuple[dict, ExportedImage]], out: Path, names: list[str],
                  embed_images: bool = False, encode_format: str = "jpg", batch_rows: int = 100) -> int:
    """Row groups of ``batch_rows`` rows (img2dataset's and Hugging Face's size for image data),
    so an export with image bytes never holds them all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = parquet_schema(names, embed_images)
    written = 0
    with _replacing(out) as fh, pq.ParquetWriter(fh, schema) as writer:
        batch: list[dict] = []
        for row, image in rows:
            if embed_images:
                row = row | {IMAGE_COLUMN: None if image.data is None else
                             {"bytes": image.data, "path": f"{row['key']}.{encode_format}"}}
            batch.append(row)
            if len(batch) == batch_rows:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                written += len(batch)
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            written += len(batch)
    return written


def shard_pattern(out: Path) -> str:
    """Where the WebDataset shards go: ``X.tar`` -> ``X-000000.tar``, ``X-000001.tar``, ...
    beside it; a path with ``%`` is the pattern itself (``out-%06d.tar``); any other path
    is a directory of ``corpus-000000.tar``, ..."""
    text = str(out)
    if "%" in text:
        return text
    if out.suffix == ".tar":
        return str(out.with_name(f"{out.stem}-%06d.tar"))
    out.mkdir(parents=True, exist_ok=True)
    return str(out / "corpus-%06d.tar")


def shard_stats_path(shard: Path) -> Path:
    """img2dataset's per-shard stats file: ``corpus-000000.tar`` -> ``corpus-000000_stats.json``."""
    stem = shard.name.removesuffix(".tar")
    return shard.with_name(f"{stem}_stats.json")


def _add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def write_webdataset(rows: Iterable[tuple[dict, ExportedImage]], out: Path, options: ExportOptions,
                     files: list[str] | None = None) -> int:
    """Tar shards of ``options.shard_size`` samples: per sample ``<key>.<encode format>`` (the
    image), ``<key>.txt`` (the caption) and ``<key>.json`` (the row), and beside each shard its
    ``_stats.json``. Rows without an image (not downloaded, refused by Pillow) are counted in
    the stats, not written. Each shard's path is appended to ``files``."""
    pattern = shard_pattern(out)
    ext = options.images.encode_format
    written = 0
    shard_no = 0
    rows = iter(rows)
    row = next(rows, None)
    while row is not None:
        path = Path(pattern % shard_no)
        stats, started = ExportStats(), time.time()
        with _replacing(path) as fh, tarfile.open(fileobj=fh, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            # a full shard still takes the rows without an image that follow it (counted in its stats)
            while row is not None and (stats.written < options.shard_size or row[1].data is None):
                sample, image = row
                stats.add(image)
                if image.data is not None:
                    key = sample["key"]
                    _add_member(tar, f"{key}.{ext}", image.data)
                    _add_member(tar, f"{key}.txt", sample["caption"].encode("utf-8"))
                    _add_member(tar, f"{key}.json", json.dumps(sample, ensure_ascii=False).encode("utf-8"))
                    stats.written += 1
                row = next(rows, None)
        ended = time.time()
        shard_stats = stats.as_dict() | {"start_time": started, "end_time": ended, "duration": ended - started,
                                         "shard": path.name} | options.images.as_dict()
        with _replacing(shard_stats_path(path), "w", encoding="utf-8") as sfh:
            json.dump(shard_stats, sfh, indent=2)
        written += stats.written
        shard_no += 1
        if files is not None:
            files.append(str(path))
    return written


def with_progress(rows: Iterator, total: int, label: str, stream=None, interval: float = 0.5) -> Iterator:
    """``rows`` as they are, with ``label: n/total images (p%)`` rewritten on ``stream`` (stderr)
    every ``interval`` seconds when it is a terminal (an export of a large corpus re-encodes
    its images for minutes); nothing is written elsewhere (a log file, a pipe)."""
    import sys

    stream = stream or sys.stderr
    if total < 1 or not stream.isatty():
        yield from rows
        return
    last = 0.0
    for n, row in enumerate(rows, 1):
        yield row
        now = time.monotonic()
        if now - last >= interval or n == total:
            stream.write(f"\r{label}: {n:,}/{total:,} images ({n / total:.0%})")
            stream.flush()
            last = now
    stream.write("\n")


def export(entries: list[CorpusEntry], run_dir: str | Path, options: ExportOptions,
           extra_scores: Iterable[str] = ()) -> ExportStats:
    """Write ``entries`` as ``options`` say. The score columns are the run's (images.tsv) and
    ``extra_scores`` (added by a rescoring), so an export has the same schema whether it
    holds images or none."""
    run_dir = Path(run_dir)
    scores = score_names(run_dir)
    scores += [name for name in extra_scores if name not in scores]
    names = columns(scores)
    stats = ExportStats()
    images = _rows(entries, run_dir, scores, options, stats)
    rows = with_progress(images, len(entries), f"rank: {options.fmt}")
    out = options.output
    try:
        if options.fmt == "webdataset":
            stats.written = write_webdataset(rows, out, options, stats.files)
        elif options.fmt == "parquet":
            stats.written = write_parquet(rows, out, names, options.embed_images, options.images.encode_format)
        elif options.fmt == "tsv":
            stats.written = write_tsv(rows, out, names)
        else:
            stats.written = write_jsonl(rows, out)
        if options.fmt != "webdataset":
            stats.files.append(str(out))
    except OSError as exc:  # disk full, a folder where a file goes, no permission: one line, no traceback
        raise CommandError(f"cannot write the export: {exc}") from None
    finally:
        rows.close()
        images.close()  # stops the image workers at once if a writer failed
    if options.with_images and stats.status[SUCCESS] < len(entries):
        logger.warning("%s: %d of %d ranked images have no exported image (%s)", options.fmt,
                       len(entries) - stats.status[SUCCESS], len(entries),
                       ", ".join(f"{s} {stats.status[s]}" for s in STATUSES[1:] if stats.status[s]))
    return stats

