"""Scoring throughput of ``TopicScorer`` (normalisation included) vs raw KenLM.

Baseline: ``kenlm.Model.score(sentence, bos=True, eos=True)`` over sentences that are
already normalised. Measured: ``TopicScorer.score_document(raw_text)`` over the raw
documents those sentences came from (sentence splitting, normalisation, 5-token rule,
LM, keywords), and ``TopicScorer.score(raw_caption)`` over short texts (ALT-like).
A fresh scorer is used per repetition so its cache only helps with sentences that
really repeat inside the corpus. Both are measured in the same run as CPU time of
this process (the machine is shared: wall time would count other jobs), best of
``--repeat``, alternating; target: scorer >= 15% of raw tokens/s.

    python benchmarks/score_throughput.py [--data ../shared/data] [--model M] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from focuscrawl.lm.scorer import TopicScorer, load_kenlm
from focuscrawl.lm.keywords import KeywordList
from focuscrawl.topic.model import default_keywords_path, default_model_path
from focuscrawl.text.normalize import document_sentences, text_sentences
from focuscrawl.text.sources import bytes_to_text, read_bytes
from lm_corpus import DEFAULT_DATA

TARGET = 0.15


def documents(data: Path) -> list[str]:
    docs = []
    for split in ("final", "dev"):
        for path in sorted((data / "cleaneval" / split / "gold").glob("*.txt")):
            docs.append(bytes_to_text(read_bytes(path)))
    leads = json.loads((data / "wiki" / "animal_leads.json").read_text())["animals"]
    docs.extend(a["content"] for a in leads)
    return docs


def captions(data: Path) -> list[str]:
    coco = json.loads((data / "captions" / "coco_captions_val2017.json").read_text())
    return [a["caption"] for a in coco["annotations"]]


def best_rate(fn, tokens: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return tokens / best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--model", type=Path, help="ARPA/binary model (default: bundled cats demo)")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)

    model = load_kenlm(args.model or default_model_path())
    keywords = KeywordList.load(default_keywords_path())
    docs, caps = documents(args.data), captions(args.data)
    doc_sents = [s for d in docs for s in document_sentences(d)]
    cap_sents = [s for c in caps for s in text_sentences(c)]
    doc_tokens = sum(s.count(" ") + 1 for s in doc_sents)
    cap_tokens = sum(s.count(" ") + 1 for s in cap_sents)
    print(f"documents: {len(docs)} raw texts, {len(doc_sents)} sentences, {doc_tokens} tokens; "
          f"captions: {len(caps)} texts, {cap_tokens} tokens")

    def raw(sentences):
        score = model.score
        for s in sentences:
            score(s, bos=True, eos=True)

    def scorer_docs():
        scorer = TopicScorer(model, keywords)
        for d in docs:
            scorer.score_document(d)

    def scorer_caps():
        scorer = TopicScorer(model, keywords)
        for c in caps:
            scorer.score(c)

    ok = True
    for name, sents, tokens, fn in (("documents", doc_sents, doc_tokens, scorer_docs),
                                    ("captions", cap_sents, cap_tokens, scorer_caps)):
        raw_rate = ours_rate = 0.0
        for _ in range(args.repeat):  # alternate so both see the same machine load
            raw_rate = max(raw_rate, best_rate(lambda: raw(sents), tokens, 1))
            ours_rate = max(ours_rate, best_rate(fn, tokens, 1))
        ratio = ours_rate / raw_rate
        ok &= ratio >= TARGET
        print(f"{name}: raw kenlm {raw_rate / 1e6:.2f}M tokens/s, TopicScorer {ours_rate / 1e6:.2f}M tokens/s, "
              f"ratio {ratio:.1%} (target >= {TARGET:.0%}): {'PASS' if ratio >= TARGET else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
