"""Digests of a crawl's outputs on deterministic test webs: a refactoring keeps them byte-identical.

    python benchmarks/golden_outputs.py save /tmp/golden-before      # on the old code
    python benchmarks/golden_outputs.py compare /tmp/golden-before   # on the new code

Each case crawls the demo's offline test web (bundled model, keywords and cats bundle) one
request at a time (the same web gives the same crawl order), in every crawl mode and on two
web seeds, plus one crawl stopped by its page budget and resumed from its JOBDIR. The digest
of each output file is taken after masking what depends on the clock or the machine: stats
of times, memory and rates, the checkout's path, and the ``*_time``/``*seconds`` fields and columns. ``compare``
prints every file whose digest differs, with its first differing line, and exits 1.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

from focuscrawl.demo import demo_web
from focuscrawl.eval.crawls import run_crawl
from focuscrawl.output.files import LOCK_FILE
from focuscrawl.resources import default_topic_path
from focuscrawl.testweb.server import TestWebServer

CHECKOUT = str(Path(__file__).resolve().parent.parent)
MODES = ("keywords", "document", "unfocused", "learning")
SEEDS = (1, 2)
BUDGET = 60
# stats that depend on the clock, the machine or the Python process, not on the crawl
CLOCK_STAT = re.compile(r"(time|seconds|elapsed|memusage|per_minute|/rss|_ms$|/ms/|latency|log_count/)")
CLOCK_FIELD = re.compile(r"(^|_)(time|seconds|fetched_at|crawled_at|timestamp|elapsed)($|_)|^first_seen$|^sessions$|^started$")
# not compared: the log (timestamps on every line) and the run directory's lock (the process holding it)
SKIPPED = {"crawl.log", LOCK_FILE}
# written as image downloads complete (several at a time even with one request at a time):
# their rows are compared as sets, the download counter ``first_seen`` masked
UNORDERED = {"images.tsv", "sightings.log"}


def cases() -> list[tuple[str, int, list[str]]]:
    out = [(mode, seed, []) for seed in SEEDS for mode in MODES]
    out.append(("keywords-text-extractor-auto", 1, ["FOCUSCRAWL_TEXT_EXTRACTOR=auto"]))
    return out


def crawl_case(name: str, seed: int, extra: list[str], folder: Path) -> Path:
    mode = name.split("-")[0]
    web = demo_web(seed)
    bundle = default_topic_path()
    settings = ["FOCUSCRAWL_LINKS_LOG=True", f"FOCUSCRAWL_TOPIC={bundle}", "FOCUSCRAWL_ANALYSIS_WORKERS=1", *extra]
    out = folder / f"{name}-seed{seed}"
    with TestWebServer(web, slow_factor=0) as server:
        run_crawl(mode, web.seeds(), out, BUDGET, proxy=server.proxy, deterministic=True, extra_settings=settings)
    return out


def resumed_case(folder: Path) -> Path:
    """The same keywords crawl stopped by a first budget and resumed from its JOBDIR to the second."""
    web = demo_web(1)
    out, job = folder / "keywords-resumed-seed1", folder / "job-resumed"
    settings = ["FOCUSCRAWL_LINKS_LOG=True", f"FOCUSCRAWL_TOPIC={default_topic_path()}", f"JOBDIR={job}"]
    with TestWebServer(web, slow_factor=0) as server:
        for budget in (BUDGET // 2, BUDGET):
            run_crawl("keywords", web.seeds(), out, budget, proxy=server.proxy, deterministic=True,
                      extra_settings=settings)
    return out


def _mask_json(value):
    if isinstance(value, dict):
        return {k: ("<masked>" if CLOCK_FIELD.search(k) else _mask_json(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_json(v) for v in value]
    return value


def normalised_lines(path: Path) -> list[str]:
    """The file's content as lines, with clock-dependent values masked."""
    lines = _normalised(path)
    return [lines[0], *sorted(lines[1:])] if path.name in UNORDERED and lines else lines


def _stats_line(stats: dict) -> str:
    # paths of the checkout (the bundled topic bundle) are written relative to it: the same
    # code in another worktree gives the same digests
    return "\t".join(f"{k}={str(v).replace(CHECKOUT, '<checkout>')}" for k, v in sorted(stats.items())
                     if not CLOCK_STAT.search(k))


def _normalised(path: Path) -> list[str]:
    if path.name == "stats.json":
        return _stats_line(json.loads(path.read_text())).split("\t")
    if path.name == "stats.sessions.jsonl":
        return [_stats_line(json.loads(line)) for line in path.read_text().splitlines()]
    if path.suffix == ".json":
        return json.dumps(_mask_json(json.loads(path.read_text())), sort_keys=True, indent=0).splitlines()
    if path.name.endswith(".gz"):
        return gzip.decompress(path.read_bytes()).decode("utf-8", "replace").splitlines()
    if path.suffix == ".tsv":
        lines = path.read_text().splitlines()
        if not lines:
            return lines
        header = lines[0].split("\t")
        masked = {i for i, name in enumerate(header) if CLOCK_FIELD.search(name)}
        return [lines[0]] + ["\t".join("<masked>" if i in masked else cell for i, cell in enumerate(row.split("\t")))
                             for row in lines[1:]]
    if path.name == "sightings.log":
        return ["", *path.read_text().splitlines()]
    return [hashlib.sha256(path.read_bytes()).hexdigest()]


def digests(run: Path) -> dict[str, dict]:
    result = {}
    for path in sorted(p for p in run.rglob("*") if p.is_file()):
        if path.name in SKIPPED:
            continue
        lines = normalised_lines(path)
        result[str(path.relative_to(run))] = {
            "sha256": hashlib.sha256("\n".join(lines).encode()).hexdigest(), "lines": lines[:2000]}
    return result


def run_all(folder: Path) -> dict[str, dict]:
    runs = [crawl_case(name, seed, extra, folder) for name, seed, extra in cases()]
    runs.append(resumed_case(folder))
    return {run.name: digests(run) for run in runs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("save", "compare"))
    ap.add_argument("golden", type=Path, help="folder of the saved digests")
    ap.add_argument("--keep", type=Path, help="keep the crawls' run directories here")
    args = ap.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        now = run_all(args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="focuscrawl-golden-") as folder:
            now = run_all(Path(folder))
    manifest = args.golden / "digests.json"
    if args.action == "save":
        args.golden.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(now, indent=1, sort_keys=True))
        print(f"saved the digests of {sum(len(v) for v in now.values())} files of {len(now)} crawls to {manifest}")
        return 0
    before = json.loads(manifest.read_text())
    differ = 0
    for run in sorted(set(before) | set(now)):
        old, new = before.get(run, {}), now.get(run, {})
        for name in sorted(set(old) | set(new)):
            if name not in old or name not in new:
                differ += 1
                print(f"{run}/{name}: only {'before' if name in old else 'now'}")
            elif old[name]["sha256"] != new[name]["sha256"]:
                differ += 1
                first = next((i for i, (a, b) in enumerate(zip(old[name]["lines"], new[name]["lines"])) if a != b),
                             min(len(old[name]["lines"]), len(new[name]["lines"])))
                a = old[name]["lines"][first] if first < len(old[name]["lines"]) else "<end>"
                b = new[name]["lines"][first] if first < len(new[name]["lines"]) else "<end>"
                print(f"{run}/{name}: line {first + 1}\n  before: {a[:300]}\n  now:    {b[:300]}")
    files = sum(len(v) for v in now.values())
    print(f"{files} files of {len(now)} crawls: {'all identical' if not differ else f'{differ} differ'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
