"""``focuscrawl extract``: page text of HTML files or URLs with a named extractor, as text, JSON or Markdown."""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import logging
import sys
import time
import zlib
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from focuscrawl import settings as default_settings
from focuscrawl.output.files import atomic_write_bytes
from focuscrawl.text.extractors import (EXTRACTORS, TRUNCATED, Extractor, PageText, decode_head, get_extractor,
                                        page_metadata, page_text_from_html, time_limit)
from focuscrawl.text.sources import PoliteFetcher, is_url

logger = logging.getLogger(__name__)

_HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")


#: a note of a ``.gz`` input cut short or followed by bytes that are no gzip: its readable part was read
DAMAGED_GZIP = "damaged_gzip"


def read_html_bytes(path: str | Path, max_bytes: int, damage: list[str] | None = None) -> bytes:
    """File content, gunzipped for ``.gz`` names: at most ``max_bytes + 1`` bytes are read
    (one more than the cap, so a longer page is seen to be longer); a gzip bomb costs no
    more than that. A gzip cut short or followed by other bytes gives what it holds up to
    there (its reason appended to ``damage``), as a truncated plain file does."""
    path = Path(path)
    limit = max_bytes + 1 if max_bytes > 0 else -1
    if path.suffix != ".gz":
        with open(path, "rb") as fh:
            return fh.read(limit)
    out, inflater = bytearray(), zlib.decompressobj(31)
    with open(path, "rb") as fh:
        while limit < 0 or len(out) < limit:
            chunk = inflater.unconsumed_tail or fh.read(65536)
            if not chunk:
                if not inflater.eof and (out or inflater.unused_data):
                    _damaged(damage, "it ends inside its compressed data")
                break
            try:
                out += inflater.decompress(chunk, 0 if limit < 0 else limit - len(out))
            except zlib.error as exc:
                if not out:
                    raise gzip.BadGzipFile(f"not a gzip file ({exc})") from None
                _damaged(damage, "damaged compressed data")
                break
            if inflater.eof:  # the member ended: another one follows, or other bytes
                rest = inflater.unused_data + fh.read(2 - len(inflater.unused_data)) \
                    if len(inflater.unused_data) < 2 else inflater.unused_data
                if not rest:
                    break
                if not rest.startswith(b"\x1f\x8b"):
                    _damaged(damage, "bytes that are no gzip follow its end")
                    break
                inflater = zlib.decompressobj(31)
                out += inflater.decompress(rest, 0 if limit < 0 else max(1, limit - len(out)))
    return bytes(out[:limit] if limit > 0 else out)


def _damaged(damage: list[str] | None, reason: str) -> None:
    if damage is not None:
        damage.append(reason)


def read_page(src: str, max_bytes: int, fetcher: PoliteFetcher | None = None) -> tuple[str, tuple[str, ...]]:
    """The decoded first ``max_bytes`` of a file (gunzipped for ``.gz``) or of a URL fetched
    politely, and the notes (:func:`~focuscrawl.text.extractors.decode_head`); the raw
    bytes are freed before any extractor builds its trees."""
    if is_url(src):
        body, content_type = (fetcher or PoliteFetcher()).fetch(src)
        return decode_head(body, content_type, max_bytes)
    damage: list[str] = []
    html, notes = decode_head(read_html_bytes(src, max_bytes, damage), None, max_bytes)
    return html, notes + ((DAMAGED_GZIP,) if damage else ())


def page_text_from_file(path: str | Path, extract: Extractor, max_bytes: int, seconds: float) -> PageText:
    """The text of an HTML file (gunzipped for ``.gz``) read up to ``max_bytes``."""
    html, notes = read_page(str(path), max_bytes)
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


def url_stem(url: str) -> str:
    """``http://host/news/cat.html?x`` -> ``cat``; a URL without a file name -> its host."""
    parts = urlsplit(url)
    return output_stem(parts.path.rstrip("/").rsplit("/", 1)[-1]) or parts.hostname or "page"


#: The longest output file stem, in UTF-8 bytes: with its suffix and the temp file's
#: ``.<name>.tmp<pid>`` it stays under the 255 bytes a file name may have.
MAX_STEM_BYTES = 200


def fitting_stem(stem: str) -> str:
    """``stem``, or one cut to ``MAX_STEM_BYTES`` with a hash of the whole (distinct stems stay
    distinct): a 250-character file name or URL segment must not stop the batch."""
    raw = stem.encode("utf-8", "surrogateescape")
    if len(raw) <= MAX_STEM_BYTES:
        return stem
    digest = hashlib.sha1(raw).hexdigest()[:12]
    head = raw[:MAX_STEM_BYTES - 13].decode("utf-8", "ignore")  # (a character cut in two is dropped)
    return f"{head}-{digest}"


def as_markdown(text: str, title: str | None) -> str:
    """The page text as Markdown: the title as a heading, each block a paragraph."""
    blocks = [line.strip() for line in text.splitlines() if line.strip()]
    return "\n\n".join(([f"# {title.strip()}"] if title and title.strip() else []) + blocks) + "\n"


def render(page: PageText, html: str, url: str | None, fmt: str, extractor: str) -> str:
    """The output file's content in ``fmt`` (txt, json, markdown)."""
    if fmt == "txt":
        return page.text
    meta = page_metadata(html, url)
    if fmt == "markdown":
        return as_markdown(page.text, meta["title"])
    # "language" as the crawl has it (identified from the text: pages.tsv's column); the page's
    # own claim (<html lang>, "en-US") is "stated_language"
    from focuscrawl.text.language import identify

    meta["stated_language"] = meta.pop("language")
    meta["language"] = identify(page.text) or None
    return json.dumps({**meta, "extractor": extractor, "text": page.text}, ensure_ascii=False, indent=1) + "\n"


_SUFFIX = {"txt": ".txt", "json": ".json", "markdown": ".md"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extract", help="write the page text of HTML files (.gz allowed) or URLs with a named extractor")
    p.add_argument("--extractor", default=default_settings.FOCUSCRAWL_TEXT_EXTRACTOR,
                   help=f"one of {', '.join(sorted(EXTRACTORS))} (default: the crawl's, %(default)s)")
    p.add_argument("--format", choices=sorted(_SUFFIX), default="txt",
                   help="txt: the text; json: title, author, date, url (null where the page states "
                        "none), language (identified from the text, as the crawl's pages.tsv has it), "
                        "stated_language (the page's <html lang>), extractor and text; markdown: the title as a heading, blocks as "
                        "paragraphs (default %(default)s)")
    p.add_argument("--gzip", action="store_true", help="gzip each output file (<stem>.txt.gz, ...)")
    p.add_argument("--max-bytes", type=int, default=default_settings.FOCUSCRAWL_TEXT_MAX_BYTES,
                   help="read at most this many bytes of a page (after gunzip); longer pages are "
                        "cut and counted (default: the crawl's, %(default)s)")
    p.add_argument("--time-limit", type=float, default=default_settings.FOCUSCRAWL_TEXT_TIME_LIMIT,
                   help="seconds per page before it is skipped (0 = none; default %(default)s)")
    p.add_argument("--delay", type=float, default=1.0,
                   help="seconds between requests to one host, for URL inputs (default %(default)s)")
    p.add_argument("-o", "--output", required=True, help="output directory (created)")
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="HTML files, optionally gzipped, or http(s) URLs (fetched politely: robots.txt "
                        "obeyed, one request per --delay seconds per host)")
    p.set_defaults(func=cmd_extract)


def cmd_extract(args: argparse.Namespace) -> int:
    extract = get_extractor(args.extractor)
    folders = [src for src in args.inputs if not is_url(src) and Path(src).is_dir()]
    if folders:  # before anything is created
        raise ValueError(f"{'these are folders' if len(folders) > 1 else 'this is a folder'}, not HTML files: "
                         f"{', '.join(folders)} (give the files in it, e.g. {Path(folders[0]) / '*.html'})")
    missing = [src for src in args.inputs if not is_url(src) and not Path(src).is_file()]
    if missing:  # before anything is created: no empty output folder for a mistyped name
        raise FileNotFoundError(f"no such input file{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    if args.delay < 0:
        raise ValueError(f"--delay must be >= 0, got {args.delay}")
    for noisy in ("trafilatura", "justext", "boilerpy3", "htmldate", "courlan"):  # per-page library warnings
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    fetcher = PoliteFetcher(delay=args.delay)
    out_dir = Path(args.output)
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = _SUFFIX[args.format] + (".gz" if args.gzip else "")
    written, failed, seen, notes = 0, 0, set(), Counter()
    start = time.perf_counter()
    for src in args.inputs:
        url = src if is_url(src) else None
        stem = fitting_stem(url_stem(src) if url else output_stem(src))
        if stem in seen:
            print(f"skipped {src}: another input already wrote {stem}{suffix}", file=sys.stderr)
            failed += 1
            continue
        seen.add(stem)
        try:
            html, decode_notes = read_page(src, args.max_bytes, fetcher)
            page = page_text_from_html(html, extract, decode_notes, args.max_bytes, args.time_limit)
            with time_limit(args.time_limit):
                content = render(page, html, url, args.format, args.extractor)
        except (OSError, EOFError, gzip.BadGzipFile, ValueError) as exc:  # ExtractionError, fetch errors
            reason = str(exc).removeprefix(f"{src}: ")  # the fetcher's messages start with the URL
            print(f"skipped {src}: {reason}", file=sys.stderr)
            failed += 1
            continue
        if DAMAGED_GZIP in page.notes:
            print(f"cut {src}: a damaged gzip, the text of its readable part written", file=sys.stderr)
        if TRUNCATED in page.notes:
            print(f"cut {src}: longer than {args.max_bytes} bytes, its first {args.max_bytes} read",
                  file=sys.stderr)
        notes.update(page.notes)
        data = content.encode("utf-8")
        atomic_write_bytes(out_dir / f"{stem}{suffix}", gzip.compress(data, mtime=0) if args.gzip else data)
        written += 1
    elapsed = time.perf_counter() - start
    noted = "".join(f", {name.replace('_', ' ')} {n}" for name, n in sorted(notes.items()))
    print(f"{args.extractor}: wrote {written} files to {out_dir}, skipped {failed}{noted} "
          f"({elapsed:.2f}s)", file=sys.stderr)
    return 0 if failed == 0 else 1
