"""``focuscrawl eval run`` and ``focuscrawl eval report``: the thesis's three-run comparison.

``run`` crawls one web with each mode (keywords, document, unfocused) from the same
seeds with the same page budget; on the offline test web (default) it writes the
web's ground truth beside the runs. ``report`` turns the run folders into PNG plots,
an HTML page and ``summary.json`` (SPEC §7: harvest rates, focus curve, Table 5.1
crawl statistics, Table 5.2 image funnel, top-N on-topic image shares).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

MODES = ("keywords", "document", "unfocused", "learning")
DEFAULT_MODES = MODES
LOCAL_WEB_SETTINGS = {"DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False, "FOCUSCRAWL_PROGRESS_INTERVAL": 0}


def _crawl_command(mode: str, seeds: list[str], out: Path, budget: int, deterministic: bool,
                   model: str | None, keywords: str | None, extra: list[str], local: bool) -> list[str]:
    settings = {
        "FOCUSCRAWL_MODE": mode,
        "FOCUSCRAWL_PAGE_BUDGET": budget,  # PageBudget (settings.py): exactly this many page rows
        "LOG_LEVEL": "INFO",
    }
    if local:  # our own server on 127.0.0.1: per-host slots and robots.txt stay, the delays go,
        settings.update(LOCAL_WEB_SETTINGS)  # so the crawler is measured, not the waits
    if model:
        settings["FOCUSCRAWL_MODEL"] = model
    if keywords:
        settings["FOCUSCRAWL_KEYWORDS"] = keywords
    if deterministic:  # one request at a time: the same web gives the same crawl order
        settings.update(CONCURRENT_REQUESTS=1, CONCURRENT_REQUESTS_PER_DOMAIN=1, SCRAPER_SLOT_MAX_ACTIVE_SIZE=1)
    cmd = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"seeds={','.join(seeds)}",
           "-a", f"output={out}"]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    for item in extra:
        cmd += ["-s", item]
    return cmd


class CrawlFailed(RuntimeError):
    """A crawl process that did not finish; ``code`` is its exit code (``focuscrawl.processes``)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def run_crawl(mode: str, seeds: list[str], out: Path, budget: int, *, proxy: str | None = None,
              deterministic: bool = False, model: str | None = None, keywords: str | None = None,
              extra_settings: list[str] = (), timeout: float | None = None) -> dict:
    """One crawl in its own process (own reactor); the test web is reached as an HTTP proxy."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="focuscrawl.settings")
    for key in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        env.pop(key, None)
    if proxy:
        env["http_proxy"] = proxy
    cmd = _crawl_command(mode, seeds, out, budget, deterministic, model, keywords, list(extra_settings),
                         local=proxy is not None)
    t0 = time.perf_counter()
    with open(out / "crawl.log", "w") as log:
        proc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (out / "crawl.log").read_text(errors="replace")[-2000:]
        raise CrawlFailed(proc.returncode, f"crawl {mode} failed (exit {proc.returncode}); end of "
                                           f"{out / 'crawl.log'}:\n{tail}")
    return {"mode": mode, "seconds": seconds, "output": str(out)}


def train_heldout_model(web, folder: Path) -> tuple[str, str, str]:
    """Model, keywords and topic bundle of the web's topic from the captions a ``heldout`` web
    never shows (``folder/corpus`` as ``focuscrawl testweb heldout-corpus`` writes it, then
    ``train-lm`` and ``keywords``; the bundle from its positive side and the bundled
    general-English background, as a user with only topic text would build it): an
    evaluation of any topic without a model in the repository."""
    from focuscrawl.lm.demo_corpus import train_topic_model
    from focuscrawl.testweb.cli import heldout_corpus
    from focuscrawl.topic.build import build_bundle

    heldout_corpus(web.pool, web.topic, folder / "corpus")
    model, keywords = train_topic_model(folder / "corpus", folder, web.topic)
    bundle = folder / "bundle"
    build_bundle(sorted((folder / "corpus" / "positive").iterdir()), None, bundle, name=f"{web.topic} (held out)")
    return str(model.resolve()), str(keywords.resolve()), str(bundle.resolve())


def _portable(path: str | None, folder: Path) -> str | None:
    """A path inside the evaluation folder relative to it (the folder can move), others absolute."""
    if not path:
        return path
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(folder.resolve()))
    except ValueError:
        return str(resolved)


def cmd_run(args: argparse.Namespace) -> int:
    """One evaluation folder per web seed (``OUTPUT/seed-<n>/`` when several are given)."""
    import copy

    seeds = args.seed if isinstance(args.seed, list) else [args.seed]
    if len(seeds) == 1 or args.seeds:
        args.seed = seeds[0]
        return _run_one(args)
    for seed in seeds:
        one = copy.copy(args)
        one.seed, one.output = seed, str(Path(args.output) / f"seed-{seed}")
        print(f"eval run: web seed {seed} -> {one.output}", flush=True)
        if _run_one(one):
            return 1
    return 0


def _run_one(args: argparse.Namespace) -> int:
    from focuscrawl.eval.oracle import write_oracle
    from focuscrawl.testweb.cli import web_from_args, write_truth
    from focuscrawl.testweb.server import TestWebServer

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    server = None
    if args.seeds:  # the real web: no truth, no proxy
        seeds = [s.strip() for s in Path(args.seeds).read_text().splitlines() if s.strip()]
        info = {"web": "seed list", "seeds": seeds}
    else:
        if not args.model:  # no leakage: the model learns from captions the web never shows
            args.heldout = True
        web = web_from_args(args)
        info = write_truth(web, out / "web")
        seeds = web.seeds()
        t0 = time.perf_counter()
        info["oracle"] = write_oracle(web, seeds, args.budget, out / "web")
        print(f"eval run: reference crawls simulated with the ground truth (greedy heuristics, not upper bounds; "
              f"{time.perf_counter() - t0:.0f}s): " + ", ".join(
            f"{p} image harvest {b['image_harvest']:.3f}" for p, b in info["oracle"].items()
            if b["image_harvest"] is not None), flush=True)
        if not args.model:
            args.model, args.keywords, args.topic_bundle = train_heldout_model(web, out / "model")
            print(f"eval run: {web.topic} model trained on the web's held-out captions: {args.model}", flush=True)
        server = TestWebServer(web, slow_factor=args.slow_factor).start()
    extra = list(args.set)
    if args.topic_bundle:  # recorded in each run's stats.json: `focuscrawl rank` ranks with it
        extra.append(f"FOCUSCRAWL_TOPIC={Path(args.topic_bundle).resolve()}")
    meta = {"modes": args.modes, "budget": args.budget, "deterministic": args.deterministic,
            "model": _portable(args.model, out), "keywords": _portable(args.keywords, out),
            "topic_bundle": _portable(args.topic_bundle, out), "web": info, "runs": []}
    try:
        for mode in args.modes:
            print(f"eval run: {mode} ({args.budget} pages) ...", flush=True)
            result = run_crawl(mode, seeds, out / "runs" / mode, args.budget,
                               proxy=server.proxy if server else None, deterministic=args.deterministic,
                               model=args.model, keywords=args.keywords, extra_settings=extra)
            print(f"eval run: {mode} done in {result['seconds']:.0f}s", flush=True)
            if server is not None:
                _print_judge(out, out / "runs" / mode, args.budget)
            meta["runs"].append(dict(result, output=_portable(result["output"], out)))
    finally:
        if server is not None:
            meta["server"] = {"requests": server.requests, "statuses": dict(server.statuses),
                              "robots_violations": len(server.robots_violations)}
            server.stop()
        (out / "eval.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"eval run: outputs in {out}; next: focuscrawl eval report {out}")
    return 0


def _print_judge(out: Path, run_dir: Path, budget: int) -> None:
    """The run's page judge against the web's truth, when it judged pages (mode ``learning``)."""
    from focuscrawl.eval.crawl_metrics import Run, Truth, judge_accuracy
    from focuscrawl.eval.crawl_report import judge_line

    truth = Truth.load(out / "web")
    judge = judge_accuracy(Run.load(run_dir, budget=budget), truth) if truth is not None else None
    if judge is not None:
        print(f"eval run: {judge_line(judge)}", flush=True)


def cmd_report(args: argparse.Namespace) -> int:
    from focuscrawl.eval.crawl_report import build_report, build_seed_report, report_text, seed_folders

    kwargs = dict(top_n=args.top_n, budget=args.budget, model=args.model, score_range=(args.score_min, args.score_max))
    if seed_folders(Path(args.folder)) and not (Path(args.folder) / "eval.json").exists():
        summary = build_seed_report(Path(args.folder), **kwargs)
        report = Path(args.folder) / "report"
    else:
        summary = build_report(Path(args.folder), output=args.output, **kwargs)
        report = Path(args.output) if args.output else Path(args.folder) / "report"
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(report_text(summary, report))
    return 0


def register(eval_sub: argparse._SubParsersAction) -> None:
    from focuscrawl.testweb.cli import add_web_arguments

    p = eval_sub.add_parser("run", help="crawl one web with each mode (same seeds, same page budget)")
    add_web_arguments(p, several_seeds=True)
    p.add_argument("-o", "--output", required=True, help="evaluation folder (web/, runs/<mode>/, eval.json; "
                                                         "with several --seed values one seed-<n>/ folder each)")
    p.add_argument("--budget", type=int, default=5000, help="pages per run (default %(default)s)")
    p.add_argument("--modes", nargs="+", default=list(DEFAULT_MODES), choices=MODES,
                   help="crawl modes to run (default: all four: the thesis's three and learning)")
    p.add_argument("--seeds", help="a file of seed URLs on the real web instead of the test web (no truth)")
    p.add_argument("--deterministic", action="store_true",
                   help="one request at a time: same seed and settings give the same numbers")
    p.add_argument("--slow-factor", type=float, default=0.0, help="delay scale of the web's slow pages")
    p.add_argument("--model", help="LM for the crawl (default on the test web: a --heldout web and a model "
                                   "trained on its held-out captions, in OUTPUT/model/; with --seeds: the "
                                   "bundled cats model)")
    p.add_argument("--keywords", help="keyword list for the crawl")
    p.add_argument("--topic-bundle", metavar="DIR", help="topic bundle the runs record for ranking (default on the "
                                                         "test web without --model: one built from the held-out "
                                                         "captions, in OUTPUT/model/bundle)")
    p.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                   help="extra Scrapy setting for every run")
    p.set_defaults(func=cmd_run)

    p = eval_sub.add_parser("report", help="plots, HTML report and summary.json of an eval run folder")
    p.add_argument("folder", help="folder written by 'focuscrawl eval run'")
    p.add_argument("--top-n", type=int, default=500, help="ranked images per mode judged (thesis: 2500)")
    p.add_argument("--budget", type=int, help="cut every run to its first N pages")
    p.add_argument("--model", help="LM for the focus curve (default: the one the runs used)")
    p.add_argument("--score-min", type=float, default=2.0, help="score cut, lower bound (SPEC: 2)")
    p.add_argument("--score-max", type=float, default=70000.0, help="score cut, upper bound (SPEC: 70000)")
    p.add_argument("-o", "--output", help="report folder (default FOLDER/report)")
    p.add_argument("--json", action="store_true", help="print summary.json instead of the short summary")
    p.set_defaults(func=cmd_report)
