"""Agreement of ``focuscrawl train-lm`` with KenLM's ``lmplz`` on real sentences.

Both estimate a model from the same training sentences (real captions, Wikipedia
leads and CLEANEVAL gold text, shuffled with a fixed seed, 90/10 split); KenLM then
scores the held-out sentences with each. Prints the held-out total perplexity of
both, their relative difference (target <= 0.5%), the largest per-sentence log10
difference (target <= 1e-3), and the training times and their ratio.

    python benchmarks/lm_vs_lmplz.py [--data ../shared/data] [--order 5] [--max-sentences N] [--fuzz 200]

``--fuzz N`` also compares the ARPA files of N random small corpora (orders 2-5, many
with fallback discounts and empty orders) entry by entry: same header, same n-grams
in the same order, every value within 2e-6.

Skips with a message when lmplz is not found (env LMPLZ, PATH, the KenLM build).
"""
from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

import kenlm

from focuscrawl.lm.train import estimate, write_arpa
from lm_corpus import DEFAULT_DATA, find_lmplz, read_arpa, real_sentences, run_lmplz


def fuzz(lmplz: str, trials: int, seed: int) -> int:
    """Random small corpora through both trainers; returns the number of mismatches."""
    logging.disable(logging.WARNING)  # the fallback warnings are expected here
    rng = random.Random(seed)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for trial in range(trials):
            n_words, order = rng.randint(2, 30), rng.randint(2, 5)
            words, weights = [f"w{i}" for i in range(n_words)], [1 / (i + 1) for i in range(n_words)]
            sentences = [" ".join(rng.choices(words, weights, k=rng.randint(1, 8)))
                         for _ in range(rng.randint(1, 60))]
            (tmp / "f.txt").write_text("\n".join(sentences) + "\n")
            run_lmplz(lmplz, order, tmp / "f.txt", tmp / "ref.arpa", memory="50M")
            write_arpa(estimate(sentences, order), tmp / "ours.arpa")
            (ha, a), (hb, b) = read_arpa(tmp / "ours.arpa"), read_arpa(tmp / "ref.arpa")
            same = ha == hb and list(a) == list(b) and all(
                abs(a[k][0] - b[k][0]) < 2e-6 and abs((a[k][1] or 0) - (b[k][1] or 0)) < 2e-6 for k in b)
            if not same:
                bad += 1
                print(f"  mismatch: trial {trial}, order {order}, sentences {sentences[:3]}...")
    logging.disable(logging.NOTSET)
    return bad


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--order", type=int, default=5)
    p.add_argument("--max-sentences", type=int, default=0, help="use at most N sentences (0 = all)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--fuzz", type=int, default=0, help="also compare N random small corpora")
    args = p.parse_args(argv)

    lmplz = find_lmplz()
    if not lmplz:
        print("SKIP: lmplz not found (set LMPLZ or put it on PATH)")
        return 0
    per_source = real_sentences(args.data)
    sentences = [s for src in per_source.values() for s in src]
    random.Random(args.seed).shuffle(sentences)
    if args.max_sentences:
        sentences = sentences[: args.max_sentences]
    cut = len(sentences) * 9 // 10
    train, held = sentences[:cut], sentences[cut:]
    n_tokens = sum(s.count(" ") + 1 for s in train)
    print("sources: " + ", ".join(f"{k} {len(v)}" for k, v in per_source.items()) + " sentences")
    print(f"train: {len(train)} sentences, {n_tokens} tokens; held-out: {len(held)} sentences; order {args.order}")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        text = tmp / "train.txt"
        text.write_text("\n".join(train) + "\n", encoding="utf-8")
        t0 = time.perf_counter()
        model = estimate(train, args.order)
        write_arpa(model, tmp / "ours.arpa")
        t_ours = time.perf_counter() - t0
        t_lmplz = run_lmplz(lmplz, args.order, text, tmp / "lmplz.arpa")
        ours, ref = kenlm.Model(str(tmp / "ours.arpa")), kenlm.Model(str(tmp / "lmplz.arpa"))
        counts_ours = model.counts()
        counts_ref = [int(line.split("=")[1]) for line in open(tmp / "lmplz.arpa")
                      if line.startswith("ngram ")]

    total_ours = total_ref = 0.0
    max_diff, worst = 0.0, ""
    n_scored = 0
    for s in held:
        a, b = ours.score(s, bos=True, eos=True), ref.score(s, bos=True, eos=True)
        total_ours += a
        total_ref += b
        n_scored += s.count(" ") + 2
        if abs(a - b) > max_diff:
            max_diff, worst = abs(a - b), s
    pp_ours, pp_ref = 10 ** (-total_ours / n_scored), 10 ** (-total_ref / n_scored)
    rel = abs(pp_ours - pp_ref) / pp_ref
    print(f"n-gram counts: focuscrawl {counts_ours}  lmplz {counts_ref}  "
          f"{'same' if counts_ours == counts_ref else 'DIFFERENT'}")
    print("discounts (focuscrawl): " + "  ".join("%.4f/%.4f/%.4f" % d for d in model.discounts))
    print(f"held-out PP: focuscrawl {pp_ours:.4f}  lmplz {pp_ref:.4f}  relative difference {rel:.2e} (target <= 5e-3)")
    print(f"max per-sentence |log10 diff|: {max_diff:.2e} (target <= 1e-3) on {worst[:60]!r}")
    print(f"training time: focuscrawl {t_ours:.2f}s  lmplz {t_lmplz:.2f}s  ratio {t_ours / t_lmplz:.2f}x")
    ok = rel <= 5e-3 and max_diff <= 1e-3
    if args.fuzz:
        bad = fuzz(lmplz, args.fuzz, args.seed)
        print(f"random small corpora: {args.fuzz - bad}/{args.fuzz} ARPA files identical to lmplz's (within 2e-6)")
        ok &= bad == 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
