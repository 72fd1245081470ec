"""``focuscrawl testweb generate|serve``: build and serve the offline benchmark web."""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

from focuscrawl.testweb.server import TestWebServer
from focuscrawl.testweb.textpool import TextPool
from focuscrawl.testweb.web import PROFILES, TestWeb, web_config

DATA_HELP = "shared data folder (captions/, wiki/, cleaneval/), or 'bundled' = the small demo pool"


def add_web_arguments(p: argparse.ArgumentParser, several_seeds: bool = False) -> None:
    p.add_argument("--data", help=f"{DATA_HELP} (required)")
    p.add_argument("--topic", default="cat", help="topic of the web: cat, dog, train, ... (default %(default)s)")
    if several_seeds:
        p.add_argument("--seed", type=int, nargs="+", default=[1],
                       help="the web's seed(s) (same seed, same web); several: one evaluation per seed")
    else:
        p.add_argument("--seed", type=int, default=1, help="the web's seed (same seed, same web)")
    p.add_argument("--profile", default="standard", choices=sorted(PROFILES),
                   help="standard: the topic is common and seeded; hard: rare topic (<= 3%%), no on-topic seed, "
                        "a look-alike neighbour topic, a third of the anchors generic (default %(default)s)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply the number of hosts (1.0 = ~28k pages)")
    p.add_argument("--heldout", action="store_true",
                   help="leave half of the topic's photos out of the web (train a model on their captions with "
                        "'focuscrawl testweb heldout-corpus')")


def text_pool(data: str | None) -> TextPool:
    """The pool of ``--data``; no default path (the shared data lives outside the package)."""
    if not data:
        raise ValueError(f"--data is required: {DATA_HELP}")
    return TextPool.from_bundle() if data == "bundled" else TextPool.from_data(data)


def web_from_args(args: argparse.Namespace) -> TestWeb:
    return TestWeb(text_pool(args.data), args.topic, args.seed,
                   web_config(getattr(args, "profile", "standard"), scale=args.scale, heldout=args.heldout))


def write_truth(web: TestWeb, out: str | Path) -> dict:
    """Write ``web.json`` and the ground truth (``truth_pages.tsv.gz``, ``truth_images.tsv.gz``) to ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pages, images = web.truth()
    columns = {"truth_pages.tsv.gz": ["url", "host", "kind", "label", "on_topic", "status"],
               "truth_images.tsv.gz": ["url", "page_url", "photo", "shows_topic", "alt_describes", "width",
                                       "height", "html_width", "html_height", "alt"]}
    for name, rows in (("truth_pages.tsv.gz", pages), ("truth_images.tsv.gz", images)):
        cols = columns[name]
        with gzip.open(out / name, "wt", encoding="utf-8", compresslevel=6) as fh:
            fh.write("\t".join(cols) + "\n")
            for row in rows:
                fh.write("\t".join(_cell(row[c]) for c in cols) + "\n")
    info = web.describe()
    info.update(on_topic_pages=sum(p["on_topic"] for p in pages), images=len(images),
                on_topic_images=sum(i["shows_topic"] for i in images), scale=web.config.scale)
    (out / "web.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value).replace("\t", " ").replace("\n", " ")


def cmd_generate(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    info = write_truth(web_from_args(args), args.output)
    print(f"{info['pages']} pages on {info['hosts']} hosts ({info['on_topic_pages']} on topic), "
          f"{info['images']} content images; truth in {args.output} ({time.perf_counter() - t0:.1f}s)")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    print(f"testweb serve: building the {args.topic} web from {args.data} ...", file=sys.stderr, flush=True)
    web = web_from_args(args)
    server = TestWebServer(web, port=args.port, slow_factor=args.slow_factor).start()
    print(f"serving {web.page_count()} pages on {len(web.hosts)} hosts at {server.proxy}\n"
          f"use it as a proxy: http_proxy={server.proxy} focuscrawl ...  seeds: {' '.join(web.seeds())}",
          flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def heldout_corpus(pool: TextPool, topic: str, out: Path) -> dict[str, int]:
    """Corpora for a model that has not seen a ``heldout`` web's captions: the held-out photos'
    captions plus the topic's Wikipedia lead (positive, LM), the other leads (neutral)."""
    from focuscrawl.lm.demo_corpus import topic_pattern, write_corpus
    from focuscrawl.testweb.web import heldout_photos

    pattern = topic_pattern(topic)
    captions = [c for p in heldout_photos(pool, topic) for c in p.captions if pattern.search(c)]
    if not captions:
        raise ValueError(f"no held-out captions mention {topic!r}: pick a topic of the caption data")
    return write_corpus(out, pool.lead(topic) or "", captions, pool.other_leads(topic))


def cmd_heldout_corpus(args: argparse.Namespace) -> int:
    info = heldout_corpus(text_pool(args.data), args.topic, Path(args.output))
    if args.json:
        print(json.dumps(dict(info, output=args.output)))
        return 0
    out = Path(args.output)
    print(f"held-out corpus of {args.topic!r} in {out}:\n"
          f"  positive: {info['captions']:,} held-out captions ({out / 'positive' / 'captions.txt'}) and the topic's "
          f"Wikipedia lead ({out / 'positive' / 'lead.txt'})\n"
          f"  neutral: {info['neutral_docs']:,} other Wikipedia leads ({out / 'neutral'}/)\n"
          f"  language model text: {info['lm_sentences']:,} sentences ({out / 'lm_sentences.txt'})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("testweb", help="the offline benchmark web: generate its truth, serve it")
    tsub = parser.add_subparsers(dest="testweb_command", metavar="TESTWEB_COMMAND", required=True)
    p = tsub.add_parser("generate", help="write the web's description and ground truth to a folder")
    add_web_arguments(p)
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.set_defaults(func=cmd_generate)
    p = tsub.add_parser("serve", help="serve the web on 127.0.0.1 as an HTTP proxy until Ctrl-C")
    add_web_arguments(p)
    p.add_argument("--port", type=int, default=8899)
    p.add_argument("--slow-factor", type=float, default=1.0, help="scale of the slow pages' delays (0 = none)")
    p.set_defaults(func=cmd_serve)
    p = tsub.add_parser("heldout-corpus", help="corpora of the topic's held-out captions (for --heldout webs)")
    p.add_argument("--data", help=f"{DATA_HELP} (required)")
    p.add_argument("--topic", default="cat")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--json", action="store_true", help="print the counts as one JSON line (for scripts)")
    p.set_defaults(func=cmd_heldout_corpus)
