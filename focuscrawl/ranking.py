"""Ranking of a crawl's images (SPEC §6 end) and export of the ranked corpus.

``rank`` is the thesis's evaluation cut: keep final scores within [min, max], drop
repeated image URLs keeping the first seen, sort ascending (lower = more on topic),
take the top N. With a topic bundle (``--topic``, or the one the crawl used) the final
score is first replaced by the bundle's calibrated P(on topic) (``focuscrawl.topic.images``),
cut at the calibrated probability and sorted high to low; ``--scoring thesis`` (or
``FOCUSCRAWL_SCORING=thesis``) keeps SPEC's score and cut. Near-duplicates (same picture, same
or near-identical text) are collapsed before the top N unless ``--keep-duplicates``. A scorer
asked for that cannot run, or a run that cannot say which bundle it was crawled with, is an
error rather than a silent SPEC ranking. ``focuscrawl.export`` writes the ranked entries as
TSV, JSON lines, Parquet or WebDataset tar shards.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from focuscrawl import settings as defaults
from focuscrawl.corpus import CorpusEntry, check_run_dir, pair_text
from focuscrawl.export.cli import add_export_arguments, export_options
from focuscrawl.export.formats import export, shard_pattern
from focuscrawl.output.stats import read_stats
from focuscrawl.processes import EXIT_FAILED
from focuscrawl.topic.model import SCORERS

logger = logging.getLogger(__name__)

DEFAULT_SCORE_MIN = float(defaults.FOCUSCRAWL_SCORE_MIN)
DEFAULT_SCORE_MAX = float(defaults.FOCUSCRAWL_SCORE_MAX)
THESIS = "thesis"
#: ``thesis`` = SPEC's ranking; the others are topic bundle scorers (focuscrawl.topic.model.SCORERS)
SCORING_CHOICES = (THESIS,) + SCORERS
#: a pair text shorter than this says too little to call two images duplicates by their texts
DUPLICATE_TEXT_MIN_WORDS = 4


@dataclass
class RankStats:
    """The image funnel of a ranking (thesis Table 5.2 after the format filter)."""

    initial: int = 0
    no_score: int = 0
    cut: int = 0  # within [min, max]
    unique: int = 0  # after dropping repeated image URLs
    filtered: dict[str, int] = field(default_factory=dict)  # dropped by optional filters
    collapsed: int | None = None  # near-duplicates collapsed (None: kept, --keep-duplicates)
    ranked: int = 0  # after top N
    damaged_records: int = 0  # info records unreadable or of the wrong shape (context unknown)

    def as_dict(self) -> dict:
        result = {"initial": self.initial, "no_score": self.no_score, "score_cut": self.cut,
                  "unique": self.unique, "filtered": dict(self.filtered), "ranked": self.ranked,
                  "damaged_records": self.damaged_records}
        if self.collapsed is not None:
            result["collapsed"] = self.collapsed
        return result


def rank(entries: Iterable[CorpusEntry], top: int | None = None,
         score_min: float = DEFAULT_SCORE_MIN, score_max: float = DEFAULT_SCORE_MAX,
         filters: dict[str, Callable[[CorpusEntry], bool]] | None = None,
         stats: RankStats | None = None,
         collapse: Callable[[list[CorpusEntry], int | None], tuple[list[CorpusEntry], int]] | None = None,
         descending: bool = False) -> list[CorpusEntry]:
    """Score cut, dedupe by image URL (first seen wins), optional drop filters, ascending sort
    (``descending`` for probabilities: higher = more on topic), optional near-duplicate
    collapse, top N.

    ``filters`` maps a name to a predicate that returns True for entries to *drop*;
    their counts land in ``stats.filtered``. ``collapse`` takes the sorted entries and the top N
    and returns ``(kept, number collapsed)``. Ties keep crawl order.
    """
    stats = stats if stats is not None else RankStats()
    kept: list[CorpusEntry] = []
    for entry in entries:
        stats.initial += 1
        stats.damaged_records += bool(entry.record_error)  # read by a rescoring before the cut
        if entry.final_score is None:
            stats.no_score += 1
            continue
        if score_min <= entry.final_score <= score_max:
            kept.append(entry)
    stats.cut = len(kept)
    kept.sort(key=lambda e: e.first_seen)
    seen: set[str] = set()
    unique = []
    for entry in kept:
        if entry.image_url not in seen:
            seen.add(entry.image_url)
            unique.append(entry)
    stats.unique = len(unique)
    for name, drop in (filters or {}).items():
        before = len(unique)
        unique = [e for e in unique if not drop(e)]
        stats.filtered[name] = before - len(unique)
    sign = -1.0 if descending else 1.0
    unique.sort(key=lambda e: (sign * e.final_score, e.first_seen))
    if collapse is not None:
        unique, stats.collapsed = collapse(unique, top)
    ranked = unique[:top] if top is not None else unique
    stats.ranked = len(ranked)
    return ranked


def near_duplicate_collapser(run_dir: str | Path, stats: RankStats | None = None
                             ) -> Callable[[list[CorpusEntry], int | None], tuple[list[CorpusEntry], int]]:
    """A ``collapse`` for ``rank`` (its default): same picture by perceptual hash of the
    downloaded file, or the same or near-identical pair text (``pair_text``) by SimHash
    (``focuscrawl.dedup.collapse``); the better-ranked stays, in ranking order. The pair text, not
    the page context, so that gallery images sharing one parent element are not taken for
    duplicates. Flat one-colour pictures (placeholders, the synthetic test web) have no pHash
    (``phash_bytes`` gives None): compared by text only. Texts that say nothing of the picture
    (an auto-generated ALT such as ``wp-content-uploads-2012-09-img_1082`` or ``Photo``, or fewer
    than ``DUPLICATE_TEXT_MIN_WORDS`` words) are shared by different pictures: those images are
    compared by picture only. Damaged info records met on the way are counted in ``stats``."""
    from focuscrawl.altfilter import is_generated_alt
    from focuscrawl.corpus import fill_context
    from focuscrawl.dedup.collapse import collapse_near_duplicates
    from focuscrawl.dedup.image_hash import ImageHashError, phash_bytes

    def phash(entry: CorpusEntry) -> int | None:
        path = entry.image_file(run_dir)
        if path is None:
            return None
        try:
            return phash_bytes(path.read_bytes())
        except (ImageHashError, OSError):
            return None

    def descriptive(entry: CorpusEntry) -> str | None:
        if not (entry.alt or entry.title):  # the context is the pair text: read only for entries visited
            damaged = fill_context([entry], run_dir)
            if stats is not None:
                stats.damaged_records += damaged
        text = pair_text(entry)
        if len(text.split()) < DUPLICATE_TEXT_MIN_WORDS or is_generated_alt(text):
            return None
        return text

    def collapse(entries: list[CorpusEntry], limit: int | None = None) -> tuple[list[CorpusEntry], int]:
        # the entries come best first (ascending SPEC scores, descending probabilities): one score
        # for all keeps their order (ties keep input order); hashes only of the entries visited
        # before the top N is full
        return collapse_near_duplicates(entries, score=lambda _: 0, image_hash=phash, text=descriptive, limit=limit)

    return collapse


def add_ranking_arguments(p) -> None:
    """``--min --max --topic --scoring --keep-duplicates``: how a run's images are scored, cut and
    collapsed, the same for ``rank`` and ``annotate serve`` (``resolve_scoring``, ``rank_run`` and
    ``near_duplicate_collapser`` read them)."""
    p.add_argument("--min", type=float, default=None, dest="score_min",
                   help=f"lowest final score kept (thesis: {DEFAULT_SCORE_MIN:g}; a topic scorer: a probability, "
                        "default the bundle's calibrated cut)")
    p.add_argument("--max", type=float, default=None, dest="score_max",
                   help=f"highest final score kept (thesis: {DEFAULT_SCORE_MAX:g}; a topic scorer: 1)")
    p.add_argument("--topic", metavar="DIR", help="topic bundle to score with (default: the one the crawl used, "
                                                  "from its stats.json)")
    p.add_argument("--scoring", default=None, choices=SCORING_CHOICES,
                   help="thesis = SPEC's weighted perplexity and cut; otherwise a bundle scorer's P(on topic) "
                        "(default: $FOCUSCRAWL_SCORING, else the FOCUSCRAWL_SCORING setting)")
    p.add_argument("--keep-duplicates", action="store_true",
                   help="keep near-duplicates (by default only the best-ranked of images with the same picture "
                        "by perceptual hash, or the same or near-identical text by SimHash, is kept)")


def register(sub) -> None:
    p = sub.add_parser("rank", help="rank a run's images (score cut, dedupe, sort, top N) and export them")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the crawl's output directory")
    p.add_argument("--top", type=int, default=None, metavar="N", help="keep the N best (default: all)")
    add_ranking_arguments(p)
    p.add_argument("--drop-generated-alt", action="store_true",
                   help="drop images whose ALT text looks auto-generated (file names, paths, camera names)")
    p.add_argument("--license", metavar="SPEC",
                   help="keep only images whose licence matches: comma-separated classes (cc: any Creative Commons "
                        "licence or public-domain tool; commercial: one that allows commercial use; known; unknown) "
                        "or SPDX ids and patterns (CC-BY-4.0, CC-BY-SA-*)")
    add_export_arguments(p)
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line (for scripts)")
    p.set_defaults(func=cmd_rank)


#: stats.json keys whose counts say why the crawl kept no image
DROP_STATS_PREFIXES = ("focuscrawl/images/dropped/", "focuscrawl/images/failed/")


def _funnel_text(stats: RankStats, score_min: float, score_max: float) -> str:
    return (f"{stats.initial} images in images.tsv, {stats.no_score} without a final score, "
            f"{stats.cut} within the score cut [{score_min:g}, {score_max:g}]")


def _crawl_drops_text(run_dir: Path, top: int = 3) -> str:
    """The crawl's main reasons for dropping images, from the run's stats.json."""
    try:
        stats = read_stats(run_dir / "stats.json")
    except (OSError, ValueError):
        return "the run has no readable stats.json to say why"
    drops = sorted(((k, v) for k, v in stats.items()
                    if k.startswith(DROP_STATS_PREFIXES) and isinstance(v, int) and v > 0),
                   key=lambda kv: -kv[1])
    if not drops:
        return f"the crawl dropped no image ({stats.get('focuscrawl/images/seen', 0)} seen)"
    return (f"the crawl saw {stats.get('focuscrawl/images/seen', 0)} images; its main drop reasons (stats.json): "
            + ", ".join(f"{k.removeprefix('focuscrawl/images/')} {v}" for k, v in drops[:top]))


def run_topic_bundle(run_dir: str | Path) -> str | None:
    """The topic bundle a crawl used (``focuscrawl/topic/bundle`` in its stats.json, or in every
    part's of a merged run), None if it used none. Raises ``ValueError`` when the run cannot say
    (stats.json missing or not readable) or names a bundle that is gone: ranking such a run by
    SPEC would silently give another corpus than the crawl's bundle would."""
    path = Path(run_dir) / "stats.json"
    advice = "give --topic DIR, or --scoring thesis for SPEC's ranking"
    try:
        stats = read_stats(path)
    except FileNotFoundError:
        raise ValueError(f"{path} is missing, so whether the crawl used a topic bundle is unknown; {advice}") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is not readable ({str(exc).splitlines()[0][:120]}); {advice}") from None
    parts = stats.get("parts")
    named = {part.get("focuscrawl/topic/bundle") for part in parts.values() if isinstance(part, dict)} \
        if isinstance(parts, dict) else {stats.get("focuscrawl/topic/bundle")}
    named.discard(None)
    if len(named) > 1:
        raise ValueError(f"{path}: the merged parts used different topic bundles ({', '.join(sorted(map(str, named)))}); "
                         f"{advice}")
    if not named:
        return None
    value = str(named.pop())
    if not (Path(value) / "bundle.json").is_file():
        raise ValueError(f"the crawl's topic bundle {value} (in {path}) is gone; {advice}")
    return value


def resolve_scoring(scoring: str | None, topic: str | None, run_dir: str | Path) -> tuple[str, str | None]:
    """``(scoring, bundle)``. A run crawled without a bundle is ranked by SPEC (said on stderr)
    unless a topic scorer was asked for (``--scoring`` or $FOCUSCRAWL_SCORING): that cannot
    run, so it is an error, as is a run that cannot say which bundle it used."""
    import os
    import sys

    asked = scoring or os.environ.get("FOCUSCRAWL_SCORING")
    scoring = asked or defaults.FOCUSCRAWL_SCORING
    if scoring not in SCORING_CHOICES:
        raise ValueError(f"unknown scoring {scoring!r} (choose from {', '.join(SCORING_CHOICES)})")
    if scoring == THESIS:
        return THESIS, None
    check_run_dir(run_dir)  # not a run directory: say so, not that its stats.json is missing
    bundle = topic or run_topic_bundle(run_dir)
    if bundle is None and asked:
        raise ValueError(f"scoring {scoring!r} needs a topic bundle and the crawl used none (stats.json): "
                         f"give --topic DIR, or --scoring thesis")
    if bundle is None:
        print(f"focuscrawl rank: no topic bundle (--topic DIR, or a crawl with -a topic=DIR): "
              f"ranking by SPEC's weighted perplexity and cut [{DEFAULT_SCORE_MIN:g}, {DEFAULT_SCORE_MAX:g}]",
              file=sys.stderr)
        return THESIS, None
    return scoring, bundle


def rank_run(run_dir: str | Path, scoring: str, bundle: str | None, top: int | None = None,
             score_min: float | None = None, score_max: float | None = None,
             filters: dict[str, Callable[[CorpusEntry], bool]] | None = None, stats: RankStats | None = None,
             collapse=None, entries: Iterable[CorpusEntry] | None = None
             ) -> tuple[list[CorpusEntry], tuple[float, float]]:
    """A run's ranked images as ``focuscrawl rank`` makes them (``resolve_scoring`` first), and
    the score range used: SPEC's for ``thesis``, else the bundle's calibrated probability.
    ``entries``: a subset of the run's entries (default all)."""
    from focuscrawl.corpus import iter_entries

    if entries is None:
        entries = iter_entries(run_dir, with_context=False)  # info records read only where needed
    if scoring == THESIS:
        lo = DEFAULT_SCORE_MIN if score_min is None else score_min
        hi = DEFAULT_SCORE_MAX if score_max is None else score_max
    else:
        from focuscrawl.topic.images import rescore
        from focuscrawl.topic.model import TopicModel

        model = TopicModel(bundle, scoring)
        entries = rescore(entries, model, run_dir)
        lo = model.threshold("cut") if score_min is None else score_min
        hi = 1.0 if score_max is None else score_max
    if lo > hi:
        raise ValueError("--min is greater than --max")
    ranked = rank(entries, top, lo, hi, filters, stats, collapse, descending=scoring != THESIS)
    return ranked, (lo, hi)


def cmd_rank(args) -> int:
    from focuscrawl.altfilter import is_generated_alt
    from focuscrawl.corpus import fill_context
    from focuscrawl.export.card import write_card
    from focuscrawl.rights.licenses import license_filter

    if args.top is not None and args.top < 1:
        raise ValueError("--top must be at least 1")
    options = export_options(args)  # option errors before any work
    scoring, bundle = resolve_scoring(args.scoring, args.topic, args.run_dir)
    filters = {}
    if args.drop_generated_alt:
        filters["generated_alt"] = lambda e: is_generated_alt(e.alt)
    if args.license:
        accepts = license_filter(args.license)
        filters["license"] = lambda e: not accepts(e.rights.get("license", ""))
    stats = RankStats()
    collapse = None if args.keep_duplicates else near_duplicate_collapser(args.run_dir, stats)
    ranked, (score_min, score_max) = rank_run(args.run_dir, scoring, bundle, args.top, args.score_min,
                                              args.score_max, filters, stats, collapse)
    stats.damaged_records += fill_context(ranked, args.run_dir)
    # a bundle's probability and the crawl's score are the columns p_on_topic and final_score
    exported = export(ranked, args.run_dir, options, [])
    card = write_card(args.run_dir, options.output, ranked, exported.written, options.fmt,
                      {"scoring": scoring, "topic": bundle, "top": args.top, "license_filter": args.license or ""})
    if stats.damaged_records:
        logger.warning("rank: skipped %d damaged info record(s) (unreadable or of the wrong shape); their images "
                       "were ranked without context text", stats.damaged_records)
    damaged_files = exported.damaged_image_files
    if damaged_files:
        logger.warning("rank: %d downloaded image file(s) are missing or truncated in the run directory "
                       "(e.g. %s); the export is complete, their rows say so (status, error_message)",
                       len(damaged_files), damaged_files[0])
    if not ranked:
        logger.warning("rank: no image passed (%s); %s", _funnel_text(stats, score_min, score_max),
                       _crawl_drops_text(Path(args.run_dir)))
    summary = {"scoring": scoring, "topic": bundle, "score_range": [score_min, score_max]} | stats.as_dict() \
        | {"top": args.top, "written": exported.written, "status": dict(exported.status), "files": exported.files,
           "damaged_image_files": len(damaged_files), "run_dir": str(Path(args.run_dir).resolve())}
    if options.with_images:
        summary["images"] = options.images.as_dict()
    if options.fmt == "webdataset":
        summary["shards"] = shard_pattern(options.output)
    summary["card"] = str(card)
    print(json.dumps(summary) if args.json else rank_summary_text(summary, options.fmt, str(options.output)))
    return EXIT_FAILED if damaged_files else 0  # a damaged run: not a silent success


def rank_summary_text(summary: dict, fmt: str, output: str) -> str:
    """What ``rank`` did, for a person: where the corpus went, by what it was ranked, the funnel."""
    lo, hi = summary["score_range"]
    if summary["scoring"] == THESIS:
        how = f"SPEC's weighted perplexity, ascending, cut [{lo:g}, {hi:g}]"
    else:
        how = f"P(on topic) under the {summary['scoring']} scorer of {summary['topic']}, high to low, cut at P >= {lo:.3g}"
    steps = [f"{summary['initial']:,} images in images.tsv", f"{summary['score_cut']:,} within the cut",
             f"{summary['unique']:,} distinct URLs"]
    steps += [f"{n:,} dropped as {name.replace('_', ' ')}" for name, n in summary["filtered"].items()]
    if "collapsed" in summary:
        steps.append(f"{summary['collapsed']:,} near-duplicates collapsed")
    top = summary.get("top")
    steps.append(f"{summary['ranked']:,} ranked" + (f" (the first {top:,}: --top)" if top is not None else ""))
    files = summary.get("files") or [output]
    where = files[0] if len(files) == 1 else f"{len(files)} files: " + (", ".join(files) if len(files) <= 4 else
                                                                          f"{files[0]}, ..., {files[-1]}")
    lines = [f"rank: {summary['written']:,} images written to {where} ({fmt})",
             f"  ranked by {how}", "  " + " -> ".join(steps)]
    if summary["no_score"]:
        lines.append(f"  {summary['no_score']:,} images without a score (no words to score) were left out")
    if summary["written"] < summary["ranked"]:
        why = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in summary["status"].items() if k != "success" and v)
        lines.append(f"  {summary['ranked'] - summary['written']:,} ranked images not written" + (f": {why}" if why else ""))
    if summary.get("run_dir"):  # the column image_path names files of the run directory
        lines.append(f"  image_path: relative to the run directory {summary['run_dir']}")
    if summary.get("card"):
        lines.append(f"  dataset card (sources, licences, opt-outs): {summary['card']}")
    return "\n".join(lines)
