"""Mode ``learning``'s page judge on hard webs with a user's small neutral corpus: how many of
the crawl's pages it calls on topic (stat ``focuscrawl/learning/judged_on_topic``) against how
many are (the web's truth), and its precision and recall per page.

For each topic the bundle is built as a user would (``focuscrawl topic build --positive ...
--neutral ...``): positive = the topic's held-out captions and Wikipedia lead (``focuscrawl
testweb heldout-corpus``), neutral = K Wikipedia leads of the shared data, none about an
animal or a sport (so none about the web's look-alike neighbour topic), chosen by a fixed
shuffle; K = ``--sizes``. Then one ``focuscrawl eval run --profile hard --heldout`` per
topic, size and web seed, with the bundle's LM and keywords as the crawl's model, one crawl
at a time. Prints one row per run and the mean, min and max per size and overall.

    python benchmarks/judge_user_corpora.py --data ../shared/data -o /tmp/judge-eval \\
        [--topics cat tennis] [--seeds 1 2] [--sizes 3 8 24] [--budget 1000] [-s NAME=VALUE ...]

Run it with another checkout first on ``PYTHONPATH`` to measure that code (the crawls are
subprocesses and inherit it); ``--label`` keeps the runs of each apart in ``-o``.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

#: leads about the look-alike topics of the hard webs (animals, sports) are never neutral
NOT_NEUTRAL = {"Cat", "Dog", "Elephant", "Lion", "Tiger", "Game", "Sport", "Football", "Association football",
               "Basketball", "Baseball", "Tennis", "Golf", "Swimming", "Team", "Player", "Coach", "Champion"}
SHUFFLE_SEED = 45


def neutral_corpus(data: Path, k: int, out: Path) -> list[Path]:
    """``k`` Wikipedia leads (one file each), the first ``k`` of a fixed shuffle of the eligible ones."""
    leads = json.loads((data / "wiki" / "animal_leads.json").read_text())["animals"]
    seen: dict[str, str] = {}
    for lead in leads:
        if lead["title"] not in NOT_NEUTRAL:
            seen.setdefault(lead["title"], lead["content"])
    titles = sorted(seen)
    random.Random(SHUFFLE_SEED).shuffle(titles)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for title in titles[:k]:
        path = out / (title.replace(" ", "_").replace("/", "_") + ".txt")
        path.write_text(seen[title])
        files.append(path)
    return files


def focuscrawl(*args: str) -> list[str]:
    return [sys.executable, "-m", "focuscrawl.cli", *args]


def run(cmd: list[str], log: Path) -> None:
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}; see {log}")


def judged_pages(run_dir: Path) -> dict[str, bool] | None:
    """The judge's call per page URL (``judged.tsv``; ``None`` when the crawl wrote none)."""
    path = run_dir / "judged.tsv"
    if not path.exists():
        return None
    with open(path, newline="") as fh:
        return {r["url"]: r["on_topic"] == "1" for r in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)}


def replayed_calls(run_dir: Path, folder: Path, cut: float = 0.6) -> dict[str, bool]:
    """A stateless judge's calls replayed from the run's sentences (a crawl that wrote no
    ``judged.tsv``): the bundle's page log-odds of each page's logged sentences, on topic from
    ``cut``; a near-duplicate is off topic, as in the crawl."""
    from focuscrawl.topic.model import TopicModel, sigmoid

    meta = json.loads((folder / "eval.json").read_text())
    model = TopicModel(folder / meta["topic_bundle"])
    with open(run_dir / "pages.tsv", newline="") as fh:
        pages = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    with gzip.open(run_dir / "sentences.txt.gz", "rt", encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh]
    calls, i = {}, 0
    for page in pages:
        n = int(page["sentences"] or 0)
        if n:
            z = model.page_logit(lines[i:i + n])
            calls[page["url"]] = sigmoid(z) >= cut and not page["near_duplicate_of"]
        i += n
    return calls


def mode_harvests(folder: Path, modes: list[str]) -> dict[str, float]:
    """``{mode: image harvest}`` of each mode's run in ``folder`` against the web's truth."""
    from focuscrawl.eval.oracle import PageTruth, harvest_of

    truth = PageTruth.load(folder / "web")
    out = {}
    for mode in modes:
        with open(folder / "runs" / mode / "pages.tsv", newline="") as fh:
            urls = [r["url"] for r in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)]
        out[mode] = harvest_of(urls, truth)["image_harvest"]
    return out


def measure(folder: Path) -> dict:
    """Judged and true on-topic shares of the learning run in ``folder``; precision and recall of
    the judge's calls when the run recorded them."""
    run_dir = folder / "runs" / "learning"
    stats = json.loads((run_dir / "stats.json").read_text())
    on = stats.get("focuscrawl/learning/judged_on_topic", 0)
    off = stats.get("focuscrawl/learning/judged_off_topic", 0)
    with gzip.open(folder / "web" / "truth_pages.tsv.gz", "rt", newline="") as fh:
        truth = {r["url"]: r["on_topic"] == "1" for r in csv.DictReader(fh, delimiter="\t")}
    with open(run_dir / "pages.tsv", newline="") as fh:
        urls = [r["url"] for r in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)]
    from focuscrawl.eval.oracle import PageTruth, harvest_of

    true_on = sum(truth.get(u, False) for u in urls)
    harvest = harvest_of(urls, PageTruth.load(folder / "web"))
    oracle = json.loads((folder / "eval.json").read_text())["web"]["oracle"]["link_oracle"]["image_harvest"]
    row = {"judged_share": on / (on + off) if on + off else None, "truth_share": true_on / len(urls),
           "pages": len(urls), "judged": on + off, "precision": None, "recall": None,
           "image_harvest": harvest["image_harvest"], "link_oracle_image_harvest": oracle,
           "implausible_warning": bool(stats.get("focuscrawl/learning/judge_implausible"))}
    calls = judged_pages(run_dir) or replayed_calls(run_dir, folder)
    if calls:
        tp = sum(v and truth.get(u, False) for u, v in calls.items())
        called = sum(calls.values())
        positives = sum(truth.get(u, False) for u in calls)
        row.update(precision=tp / called if called else None, recall=tp / positives if positives else None)
    return row


def summary(values: list[float | None]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.mean(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("-o", "--output", type=Path, required=True)
    p.add_argument("--label", default="current", help="sub-folder of the runs (one per code measured)")
    p.add_argument("--topics", nargs="+", default=["cat", "tennis"])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    p.add_argument("--sizes", nargs="+", type=int, default=[3, 8, 24],
                   help="neutral corpora: this many Wikipedia leads (0: no --neutral, the bundled background)")
    p.add_argument("--budget", type=int, default=1000)
    p.add_argument("--modes", nargs="+", default=["learning"])
    p.add_argument("--repeats", type=int, default=0,
                   help="also this many repeated runs of each seed as a user runs them (not --deterministic)")
    p.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--no-background", action="store_true",
                   help="bundles of the neutral leads alone (topic build --no-background: a web unlike the background)")
    args = p.parse_args(argv)
    data, work = args.data.resolve(), args.output.resolve()
    root = work / args.label
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for topic in args.topics:
        corpus = work / f"corpus-{topic}"
        if not corpus.exists():
            run(focuscrawl("testweb", "heldout-corpus", "--data", str(data), "--topic", topic, "-o", str(corpus)),
                work / f"corpus-{topic}.log")
        positive = sorted(str(f) for f in (corpus / "positive").iterdir())
        for size in args.sizes:
            bundle = root / f"bundle-{topic}-{size}"
            if not (bundle / "bundle.json").exists():
                neutral = [str(f) for f in neutral_corpus(data, size, work / f"neutral-{size}")] if size else []
                cmd = focuscrawl("topic", "build", "--positive", *positive, "-o", str(bundle))
                cmd += (["--neutral", *neutral] if neutral else []) + (["--no-background"] if args.no_background else [])
                run(cmd, root / f"bundle-{topic}-{size}.log")
            for seed in args.seeds:
                for repeat in range(args.repeats + 1):
                    name = f"{topic}-n{size}-s{seed}" + (f"-r{repeat}" if repeat else "")
                    folder = root / name
                    if not (folder / "eval.json").exists():
                        cmd = focuscrawl("eval", "run", "--data", str(data), "--profile", "hard", "--heldout",
                                         "--topic", topic, "--seed", str(seed), "--budget", str(args.budget),
                                         "--modes", *args.modes,
                                         "--model", str(bundle / json.loads((bundle / "bundle.json").read_text())["topic_lm"]),
                                         "--keywords", str(bundle / "keywords.txt"), "--topic-bundle", str(bundle),
                                         "-o", str(folder))
                        cmd += [] if repeat else ["--deterministic"]
                        for item in args.set:
                            cmd += ["-s", item]
                        run(cmd, root / f"{name}.log")
                    row = dict(topic=topic, size=size, seed=seed, repeat=repeat, **measure(folder),
                               harvest=mode_harvests(folder, args.modes))
                    rows.append(row)
                    others = ", ".join(f"{m} {h:.3f}" for m, h in row["harvest"].items() if m != "learning")
                    print(f"{topic:8} neutral {size:3} leads  seed {seed} run {repeat}: judged on topic "
                          f"{row['judged_share']:.3f}, truly {row['truth_share']:.3f} "
                          f"(error {row['judged_share'] - row['truth_share']:+.3f}); precision "
                          f"{row['precision'] if row['precision'] is None else round(row['precision'], 3)}, recall "
                          f"{row['recall'] if row['recall'] is None else round(row['recall'], 3)}; image harvest "
                          f"{row['image_harvest']:.3f} (link oracle {row['link_oracle_image_harvest']:.3f}"
                          f"{'; ' + others if others else ''})", flush=True)
    (root / "judge.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\nmean (min-max) per neutral size:")
    print("| neutral leads | runs | judged on topic | truly on topic | error | precision | recall | image harvest / link oracle |")
    print("|---|---|---|---|---|---|---|---|")
    for size in [*args.sizes, "all"]:
        sel = [r for r in rows if size == "all" or r["size"] == size]
        print(f"| {size} | {len(sel)} | {summary([r['judged_share'] for r in sel])} | "
              f"{summary([r['truth_share'] for r in sel])} | "
              f"{summary([r['judged_share'] - r['truth_share'] for r in sel])} | "
              f"{summary([r['precision'] for r in sel])} | {summary([r['recall'] for r in sel])} | "
              f"{summary([r['image_harvest'] / r['link_oracle_image_harvest'] for r in sel])} |")
    for mode in args.modes:
        if mode != "learning":
            ratios = [r["harvest"][mode] / r["link_oracle_image_harvest"] for r in rows]
            print(f"{mode}: image harvest / link oracle {summary(ratios)}; learning / {mode} "
                  f"{summary([r['image_harvest'] / r['harvest'][mode] for r in rows if r['harvest'][mode]])}")
    for key in sorted({(r["topic"], r["size"], r["seed"]) for r in rows if r["repeat"]}):
        runs = [r["image_harvest"] for r in rows if (r["topic"], r["size"], r["seed"]) == key]
        print(f"repeated runs {key}: learning image harvest {', '.join(f'{v:.3f}' for v in runs)} "
              f"(spread {max(runs) - min(runs):.3f})")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
