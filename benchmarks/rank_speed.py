"""Speed of ``focuscrawl rank`` on a thesis-sized image log, against a pandas baseline in the same run.

Usage: python benchmarks/rank_speed.py [--rows 50000] [--top 2500] [--jobs 1 2] [--workdir DIR]

Each ``rank`` runs as its own process, as a user runs it; its peak RSS and its image
workers' are read from /proc (Linux).

(50,000 rows take ~350 MB of records; a temporary work directory is removed at the end.)

Writes a synthetic run directory with the crawl's own writer functions (images.tsv
rows and info records; image files for the top rows only), then times
(a) the baseline: pandas read_csv + score cut + drop_duplicates + sort + head, no
context texts; (b) ``rank`` + export in each format, which also reads the info record
of every exported image; the formats with image bytes (WebDataset, Parquet
``--embed-images``) re-encode every image (a 400 x 300 photo-like JPEG) on ``--jobs``
worker processes, as downloaded and at ``--image-size 256``. Prints seconds and the ratio
to the baseline.
"""
from __future__ import annotations

import argparse
import io
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from focuscrawl.output.images import IMAGE_FIELDS, image_columns, image_row, sighting_of  # noqa: E402
from focuscrawl.output.tsv import row as tsv_row  # noqa: E402
from tests.support.runfixture import image_item  # noqa: E402


WORDS = ("cat", "dog", "grey", "tabby", "kitten", "sofa", "garden", "window", "sleeping", "playing", "red",
         "blanket", "chair", "table", "sun", "morning", "ball", "yarn", "basket", "floor", "old", "young")


def build(run: Path, rows: int, top: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    run.mkdir(parents=True, exist_ok=True)
    (run / "images").mkdir(exist_ok=True)
    jpeg = photo_jpeg()
    lines = ["\t".join(image_columns(5, 5))]
    for i in range(rows):
        url = f"http://host{rng.randrange(2000)}.example/img/{rng.randrange(rows * 2)}.jpg"  # some repeats
        score = 10 ** rng.uniform(0, 5.5)
        alt = " ".join(rng.choice(WORDS) for _ in range(8))  # distinct texts: few near-duplicates, as in a crawl
        item = image_item(url, score, alt=alt, first_seen=i, image_path=f"images/{i}.jpg")
        if score < 3000:
            (run / item["image_path"]).write_bytes(jpeg)
        record = {f: item.get(f) for f in IMAGE_FIELDS}
        record["sightings"] = [sighting_of(item)]
        path = run / item["record_path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
        lines.append(tsv_row(image_row(item, 5, 5)))
    (run / "images.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (run / "stats.json").write_text("{}")  # a crawl without a topic bundle: SPEC's ranking


def photo_jpeg(size=(400, 300)) -> bytes:
    """A smooth gradient with noise: decodes and encodes like a photo, not like a flat placeholder."""
    import numpy as np
    from PIL import Image

    y, x = np.mgrid[0:size[1], 0:size[0]]
    noise = np.random.default_rng(1).integers(0, 40, (size[1], size[0], 3))
    pixels = np.stack([x * 255 // size[0], y * 255 // size[1], (x + y) * 255 // sum(size)], axis=-1) + noise
    buf = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype("uint8"), "RGB").save(buf, "JPEG", quality=90)
    return buf.getvalue()


class PeakMemory(threading.Thread):
    """Peak RSS (VmHWM, from /proc; sampled every 20 ms) of a process and of its child processes."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_self = self.peak_child = 0.0
        self._stop_event = threading.Event()

    @staticmethod
    def _hwm(pid: int | str) -> float:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB -> MiB
        except OSError:
            pass
        return 0.0

    def run(self) -> None:
        while not self._stop_event.wait(0.02):
            self.peak_self = max(self.peak_self, self._hwm(self.pid))
            try:
                children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
            except OSError:
                continue
            # a child counts once it runs its own program (before exec it shares the parent's pages)
            workers = [c for c in children if b"spawn_main" in self._cmdline(c)]
            self.peak_child = max([self.peak_child] + [self._hwm(c) for c in workers])

    @staticmethod
    def _cmdline(pid: str) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return b""

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def baseline(run: Path, top: int) -> int:
    df = pd.read_csv(run / "images.tsv", sep="\t", quoting=3, low_memory=False)
    df = df[(df.final_score >= 2) & (df.final_score <= 70000)]
    df = df.sort_values("first_seen").drop_duplicates("image_url").sort_values("final_score", kind="stable")
    return len(df.head(top))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50000)
    ap.add_argument("--top", type=int, default=2500)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="worker processes of the image exports")
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
    t = time.perf_counter()
    n = baseline(run, args.top)
    base = time.perf_counter() - t
    print(f"baseline pandas rank (no contexts): {base:.2f}s, {n} rows")
    # like the baseline, no near-duplicate collapse; the default collapse timed apart, last
    runs = [["--format", fmt, "--keep-duplicates"] for fmt in ("tsv", "jsonl", "parquet")]
    for jobs in args.jobs:
        for images in (["--format", "webdataset"], ["--format", "parquet", "--embed-images"]):
            runs += [images + ["--jobs", str(jobs), "--keep-duplicates"],
                     images + ["--jobs", str(jobs), "--image-size", "256", "--keep-duplicates"]]
    runs.append(["--format", "tsv"])  # the default: near-duplicates collapsed
    for i, options in enumerate(runs):
        out = work / f"out{i}"
        t = time.perf_counter()
        # the command as a user runs it (its own process: its image workers import what it imports)
        proc = subprocess.Popen([sys.executable, "-m", "focuscrawl.cli", "rank", str(run), "--top", str(args.top),
                                 *options, "--json", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        memory = PeakMemory(proc.pid)
        memory.start()
        summary, _ = proc.communicate()
        memory.stop()
        took = time.perf_counter() - t
        written = json.loads(summary)["written"]
        print(f"rank {' '.join(options):52s} {took:6.2f}s  ratio to baseline {took / base:5.2f}  {written} written"
              f"  peak RSS: rank {memory.peak_self:.0f} MiB, largest image worker {memory.peak_child:.0f} MiB")
    print("(each rank is a subprocess: the times include its start-up, ~0.5 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
