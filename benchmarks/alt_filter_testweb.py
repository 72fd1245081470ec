"""Precision and recall of the auto-generated ALT filter against the test web's ground truth.

Usage: python benchmarks/alt_filter_testweb.py [--data ../shared/data] [--seed 1] [--scale 1.0]

The test web (focuscrawl.testweb) gives every image an ALT that is a real human
caption (COCO/Flickr8k), or a generated one: "Photo", a camera name ``DSC_<n>.JPG``
or a WordPress path ``wp-content-uploads-<y>-<m>-<stem>``. Gold "generated" = a
non-empty ALT that is not one of the photo's captions (``alt_describes`` false).
Synthetic and built to the same kinds the filter targets, so expect it easy; the
hand-labelled real ALT texts (alt_filter_eval.py) are the harder measure.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from focuscrawl.altfilter import generated_alt_reason
from focuscrawl.testweb.textpool import TextPool
from focuscrawl.testweb.web import TestWeb, WebConfig

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    web = TestWeb(TextPool.from_data(args.data), "cat", args.seed, WebConfig(scale=args.scale))
    _, images = web.truth()
    cells = Counter()
    errors = Counter()
    for img in images:
        alt = img["alt"]
        if not alt:
            continue
        gold = not img["alt_describes"]
        pred = generated_alt_reason(alt) is not None
        cells[(gold, pred)] += 1
        if gold != pred:
            errors[("fn" if gold else "fp", alt if not gold else alt.split("-")[0])] += 1
    tp, fp, fn, tn = cells[(True, True)], cells[(False, True)], cells[(True, False)], cells[(False, False)]
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    print(f"test web seed {args.seed} scale {args.scale}: {sum(cells.values())} images with a non-empty ALT, "
          f"{tp + fn} generated")
    print(f"precision {p:.3f}  recall {r:.3f}  (tp {tp}, fp {fp}, fn {fn}, tn {tn})")
    for (kind, alt), n in errors.most_common(10):
        print(f"{kind}\t{n}\t{alt[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
