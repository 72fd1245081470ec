"""``focuscrawl extract``: page text of HTML files with a named extractor."""
from __future__ import annotations

import argparse
import gzip
import logging
import os
import sys
import time
from pathlib import Path

from focuscrawl import settings as default_settings
from focuscrawl.text.extractors import EXTRACTORS, ExtractionError, get_extractor
from focuscrawl.text.html import decode_html

logger = logging.getLogger(__name__)

#: Inputs larger than this (after gunzip) are refused: a guard against gzip bombs.
MAX_INPUT_BYTES = 64 * 1024 * 1024
_HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")


class InputTooLarge(ValueError):
    pass


def read_html_bytes(path: str | Path, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """File content, gunzipped for ``.gz`` names, refusing more than ``max_bytes``."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputTooLarge(f"{path}: more than {max_bytes} bytes (after decompression)")
    return data


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
    p.add_argument("-o", "--output", required=True, help="output directory (created)")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="HTML files, optionally gzipped")
    p.set_defaults(func=cmd_extract)


def cmd_extract(args: argparse.Namespace) -> int:
    extract = get_extractor(args.extractor)
    out_dir = Path(args.output)
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = ".txt.gz" if args.gzip else ".txt"
    written, failed, seen = 0, 0, set()
    start = time.perf_counter()
    for src in args.inputs:
        stem = output_stem(src)
        if stem in seen:
            print(f"skipped {src}: another input already wrote {stem}{suffix}", file=sys.stderr)
            failed += 1
            continue
        seen.add(stem)
        try:
            text = extract(decode_html(read_html_bytes(src)))
        except (OSError, EOFError, gzip.BadGzipFile, InputTooLarge, ExtractionError) as exc:
            print(f"skipped {src}: {exc}", file=sys.stderr)
            failed += 1
            continue
        _write_atomically(out_dir / f"{stem}{suffix}", text, args.gzip)
        written += 1
    elapsed = time.perf_counter() - start
    print(f"{args.extractor}: wrote {written} files to {out_dir}, skipped {failed} "
          f"({elapsed:.2f}s)", file=sys.stderr)
    return 0 if failed == 0 else 1
