"""Training speed of ``focuscrawl train-lm`` (target: >= 1M tokens, 5-gram, <= 60 s).

Real normalised sentences (captions, Wikipedia leads, CLEANEVAL gold; shuffled with a
fixed seed) are written to a file until it holds ``--tokens`` tokens; then
``train_lm`` reads that file (``--normalized``), estimates the model and writes ARPA.
When lmplz is found (env LMPLZ, PATH, the KenLM build) it trains on the same file in
the same run and the ratio is printed.

    python benchmarks/train_lm.py [--data ../shared/data] [--tokens 1000000] [--order 5]
"""
from __future__ import annotations

import argparse
import logging
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from focuscrawl.lm.train import train_lm
from lm_corpus import DEFAULT_DATA, find_lmplz, real_sentences, run_lmplz

TARGET_SECONDS = 60.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--tokens", type=int, default=1_000_000)
    p.add_argument("--order", type=int, default=5)
    p.add_argument("--seed", type=int, default=13)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="  %(message)s")

    sentences = [s for src in real_sentences(args.data).values() for s in src]
    random.Random(args.seed).shuffle(sentences)
    chosen, n = [], 0
    for s in sentences:
        if n >= args.tokens:
            break
        chosen.append(s)
        n += s.count(" ") + 1
    if n < args.tokens:
        print(f"note: only {n} tokens available")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        text = tmp / "train.txt"
        text.write_text("\n".join(chosen) + "\n", encoding="utf-8")
        print(f"corpus: {len(chosen)} sentences, {n} tokens, {text.stat().st_size / 1e6:.1f} MB; order {args.order}")
        t0 = time.perf_counter()
        model = train_lm([text], tmp / "ours.arpa", order=args.order, normalized=True)
        t_ours = time.perf_counter() - t0
        size = (tmp / "ours.arpa").stat().st_size
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"focuscrawl train-lm: {t_ours:.2f} s ({n / t_ours / 1e3:.0f}K tokens/s), n-grams {model.counts()}, "
              f"ARPA {size / 1e6:.1f} MB, peak RSS {rss:.0f} MB; target <= {TARGET_SECONDS:.0f} s: "
              f"{'PASS' if t_ours <= TARGET_SECONDS else 'FAIL'}")
        lmplz = find_lmplz()
        if lmplz:
            t_ref = run_lmplz(lmplz, args.order, text, tmp / "lmplz.arpa")
            print(f"lmplz: {t_ref:.2f} s; ratio focuscrawl/lmplz {t_ours / t_ref:.2f}x")
        else:
            print("lmplz not found (set LMPLZ): no baseline")
    return 0 if t_ours <= TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
