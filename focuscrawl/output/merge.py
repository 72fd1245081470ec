"""Merge the run directories of several crawler processes (Redis profile) into one.

Each process of a shared-frontier crawl writes its own run directory (``-a
output=RUN/part-<n>``): no two processes append to one file. ``merge_runs``
builds the run directory a single process would have written:

* ``pages.tsv`` and ``sentences.txt.gz``: pages of all parts in fetch order
  (``fetched_at``), each page with its own sentences (split by the row's count; a part
  killed inside a page batch holds sentences after those its rows count, and a torn gzip
  member: both left out, ``orphan_sentences`` in the summary); a page
  that two parts hold keeps its first fetch (``duplicate_pages``, and which parts in
  ``duplicate_pages_between``, in the summary): the part that holds it *owns* the page.
  The parts of one Redis crawl overlap only when a worker died between a checkpoint and
  its lease release; independent crawls overlap wherever they met;
* ``images.tsv``, ``records/``, ``images/``: one row and one record per image URL, in
  order of first sighting. An image seen by several processes keeps the row of its
  earliest sighting (by its page's fetch time, then part, then the part's order); the
  other processes' sightings are merged into its record (same rule as within a crawl:
  ``sighting_key``); ``first_seen`` is renumbered in that order. A sighting on a page
  that another part owns and whose record has that image on that page too is the
  dropped fetch's (``duplicate_sightings``): it is left out, and its row is not chosen;
* ``links.tsv``: every part's rows, except those from a page another part owns (the
  dropped fetch's links, or those of a fetch whose row its part never committed:
  ``duplicate_links``); ``stats.json`` = the parts' counters summed (``summed_stats``) and ``"parts": {name: stats}``.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from focuscrawl.output.files import (FileWriter, _write_all, atomic_write_bytes, gzip_complete_size, iter_tsv,
                                     parse_float, prefetch)
from focuscrawl.output.records import SIGHTINGS_LOG, RunRecords, record_json, record_path, sighting_key
from focuscrawl.output.stats import read_stats, summed_stats


def _read_tsv(path: Path) -> tuple[list[str], list[list[str]]]:
    rows = iter_tsv(path, raw=True)
    header = next(rows, [])
    return header, [r for r in rows if r]


def _write_tsv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    lines = ["\t".join(header)] + ["\t".join(r) for r in rows]
    atomic_write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"))


def _read_sentences(path: Path) -> list[str]:
    """The sentences of the file's complete gzip members (a killed writer may have torn the last)."""
    if not path.exists():
        return []
    with open(path, "rb") as f:
        return gzip.decompress(f.read(gzip_complete_size(path))).decode("utf-8").splitlines()


def _fetched_at(value: str) -> float:
    """A fetch time for sorting: a row without one goes last."""
    return parse_float(value, missing=float("inf"))


def _first_fetches(pages: list, i_url: int) -> tuple[list, list[dict]]:
    """The first ``(row, sentences, part)`` (in fetch order) of each page URL, and the later
    rows that were dropped: per (kept part, dropping part) their count and one URL.

    A single process writes one row per URL (the dupefilter); the processes of one Redis
    crawl hold the same page when a worker died between a checkpoint and its lease release
    (docs/DEPLOY.md), independent crawls wherever they met: the summary reports the overlap,
    not a cause.
    """
    kept: dict[str, Path] = {}
    first, dropped = [], {}
    for page in pages:
        url, part = page[0][i_url], page[2]
        if url not in kept:
            kept[url] = part
            first.append(page)
        else:
            entry = dropped.setdefault((str(kept[url]), str(part)), {"parts": [str(kept[url]), str(part)],
                                                                    "pages": 0, "example": url})
            entry["pages"] += 1
    return first, list(dropped.values())


class _Records:
    """The parts' records as their crawls' folds would leave them (a killed part's sightings log
    may hold records and later sightings its record files do not yet)."""

    def __init__(self, parts: list[Path]) -> None:
        self.runs = {part: RunRecords(part) for part in parts}

    def read(self, part: Path, rel: str) -> dict:
        return self.runs[part].read(rel)

    def read_all(self, holders: list[tuple[Path, str]]) -> list[dict]:
        return [self.read(part, rel) for part, rel in holders]


class _OwnerSightings:
    """Is a part's sighting of an image on a page the dropped fetch's? Yes when another part owns
    the page (holds its kept fetch) and that part's record has the image on the page too."""

    def __init__(self, owner: dict[str, Path], held: dict[Path, set[str]], records: _Records) -> None:
        self.owner, self.held, self.records = owner, held, records
        self._pages: dict[tuple[Path, str], set] = {}  # (owner part, image URL) -> its sighting pages

    def duplicate(self, part: Path, image_url: str, page_url: str | None) -> bool:
        kept = self.owner.get(page_url, part)
        if kept == part:
            return False
        if (kept, image_url) not in self._pages:
            rel = record_path(image_url)
            self._pages[kept, image_url] = {s.get("page_url") for s in self.records.read(kept, rel)["sightings"]} \
                if rel in self.held[kept] else set()
        return page_url in self._pages[kept, image_url]


def merge_runs(parts: list[Path], out: Path) -> dict[str, int]:
    """Merge ``parts`` (run directories) into ``out``; returns counts for the summary."""
    out.mkdir(parents=True, exist_ok=True)
    if any(p.resolve() == out.resolve() for p in parts):
        raise ValueError("the output directory must not be one of the parts")
    # pages + sentences, in fetch order
    page_header, pages, orphan_sentences = [], [], 0
    for part in parts:
        header, rows = _read_tsv(part / "pages.tsv")
        if not header:
            continue
        if page_header and header != page_header:
            raise ValueError(f"{part}/pages.tsv has other columns than {parts[0]}/pages.tsv")
        page_header = header
        sentences = _read_sentences(part / "sentences.txt.gz")
        i_count, pos = header.index("sentences"), 0
        for r in rows:
            n = int(r[i_count] or 0)
            pages.append((r, sentences[pos:pos + n], part))
            pos += n
        if pos > len(sentences):
            raise ValueError(f"{part}: pages.tsv counts {pos} sentences, sentences.txt.gz holds {len(sentences)}")
        orphan_sentences += len(sentences) - pos  # a kill between a batch's sentences and its rows
    i_time = page_header.index("fetched_at") if page_header else 0
    i_url = page_header.index("url") if page_header else 0
    pages.sort(key=lambda p: _fetched_at(p[0][i_time]))
    pages, overlaps = _first_fetches(pages, i_url)
    duplicates = sum(o["pages"] for o in overlaps)
    fetched = {r[i_url]: _fetched_at(r[i_time]) for r, _, _ in pages}
    owner = {r[i_url]: part for r, _, part in pages}
    if page_header:
        _write_tsv(out / "pages.tsv", page_header, [r for r, _, _ in pages])
        text = "".join(s + "\n" for _, ss, _ in pages for s in ss)
        atomic_write_bytes(out / "sentences.txt.gz", gzip.compress(text.encode("utf-8"), mtime=0))  # reproducible
    # images: one row per URL, earliest sighting wins
    image_header, best = [], {}
    records_of = _Records(parts)
    held = {part: _record_files(part) | records_of.runs[part].logged_records() for part in parts}
    sighted = _OwnerSightings(owner, held, records_of)
    for part in parts:
        header, rows = _read_tsv(part / "images.tsv")
        if not header:
            continue
        image_header = header
        i_img, i_page, i_order = header.index("image_url"), header.index("page_url"), header.index("first_seen")
        for r in rows:  # rows are in download order: the part's first_seen is its sighting order
            url = r[i_img]
            key = (sighted.duplicate(part, url, r[i_page]), fetched.get(r[i_page], float("inf")), str(part),
                   parse_float(r[i_order], missing=float("inf")))
            if url not in best or key < best[url][0]:
                best[url] = (key, part, r)
    merged_rows, duplicate_sightings = [], 0
    order = sorted(best.values(), key=lambda v: v[0][1:])
    i_url, i_image, i_first = (image_header.index(c) if image_header else 0
                               for c in ("image_url", "image_path", "first_seen"))
    stored = {part: _image_files(part) for part in parts}  # none: the images went to a shared store
    linked = _image_files(out)
    records = _NewFolder(out / "records")
    rels = [record_path(r[i_url]) for _, _, r in order]
    with ThreadPoolExecutor(8, thread_name_prefix="merge-files") as pool:
        writer = FileWriter(pool)
        # the parts with a record of each image, the chosen row's part first
        holders = [[part, *(p for p in parts if p != part and rel in held[p])]
                   for (_, part, _), rel in zip(order, rels)]
        sources = prefetch(pool, records_of.read_all, [[(p, rel) for p in ps] for rel, ps in zip(rels, holders)])
        for n, ((_, part, r), rel, image_holders, records_read) in enumerate(zip(order, rels, holders, sources)):
            r = list(r)
            r[i_first] = str(n)
            merged_rows.append(r)
            url = r[i_url]
            record, keys = records_read[0], set()
            sightings = [(other, other_record["sightings"]) for other, other_record in zip(image_holders, records_read)]
            record["first_seen"], record["sightings"] = n, []
            for other, other_sightings in sightings:
                for s in other_sightings:
                    if sighted.duplicate(other, url, s.get("page_url")):
                        duplicate_sightings += 1
                    elif sighting_key(s) not in keys:
                        record["sightings"].append(s)
                        keys.add(sighting_key(s))
            record["sightings"].sort(key=lambda s: fetched.get(s.get("page_url"), float("inf")))
            image = r[i_image]
            writer.submit(records.write, rel.partition("/")[2], record_json(record),
                          (part / image, out / image) if image in stored[part] and image not in linked else None)
            linked.add(image)
        writer.close()
    records.commit()
    (out / SIGHTINGS_LOG).unlink(missing_ok=True)  # the new records hold every sighting
    if image_header:
        _write_tsv(out / "images.tsv", image_header, merged_rows)
    # links (those of the kept fetches) and stats
    link_header, links, duplicate_links = [], [], 0
    for part in parts:
        header, rows = _read_tsv(part / "links.tsv")
        if not header:
            continue
        link_header, i_from = header, header.index("from")
        kept = [r for r in rows if owner.get(r[i_from] if len(r) > i_from else "", part) == part]
        duplicate_links += len(rows) - len(kept)
        links += kept
    if link_header:
        _write_tsv(out / "links.tsv", link_header, links)
    stats = {p.name: read_stats(p / "stats.json") for p in parts if (p / "stats.json").exists()}
    # the parts' counters summed, as one run's, and each part's own under "parts"
    atomic_write_bytes(out / "stats.json",
                       json.dumps({**summed_stats(list(stats.values())), "parts": stats}, indent=1).encode("utf-8"))
    return {"parts": len(parts), "pages": len(pages), "duplicate_pages": duplicates, "images": len(merged_rows),
            "duplicate_sightings": duplicate_sightings, "links": len(links), "duplicate_links": duplicate_links,
            "orphan_sentences": orphan_sentences, "duplicate_pages_between": overlaps}


def _image_files(run: Path) -> set[str]:
    """Paths (``images/...``) of the image files in ``run``: a listing a folder, no ``stat`` a file."""
    return {os.path.relpath(os.path.join(folder, name), run) for folder, _, names in os.walk(run / "images")
            for name in names}


class _NewFolder:
    """``folder`` written anew: files go into a fresh folder beside it, which replaces
    ``folder`` only once every file is complete (``commit``).

    A merge killed half-way leaves ``folder`` as it was (or, killed between the two renames
    of ``commit``, absent with the old one beside it): never a half-written file in it; the
    next merge removes what the killed one left. No temp file and rename a file: the fresh
    folder is not read by anyone until it is complete."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.new = folder.with_name(f".{folder.name}.new")
        self.old = folder.with_name(f".{folder.name}.old")
        for leftover in (self.new, self.old):  # a killed merge's
            shutil.rmtree(leftover, ignore_errors=True)
        self.new.mkdir(parents=True)
        self._subfolders: set[str] = set()

    def write(self, relative: str, data: bytes, image: tuple[Path, Path] | None = None) -> None:
        """``relative`` (``sub/name``) with ``data``, and ``image`` (source, target) linked."""
        sub = relative.partition("/")[0]
        if sub not in self._subfolders:
            os.makedirs(self.new / sub, exist_ok=True)
            self._subfolders.add(sub)
        fd = os.open(self.new / relative, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        if image:
            image[1].parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(*image)

    def commit(self) -> None:
        if self.folder.exists():
            os.rename(self.folder, self.old)
        os.rename(self.new, self.folder)
        shutil.rmtree(self.old, ignore_errors=True)


def _record_files(part: Path) -> set[str]:
    """Record paths (``record_path``) a part holds: one directory listing instead of a
    ``stat`` for every image and part."""
    held = set()
    try:
        folders = list(os.scandir(part / "records"))
    except FileNotFoundError:
        return held
    for folder in folders:
        if folder.is_dir():
            held.update(f"records/{folder.name}/{f.name}" for f in os.scandir(folder.path) if f.name.endswith(".json"))
    return held


def _link_or_copy(source: Path, target: Path) -> None:
    """``target`` as a hard link to ``source`` (an image file is never changed once written,
    and a link costs no copy), or a copy where links cannot be made (another file system)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def register(sub) -> None:
    p = sub.add_parser("merge", help="merge the run directories of several crawler processes into one")
    p.add_argument("parts", nargs="+", metavar="RUN_DIR", help="run directories of the processes")
    p.add_argument("-o", "--output", required=True, help="merged run directory")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object (for machines)")
    p.set_defaults(func=cmd_merge)


def cmd_merge(args) -> int:
    parts = [Path(p) for p in args.parts]
    for part in parts:
        if not (part / "pages.tsv").exists():
            raise FileNotFoundError(f"{part} is not a run directory (no pages.tsv)")
    summary = merge_runs(parts, Path(args.output))
    for line in duplicate_report(summary):
        print(line, file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"merge: {summary['parts']} run directories -> {args.output}: {summary['pages']:,} pages, "
              f"{summary['images']:,} images, {summary['links']:,} links (--json for the counts as JSON)")
    return 0


def duplicate_report(summary: dict) -> list[str]:
    """What the merge found and left out, as facts: which parts hold the same pages, how many."""
    lines = []
    for overlap in summary["duplicate_pages_between"]:
        kept, other = overlap["parts"]
        lines.append(f"merge: {overlap['pages']} page URLs of {other} are in {kept} too (e.g. {overlap['example']}): "
                     f"each keeps its earlier fetch (fetched_at)")
    if summary["duplicate_pages"] or summary["duplicate_links"] or summary["duplicate_sightings"]:
        lines.append(f"merge: left out the later fetches of {summary['duplicate_pages']} pages with their "
                     f"{summary['duplicate_links']} links and {summary['duplicate_sightings']} image sightings")
    if summary["orphan_sentences"]:
        lines.append(f"merge: left out {summary['orphan_sentences']} sentences that follow the last sentence "
                     f"pages.tsv counts in their part")
    return lines
