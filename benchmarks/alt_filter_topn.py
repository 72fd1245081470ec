"""Effect of --drop-generated-alt on a ranked crawl of the test web: top-N shares against ground truth.

Usage: python benchmarks/alt_filter_topn.py RUN_DIR WEB_DIR [--top 20 50 100]

RUN_DIR is a crawl of the test web (e.g. from ``focuscrawl demo -o D``: D/run), WEB_DIR
its ground truth (D/web, ``truth_images.tsv.gz``). Prints, for the ranking without and
with the filter, the share of the top N whose image shows the topic and whose ALT
describes the image (the corpus-ready pairs of thesis Table 5.5).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import sys

from focuscrawl.altfilter import is_generated_alt
from focuscrawl.corpus import iter_entries
from focuscrawl.ranking import rank


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("web_dir")
    ap.add_argument("--top", type=int, nargs="+", default=[20, 50, 100])
    args = ap.parse_args()
    with gzip.open(f"{args.web_dir}/truth_images.tsv.gz", "rt", encoding="utf-8") as fh:
        truth = {r["url"]: r for r in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)}
    entries = list(iter_entries(args.run_dir))
    yes = lambda v: v in ("1", "True", "true")  # noqa: E731
    for name, filters in (("no filter", None), ("--drop-generated-alt", {"g": lambda e: is_generated_alt(e.alt)})):
        ranked = rank(entries, filters=filters)
        for n in args.top:
            top = [truth.get(e.image_url) for e in ranked[:n]]
            known = [t for t in top if t]
            shows = sum(yes(t["shows_topic"]) for t in known)
            describes = sum(yes(t["alt_describes"]) for t in known)
            both = sum(yes(t["shows_topic"]) and yes(t["alt_describes"]) for t in known)
            print(f"{name:22s} top {n:4d} ({len(known)} with truth): shows topic {shows / max(1, len(known)):.2f}, "
                  f"ALT describes {describes / max(1, len(known)):.2f}, both {both / max(1, len(known)):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
