"""``focuscrawl fetch RUN_DIR --top N``: download the N best candidate pairs of a replay.

A replay of archives that hold pages but not their images (``focuscrawl warc`` over
CommonCrawl-style WARCs) writes each image that passes the rules as a candidate pair
(images.tsv ``image_status=not_archived``). This command ranks the candidates as ``focuscrawl
rank`` ranks a run (same scoring, cut and near-duplicate collapse options), takes the N best,
and fetches those not fetched yet with a real crawl (``focuscrawl.spiders.fetch``): robots.txt
and the opt-outs obeyed, the project's per-host concurrency, delays and User-Agent. Each
outcome is appended to the run's fetched.tsv; images.tsv stays as the replay wrote it, and
``rank`` reads both (docs/OUTPUT.md). Run it again with the same N and nothing is fetched twice;
with a larger N the next candidates are fetched. A candidate whose fetch failed with a
connection error (``download_error``) is tried again by the next run.
"""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from focuscrawl.archive.cli import add_process_arguments
from focuscrawl.corpus import CorpusEntry, check_run_dir, iter_entries
from focuscrawl.ranking import add_ranking_arguments, near_duplicate_collapser, rank_run, resolve_scoring

#: fetch outcomes the next fetch tries again (a connection error, a timeout: not the image's fault)
RETRIED = frozenset({"download_error"})
#: the fetch's stats, written whole into the run directory at its end
FETCH_STATS = "fetch_stats.json"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fetch", help="download the N best candidate pairs of a replay (focuscrawl warc of "
                                     "archives without images) into its run directory, politely")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the replay's run directory")
    p.add_argument("--top", type=int, required=True, metavar="N",
                   help="fetch the N best candidates as `focuscrawl rank` ranks them (those fetched before are "
                        "not fetched again)")
    add_ranking_arguments(p)
    add_process_arguments(p)
    p.set_defaults(func=cmd_fetch)


def is_candidate(entry: CorpusEntry) -> bool:
    """A pair the replay wrote without its image: still to fetch, or fetched by ``focuscrawl fetch``."""
    return entry.image_status == "not_archived" or bool(entry.fetch_status)


def top_candidates(run_dir: str | Path, top: int, scoring: str, bundle: str | None, score_min: float | None = None,
                   score_max: float | None = None, keep_duplicates: bool = False) -> list[CorpusEntry]:
    """The ``top`` best candidates of the run, best first, fetched or not (so that the same N
    names the same images on every run)."""
    candidates = [entry for entry in iter_entries(run_dir, with_context=False) if is_candidate(entry)]
    collapse = None if keep_duplicates else near_duplicate_collapser(run_dir)
    ranked, _ = rank_run(run_dir, scoring, bundle, top, score_min, score_max, collapse=collapse, entries=candidates)
    return ranked


def candidate_item(entry: CorpusEntry, records):
    """The crawl's image item of a candidate: its first sighting as the info record keeps it
    (texts, scores, HTML size, page rights), else what images.tsv holds."""
    from focuscrawl.items import ImageItem

    fields: dict = {}
    try:
        record = records.read(entry.record_path) if entry.record_path else {}
        fields.update((record.get("sightings") or [{}])[0])
        fields.update({k: record[k] for k in ("html_width", "html_height", "rights") if record.get(k) is not None})
    except (OSError, ValueError, AttributeError, TypeError, IndexError):
        fields = {}  # a damaged record: the row's fields
    fields.update(image_url=entry.image_url, page_url=fields.get("page_url") or entry.page_url,
                  first_seen=entry.first_seen, record_path=entry.record_path)
    if not fields.get("rights"):
        fields["rights"] = {k: v for k, v in entry.rights.items() if v}
    if not fields.get("alt_scores"):  # no record: the score the replay gave it
        fields["final_score"], fields["final_context"] = entry.final_score, entry.final_context
    return ImageItem(**{k: v for k, v in fields.items() if k in ImageItem.fields and v is not None})


def fetch(run_dir: str, items: list, settings: dict, verbose: bool = False) -> dict:
    """One crawl (``CrawlerProcess``) that fetches ``items`` into ``run_dir``: its stats."""
    from focuscrawl.archive.cli import crawl_stats, crawler_process
    from focuscrawl.processes import record_stop_signals
    from focuscrawl.spiders.fetch import CandidateFetchSpider

    # the fetch writes into run_dir itself: RunState's line that no run directory is written would mislead
    quiet = _Without("FOCUSCRAWL_OUTPUT_DIR is empty")
    handlers = logging.getLogger().handlers
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        with crawler_process(settings, verbose) as process:
            stop_signals = record_stop_signals(process)
            crawler = process.create_crawler(CandidateFetchSpider)
            process.crawl(crawler, run_dir=run_dir, candidates=items)
            process.start()
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)
    return crawl_stats(crawler, stop_signals)


class _Without(logging.Filter):
    """Drops the log lines that start with ``prefix``."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


def fetch_summary(top: list[CorpusEntry], todo: list, stats: dict) -> dict:
    """What the fetch did: the top N, those fetched before, those requested now and what came of them."""
    prefixes = {"failed": "focuscrawl/images/failed/", "opted_out": "focuscrawl/optout/images/"}
    summary = {"finish_reason": stats.get("finish_reason"), "top": len(top),
               "fetched_before": len(top) - len(todo), "requested": len(todo),
               "downloaded": stats.get("focuscrawl/images/downloaded", 0)}
    for name, prefix in prefixes.items():
        summary[name] = {k.removeprefix(prefix): v for k, v in sorted(stats.items()) if k.startswith(prefix)}
    summary["robots_forbidden"] = stats.get("robotstxt/forbidden", 0)
    return summary


def human_summary(summary: dict, run_dir: str) -> str:
    failed = ", ".join(f"{k} {v}" for k, v in {**summary["failed"], **{f"opted out ({k})": v for k, v in
                                                                      summary["opted_out"].items()}}.items())
    lines = [f"fetch: {summary['downloaded']:,} of {summary['requested']:,} candidates requested downloaded into "
             f"{run_dir} (the top {summary['top']:,}; {summary['fetched_before']:,} fetched before)"]
    if failed:
        lines.append(f"  not downloaded: {failed} (robots.txt forbade {summary['robots_forbidden']:,} requests)")
    lines.append(f"  each outcome: {Path(run_dir, 'fetched.tsv')}; stats: {Path(run_dir, FETCH_STATS)}; "
                 f"`focuscrawl rank` shows them fetched")
    return "\n".join(lines)


def cmd_fetch(args: argparse.Namespace) -> int:
    from focuscrawl.archive.cli import exit_code, settings_from_pairs
    from focuscrawl.output.files import atomic_write_bytes, lock_directory
    from focuscrawl.output.records import run_records

    if args.top < 1:
        raise ValueError("--top must be at least 1")
    check_run_dir(args.run_dir)
    settings = settings_from_pairs(args.set)
    scoring, bundle = resolve_scoring(args.scoring, args.topic, args.run_dir)
    lock = lock_directory(args.run_dir, "run directory")  # one writer of fetched.tsv at a time
    try:
        top = top_candidates(args.run_dir, args.top, scoring, bundle, args.score_min, args.score_max,
                             args.keep_duplicates)
        todo = [e for e in top if not e.fetch_status or e.fetch_status in RETRIED]
        records = run_records(args.run_dir)
        items = [candidate_item(entry, records) for entry in todo]
        stats = fetch(args.run_dir, items, settings, getattr(args, "verbose", False)) if items else {"finish_reason": "finished"}
        if items:
            atomic_write_bytes(Path(args.run_dir, FETCH_STATS), json.dumps(stats, indent=1).encode())
    finally:
        lock.release()
    summary = fetch_summary(top, todo, stats)
    print(json.dumps(summary) if args.json else human_summary(summary, args.run_dir))
    return exit_code({**summary, "stop_signal": stats.get("stop_signal")})
