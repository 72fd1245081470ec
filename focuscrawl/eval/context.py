"""Image-context extraction quality (SPEC §9, seed 003 §5.2.4): ``focuscrawl eval context``.

Per image: word-level longest common subsequence between extracted and gold context,
``P = |LCS| / |extracted|``, ``R = |LCS| / |gold|``, ``F = 2PR / (P + R)``. Per page the
values are averaged over its gold images; the table averages pages and gives σ of the
page F (population standard deviation, as seed 003) and the time per page (binding the
extractor to the page plus extracting every gold image; parsing excluded).

Gold (docs/context.md): real pages whose captions are marked up. An image is a gold image
when it is the only ``<img>`` of a ``<figure>`` that has a ``<figcaption>`` with words and it
is not inside ``<noscript>``/``<template>`` (lazy-loading duplicates); its gold context is
the figcaption text. For the Readability pages (``<dir>/source.html`` with
``expected.html``), only figures whose caption also appears in ``expected.html`` count
(the caption belongs to the article). The ``figure`` extractor reads the very markup the
gold comes from, so its row is an upper bound, not a fair comparison.
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from lxml import etree
from rapidfuzz.distance import LCSseq

from focuscrawl.context.contents import norm_space, tag_name
from focuscrawl.context.extractors import CONTEXT_EXTRACTORS, get_context_extractor
from focuscrawl.eval.extraction import words
from focuscrawl.text.html import SKIP_TAGS, decode_html, element_text, parse_html


def lcs_prf(extracted: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """Word-level LCS precision, recall and F (0 where undefined)."""
    if not extracted or not gold:
        return 0.0, 0.0, 0.0
    ids: dict[str, int] = {}
    a = [ids.setdefault(w, len(ids)) for w in extracted]
    b = [ids.setdefault(w, len(ids)) for w in gold]
    common = LCSseq.similarity(a, b)
    p, r = common / len(a), common / len(b)
    return p, r, (2 * p * r / (p + r) if common else 0.0)


@dataclass
class GoldPage:
    page_id: str
    root: etree._Element
    images: list[tuple[etree._Element, str]]  # (img element, gold caption)


def _hidden(el: etree._Element) -> bool:
    return any(tag_name(a) in SKIP_TAGS for a in el.iterancestors())


def figure_gold(root: etree._Element) -> list[tuple[etree._Element, str]]:
    """(img, figcaption text) for every single-image ``<figure>`` with a worded caption."""
    out = []
    for fig in root.iter("figure"):
        imgs = [i for i in fig.iter("img") if not _hidden(i)]
        caps = list(fig.iter("figcaption"))
        if len(imgs) != 1 or len(list(fig.iter("img"))) != 1 or not caps:
            continue
        caption = norm_space(" ".join(element_text(c) for c in caps))
        if words(caption):
            out.append((imgs[0], caption))
    return out


def aeb_gold_pages(path: str | Path) -> Iterator[GoldPage]:
    """article-extraction-benchmark ``html/*.html.gz`` pages that have gold images."""
    html_dir = Path(path) / "html"
    if not html_dir.is_dir():
        raise FileNotFoundError(f"{path}: expected an html/ folder (article-extraction-benchmark)")
    for p in sorted(html_dir.glob("*.html.gz")):
        root = parse_html(decode_html(gzip.decompress(p.read_bytes())))
        gold = figure_gold(root) if root is not None else []
        if gold:
            yield GoldPage(p.name.split(".")[0], root, gold)


def readability_gold_pages(path: str | Path) -> Iterator[GoldPage]:
    """Readability test pages: figures of ``source.html`` whose caption is in ``expected.html``."""
    root_dir = Path(path)
    if not root_dir.is_dir():
        raise FileNotFoundError(f"{path}: not a folder")
    for d in sorted(p for p in root_dir.iterdir() if (p / "source.html").is_file()):
        root = parse_html(decode_html((d / "source.html").read_bytes()))
        if root is None:
            continue
        expected_path = d / "expected.html"
        kept = set()
        if expected_path.is_file():
            expected = parse_html(decode_html(expected_path.read_bytes()))
            if expected is not None:
                kept = {" ".join(words(element_text(c))) for c in expected.iter("figcaption")}
        gold = [(img, cap) for img, cap in figure_gold(root) if " ".join(words(cap)) in kept]
        if gold:
            yield GoldPage(d.name, root, gold)


def gold_pages(path: str | Path) -> Iterator[GoldPage]:
    """Either layout, recognised by its files."""
    path = Path(path)
    if (path / "ground-truth.json").is_file() or (path / "html").is_dir():
        yield from aeb_gold_pages(path)
    else:
        yield from readability_gold_pages(path)


@dataclass
class ContextResult:
    name: str
    page_p: list[float] = field(default_factory=list)
    page_r: list[float] = field(default_factory=list)
    page_f: list[float] = field(default_factory=list)
    seconds: float = 0.0
    images: int = 0

    def row(self) -> dict[str, float]:
        n = len(self.page_f) or 1
        return {"P": sum(self.page_p) / n, "R": sum(self.page_r) / n, "F": sum(self.page_f) / n,
                "sigma": statistics.pstdev(self.page_f) if self.page_f else 0.0,
                "ms_per_page": 1000 * self.seconds / n}


def evaluate_context(pages: Iterable[GoldPage], names: Sequence[str]) -> list[ContextResult]:
    pages = list(pages)
    results = [ContextResult(n) for n in names]
    for page in pages:
        for result in results:
            start = time.perf_counter()
            bound = get_context_extractor(result.name)(page.root)
            extracted = [bound(img) for img, _ in page.images]
            result.seconds += time.perf_counter() - start
            prf = [lcs_prf(words(text), words(gold)) for text, (_, gold) in zip(extracted, page.images)]
            result.images += len(prf)
            for values, column in zip(zip(*prf), (result.page_p, result.page_r, result.page_f)):
                column.append(sum(values) / len(values))
    return results


def format_context_table(results: Sequence[ContextResult]) -> str:
    lines = ["| extractor | P | R | F | σ(F) | ms/page |", "|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r.row()["F"], reverse=True):
        row = r.row()
        note = " (reads the gold markup)" if r.name == "figure" else ""
        lines.append(f"| {r.name}{note} | {row['P']:.3f} | {row['R']:.3f} | {row['F']:.3f} | {row['sigma']:.3f} "
                     f"| {row['ms_per_page']:.1f} |")
    return "\n".join(lines)


def register(eval_sub: argparse._SubParsersAction) -> None:
    p = eval_sub.add_parser("context", help="LCS P/R/F of image-context extractors against marked-up captions")
    p.add_argument("--extractors", default=",".join(CONTEXT_EXTRACTORS),
                   help="comma-separated context extractor names (default: all)")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="article-extraction-benchmark folder and/or readability-pages folder")
    p.set_defaults(func=cmd_eval_context)


def cmd_eval_context(args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.extractors.split(",") if n.strip()]
    for name in names:
        get_context_extractor(name)
    pages = [page for path in args.paths for page in gold_pages(path)]
    if not pages:
        raise ValueError("no page with a marked-up caption (<figure> with one <img> and a <figcaption>) found")
    results = evaluate_context(pages, names)
    print(f"context: {len(pages)} pages, {results[0].images} gold images\n")
    print(format_context_table(results))
    return 0
