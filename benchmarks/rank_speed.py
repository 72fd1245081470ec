"""Speed of ``focuscrawl rank`` on a thesis-sized image log, against a pandas baseline in the same run.

Usage: python benchmarks/rank_speed.py [--rows 50000] [--top 2500] [--workdir DIR]

(50,000 rows take ~350 MB of records; a temporary work directory is removed at the end.)

Writes a synthetic run directory with the crawl's own writer functions (images.tsv
rows and info records; image files for the top rows only), then times
(a) the baseline: pandas read_csv + score cut + drop_duplicates + sort + head, no
context texts; (b) ``rank`` + export in each format, which also reads the info record
of every exported image. Prints seconds and the ratio to the baseline.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from focuscrawl.cli import build_parser, main as cli  # noqa: E402
from focuscrawl.output.images import IMAGE_FIELDS, image_columns, image_row, sighting_of  # noqa: E402
from focuscrawl.output.tsv import row as tsv_row  # noqa: E402
from tests.support.runfixture import image_item  # noqa: E402


WORDS = ("cat", "dog", "grey", "tabby", "kitten", "sofa", "garden", "window", "sleeping", "playing", "red",
         "blanket", "chair", "table", "sun", "morning", "ball", "yarn", "basket", "floor", "old", "young")


def build(run: Path, rows: int, top: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    run.mkdir(parents=True, exist_ok=True)
    (run / "images").mkdir(exist_ok=True)
    png = b"\x89PNG\r\n\x1a\n" + bytes(200)  # bytes only; the export copies them as they are
    lines = ["\t".join(image_columns(5, 5))]
    for i in range(rows):
        url = f"http://host{rng.randrange(2000)}.example/img/{rng.randrange(rows * 2)}.jpg"  # some repeats
        score = 10 ** rng.uniform(0, 5.5)
        alt = " ".join(rng.choice(WORDS) for _ in range(8))  # distinct texts: few near-duplicates, as in a crawl
        item = image_item(url, score, alt=alt, first_seen=i,
                          image_path=f"images/{i}.png")
        if score < 3000:
            (run / item["image_path"]).write_bytes(png)
        record = {f: item.get(f) for f in IMAGE_FIELDS}
        record["sightings"] = [sighting_of(item)]
        path = run / item["record_path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
        lines.append(tsv_row(image_row(item, 5, 5)))
    (run / "images.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (run / "stats.json").write_text("{}")  # a crawl without a topic bundle: SPEC's ranking


def baseline(run: Path, top: int) -> int:
    df = pd.read_csv(run / "images.tsv", sep="\t", quoting=3, low_memory=False)
    df = df[(df.final_score >= 2) & (df.final_score <= 70000)]
    df = df.sort_values("first_seen").drop_duplicates("image_url").sort_values("final_score", kind="stable")
    return len(df.head(top))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50000)
    ap.add_argument("--top", type=int, default=2500)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    if args.workdir:
        return measure(Path(args.workdir), args)
    with tempfile.TemporaryDirectory(prefix="rank-speed-") as tmp:
        return measure(Path(tmp), args)


def measure(work: Path, args: argparse.Namespace) -> int:
    run = work / "run"
    t = time.perf_counter()
    build(run, args.rows, args.top)
    print(f"built {args.rows} rows in {time.perf_counter() - t:.1f}s ({run})")
    build_parser()  # import every command module once, outside the timings
    t = time.perf_counter()
    n = baseline(run, args.top)
    base = time.perf_counter() - t
    print(f"baseline pandas rank (no contexts): {base:.2f}s, {n} rows")
    for fmt in ("tsv", "jsonl", "parquet", "webdataset"):  # like the baseline: no near-duplicate collapse
        out = work / f"out.{fmt}"
        t = time.perf_counter()
        cli(["rank", str(run), "--top", str(args.top), "--keep-duplicates", "--format", fmt, "-o", str(out)])
        took = time.perf_counter() - t
        print(f"rank --keep-duplicates --format {fmt:10s} {took:.2f}s  ratio to baseline {took / base:.2f}")
    t = time.perf_counter()
    cli(["rank", str(run), "--top", str(args.top), "--format", "tsv", "-o", str(work / "out.tsv")])
    took = time.perf_counter() - t
    print(f"rank --format tsv (default: near-duplicates collapsed) {took:.2f}s  ratio to baseline {took / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
