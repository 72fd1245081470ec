"""Precision and recall of the auto-generated ALT filter on real, hand-labelled ALT texts.

Usage: python benchmarks/alt_filter_eval.py [--data ../shared/data] [--corpus dev|test] [--show]

``dev``: 1419 ALT texts of the article-extraction-benchmark pages and the WARCs, the set the
rules were tuned on (labels: alt_filter_labels.tsv). ``test``: 821 ALT texts of the
readability-pages, labelled after the rules were frozen (alt_filter_labels_test.tsv).

Counts over distinct ALT texts and over occurrences (an ALT repeated on many pages
counts each time). Labels: benchmarks/alt_filter_labels.tsv (see its header).
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from alt_texts import alt_key, collect_alts  # noqa: E402

from focuscrawl.altfilter import generated_alt_reason  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def read_labels(path: Path) -> dict[str, int]:
    labels = {}
    for line in path.read_text().splitlines():
        if line.startswith("#") or line.startswith("sha1\t") or not line.strip():
            continue
        key, value = line.split("\t")
        labels[key] = int(value)
    return labels


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--corpus", choices=("dev", "test"), default="test")
    ap.add_argument("--labels", help="label file (default: the one of --corpus)")
    ap.add_argument("--show", action="store_true", help="print false positives and false negatives")
    args = ap.parse_args()
    alts = collect_alts(args.data, args.corpus)
    default = "alt_filter_labels.tsv" if args.corpus == "dev" else "alt_filter_labels_test.tsv"
    labels = read_labels(Path(args.labels or ROOT / "benchmarks" / default))
    unlabelled = [a for a in alts if alt_key(a) not in labels]
    if unlabelled:
        print(f"warning: {len(unlabelled)} ALT texts have no label and are left out", file=sys.stderr)
    counts = {"distinct": Counter(), "occurrences": Counter()}
    rules = Counter()
    errors = []
    for alt, meta in alts.items():
        gold = labels.get(alt_key(alt))
        if gold is None:
            continue
        reason = generated_alt_reason(alt)
        pred = int(reason is not None)
        cell = {(1, 1): "tp", (0, 1): "fp", (1, 0): "fn", (0, 0): "tn"}[(gold, pred)]
        counts["distinct"][cell] += 1
        counts["occurrences"][cell] += meta["count"]
        if reason:
            rules[(reason, cell)] += 1
        if cell in ("fp", "fn"):
            errors.append((cell, reason or "-", alt))
    print(f"corpus {args.corpus}: ALT texts: {sum(counts['distinct'].values())} distinct, {sum(counts['occurrences'].values())} "
          f"occurrences; generated (gold): {counts['distinct']['tp'] + counts['distinct']['fn']} distinct")
    for name, c in counts.items():
        p, r, f = prf(c["tp"], c["fp"], c["fn"])
        print(f"{name:12s} precision {p:.3f}  recall {r:.3f}  F1 {f:.3f}  "
              f"(tp {c['tp']}, fp {c['fp']}, fn {c['fn']}, tn {c['tn']})")
    print("by rule (distinct): " + ", ".join(
        f"{rule} {rules[(rule, 'tp')]}/{rules[(rule, 'tp')] + rules[(rule, 'fp')]}"
        for rule in sorted({r for r, _ in rules})))
    if args.show:
        for cell, reason, alt in sorted(errors):
            print(f"{cell}\t{reason}\t{alt[:120]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
