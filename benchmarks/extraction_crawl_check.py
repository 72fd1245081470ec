"""The crawl with two page-text extractors, side by side (issue #25's crawl re-check).

    for t in cat dog; do for e in auto trafilatura; do
      focuscrawl eval run --data ../shared/data --topic $t --seed 1 2 3 --budget 400 --deterministic \
          --modes document keywords -s FOCUSCRAWL_TEXT_EXTRACTOR=$e -o check/$t-$e
      focuscrawl eval report check/$t-$e --top-n 100; done; done
    python benchmarks/extraction_crawl_check.py check --old auto --new trafilatura

Prints, per mode, topic and seed, each extractor's page harvest, on-topic images, top-n
on-topic share and final focus (mean sentence perplexity of the crawl's text, lower = more
on topic), then mean ± sd over the webs and the paired differences (new − old).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

METRICS = ("page harvest", "on-topic images", "top-n on-topic", "final focus (PP)")
DIGITS = (3, 1, 3, 2)


def run_metrics(summary: dict, mode: str) -> tuple[float, ...]:
    run = summary["runs"][mode]
    return (run["harvest"]["page_harvest"], run["harvest"]["on_topic_images"], run["top_n"]["on_topic"],
            run["focus_curve"][-1][1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="folder of <topic>-<extractor>/seed-<n>/report/summary.json")
    ap.add_argument("--old", default="auto")
    ap.add_argument("--new", default="trafilatura")
    ap.add_argument("--modes", nargs="+", default=["document", "keywords"])
    args = ap.parse_args(argv)
    root = Path(args.folder)
    for mode in args.modes:
        print(f"\n{mode} mode\n")
        print("| topic | seed | extractor | " + " | ".join(METRICS) + " |")
        print("|---|---|---|" + "---|" * len(METRICS))
        values: dict[str, list[tuple[float, ...]]] = {args.old: [], args.new: []}
        for old_dir in sorted(root.glob(f"*-{args.old}")):
            topic = old_dir.name[: -len(args.old) - 1]
            for summary_path in sorted(old_dir.glob("seed-*/report/summary.json")):
                seed = summary_path.parts[-3]
                new_path = root / f"{topic}-{args.new}" / seed / "report" / "summary.json"
                if not new_path.is_file():
                    continue
                for name, path in ((args.old, summary_path), (args.new, new_path)):
                    m = run_metrics(json.loads(path.read_text(encoding="utf-8")), mode)
                    values[name].append(m)
                    print(f"| {topic} | {seed[5:]} | {name} | {m[0]:.3f} | {m[1]:.0f} | {m[2]:.3f} | {m[3]:.1f} |")
        n = len(values[args.old])
        if n < 2:
            print("fewer than two webs with both extractors", file=sys.stderr)
            continue
        for name, rows in values.items():
            cells = [f"{statistics.mean(c):.{d}f} ± {statistics.stdev(c):.{d}f}" for c, d in zip(zip(*rows), DIGITS)]
            print(f"| mean ± sd | {n} webs | {name} | " + " | ".join(cells) + " |")
        diffs = [[b - a for a, b in zip(o, w)] for o, w in zip(values[args.old], values[args.new])]
        print(f"\npaired {args.new} − {args.old}, mean (min … max): " + "; ".join(
            f"{metric} {statistics.mean(c):+.{d}f} ({min(c):+.{d}f} … {max(c):+.{d}f})"
            for metric, c, d in zip(METRICS, zip(*diffs), DIGITS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
