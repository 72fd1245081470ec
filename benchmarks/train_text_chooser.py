"""Train the ``auto`` extractor's chooser (focuscrawl/models/text_chooser.json).

    python benchmarks/train_text_chooser.py --cleaneval ../shared/data/cleaneval/dev \
        --aeb ../shared/data/article-extraction-benchmark [-o focuscrawl/models/text_chooser.json]

Per page, ``focuscrawl.text.combined.candidates`` gives trafilatura's text, the union with
jusText and the features; the label is the one of the two with the higher CLEANEVAL-style
score against the gold text, weighted by how much the choice matters (score difference).
Training data: CLEANEVAL *dev* and the article benchmark. CLEANEVAL *final* is never read
here: it is the test set. The article benchmark is both trained on and reported, so its
honest number is the 5-fold cross-validated one printed here (each fold's pages scored by a
forest trained on dev plus the other four folds); ``focuscrawl eval extraction`` on that
set measures the shipped forest, which has seen those pages.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import KFold

from focuscrawl.eval.extraction import aeb_pages, cleaneval_pages, score_page
from focuscrawl.text import combined
from focuscrawl.text.html import decode_html, parse_page

N_TREES, MAX_DEPTH, SEED = 50, 4, 0


def page_rows(pages) -> tuple[np.ndarray, np.ndarray]:
    """Features and the (trafilatura, union) scores of each page."""
    X, S = [], []
    for page in pages:
        root = parse_page(decode_html(page.html)).root
        if root is None:
            continue
        c = combined.candidates(root)
        X.append(c.features)
        S.append([score_page(c.trafilatura, page.gold).score, score_page(c.union, page.gold).score])
    return np.array(X), np.array(S)


def fit(X: np.ndarray, S: np.ndarray) -> RandomForestClassifier:
    forest = RandomForestClassifier(N_TREES, max_depth=MAX_DEPTH, random_state=SEED)
    forest.fit(X, S.argmax(1), sample_weight=np.abs(S[:, 1] - S[:, 0]) + 1e-3)
    return forest


def chosen(forest: RandomForestClassifier, X: np.ndarray, S: np.ndarray) -> np.ndarray:
    return S[np.arange(len(S)), forest.predict(X)]


def to_json(forest: RandomForestClassifier) -> dict:
    trees = []
    for est in forest.estimators_:
        t = est.tree_
        value = t.value[:, 0, :]
        value = value / value.sum(1, keepdims=True)
        trees.append({"feature": t.feature.tolist(), "threshold": t.threshold.tolist(),
                      "left": t.children_left.tolist(), "right": t.children_right.tolist(),
                      "value": value.round(6).tolist()})
    return {"features": list(combined.FEATURES), "classes": ["trafilatura", "union"], "trees": trees}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cleaneval", required=True, help="CLEANEVAL dev folder (input/, gold/)")
    ap.add_argument("--aeb", required=True, help="article-extraction-benchmark folder")
    ap.add_argument("-o", "--output", default=str(Path(combined.__file__).parents[2] / "models" / combined.CHOOSER_FILE))
    args = ap.parse_args(argv)
    for noisy in ("trafilatura", "justext"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    Xd, Sd = page_rows(cleaneval_pages(args.cleaneval))
    Xa, Sa = page_rows(aeb_pages(args.aeb))
    cv = np.zeros(len(Sa))
    for train, test in KFold(5, shuffle=True, random_state=SEED).split(Xa):
        forest = fit(np.vstack([Xd, Xa[train]]), np.vstack([Sd, Sa[train]]))
        cv[test] = chosen(forest, Xa[test], Sa[test])
    forest = fit(np.vstack([Xd, Xa]), np.vstack([Sd, Sa]))
    print(f"CLEANEVAL dev ({len(Sd)} pages, trained on): trafilatura {Sd[:, 0].mean():.3f}  "
          f"union {Sd[:, 1].mean():.3f}  chosen {chosen(forest, Xd, Sd).mean():.3f}  oracle {Sd.max(1).mean():.3f}")
    print(f"article benchmark ({len(Sa)} pages, 5-fold CV): trafilatura {Sa[:, 0].mean():.3f}  "
          f"union {Sa[:, 1].mean():.3f}  chosen {cv.mean():.3f}  oracle {Sa.max(1).mean():.3f}")
    Path(args.output).write_text(json.dumps(to_json(forest), separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
