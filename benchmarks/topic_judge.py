"""CPU time of mode ``learning``'s page judge (issue #26): the topic bundle's raw scores of a
page's normalised sentences (``TopicModel._page_raw``: LMs, keywords, classifier) and the
classifier's part alone (``HashedNgramClassifier.decision_tokens``), per page, on the crawl
benchmark's generated shapes (text-rich, image-heavy), on real pages (CLEANEVAL and the
article-extraction benchmark, if ``--data`` holds them) and on 3-word ALT texts.

The pages are extracted and normalised as the analysis workers do (``FOCUSCRAWL_TEXT_EXTRACTOR``,
``document_sentences``); the memos are bypassed. Process CPU time, best of ``--repeat``
(the machine is shared: wall time would count other jobs).

    python benchmarks/topic_judge.py [--data ../shared/data] [--pages 200] [--repeat 5]
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from crawl_throughput import WORDS, image_page_html, real_pages, text_page_html

from focuscrawl import settings as defaults
from focuscrawl.text.extractors import extract_page, get_extractor
from focuscrawl.text.normalize import document_sentences
from focuscrawl.resources import default_topic_path
from focuscrawl.topic.model import TopicModel


def page_sentences(pages: list[bytes]) -> list[list[str]]:
    extract = get_extractor(defaults.FOCUSCRAWL_TEXT_EXTRACTOR)
    texts = [extract_page(extract, html.decode("utf-8", "replace")).text for html in pages]
    return [s for s in (document_sentences(t) for t in texts) if s]


def per_call_us(func, args: list, repeat: int) -> float:
    """Best of ``repeat`` CPU times of ``func`` over every argument, per argument, in µs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for a in args:
            func(a)
        best = min(best, time.process_time() - start)
    return best / len(args) * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    model = TopicModel(default_topic_path())
    clf = model.classifier
    clf.decision("warm up")
    shapes = {"text": page_sentences([text_page_html(i, args.pages) for i in range(args.pages)]),
              "image": page_sentences([image_page_html(i, args.pages) for i in range(args.pages)])}
    if args.data.is_dir():
        shapes["real"] = page_sentences(real_pages(args.data))
    rnd = random.Random(3)
    shapes["alt (3 words)"] = [[" ".join(rnd.choice(WORDS) for _ in range(3))] for _ in range(1000)]
    print(f"{'shape':14} {'texts':>6} {'words':>7} {'_page_raw us':>13} {'decision_tokens us':>19}")
    for name, pages in shapes.items():
        texts = ["\n".join(s) for s in pages]
        tokens = [t.split() for t in texts]
        raw = per_call_us(model._page_raw, texts, args.repeat)
        decision = per_call_us(clf.decision_tokens, tokens, args.repeat)
        words = statistics.median(map(len, tokens))
        print(f"{name:14} {len(texts):6d} {words:7.0f} {raw:13.1f} {decision:19.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
