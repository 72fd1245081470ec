"""``focuscrawl demo``: a real focused crawl of a small bundled web, offline, in about a minute.

The web (a few hundred pages on a dozen hosts, built from real captions, Wikipedia
leads and CLEANEVAL texts shipped in the package) is served on 127.0.0.1 and reached
as an HTTP proxy; the ``focused`` spider crawls it with the bundled cats topic bundle
(``models/cats``), and its images are ranked by the bundle's calibrated P(cat).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from focuscrawl.eval.crawl_metrics import (SCORE_RANGE, Run, Truth, image_funnel, ranked_images,
                                           score_cut_by_truth, top_n_shares)
from focuscrawl import settings as project_settings
from focuscrawl.eval.crawls import MODES, CrawlFailed, run_crawl
from focuscrawl.output.stats import read_stats
from focuscrawl.output.summary import crawl_summary
from focuscrawl.ranking import RankStats
from focuscrawl.resources import default_topic_path
from focuscrawl.testweb.cli import write_truth
from focuscrawl.testweb.server import TestWebServer
from focuscrawl.testweb.textpool import TextPool
from focuscrawl.testweb.web import TestWeb, WebConfig
from focuscrawl.topic.model import DEFAULT_SCORER

DEMO_SCALE = 0.06


def demo_web(seed: int = 1) -> TestWeb:
    return TestWeb(TextPool.from_bundle(), "cat", seed, WebConfig(scale=DEMO_SCALE))


def cmd_demo(args: argparse.Namespace) -> int:
    out = Path(args.output or tempfile.mkdtemp(prefix="focuscrawl-demo-"))
    out.mkdir(parents=True, exist_ok=True)
    web = demo_web(args.seed)
    info = write_truth(web, out / "web")
    print(f"demo web: {info['pages']} pages on {info['hosts']} hosts ({info['on_topic_pages']} about cats), "
          f"served on 127.0.0.1", flush=True)
    t0 = time.perf_counter()
    bundle = default_topic_path()
    with TestWebServer(web, slow_factor=0) as server:
        print(f"crawling {args.pages} pages, mode {args.mode}, from {len(web.seeds())} seeds ...", flush=True)
        try:
            run_crawl(args.mode, web.seeds(), out / "run", args.pages, proxy=server.proxy,
                      extra_settings=["FOCUSCRAWL_LINKS_LOG=True", f"FOCUSCRAWL_TOPIC={bundle}"])
        except CrawlFailed as exc:  # its exit code is the demo's (failed, interrupted)
            print(f"focuscrawl demo: error: the crawl stopped (exit {exc.code}); its log: {out / 'run' / 'crawl.log'}",
                  file=sys.stderr)
            return exc.code if exc.code > 0 else 128 - exc.code  # killed by a signal: as a shell reports it
        served = server.requests
    seconds = time.perf_counter() - t0
    run = Run.load(out / "run", args.mode)  # every page row: the budget is exact (PageBudget)
    truth = Truth.load(out / "web")
    on_topic = sum(truth.page_on_topic(p["url"]) for p in run.pages)
    funnel = image_funnel(run)
    ranking = RankStats()
    ranked = ranked_images(run, bundle=bundle, collapse=True, stats=ranking)  # as `focuscrawl rank` by default
    shares = top_n_shares(ranked, truth, 20)
    cut = score_cut_by_truth(run, truth)
    thesis_top = top_n_shares(ranked_images(run), truth, 20)
    print(f"\ncrawled {len(run.pages)} pages in {seconds:.0f}s ({served} requests served): "
          f"{on_topic} on topic ({on_topic / max(1, len(run.pages)):.0%}; the whole web: "
          f"{info['on_topic_pages'] / info['pages']:.0%})")
    print(f"languages (column language of pages.tsv, images.tsv, the exports; the cats bundle's: en): pages "
          f"{_counts(p.get('language') for p in run.pages)}; ranked images {_counts(e.language for e in ranked)}")
    print(f"images: {funnel['initial']} candidates -> {funnel['language']} in the corpus's language -> "
          f"{funnel['format']} format -> {len(ranked)} kept by the ranking's cut")
    cats_found = cut["on_topic"]["images"]
    cats_kept = sum(truth.image(e.image_url)[0] for e in ranked)
    print(f"ranking ({DEFAULT_SCORER}, the default): each image's P(cat) from its ALT text and its context, "
          f"by the cats bundle's\n  topic-vs-background LM cross-entropy and word n-gram classifier, calibrated "
          f"on held-out text; kept {cats_kept} of the {cats_found} images that show a cat "
          f"(SPEC's perplexity cut [{SCORE_RANGE[0]:g}, {SCORE_RANGE[1]:g}] keeps {cut['on_topic']['kept']})")
    print(f"near-duplicates: {ranking.collapsed} collapsed into a better-ranked twin (the same or a "
          f"near-identical ALT text, or the same picture; `focuscrawl rank --keep-duplicates` keeps them)")
    if shares["n"]:
        print(f"top {shares['n']} ranked images: {shares['on_topic']:.0%} show a cat "
              f"(SPEC's ranking: {thesis_top['on_topic'] or 0:.0%}), "
              f"{shares['alt_describes']:.0%} have an ALT text that describes them")
        for entry in ranked[:5]:
            print(f"  P(cat) {entry.final_score:.3f}  [{entry.language or '?'}] {entry.alt or entry.image_url}")
    print()
    print("\n".join(crawl_summary(read_stats(out / "run" / "stats.json"), output=(out / "run").resolve(),
                                 what="demo crawl")))
    # (not the run's lock file, nor a state log a clean close left empty)
    print(f"outputs in {out / 'run'}: " + ", ".join(sorted(
        p.name for p in (out / "run").iterdir() if not p.name.startswith(".") and (p.is_dir() or p.stat().st_size))))
    print(f"ground truth of the demo web in {out / 'web'}")
    (out / "demo.json").write_text(json.dumps({"pages": len(run.pages), "on_topic_pages": on_topic,
                                                "funnel": funnel, "score_cut": cut, "top": shares,
                                                "top_thesis": thesis_top, "ranking": DEFAULT_SCORER,
                                                "collapsed": ranking.collapsed,
                                                "seconds": seconds}, indent=2))
    return 0


def _counts(languages) -> str:
    """``en 290, ? 10``: how many of each language (``?``: unknown), most first."""
    from collections import Counter

    return ", ".join(f"{lang or '?'} {n}" for lang, n in Counter(languages).most_common()) or "none"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="crawl a small bundled web offline and summarise the outputs")
    p.add_argument("--pages", type=int, default=300, help="page budget (default %(default)s)")
    p.add_argument("--mode", default=project_settings.FOCUSCRAWL_MODE, choices=MODES,
                   help="crawl mode (default %(default)s, the crawl's)")
    p.add_argument("--seed", type=int, default=1, help="seed of the demo web")
    p.add_argument("-o", "--output", help="output folder (default: a new temporary folder)")
    p.set_defaults(func=cmd_demo)
