"""ARC vs WARC parity: the same 2008 crawl stored both ways must give the same outputs.

    python benchmarks/warc_parity.py [--data ../shared/data] [--out DIR]

Runs ``focuscrawl warc`` over ``warc/archive-it-2008.warc.gz`` and
``warc/archive-it-2008.arc.gz`` with relaxed image rules (the 2008 pages have few
images with size attributes ≥ 512x384, so the thesis rules would leave almost
nothing to compare), then compares pages (URL, size, perplexity, sentences) and
images (URL, bytes, size, every score column, every sighting's texts and context
scores). Order-dependent fields (first_seen, fetched_at, depth) are ignored.
Prints one JSON summary; exit 1 on any difference.
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RELAXED = ["FOCUSCRAWL_IMAGE_KICK_UNSPECIFIED=False", "FOCUSCRAWL_IMAGE_MIN_WIDTH=0",
           "FOCUSCRAWL_IMAGE_MIN_HEIGHT=0", "FOCUSCRAWL_PROGRESS_INTERVAL=0", "LOG_LEVEL=WARNING"]
IGNORED = {"first_seen", "fetched_at", "depth", "page_depth"}


def run(archive: Path, out: Path) -> float:
    cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", str(archive), "-o", str(out)]
    for s in RELAXED:
        cmd += ["-s", s]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"focuscrawl warc {archive} failed:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - t


def table(path: Path, key: str) -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {r[key]: {k: v for k, v in r.items() if k not in IGNORED} for r in csv.DictReader(fh, delimiter="\t")}


def records(out: Path) -> dict[str, dict]:
    result = {}
    for path in (out / "records").glob("*/*.json"):
        rec = json.loads(path.read_text())
        sightings = sorted((json.dumps({k: v for k, v in s.items() if k not in IGNORED}, sort_keys=True)
                            for s in rec.pop("sightings")))
        result[rec["image_url"]] = {**{k: v for k, v in rec.items() if k not in IGNORED}, "sightings": sightings}
    return result


def diff(a: dict, b: dict) -> dict:
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    return {"only_first": only_a, "only_second": only_b, "different": changed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    parser.add_argument("--out", help="keep both run directories here (default: a temporary folder, removed)")
    args = parser.parse_args()
    tmp = None if args.out else tempfile.TemporaryDirectory(prefix="focuscrawl-warc-parity-")  # removed at exit
    data, out = Path(args.data) / "warc", Path(args.out or tmp.name)
    runs = {}
    for kind in ("warc", "arc"):
        target = out / kind
        if target.exists():
            import shutil
            shutil.rmtree(target)
        runs[kind] = run(data / f"archive-it-2008.{kind}.gz", target)
    pages = [table(out / k / "pages.tsv", "url") for k in ("warc", "arc")]
    images = [table(out / k / "images.tsv", "image_url") for k in ("warc", "arc")]
    recs = [records(out / k) for k in ("warc", "arc")]
    summary = {
        "seconds": {k: round(v, 1) for k, v in runs.items()},
        "pages": [len(p) for p in pages], "images": [len(i) for i in images],
        "sightings": [sum(len(r["sightings"]) for r in rs.values()) for rs in recs],
        "pages_diff": diff(*pages), "images_diff": diff(*images), "records_diff": diff(*recs),
    }
    same = all(not any(d.values()) for d in (summary["pages_diff"], summary["images_diff"], summary["records_diff"]))
    summary["identical"] = same
    print(json.dumps(summary, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
