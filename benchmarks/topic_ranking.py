"""Ranking ablation over several ``focuscrawl eval run`` folders: every scorer, mean and spread.

    python benchmarks/topic_ranking.py EVAL_DIR... [--json OUT] [--parts both,fallback]

Each EVAL_DIR is an ``eval run`` folder on the test web (``web/`` truth, ``runs/<mode>/``,
``eval.json`` naming its held-out topic bundle, or ``--bundle DIR``). The runs are re-ranked
under each scorer without recrawling (``focuscrawl.eval.ranking_ablation``). Prints per
run and, per ranking, the mean and (min, max) over runs of: average precision, share of
on-topic images kept by the default cut, top-N on-topic share (N = on-topic images found),
P@100, P@500; and each run's page harvest.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from focuscrawl.eval.crawl_metrics import Run, Truth  # noqa: E402
from focuscrawl.eval.ranking_ablation import ablation, summarize  # noqa: E402

METRICS = ("average_precision", "kept_on_topic_share", "top_n_share", "p@100", "p@500")


def _f(v) -> str:
    return "  -  " if v is None else f"{v:.3f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", type=Path)
    p.add_argument("--bundle", type=Path, help="topic bundle for every folder (default: each eval.json's)")
    p.add_argument("--parts", default="both", help="image part rules, comma-separated (both, fallback, ...)")
    p.add_argument("--json", type=Path, help="write every row and the summary here")
    args = p.parse_args(argv)
    results, per_run = [], {}
    for folder in args.folders:
        meta = json.loads((folder / "eval.json").read_text())
        bundle = args.bundle or (folder / meta["topic_bundle"] if meta.get("topic_bundle") else None)
        truth = Truth.load(folder / "web")
        for run_dir in sorted((folder / "runs").iterdir()):
            run = Run.load(run_dir)
            harvest = sum(truth.page_on_topic(r["url"]) for r in run.pages) / max(1, len(run.pages))
            rows = ablation(run_dir, lambda url: truth.image(url)[0], bundle, parts=args.parts.split(","),
                            pages={r["url"] for r in run.pages})
            name = f"{folder.name}/{run_dir.name}"
            per_run[name] = {"page_harvest": harvest, "rows": rows}
            results.append(rows)
            first = next(iter(rows.values()))
            print(f"\n{name}: {len(run.pages)} pages, harvest {harvest:.3f}, {first['on_topic']} of "
                  f"{first['images']} images on topic")
            print(f"  {'ranking':<28}" + "".join(f"{m:>21}" for m in METRICS))
            for rname, r in rows.items():
                print(f"  {rname:<28}" + "".join(f"{_f(r[m]):>21}" for m in METRICS))
    summary = summarize(results)
    print(f"\nmean (min, max) over {len(results)} runs")
    print(f"  {'ranking':<28}" + "".join(f"{m:>21}" for m in METRICS))
    for rname, row in summary.items():
        cells = [f"{row[m]['mean']:.3f} ({row[m]['min']:.2f},{row[m]['max']:.2f})" if m in row else "-"
                 for m in METRICS]
        print(f"  {rname:<28}" + "".join(f"{c:>21}" for c in cells))
    if args.json:
        args.json.write_text(json.dumps({"runs": per_run, "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
