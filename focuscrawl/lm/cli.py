"""``focuscrawl score``, ``focuscrawl keywords`` and ``focuscrawl train-lm``."""
from __future__ import annotations

import argparse
import json
import sys

from focuscrawl.lm.binary import write_binary
from focuscrawl.lm.external import DEFAULT_MEMORY, train_lm
from focuscrawl.lm.keywords import DEFAULT_TOP_N, KEYWORD_LISTS_DIFFER, learn_keywords, write_keywords
from focuscrawl.lm.scorer import TopicScorer
from focuscrawl.lm.train import DEFAULT_ORDER
from focuscrawl.processes import exit_on_sigterm
from focuscrawl.text.sources import PoliteFetcher, corpus_tokens
from focuscrawl.topic.model import default_keywords_path, default_model_path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score", help="perplexity, keyword score and weighted perplexity of a text")
    p.add_argument("--model", help="ARPA or KenLM binary model (default: the --topic bundle's, else the bundled "
                                   "cats model, said on stderr)")
    p.add_argument("--keywords", help="keyword file token;score (default: the --topic bundle's, else the bundled cats "
                                      "keywords; none with --model)")
    p.add_argument("--topic", help="topic bundle: its LM and keywords, plus P(on topic) under every scorer")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("text", nargs="+", help="the text ('-' reads standard input)")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("keywords", help="learn a keyword list from positive and neutral sources")
    p.add_argument("--positive", nargs="+", required=True, metavar="SRC", help="text/HTML files or URLs on the topic")
    p.add_argument("--neutral", nargs="+", required=True, metavar="SRC", help="text/HTML files or URLs off the topic")
    p.add_argument("-n", type=int, default=DEFAULT_TOP_N, help="keep the top N (default %(default)s)")
    p.add_argument("--extractor", default="fulltext", help="text extractor for HTML sources")
    p.add_argument("--delay", type=float, default=1.0, help="seconds between requests to one host")
    p.add_argument("-o", "--output", required=True, help="output file (token;score lines)")
    p.set_defaults(func=cmd_keywords)

    p = sub.add_parser("train-lm", help="train a modified Kneser-Ney n-gram model (ARPA), like KenLM's lmplz")
    p.add_argument("--order", type=int, default=DEFAULT_ORDER, help="n-gram order (default %(default)s)")
    p.add_argument("-S", "--memory", default=DEFAULT_MEMORY,
                   help="memory budget, e.g. 2G, 500M or 25%% of RAM; counts beyond it are sorted on disk "
                        "(default %(default)s)")
    p.add_argument("--jobs", type=int, default=None, help="processes for counting and writing (default: CPUs)")
    p.add_argument("-T", "--tmpdir", default=None, help="folder for the sorted runs (default: system temp)")
    p.add_argument("--prune", type=int, nargs="+", metavar="T", default=None,
                   help="lmplz's pruning: drop n-grams of order k (k >= 2) seen at most T_k times; one "
                        "non-decreasing threshold per order, the first 0, the last repeated (e.g. 0 1 1)")
    p.add_argument("--binary", metavar="PATH", help="also write a KenLM binary (probing) with KenLM's build_binary")
    p.add_argument("--normalized", action="store_true",
                   help="each input line is one normalised sentence (whitespace tokens, no filtering)")
    p.add_argument("--extractor", default="fulltext", help="text extractor for HTML inputs")
    p.add_argument("-o", "--output", required=True, help="output ARPA file")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="text or HTML files (.gz ok)")
    p.set_defaults(func=cmd_train_lm)


def cmd_score(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    topic = None
    if args.topic:
        from focuscrawl.topic.model import TopicModel

        topic = TopicModel(args.topic)
    model = args.model or (topic.topic_model_path if topic else default_model_path())
    keywords = args.keywords or (None if args.model else topic.keywords_path if topic else default_keywords_path())
    if not args.topic and not args.model:  # said, so that a text of another topic is not silently scored as cats
        print(f"focuscrawl score: no --topic or --model: scored with the bundled cats model ({model}); "
              f"give --topic DIR (focuscrawl topic build) for your topic", file=sys.stderr)
    result = TopicScorer.from_files(model, keywords).score(text)
    probabilities = (topic.scores(text) or {}) if topic else {}
    # one set of names for both outputs: p_on_topic_<scorer> is P(on topic) under each of the bundle's scorers
    values = {"model": str(model), "keywords": None if keywords is None else str(keywords),
              "topic": args.topic or None, "perplexity": result.perplexity, "keyword_score": result.keyword_score,
              "weighted_perplexity": result.weighted, "tokens": result.tokens} \
        | {f"p_on_topic_{name}": p for name, p in probabilities.items()}
    if args.json:
        print(json.dumps(values))
    else:
        fmt = lambda v: "missing" if v is None else v if isinstance(v, str) else f"{v:.6g}"  # noqa: E731
        print("\n".join(f"{name}\t{fmt(value)}" for name, value in values.items() if name != "topic" or value))
    return 0


def cmd_keywords(args: argparse.Namespace) -> int:
    fetcher = PoliteFetcher(delay=args.delay)
    positive = corpus_tokens(args.positive, args.extractor, fetcher)
    neutral = corpus_tokens(args.neutral, args.extractor, fetcher)
    pairs = learn_keywords(positive, neutral, args.n)
    write_keywords(args.output, pairs)
    print(f"wrote {len(pairs)} keywords to {args.output} ({KEYWORD_LISTS_DIFFER})", file=sys.stderr)
    return 0


def cmd_train_lm(args: argparse.Namespace) -> int:
    exit_on_sigterm()  # its temporary folder and OUT.part are removed on SIGTERM too
    model = train_lm(args.inputs, args.output, order=args.order, normalized=args.normalized,
                     extractor=args.extractor, memory=args.memory, jobs=args.jobs, tmpdir=args.tmpdir,
                     prune=args.prune)
    if args.binary:
        write_binary(args.output, args.binary)
        print(f"wrote {args.binary} (KenLM binary)", file=sys.stderr)
    print(f"wrote {args.output}: {model.sentences} sentences, {model.tokens} tokens, "
          f"n-grams {' '.join(map(str, model.counts()))}", file=sys.stderr)
    return 0
