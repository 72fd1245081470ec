"""Choose the crawl's page-text extractor by leave-one-set-out (issue #25).

    python benchmarks/extraction_loso.py --cleaneval ../shared/data/cleaneval/final \
        --cleaneval ../shared/data/cleaneval/dev --aeb ../shared/data/article-extraction-benchmark \
        --readability ../shared/data/readability-pages [--cache /tmp/loso.json]

Three sets of real pages with gold text (CLEANEVAL, the article benchmark, Mozilla
Readability's test pages). For each rotation, every tuned rule is tuned on two sets and
scored on the third (held out):

* ``chooser``: the ``auto`` design (a 50-tree depth-4 forest choosing trafilatura's text or
  the union with jusText per page, ``train_text_chooser.py``) retrained on the two sets;
* ``best single``: the single extractor with the best mean of the two sets' means;

next to the untuned extractors, the shipped ``auto`` (its forest trained on CLEANEVAL dev and
the article benchmark: held out only on the Readability pages), and ``plain`` = ``trafilatura.extract(html)``, the library's
defaults, nothing else (empty when it finds nothing). A rule is kept only if on every
held-out set it scores ≥ plain − 0.005 and its mean over the held-out sets ≥ plain's, by
both measures (word LCS-F1 and the CLEANEVAL-style score of ``focuscrawl eval
extraction``). Per-page seconds are summed per extractor (pages are the outer loop).
``--cache`` keeps the per-page scores, so re-running the rotations costs nothing.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_text_chooser import chosen, fit  # noqa: E402

from focuscrawl.eval.extraction import aeb_pages, cleaneval_pages, readability_pages, score_page  # noqa: E402
from focuscrawl.text import combined  # noqa: E402
from focuscrawl.text.extractors import get_extractor  # noqa: E402
from focuscrawl.text.html import decode_html, full_text, parse_page  # noqa: E402

#: Texts scored per page; "trafilatura" is plain with the full text when plain finds nothing.
TEXTS = ("plain", "trafilatura", "trafilatura-recall", "auto", "union", "fulltext")
MEASURES = ("lcs_f1", "score")
#: Untuned extractors "best single" picks from (the shipped auto is tuned on two of the sets).
SINGLES = ("plain", "trafilatura", "trafilatura-recall", "union", "fulltext")
TOLERANCE = 0.005


def page_record(html: str, gold: str, seconds: dict[str, float]) -> dict:
    """Scores of every text of one page, the chooser's features and its candidates' scores."""
    import trafilatura
    texts = {}
    start = time.perf_counter()
    texts["plain"] = trafilatura.extract(html) or ""
    seconds["plain"] += time.perf_counter() - start
    texts["trafilatura"] = texts["plain"] or full_text(html)
    start = time.perf_counter()
    texts["trafilatura-recall"] = get_extractor("trafilatura-recall")(html)
    seconds["trafilatura-recall"] += time.perf_counter() - start
    start = time.perf_counter()
    root = parse_page(html).root
    c = combined.candidates(root) if root is not None else combined.Candidates("", "", (0.0,) * 7)
    texts["auto"] = combined.choose(c) or full_text(html)
    seconds["auto"] += time.perf_counter() - start
    texts["union"] = c.union or c.trafilatura or full_text(html)
    texts["fulltext"] = full_text(html)
    scores = {name: score_page(text, gold) for name, text in texts.items()}
    cand = [score_page(c.trafilatura, gold), score_page(c.union, gold)]
    return {"scores": {name: {m: getattr(s, m) for m in MEASURES} for name, s in scores.items()},
            "features": list(c.features),
            "candidates": {m: [getattr(s, m) for s in cand] for m in MEASURES},
            "traf_empty": not c.trafilatura.strip(), "union_empty": not c.union.strip()}


def collect(sets: dict[str, list], progress: bool = True) -> dict:
    seconds = {name: 0.0 for name in ("plain", "trafilatura-recall", "auto")}
    data = {}
    for name, pages in sets.items():
        rows = []
        for i, page in enumerate(pages):
            if progress and i % 50 == 0:
                print(f"  {name}: {i}/{len(pages)} pages", file=sys.stderr, flush=True)
            rows.append(page_record(decode_html(page.html), page.gold, seconds))
        data[name] = rows
    return {"sets": data, "seconds": seconds}


def chooser_scores(train: list[dict], test: list[dict], measure: str) -> np.ndarray:
    """Held-out per-page values of the ``auto`` design retrained on ``train`` (labels by ``measure``)."""
    X = np.array([r["features"] for r in train])
    S = np.array([r["candidates"][measure] for r in train])
    forest = fit(X, S)
    Xt = np.array([r["features"] for r in test])
    St = np.array([r["candidates"][measure] for r in test])
    picked = chosen(forest, Xt, St)
    # as choose(): one empty candidate -> the other; both empty -> full text
    for i, r in enumerate(test):
        if r["traf_empty"] or r["union_empty"]:
            picked[i] = r["scores"]["auto"][measure]
    return picked


def mean(rows: list[dict], name: str, measure: str) -> float:
    return float(np.mean([r["scores"][name][measure] for r in rows]))


def rotations(data: dict) -> list[dict]:
    sets = data["sets"]
    out = []
    for held in sets:
        train_sets = [rows for name, rows in sets.items() if name != held]
        train = [r for rows in train_sets for r in rows]
        test = sets[held]
        row = {"held_out": held, "pages": len(test)}
        for m in MEASURES:
            row[m] = {name: mean(test, name, m) for name in TEXTS}
            row[m]["chooser (retrained)"] = float(np.mean(chooser_scores(train, test, m)))
            best = max(SINGLES, key=lambda n: np.mean([mean(rows, n, m) for rows in train_sets]))
            row[m]["best single"] = row[m][best]
            row[m]["best single is"] = best
        out.append(row)
    return out


def verdicts(rows: list[dict]) -> dict[str, bool]:
    """A rule is kept when every held-out set is ≥ plain − TOLERANCE and the mean ≥ plain's."""
    keep = {}
    for rule in ("chooser (retrained)", "best single"):
        ok = True
        for m in MEASURES:
            ok &= all(r[m][rule] >= r[m]["plain"] - TOLERANCE for r in rows)
            ok &= np.mean([r[m][rule] for r in rows]) >= np.mean([r[m]["plain"] for r in rows])
        keep[rule] = bool(ok)
    return keep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cleaneval", action="append", default=[], help="CLEANEVAL folder(s) (input/, gold/)")
    ap.add_argument("--aeb", required=True, help="article-extraction-benchmark folder")
    ap.add_argument("--readability", required=True, help="Mozilla Readability test pages folder")
    ap.add_argument("--cache", help="JSON file of per-page scores: read when present, written otherwise")
    args = ap.parse_args(argv)
    if not args.cleaneval:
        ap.error("give at least one --cleaneval folder")
    for noisy in ("trafilatura", "justext", "boilerpy3"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    cache = Path(args.cache) if args.cache else None
    if cache and cache.is_file():
        data = json.loads(cache.read_text(encoding="utf-8"))
    else:
        sets = {"cleaneval": [p for folder in args.cleaneval for p in cleaneval_pages(folder)],
                "aeb": list(aeb_pages(args.aeb)),
                "readability": list(readability_pages(args.readability))}
        data = collect(sets)
        if cache:
            cache.write_text(json.dumps(data), encoding="utf-8")
    rows = rotations(data)
    for m in MEASURES:
        print(f"\n{m} on the held-out set (tuned rules tuned on the other two):\n")
        cols = [*TEXTS, "chooser (retrained)", "best single"]
        print("| held out | pages | " + " | ".join(cols) + " | best single is |")
        print("|---|---|" + "---|" * (len(cols) + 1))
        for r in rows:
            print(f"| {r['held_out']} | {r['pages']} | " + " | ".join(f"{r[m][c]:.3f}" for c in cols)
                  + f" | {r[m]['best single is']} |")
        print("| mean of sets | | " + " | ".join(f"{np.mean([r[m][c] for r in rows]):.3f}" for c in cols) + " | |")
    s = data["seconds"]
    print(f"\nseconds over all {sum(r['pages'] for r in rows)} pages: "
          + ", ".join(f"{k} {v:.1f}" for k, v in s.items())
          + f"; auto / plain {s['auto'] / s['plain']:.2f}x, trafilatura-recall / plain "
            f"{s['trafilatura-recall'] / s['plain']:.2f}x")
    keep = verdicts(rows)
    print("\nkept (every held-out set >= plain - 0.005 and mean >= plain's, both measures): "
          + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in keep.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
