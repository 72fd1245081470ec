"""``focuscrawl extract``: page text of HTML files with a named extractor."""
from __future__ import annotations

import argparse
import gzip
import logging
import os
import sys
import time
from collections import Counter
from pathlib import Path

from focuscrawl import settings as default_settings
from focuscrawl.text.extractors import (EXTRACTORS, TRUNCATED, Extractor, ExtractionError, PageText, decode_head,
                                        get_extractor, page_text_from_html)

logger = logging.getLogger(__name__)

_HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")


def read_html_bytes(path: str | Path, max_bytes: int) -> bytes:
    """File content, gunzipped for ``.gz`` names: at most ``max_bytes + 1`` bytes are read
    (one more than the cap, so a longer page is seen to be longer); a gzip bomb costs no
    more than that."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return fh.read(max_bytes + 1)


def page_text_from_file(path: str | Path, extract: Extractor, max_bytes: int, seconds: float) -> PageText:
    """The text of an HTML file (gunzipped for ``.gz``) read up to ``max_bytes``; the raw
    bytes are freed before the extractor builds its trees."""
    html, notes = decode_head(read_html_bytes(path, max_bytes), None, max_bytes)
    return page_text_from_html(html, extract, notes, max_bytes, seconds)


def output_stem(path: str | Path) -> str:
    """``page.html.gz`` -> ``page``; ``page.htm`` -> ``page``; ``page`` -> ``page``."""
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix in _HTML_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _write_atomically(path: Path, text: str, compress: bool) -> None:
    tmp = path.with_name(path.name + ".part")
    data = text.encode("utf-8")
    tmp.write_bytes(gzip.compress(data, mtime=0) if compress else data)
    os.replace(tmp, path)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extract", help="write the page text of HTML files (.gz allowed) with a named extractor")
    p.add_argument("--extractor", default=default_settings.FOCUSCRAWL_TEXT_EXTRACTOR,
                   help=f"one of {', '.join(sorted(EXTRACTORS))} (default: the crawl's, %(default)s)")
    p.add_argument("--gzip", action="store_true", help="write <stem>.txt.gz instead of <stem>.txt")
    p.add_argument("--max-bytes", type=int, default=default_settings.FOCUSCRAWL_TEXT_MAX_BYTES,
                   help="read at most this many bytes of a page (after gunzip); longer pages are "
                        "cut and counted (default: the crawl's, %(default)s)")
    p.add_argument("--time-limit", type=float, default=default_settings.FOCUSCRAWL_TEXT_TIME_LIMIT,
                   help="seconds per page before it is skipped (0 = none; default %(default)s)")
    p.add_argument("-o", "--output", required=True, help="output directory (created)")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="HTML files, optionally gzipped")
    p.set_defaults(func=cmd_extract)


def cmd_extract(args: argparse.Namespace) -> int:
    extract = get_extractor(args.extractor)
    for noisy in ("trafilatura", "justext", "boilerpy3"):  # per-page library warnings
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    out_dir = Path(args.output)
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = ".txt.gz" if args.gzip else ".txt"
    written, failed, seen, notes = 0, 0, set(), Counter()
    start = time.perf_counter()
    for src in args.inputs:
        stem = output_stem(src)
        if stem in seen:
            print(f"skipped {src}: another input already wrote {stem}{suffix}", file=sys.stderr)
            failed += 1
            continue
        seen.add(stem)
        try:
            page = page_text_from_file(src, extract, args.max_bytes, args.time_limit)
        except (OSError, EOFError, gzip.BadGzipFile, ExtractionError) as exc:
            print(f"skipped {src}: {exc}", file=sys.stderr)
            failed += 1
            continue
        if TRUNCATED in page.notes:
            print(f"cut {src}: longer than {args.max_bytes} bytes, its first {args.max_bytes} read",
                  file=sys.stderr)
        notes.update(page.notes)
        _write_atomically(out_dir / f"{stem}{suffix}", page.text, args.gzip)
        written += 1
    elapsed = time.perf_counter() - start
    noted = "".join(f", {name.replace('_', ' ')} {n}" for name, n in sorted(notes.items()))
    print(f"{args.extractor}: wrote {written} files to {out_dir}, skipped {failed}{noted} "
          f"({elapsed:.2f}s)", file=sys.stderr)
    return 0 if failed == 0 else 1
