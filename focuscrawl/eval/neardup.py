"""Near-duplicate detection quality on article versions (SPEC §10): ``focuscrawl eval neardup``.

Data: ``DIR/<article>/<n>.txt``, versions of one article (Wikipedia revisions, the
"versions" data set in shared/data/neardup). Each text is tokenised with
``focuscrawl.text.normalize``.

Relevance (the seed's definition): a pair of documents is a near-duplicate if the
Jaccard similarity of their word 5-shingle sets is ≥ 0.9. It is computed exactly for
every pair of versions of the same article. Pairs of different articles are taken as
non-duplicates: this is checked on a random sample of such pairs (their Jaccard is
reported) and on every cross-article pair a method predicts (its Jaccard is computed
and, if ≥ 0.9, it counts as relevant, so precision never charges a true duplicate).

Two protocols are reported:

* ``all pairs``: every document is a query against an index of the whole collection,
  as in a crawl: predicted = all pairs within Hamming distance k (MinHash: ≥ 2 of 6
  super-shingles equal), including pairs of different articles.
* ``newest vs older`` (the seed's Wikipedia experiment): only pairs (newest version,
  older version) of the same article, no cross-article pairs.

Per method: precision, recall, predicted pairs, candidates per query — "compared"
(fingerprints verified by Hamming distance, directory-bucket neighbours included;
MinHash: documents sharing a super-shingle) and "key matches" (the seed's candidates:
stored fingerprints equal to the query on the B − k blocks of a table, counted once
per table), both without the query document itself — and time per query (lookup and
verification; one query at a time). SimHash runs with 3-, 5- and 3+5-grams for k = 1..6; the index uses
B = max(4, k + 1) blocks (the seed's B = 4 for k ≤ 3).
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from focuscrawl.dedup.index import SimHashIndex
from focuscrawl.dedup.minhash import SuperShingleIndex, super_shingles
from focuscrawl.dedup.simhash import NGRAM_MODES, simhash
from focuscrawl.eval.progress import Progress
from focuscrawl.text.normalize import normalize

logger = logging.getLogger(__name__)

#: The seed's Wikipedia table (Table 3.1): k -> (precision, recall).
SEED_TABLE = {1: (0.78, 0.63), 3: (0.54, 0.81), 5: (0.38, 0.92)}
#: What the table's last column is (printed under each table; "seed" is the study the
#: method comes from, not the --seed of the sample).
SEED_LEGEND = ("seed P / R: the precision / recall that the method's source study (seed 004, SPEC §10) "
               "reports for SimHash with 3-grams at this k on its own Wikipedia revisions (relevant = "
               "Jaccard >= 0.9) - a published reference to compare with, not measured in this run")


@dataclass
class Doc:
    article: str
    version: int
    tokens: list[str]


@dataclass
class Row:
    protocol: str
    method: str
    k: int | None
    precision: float | None
    recall: float
    predicted: int
    true_positives: int
    relevant: int
    candidates_per_query: float
    key_matches_per_query: float | None
    ms_per_query: float


def load_versions(root: Path, limit: int | None = None) -> list[Doc]:
    """All versions of all articles, articles sorted by name, versions by number."""
    if not root.is_dir():
        raise FileNotFoundError(f"no such directory: {root}")
    docs = []
    articles = sorted(p for p in root.iterdir() if p.is_dir())
    for art in articles[:limit]:
        versions = sorted((int(p.stem), p) for p in art.glob("*.txt") if p.stem.isdigit())
        for n, path in versions:
            docs.append(Doc(art.name, n, normalize(path.read_text(encoding="utf-8", errors="replace")).split()))
    if not docs:
        raise ValueError(f"no <article>/<n>.txt files under {root}")
    return docs


def shingle_set(tokens: list[str], width: int = 5) -> set[str]:
    if len(tokens) < width:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i:i + width]) for i in range(len(tokens) - width + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _pr(predicted: set[tuple[int, int]], relevant: set[tuple[int, int]]) -> tuple[float | None, float, int]:
    tp = len(predicted & relevant)
    precision = tp / len(predicted) if predicted else None
    recall = tp / len(relevant) if relevant else 0.0
    return precision, recall, tp


class Evaluation:
    """Ground truth, predictions of every method, and the result rows."""

    def __init__(self, docs: list[Doc], threshold: float = 0.9, width: int = 5, negatives: int = 20000,
                 seed: int = 1) -> None:
        self.docs = docs
        self.threshold = threshold
        self.shingles = [shingle_set(d.tokens, width) for d in docs]
        self.same_article: dict[tuple[int, int], float] = {}
        by_article: dict[str, list[int]] = {}
        for i, d in enumerate(docs):
            by_article.setdefault(d.article, []).append(i)
        self.by_article = by_article
        for ids in by_article.values():
            for x, i in enumerate(ids):
                for j in ids[x + 1:]:
                    self.same_article[(i, j)] = jaccard(self.shingles[i], self.shingles[j])
        self.relevant = {p for p, s in self.same_article.items() if s >= threshold}
        self.cross_checked: dict[tuple[int, int], float] = {}
        # newest vs older, the seed's protocol
        self.newest_pairs = {(i, ids[-1]) for ids in by_article.values() for i in ids[:-1]}
        # a random sample of cross-article pairs: are they really non-duplicates?
        rng = random.Random(seed)
        sample = []
        n = len(docs)
        while len(sample) < min(negatives, n * (n - 1) // 2 - len(self.same_article)):
            i, j = sorted(rng.sample(range(n), 2))
            if docs[i].article != docs[j].article:
                sample.append(jaccard(self.shingles[i], self.shingles[j]))
        self.negative_sample = np.array(sample)
        self.rows: list[Row] = []

    def is_relevant(self, pair: tuple[int, int]) -> bool:
        if pair in self.same_article:
            return pair in self.relevant
        if pair not in self.cross_checked:
            i, j = pair
            self.cross_checked[pair] = jaccard(self.shingles[i], self.shingles[j])
        return self.cross_checked[pair] >= self.threshold

    def add_method(self, method: str, k: int | None, predicted: set[tuple[int, int]], candidates: float,
                   ms_per_query: float, key_matches: float | None = None) -> None:
        cross_relevant = {p for p in predicted if p not in self.same_article and self.is_relevant(p)}
        self.relevant_all = self.relevant | cross_relevant | getattr(self, "relevant_all", set())
        self._pending = getattr(self, "_pending", [])
        self._pending.append((method, k, predicted, candidates, key_matches, ms_per_query))

    def finish(self) -> list[Row]:
        """Rows for both protocols; recall of 'all pairs' counts cross-article duplicates any method found."""
        relevant_all = getattr(self, "relevant_all", self.relevant)
        relevant_newest = self.relevant & self.newest_pairs
        for method, k, predicted, candidates, keys, ms in self._pending:
            p, r, tp = _pr(predicted, relevant_all)
            self.rows.append(Row("all pairs", method, k, p, r, len(predicted), tp, len(relevant_all),
                                 candidates, keys, ms))
        for method, k, predicted, candidates, keys, ms in self._pending:
            pred = predicted & self.newest_pairs
            p, r, tp = _pr(pred, relevant_newest)
            self.rows.append(Row("newest vs older", method, k, p, r, len(pred), tp, len(relevant_newest),
                                 candidates, keys, ms))
        return self.rows


def run_simhash(ev: Evaluation, mode: str, ks: list[int], progress: Progress | None = None) -> None:
    t = time.perf_counter()
    fps = [simhash(d.tokens, mode) for d in ev.docs]
    ms_fp = (time.perf_counter() - t) * 1000 / len(fps)
    logger.info("SimHash %s-grams: %.2f ms per document", mode, ms_fp)
    ids = [i for i, fp in enumerate(fps) if fp is not None]
    arr = np.array([fps[i] for i in ids], dtype=np.uint64)
    for done, k in enumerate(ks):
        if progress is not None:
            progress.tick(done, len(ks), f"values of k ({mode}-grams)")
        index = SimHashIndex.from_fingerprints(arr, k, max(4, k + 1))
        t = time.perf_counter()
        for fp in arr.tolist():
            index.query(fp)
        ms = (time.perf_counter() - t) * 1000 / len(arr)
        m = index.query_many(arr, count_key_matches=True)
        predicted = {(min(ids[a], ids[b]), max(ids[a], ids[b]))
                     for a, b in zip(m.query.tolist(), m.ids.tolist()) if a != b}
        # the query document itself is stored too and hits every table: not a candidate in a crawl
        ev.add_method(f"SimHash {mode}", k, predicted, m.candidates / len(arr) - index.tables, ms,
                      m.key_matches / len(arr) - index.tables)


def run_minhash(ev: Evaluation) -> None:
    t = time.perf_counter()
    sketches = [super_shingles(d.tokens) for d in ev.docs]
    logger.info("MinHash: %.2f ms per document", (time.perf_counter() - t) * 1000 / len(sketches))
    index = SuperShingleIndex()
    ids = []
    for i, s in enumerate(sketches):
        if s is not None:
            index.add(s)
            ids.append(i)
    predicted = set()
    candidates = 0
    t = time.perf_counter()
    results = [index.query(sketches[i]) for i in ids]
    ms = (time.perf_counter() - t) * 1000 / len(ids)
    for a, (hits, cand) in enumerate(results):
        candidates += cand
        for b, _ in hits:
            if a != b:
                predicted.add((min(ids[a], ids[b]), max(ids[a], ids[b])))
    ev.add_method("MinHash 8-shingles 6x14, >=2", None, predicted, candidates / len(ids) - 1, ms)


def format_table(rows: list[Row]) -> str:
    out = []
    for protocol in dict.fromkeys(r.protocol for r in rows):
        sel = [r for r in rows if r.protocol == protocol]
        out.append(f"\n### {protocol} (relevant pairs: {sel[0].relevant})\n")
        out.append("| method | k | precision | recall | predicted | TP | compared/query | key matches/query "
                   "| ms/query | seed P / R |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in sel:
            seed = SEED_TABLE.get(r.k) if r.method == "SimHash 3" else None
            out.append(f"| {r.method} | {'' if r.k is None else r.k} | "
                       f"{'-' if r.precision is None else f'{r.precision:.3f}'} | {r.recall:.3f} | {r.predicted} | "
                       f"{r.true_positives} | {r.candidates_per_query:.1f} | "
                       f"{'' if r.key_matches_per_query is None else f'{r.key_matches_per_query:.2f}'} | "
                       f"{r.ms_per_query:.3f} | "
                       f"{f'{seed[0]:.2f} / {seed[1]:.2f}' if seed else ''} |")
        out.append(f"\n{SEED_LEGEND}")
    return "\n".join(out)


def cmd_neardup(args: argparse.Namespace) -> int:
    root = Path(args.directory)
    progress = Progress("eval neardup")
    progress.step(f"reading the versions in {root} ...")
    docs = load_versions(root, args.limit)
    modes = [m.strip() for m in args.ngrams.split(",") if m.strip()]
    for m in modes:
        if m not in NGRAM_MODES:
            raise ValueError(f"--ngrams: unknown mode {m!r} (choose from {', '.join(NGRAM_MODES)})")
    ks = list(range(1, args.max_k + 1))
    progress.step(f"{len(docs)} versions: ground truth (5-shingle Jaccard of same-article pairs and "
                  f"{args.negatives} cross-article pairs) ...")
    ev = Evaluation(docs, args.jaccard, 5, args.negatives, args.seed)
    neg = ev.negative_sample
    print(f"{len(docs)} versions of {len(ev.by_article)} articles; {len(ev.same_article)} same-article pairs, "
          f"{len(ev.relevant)} with 5-shingle Jaccard >= {args.jaccard}")
    if len(neg):
        print(f"cross-article sample: {len(neg)} pairs, Jaccard max {neg.max():.3f}, "
              f"mean {neg.mean():.4f}, >= {args.jaccard}: {int((neg >= args.jaccard).sum())}")
    for mode in modes:
        progress.step(f"SimHash {mode}-grams, k = 1..{args.max_k} ...")
        run_simhash(ev, mode, ks, progress)
    if not args.no_minhash:
        progress.step("MinHash baseline ...")
        run_minhash(ev)
    rows = ev.finish()
    cross = sum(1 for s in ev.cross_checked.values() if s >= args.jaccard)
    print(f"cross-article pairs predicted by some method: {len(ev.cross_checked)}, "
          f"of which Jaccard >= {args.jaccard}: {cross}")
    print(format_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


def register(eval_sub: argparse._SubParsersAction) -> None:
    p = eval_sub.add_parser("neardup", help="precision/recall of SimHash (k, n-grams) and MinHash on article versions")
    p.add_argument("directory", help="DIR/<article>/<n>.txt, e.g. the shared data's neardup/wiki-versions")
    p.add_argument("--ngrams", default="3,5,3+5", help="comma-separated n-gram modes (default %(default)s)")
    p.add_argument("--max-k", type=int, default=6, help="k = 1..MAX_K (default %(default)s)")
    p.add_argument("--jaccard", type=float, default=0.9, help="relevance threshold on 5-shingle Jaccard")
    p.add_argument("--negatives", type=int, default=20000, help="cross-article pairs sampled to check")
    p.add_argument("--seed", type=int, default=1, help="random seed of the cross-article sample (default %(default)s)")
    p.add_argument("--limit", type=int, help="only the first N articles")
    p.add_argument("--no-minhash", action="store_true")
    p.add_argument("--json", metavar="OUT", help="also write the rows as JSON")
    p.set_defaults(func=cmd_neardup)
