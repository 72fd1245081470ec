"""Page-text extraction quality, CLEANEVAL style (SPEC §8): ``focuscrawl eval extraction``.

Per page, against the gold text:

* ``score``: similarity of the two word sequences by edit distance,
  ``1 - levenshtein(words_out, words_gold) / max(len(words_out), len(words_gold))``
  (CLEANEVAL's text-only measure: insertions of boilerplate and deletions of content
  both cost);
* ``LCS-F1``: F1 of the longest common word subsequence (precision = LCS / output
  words, recall = LCS / gold words): order-aware like the score, but split into the
  two kinds of error;
* ``P``, ``R``, ``F1`` over bags of tokens (multiset intersection), so that a
  high-recall extractor that keeps some boilerplate is told apart from one that drops
  content;
* on the article benchmark also its own measure (``aeb P/R/F1``, the benchmark's
  ``evaluate.py``): per page, true/false positives and negatives over multisets of
  word 4-gram shingles (case kept), normalised to sum to 1; precision and recall are
  averaged over pages and F1 is computed from the two averages.

``failed`` counts pages where the extractor raised (scored as empty output), ``empty``
pages where it returned no word at all (failures included). Words are lowercased
``\\w+`` runs (punctuation is not compared). Tables average the per-page values
(macro average). docs/extraction.md describes the data sets.
"""
from __future__ import annotations

import argparse
import gzip
import json
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from rapidfuzz.distance import LCSseq, Levenshtein

from focuscrawl.eval.progress import Progress
from focuscrawl.text.extractors import EXTRACTORS, ExtractionError, get_extractor
from focuscrawl.text.html import decode_html, full_text

#: Third-party loggers that warn once per odd page.
QUIET_LOGGERS = ("boilerpy3", "trafilatura", "justext")
_WORD_RE = re.compile(r"\w+", re.UNICODE)
_CLEANEVAL_MARKUP_RE = re.compile(r"</?[phl]>", re.IGNORECASE)
# CLEANEVAL wraps every input page in <text id="URL" title=… encoding=…> … </text>.
_CLEANEVAL_WRAPPER_RE = re.compile(rb"^\s*<text\b[^>]*>|</text>\s*$", re.IGNORECASE)


def words(text: str) -> list[str]:
    """Lowercased word tokens (``\\w+`` runs) of ``text``."""
    return _WORD_RE.findall(text.lower())


def strip_cleaneval_wrapper(html: bytes) -> bytes:
    """The page without CLEANEVAL's ``<text id=… title=…>`` wrapper (not part of the page;
    boilerpy3's parser returns nothing for a third of the pages when it is left in)."""
    return _CLEANEVAL_WRAPPER_RE.sub(b"", html)


def strip_cleaneval_gold(text: str) -> str:
    """Gold text without its ``URL: …`` first line and ``<p>``/``<h>``/``<l>`` markers."""
    lines = text.splitlines()
    if lines and lines[0].lstrip().startswith("URL:"):
        lines = lines[1:]
    return _CLEANEVAL_MARKUP_RE.sub(" ", "\n".join(lines))


def _as_ids(output: Sequence[str], gold: Sequence[str]) -> tuple[list[int], list[int]]:
    """Words as integer ids (rapidfuzz compares hashables; ints are fastest)."""
    ids: dict[str, int] = {}
    return [ids.setdefault(w, len(ids)) for w in output], [ids.setdefault(w, len(ids)) for w in gold]


def edit_similarity(output: Sequence[str], gold: Sequence[str]) -> float:
    """``1 - word edit distance / length of the longer sequence``; two empty texts: 1."""
    if not output and not gold:
        return 1.0
    a, b = _as_ids(output, gold)
    return 1.0 - Levenshtein.distance(a, b) / max(len(a), len(b))


def lcs_f1(output: Sequence[str], gold: Sequence[str]) -> float:
    """F1 of the longest common word subsequence; two empty texts: 1, one empty: 0."""
    if not output or not gold:
        return float(not output and not gold)
    common = LCSseq.similarity(*_as_ids(output, gold))
    return 2 * common / (len(output) + len(gold))


_CASED_WORD_RE = re.compile(r"\w+", re.UNICODE)


def _shingles(text: str, n: int = 4) -> Counter:
    tokens = _CASED_WORD_RE.findall(text)
    return Counter(tuple(tokens[i:i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i:i + n])


def shingle_counts(output_text: str, gold_text: str) -> tuple[float, float, float]:
    """The article benchmark's per-page (tp, fp, fn) over word 4-gram shingles, summing to 1."""
    out, gold = _shingles(output_text), _shingles(gold_text)
    tp = sum((out & gold).values())
    fp = sum((out - gold).values())
    fn = sum((gold - out).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def shingle_prf(counts: Sequence[tuple[float, float, float]]) -> tuple[float, float, float]:
    """The benchmark's aggregate: mean precision over pages with output, mean recall over
    pages with gold, F1 of the two means (a page with neither error counts 1)."""
    def ratio(tp: float, err: float, other: float) -> float:
        return 1.0 if err == other == 0 else (0.0 if tp == err == 0 else tp / (tp + err))
    ps = [ratio(tp, fp, fn) for tp, fp, fn in counts if tp + fp > 0]
    rs = [ratio(tp, fn, fp) for tp, fp, fn in counts if tp + fn > 0]
    p = sum(ps) / len(ps) if ps else 0.0
    r = sum(rs) / len(rs) if rs else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def bag_prf(output: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """Token precision, recall and F1 over bags of tokens (0 where undefined)."""
    common = sum((Counter(output) & Counter(gold)).values())
    p = common / len(output) if output else 0.0
    r = common / len(gold) if gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


@dataclass(frozen=True)
class PageScore:
    score: float
    lcs_f1: float
    precision: float
    recall: float
    f1: float
    shingles: tuple[float, float, float]


def score_page(output_text: str, gold_text: str) -> PageScore:
    out, gold = words(output_text), words(gold_text)
    return PageScore(edit_similarity(out, gold), lcs_f1(out, gold), *bag_prf(out, gold),
                     shingle_counts(output_text, gold_text))


@dataclass(frozen=True)
class Page:
    """One evaluation page: raw HTML bytes and its gold text."""

    page_id: str
    html: bytes
    gold: str


def cleaneval_pages(path: str | Path) -> Iterator[Page]:
    """CLEANEVAL ``input/<stem>.html`` paired with ``gold/<stem>.txt``; inputs without gold skipped."""
    root = Path(path)
    inputs, golds = root / "input", root / "gold"
    if not inputs.is_dir() or not golds.is_dir():
        raise FileNotFoundError(f"{root}: expected input/ and gold/ folders (CLEANEVAL layout)")
    gold_by_stem = {p.stem: p for p in golds.iterdir() if p.is_file()}
    for html_path in sorted(inputs.iterdir(), key=lambda p: p.name):
        gold_path = gold_by_stem.get(html_path.stem)
        if gold_path is None:
            continue
        gold = strip_cleaneval_gold(decode_html(gold_path.read_bytes(), "text/plain"))
        if words(gold):
            yield Page(html_path.stem, strip_cleaneval_wrapper(html_path.read_bytes()), gold)


def aeb_pages(path: str | Path) -> Iterator[Page]:
    """article-extraction-benchmark: ``html/<id>.html.gz`` with ``ground-truth.json`` articleBody."""
    root = Path(path)
    truth_path = root / "ground-truth.json"
    if not truth_path.is_file():
        raise FileNotFoundError(f"{root}: expected ground-truth.json and html/ (article-extraction-benchmark)")
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    for page_id in sorted(truth):
        html_path = root / "html" / f"{page_id}.html.gz"
        gold = truth[page_id].get("articleBody") or ""
        if html_path.is_file() and words(gold):
            yield Page(page_id, gzip.decompress(html_path.read_bytes()), gold)


def readability_pages(path: str | Path) -> Iterator[Page]:
    """Mozilla Readability's test pages: ``<name>/source.html`` with the text of
    ``<name>/expected.html`` (the article Readability keeps: main content) as gold."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: expected <name>/source.html and <name>/expected.html folders "
                                "(Mozilla Readability test pages)")
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        source, expected = folder / "source.html", folder / "expected.html"
        if not (source.is_file() and expected.is_file()):
            continue
        gold = full_text(decode_html(expected.read_bytes()))
        if words(gold):
            yield Page(folder.name, source.read_bytes(), gold)


DATASETS = {"cleaneval": cleaneval_pages, "aeb": aeb_pages, "readability": readability_pages}


@dataclass
class ExtractorResult:
    """Macro averages of one extractor over a data set."""

    name: str
    pages: int = 0
    failures: int = 0
    empty: int = 0
    seconds: float = 0.0
    scores: list[PageScore] = field(default_factory=list)

    def mean(self, attr: str) -> float:
        return sum(getattr(s, attr) for s in self.scores) / len(self.scores) if self.scores else 0.0

    def benchmark_prf(self) -> tuple[float, float, float]:
        """The article benchmark's precision, recall and F1 (:func:`shingle_prf`)."""
        return shingle_prf([s.shingles for s in self.scores])

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds else float("inf")


def evaluate(pages: Sequence[Page], extractor_names: Sequence[str],
             progress: Progress | None = None) -> list[ExtractorResult]:
    """Run every extractor on every page (decoding included in its time); a failure scores as empty.

    Pages are the outer loop so that load changes on a shared machine hit every
    extractor alike: the speed ratios between extractors are the robust numbers.
    """
    extractors = [(get_extractor(name), ExtractorResult(name)) for name in extractor_names]
    for done, page in enumerate(pages):
        if progress is not None:
            progress.tick(done, len(pages), "pages")
        for extract, result in extractors:
            start = time.perf_counter()
            try:
                text = extract(decode_html(page.html))
            except ExtractionError:
                text = ""
                result.failures += 1
            result.seconds += time.perf_counter() - start
            result.pages += 1
            result.empty += not words(text)
            result.scores.append(score_page(text, page.gold))
    return [result for _, result in extractors]


def format_table(results: Sequence[ExtractorResult], baseline: str = "trafilatura",
                 benchmark_columns: bool = False) -> str:
    """A Markdown table, best score first; speed also relative to ``baseline`` when it ran.

    ``benchmark_columns`` adds the article benchmark's own P/R/F1 (:func:`shingle_prf`).
    """
    base = next((r for r in results if r.name == baseline), None)
    extra = " aeb P | aeb R | aeb F1 |" if benchmark_columns else ""
    lines = [f"| extractor | score | LCS-F1 | P | R | F1 |{extra} pages/s | time vs {baseline} | failed | empty |",
             "|---|---|---|---|---|---|" + "---|" * (3 if benchmark_columns else 0) + "---|---|---|---|"]
    for r in sorted(results, key=lambda r: r.mean("score"), reverse=True):
        ratio = f"{r.seconds / base.seconds:.2f}×" if base and base.seconds else "-"
        cells = [r.mean("score"), r.mean("lcs_f1"), r.mean("precision"), r.mean("recall"), r.mean("f1")]
        if benchmark_columns:
            cells += r.benchmark_prf()
        lines.append(f"| {r.name} | " + " | ".join(f"{c:.3f}" for c in cells)
                     + f" | {r.pages_per_second:.1f} | {ratio} | {r.failures} | {r.empty} |")
    return "\n".join(lines)


#: What the columns mean, printed under the table (docs/extraction.md has the details).
LEGEND = """\
score: CLEANEVAL-style similarity of output and gold as word sequences, 1 - word edit distance / \
length of the longer (1 = the gold words in the gold order; boilerplate kept and content lost both cost)
LCS-F1: F1 of the longest common word subsequence (P = common / output words, R = common / gold words)
P / R / F1: bag-of-words precision, recall, F1 (order ignored); aeb P / R / F1: the article \
benchmark's own 4-gram shingle measure
failed: pages where the extractor raised an error (scored as empty output); empty: pages with no \
output word (failed ones included)
all columns are means over pages; time vs trafilatura is the robust speed figure on a loaded machine"""


def register(eval_sub: argparse._SubParsersAction) -> None:
    p = eval_sub.add_parser("extraction", help="CLEANEVAL-style score, token P/R/F1 and speed per text extractor")
    p.add_argument("--dataset", choices=sorted(DATASETS), required=True,
                   help="cleaneval: input/ + gold/ folders; aeb: article-extraction-benchmark folder; "
                        "readability: Mozilla Readability test pages (<name>/source.html, expected.html)")
    p.add_argument("--extractors", default=",".join(EXTRACTORS),
                   help="comma-separated extractor names (default: all)")
    p.add_argument("--limit", type=int, default=0, help="use only the first N pages (0 = all)")
    p.add_argument("path", help="data set folder, e.g. ../shared/data/cleaneval/final")
    p.set_defaults(func=cmd_eval_extraction)


def cmd_eval_extraction(args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.extractors.split(",") if n.strip()]
    for name in names:
        get_extractor(name)  # unknown names fail before the long run
    progress = Progress("eval extraction")
    progress.step(f"reading {args.dataset} pages from {args.path} ...")
    pages = list(DATASETS[args.dataset](args.path))
    if args.limit:
        pages = pages[: args.limit]
    if not pages:
        raise ValueError(f"{args.path}: no pages with gold text found")
    for noisy in QUIET_LOGGERS:  # per-page parser warnings would drown the table
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    progress.step(f"{len(pages)} pages x {len(names)} extractors ...")
    results = evaluate(pages, names, progress)
    print(f"{args.dataset}: {len(pages)} pages\n")
    print(format_table(results, benchmark_columns=args.dataset == "aeb"))
    print("\n" + LEGEND)
    return 0
