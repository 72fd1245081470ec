"""Collect the real ALT texts of ../shared/data (article-extraction-benchmark pages and the WARCs).

Shared by the ALT-filter evaluation; nothing of the data is stored in the repository
(labels are keyed by the SHA-1 of the ALT text).
"""
from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import lxml.html
from warcio.archiveiterator import ArchiveIterator

WARCS = ("archive-it-2008.warc.gz", "commoncrawl-2020-34-sample.warc.gz", "wikipedia-mona-lisa.warc.gz")


def alt_key(alt: str) -> str:
    return hashlib.sha1(alt.encode("utf-8")).hexdigest()


def _alts_of(html: bytes) -> list[str]:
    try:
        doc = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    alts = []
    for img in doc.iter("img"):
        alt = " ".join((img.get("alt") or "").split())
        if alt:
            alts.append(alt)
    return alts


def collect_alts(data_dir: str | Path, corpus: str = "dev") -> dict[str, dict]:
    """{alt text: {"source": first file, "count": occurrences}} over all pages, in a fixed order.

    ``corpus`` "dev": article-extraction-benchmark pages and the WARCs (the rules were tuned on
    these); "test": the readability-pages sources (labelled after the rules were frozen).
    """
    data = Path(data_dir)
    found: dict[str, dict] = {}

    def add(html: bytes, source: str) -> None:
        for alt in _alts_of(html):
            entry = found.setdefault(alt, {"source": source, "count": 0})
            entry["count"] += 1

    if corpus == "test":
        for path in sorted((data / "readability-pages").glob("*/source.html")):
            add(path.read_bytes(), f"readability-pages/{path.parent.name}")
        return found
    for path in sorted((data / "article-extraction-benchmark" / "html").glob("*.html.gz")):
        add(gzip.open(path).read(), f"article-extraction-benchmark/{path.name}")
    for name in WARCS:
        with open(data / "warc" / name, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                if "html" not in (record.http_headers.get_header("Content-Type") or ""):
                    continue
                add(record.content_stream().read(), f"warc/{name}")
    return found
