"""Speed and peak memory of ``focuscrawl train-lm`` at corpus scale.

Two corpora of normalised sentences, written to a temporary folder (never the repo):

* **real**: every real sentence of the shared data (captions, Wikipedia leads,
  CLEANEVAL gold; shuffled with ``--seed``), about 2.4M tokens;
* **generated**: ``--tokens`` running words (default 30M) from a seeded recombiner:
  each sentence joins 2-4 fragments of 2-8 consecutive words cut from random real
  sentences, so n-grams across fragment joins are new, as in a larger real corpus
  (about as many distinct n-grams per token as the real corpus).

Each training runs in its own process, which reports its wall time and peak RSS (its
own and the largest of its worker processes); the benchmark samples the memory of the
whole process tree (PSS, every 0.1 s), the number held against the budget:

1. *baseline*: today's in-memory trainer (``estimate`` + ``write_arpa``) on the real corpus;
2. *bounded*: ``train_lm`` with ``--memory`` on the real corpus (same ARPA, checked);
3. *bounded* on the generated corpus;
4. the baseline again (the machine is shared: two baselines show the drift).

Targets: the generated run's peak memory (process tree) stays under the budget
and its time per million tokens is no worse than the mean of the two baselines'.

    python benchmarks/train_lm.py [--data ../shared/data] [--tokens 30000000] [--memory 2G]
        [--order 5] [--seed 13] [--jobs N] [--tmpdir /tmp] [--skip-big]
"""
from __future__ import annotations

import argparse
import filecmp
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from lm_corpus import DEFAULT_DATA, real_sentences

from focuscrawl.lm.external import parse_memory


def recombine(sentences: list[str], n_tokens: int, seed: int, path: Path) -> tuple[int, int]:
    """Write sentences made of 2-4 random fragments (2-8 words) of real sentences until
    ``n_tokens`` words are written; returns (sentences, tokens)."""
    rng = np.random.default_rng(seed)
    words: list[str] = []
    starts = []
    for s in sentences:
        starts.append(len(words))
        words.extend(s.split())
    starts.append(len(words))
    starts_a = np.asarray(starts)
    lengths = np.diff(starts_a)
    n_sent = written = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < n_tokens:
            batch = 100_000
            parts = rng.integers(2, 5, batch)
            src = rng.integers(0, len(lengths), int(parts.sum()))
            flen = np.minimum(lengths[src], rng.integers(2, 9, len(src)))
            fstart = starts_a[src] + (rng.random(len(src)) * (lengths[src] - flen + 1)).astype(np.int64)
            ends = np.cumsum(parts)
            lines = []
            lo = 0
            for hi in ends.tolist():
                lines.append(" ".join(w for a, n in zip(fstart[lo:hi].tolist(), flen[lo:hi].tolist())
                                      for w in words[a:a + n]))
                lo = hi
            written += int(flen.sum())
            n_sent += batch
            fh.write("\n".join(lines))
            fh.write("\n")
    return n_sent, written


def run_one(trainer: str, corpus: str, output: str, order: int, memory: str, jobs: int) -> None:
    """In a child process: train, then print one JSON line of time, counts and peak RSS."""
    t0 = time.perf_counter()
    if trainer == "baseline":
        from focuscrawl.lm.train import estimate, normalized_lines, write_arpa
        model = estimate(list(normalized_lines(corpus)), order)
        write_arpa(model, output)
    else:
        import logging
        logging.basicConfig(level=logging.INFO, format="    %(message)s", stream=sys.stderr)
        from focuscrawl.lm.external import train_lm
        model = train_lm([corpus], output, order=order, normalized=True, memory=memory, jobs=jobs)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "tokens": model.tokens, "counts": model.counts(),
                      "vocab": len(model.vocab), "arpa_bytes": Path(output).stat().st_size,
                      "rss_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "rss_children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))


def tree_memory(root: int) -> int:
    """Proportional set size (PSS: shared pages split between sharers) of a process and
    all its descendants, in bytes."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                total += next(int(line.split()[1]) * 1024 for line in fh if line.startswith("Pss:"))
            with open(f"/proc/{pid}/task/{pid}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
        except (OSError, StopIteration):
            pass
    return total


def measure(name: str, trainer: str, corpus: Path, output: Path, args) -> dict:
    """Run one training in a child process; sample its process tree's memory every 0.1 s."""
    cmd = [sys.executable, __file__, "--run-one", trainer, str(corpus), str(output),
           "--order", str(args.order), "--memory", args.memory, "--jobs", str(args.jobs or 0)]
    peak = 0
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        while proc.poll() is None:
            peak = max(peak, tree_memory(proc.pid))
            time.sleep(0.1)
        out = proc.stdout.read()
    if proc.returncode:
        raise SystemExit(f"{name}: training failed (exit {proc.returncode})")
    r = json.loads(out.strip().splitlines()[-1])
    r["s_per_M"] = r["seconds"] / r["tokens"] * 1e6
    r["rss_total"] = peak
    print(f"{name:26s} {r['tokens']:>11,} tokens  {sum(r['counts']):>11,} n-grams  {r['seconds']:7.1f} s  "
          f"{r['s_per_M']:6.2f} s/M tokens  peak memory {peak / 2**20:5.0f} MB (process tree; max RSS parent "
          f"{r['rss_self'] / 2**20:.0f} MB, worker {r['rss_children'] / 2**20:.0f} MB)  "
          f"ARPA {r['arpa_bytes'] / 1e6:7.1f} MB", flush=True)
    return r


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--tokens", type=int, default=30_000_000, help="running words of the generated corpus")
    p.add_argument("--memory", default="2G", help="budget of the bounded runs")
    p.add_argument("--order", type=int, default=5)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--jobs", type=int, default=0, help="worker processes (default: CPUs)")
    p.add_argument("--tmpdir", default=None, help="where corpora, runs and ARPA files go")
    p.add_argument("--skip-big", action="store_true", help="only the real corpus")
    p.add_argument("--run-one", nargs=3, metavar=("TRAINER", "CORPUS", "OUTPUT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.run_one:
        run_one(*args.run_one, args.order, args.memory, args.jobs or None)
        return 0

    budget = parse_memory(args.memory)
    sentences = [s for src in real_sentences(args.data).values() for s in src]
    random.Random(args.seed).shuffle(sentences)
    with tempfile.TemporaryDirectory(prefix="bench-train-lm-", dir=args.tmpdir) as tmp:
        tmp = Path(tmp)
        real = tmp / "real.txt"
        real.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        print(f"order {args.order}, budget {args.memory} of the bounded runs; real corpus "
              f"{len(sentences):,} sentences, {real.stat().st_size / 1e6:.0f} MB", flush=True)
        base = measure("baseline (in memory), real", "baseline", real, tmp / "base.arpa", args)
        small = measure(f"bounded {args.memory}, real", "bounded", real, tmp / "small.arpa", args)
        same = filecmp.cmp(tmp / "base.arpa", tmp / "small.arpa", shallow=False)
        print(f"  same ARPA file as the baseline: {same}")
        (tmp / "base.arpa").unlink()
        (tmp / "small.arpa").unlink()
        ok = same
        if not args.skip_big:
            big_corpus = tmp / "generated.txt"
            t0 = time.perf_counter()
            n_sent, n_tok = recombine(sentences, args.tokens, args.seed, big_corpus)
            print(f"generated corpus: {n_sent:,} sentences, {n_tok:,} tokens, "
                  f"{big_corpus.stat().st_size / 1e6:.0f} MB ({time.perf_counter() - t0:.0f} s)", flush=True)
            big = measure(f"bounded {args.memory}, generated", "bounded", big_corpus, tmp / "big.arpa", args)
            (tmp / "big.arpa").unlink()
            base2 = measure("baseline again, real", "baseline", real, tmp / "base.arpa", args)
            ref = (base["s_per_M"] + base2["s_per_M"]) / 2
            rss_ok = big["rss_total"] <= budget
            speed_ok = big["s_per_M"] <= ref  # the mean of the two baselines
            print(f"generated run: peak memory {big['rss_total'] / 2**20:.0f} MB (process tree) "
                  f"vs budget {budget / 2**20:.0f} MB: {'PASS' if rss_ok else 'FAIL'}; "
                  f"{big['s_per_M']:.2f} s/M tokens vs baseline {base['s_per_M']:.2f} / {base2['s_per_M']:.2f} "
                  f"(ratio {big['s_per_M'] / ref:.2f} to their mean): {'PASS' if speed_ok else 'FAIL'}")
            print(f"  n-grams per token: generated {sum(big['counts']) / big['tokens']:.2f}, "
                  f"real {sum(base['counts']) / base['tokens']:.2f}; time per million n-grams: generated "
                  f"{big['seconds'] / sum(big['counts']) * 1e6:.2f} s, baseline "
                  f"{base['seconds'] / sum(base['counts']) * 1e6:.2f} s")
            ok = ok and rss_ok and speed_ok
        print(f"bounded vs baseline on the real corpus: {small['s_per_M'] / base['s_per_M']:.2f}x time, "
              f"peak memory {small['rss_total'] / 2**20:.0f} MB vs {base['rss_total'] / 2**20:.0f} MB")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
