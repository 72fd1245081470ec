"""The thesis's crawl comparison (SPEC §7) as pure functions over a crawl's run directory.

Inputs are the files the crawl writes (docs/ARCHITECTURE.md): ``pages.tsv`` (crawl
order), ``sentences.txt.gz``, ``images.tsv``, ``stats.json``; and, for a test web, its
ground truth (``truth_pages.tsv.gz``, ``truth_images.tsv.gz``). Without truth the
label-based numbers are ``None`` and the rest is still computed.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator
from urllib.parse import urlsplit

from focuscrawl.corpus import CorpusEntry, iter_entries
from focuscrawl.lm.scorer import perplexity_from_log10
from focuscrawl.output.files import parse_float, read_tsv
from focuscrawl.output.records import RunRecords
from focuscrawl.output.stats import read_stats
from focuscrawl.ranking import (DEFAULT_SCORE_MAX, DEFAULT_SCORE_MIN, RankStats, near_duplicate_collapser, rank,
                                rank_run)
from focuscrawl.text.language import OTHER_LANGUAGE
from focuscrawl.topic.model import DEFAULT_SCORER

SCORE_RANGE = (DEFAULT_SCORE_MIN, DEFAULT_SCORE_MAX)


def _float(value) -> float | None:
    """A finite number, or None (missing, not a number, NaN or infinite)."""
    return parse_float(value, missing=None, finite=True)


@dataclass
class Truth:
    """Labels of a test web: page URL -> on topic; image URL -> (shows topic, ALT describes it)."""

    pages: dict[str, bool] = field(default_factory=dict)
    images: dict[str, tuple[bool, bool]] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: str | Path) -> "Truth | None":
        folder = Path(folder)
        if not (folder / "truth_pages.tsv.gz").exists():
            return None
        pages = {r["url"]: r["on_topic"] == "1" for r in read_tsv(folder / "truth_pages.tsv.gz")}
        images = {r["url"]: (r["shows_topic"] == "1", r["alt_describes"] == "1")
                  for r in read_tsv(folder / "truth_images.tsv.gz")}
        return cls(pages, images)

    def page_on_topic(self, url: str) -> bool:
        return self.pages.get(url, False)  # trap pages and unknown URLs are off topic

    def image(self, url: str) -> tuple[bool, bool]:
        return self.images.get(url, (False, False))  # logos, ads, icons: not the topic


@dataclass
class Run:
    """One crawl's outputs, cut to the first ``budget`` pages (crawl order)."""

    name: str
    folder: Path
    pages: list[dict]
    images: list[dict]
    stats: dict
    sentences_path: Path | None
    #: (image URL, final score) of every sighting: each page an image was found on
    sightings: list[tuple[str, float | None]] = field(default_factory=list)

    @classmethod
    def load(cls, folder: str | Path, name: str | None = None, budget: int | None = None) -> "Run":
        folder = Path(folder)
        if not (folder / "pages.tsv").exists():
            raise FileNotFoundError(f"{folder}: no pages.tsv (not a crawl run directory)")
        pages = read_tsv(folder / "pages.tsv")
        if budget:
            pages = pages[:budget]
        kept = {p["url"] for p in pages}
        images = [r for r in read_tsv(folder / "images.tsv") if not budget or r.get("page_url") in kept]
        stats = read_stats(folder / "stats.json") if (folder / "stats.json").exists() else {}
        sentences = folder / "sentences.txt.gz"
        sightings = []
        records = RunRecords(folder)  # with a killed crawl's unfolded sightings log
        for r in images:
            record_sightings = _record_sightings(records, r.get("record_path"))
            if record_sightings is None:  # no record, or a damaged one: the images.tsv row
                sightings.append((r["image_url"], _score(r)))
                continue
            for sight in record_sightings:
                if not budget or sight.get("page_url") in kept:
                    sightings.append((r["image_url"], _float(sight.get("final_score"))))
        return cls(name or folder.name, folder, pages, images, stats, sentences if sentences.exists() else None,
                   sightings)


def _record_sightings(records: RunRecords, record_path: str | None) -> list[dict] | None:
    """The sightings of an info record, None when it is missing or not of the writer's shape."""
    if not record_path:
        return None
    try:
        record = records.read(record_path)
    except (OSError, ValueError):
        return None
    sightings = record.get("sightings") if isinstance(record, dict) else None
    if not isinstance(sightings, list) or not all(isinstance(s, dict) for s in sightings):
        return None
    return sightings


# -- harvest rate ----------------------------------------------------------------------
def harvest_curve(run: Run, truth: Truth) -> dict[str, list[int]]:
    """Cumulative on-topic pages and on-topic (unique) images against pages fetched."""
    first_page_images: dict[str, list[str]] = {}
    for r in run.images:
        first_page_images.setdefault(r.get("page_url", ""), []).append(r["image_url"])
    seen: set[str] = set()
    pages_on, images_on = [], []
    n_pages = n_images = 0
    for p in run.pages:
        n_pages += truth.page_on_topic(p["url"])
        for url in first_page_images.get(p["url"], []):
            if url not in seen:
                seen.add(url)
                n_images += truth.image(url)[0]
        pages_on.append(n_pages)
        images_on.append(n_images)
    return {"on_topic_pages": pages_on, "on_topic_images": images_on}


# -- the page judge of mode learning -------------------------------------------------------
JUDGED_FILE = "judged.tsv"


def judge_accuracy(run: Run, truth: Truth) -> dict | None:
    """The page judge's calls (``judged.tsv``, mode ``learning``) on the run's pages against the
    truth: the share it called on topic, the share truly on topic, its precision and recall
    (``None`` where undefined); ``None`` for a run without calls."""
    path = run.folder / JUDGED_FILE
    if not path.exists():
        return None
    kept = {p["url"] for p in run.pages}
    calls = [(r["url"], r["on_topic"] == "1") for r in read_tsv(path) if r.get("url") in kept]
    return judge_scores([called for _, called in calls], [truth.page_on_topic(url) for url, _ in calls])


def judge_scores(called: list[bool], true: list[bool]) -> dict:
    """Share called on topic, share truly on topic, precision and recall of ``called`` against ``true``."""
    n = len(called)
    hits = sum(c and t for c, t in zip(called, true))
    return {"judged": n, "judged_on_topic_share": sum(called) / n if n else None,
            "on_topic_share": sum(true) / n if n else None,
            "precision": hits / sum(called) if any(called) else None,
            "recall": hits / sum(true) if any(true) else None}


# -- focus curve (Fig. 5.1) ---------------------------------------------------------------
def prefix_sizes(total: int, start: int = 100) -> list[int]:
    """1-2-5 steps (100, 200, 500, 1000, ...) up to and including ``total``."""
    sizes, k = [], start
    while k < total:
        sizes.extend(s for s in (k, 2 * k, 5 * k) if s < total)
        k *= 10
    return sorted(set(sizes)) + ([total] if total else [])


def iter_sentences(path: Path | None) -> Iterator[str]:
    if path is None:
        return
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if line:
                yield line


def focus_curve(sentences: Iterable[str], log10_prob: Callable[[str], float],
                sizes: list[int] | None = None) -> list[tuple[int, float]]:
    """Perplexity of growing prefixes of the sentence log: [(n sentences, PP)].

    ``log10_prob(sentence)`` is the LM's log10 probability with ``<s>``/``</s>``;
    tokens counted as in ``TopicScorer`` (words + ``</s>``).
    """
    sentences = list(sentences)
    sizes = sizes or prefix_sizes(len(sentences))
    out, total, tokens, i = [], 0.0, 0, 0
    for size in sizes:
        while i < min(size, len(sentences)):
            s = sentences[i]
            total += log10_prob(s)
            tokens += s.count(" ") + 2
            i += 1
        pp = perplexity_from_log10(total, tokens)
        if pp is not None:
            out.append((i, pp))
    return out


# -- crawl statistics (Table 5.1) ------------------------------------------------------------
def crawl_statistics(run: Run) -> dict:
    sentences = tokens = 0
    for s in iter_sentences(run.sentences_path):
        sentences += 1
        tokens += s.count(" ") + 1
    hosts = {urlsplit(p["url"]).hostname for p in run.pages}
    volume = sum(int(_float(p.get("size")) or 0) for p in run.pages)
    uris = int(run.stats.get("downloader/response_count") or len(run.pages))
    elapsed = _float(run.stats.get("elapsed_time_seconds"))
    if not elapsed:
        times = [_float(p.get("fetched_at")) for p in run.pages]
        times = [t for t in times if t]
        elapsed = (max(times) - min(times)) if len(times) > 1 else None
    return {"sentences": sentences, "tokens": tokens, "hosts": len(hosts), "pages": len(run.pages),
            "uris": uris, "volume_bytes": volume, "seconds": elapsed,
            "pages_other_language": int(run.stats.get("focuscrawl/pages/other_language", 0)),
            "uris_per_s": uris / elapsed if elapsed else None,
            "pages_per_s": len(run.pages) / elapsed if elapsed else None,
            "kb_per_s": volume / 1024 / elapsed if elapsed else None}


# -- images: funnel (Table 5.2) and top-N --------------------------------------------------
def _score(row: dict) -> float | None:
    return _float(row.get("final_score"))


HTML_RULE_DROPS = ("no_alt_title", "no_src", "bad_src", "size_unspecified", "too_small", "too_large")


def image_funnel(run: Run, score_range: tuple[float, float] = SCORE_RANGE) -> dict[str, int]:
    """initial -> language filter -> format filter -> score cut -> unique, as thesis Table 5.2
    with the language filter.

    *initial*: image sightings that passed the HTML rules (ALT/title, size), *language*:
    those whose texts are not in an unwanted language (``focuscrawl/images/dropped/other_language``),
    *format*: those with a kept format. Both come from the crawl's stats (``focuscrawl/images/seen``,
    ``focuscrawl/images/dropped/<reason>``, ``focuscrawl/images/kept``; a few pages in flight
    after the budget closed the crawl may be counted); without them both are the logged sightings. *score*:
    sightings (every page an image was found on, from the records) whose final score is
    in ``score_range``; *unique*: their distinct image URLs.
    """
    st = run.stats
    lo, hi = score_range
    if "focuscrawl/images/seen" in st:
        initial = int(st["focuscrawl/images/seen"]) - sum(int(st.get(f"focuscrawl/images/dropped/{r}", 0))
                                                          for r in HTML_RULE_DROPS)
        language = initial - int(st.get(f"focuscrawl/images/dropped/{OTHER_LANGUAGE}", 0))
        formatted = int(st.get("focuscrawl/images/kept", 0))
    else:
        initial = language = formatted = len(run.sightings)
    scored = [(url, s) for url, s in run.sightings if s is not None and lo <= s <= hi]
    return {"initial": initial, "language": language, "format": formatted, "score": len(scored),
            "unique": len({u for u, _ in scored})}


def score_cut_by_truth(run: Run, truth: Truth, score_range: tuple[float, float] = SCORE_RANGE) -> dict:
    """What the score cut does to on- and off-topic images (distinct URLs, first sighting's
    score, as the ranking keeps them): ``{"on_topic"|"off_topic": {"images", "below",
    "above", "kept"}}``. Shows whether the bounds remove the wrong images."""
    lo, hi = score_range
    first: dict[str, float | None] = {}
    for url, score in run.sightings:
        first.setdefault(url, score)
    counts = {k: {"images": 0, "below": 0, "above": 0, "kept": 0} for k in ("on_topic", "off_topic")}
    for url, score in first.items():
        c = counts["on_topic" if truth.image(url)[0] else "off_topic"]
        c["images"] += 1
        if score is None or score < lo:
            c["below"] += 1
        elif score > hi:
            c["above"] += 1
        else:
            c["kept"] += 1
    return counts


def ranked_images(run: Run, score_range: tuple[float, float] = SCORE_RANGE, bundle: str | Path | None = None,
                  collapse: bool = False, stats: RankStats | None = None) -> list[CorpusEntry]:
    """The run's images ranked as ``focuscrawl rank`` does: without ``bundle`` as the thesis
    did (score cut, unique by URL (first seen), final score ascending); with a topic bundle by
    its default scorer's P(on topic), cut at its calibrated probability, high to low;
    ``collapse``: near-duplicates collapsed (``rank``'s default); ``stats``: the ranking's funnel.
    Only images of the run's pages."""
    if not (run.folder / "images.tsv").exists():
        return []
    kept = {p["url"] for p in run.pages}
    entries = (e for e in iter_entries(run.folder, with_context=False) if e.page_url in kept)
    collapser = near_duplicate_collapser(run.folder, stats) if collapse else None
    if bundle is None:
        return rank(entries, score_min=score_range[0], score_max=score_range[1], stats=stats, collapse=collapser)
    return rank_run(run.folder, DEFAULT_SCORER, str(bundle), stats=stats, entries=entries, collapse=collapser)[0]


def top_n_shares(ranked: list[CorpusEntry], truth: Truth, n: int) -> dict:
    """Share of the top ``n`` ranked images that show the topic / whose ALT describes the image."""
    top = ranked[:n]
    if not top:
        return {"n": 0, "on_topic": None, "alt_describes": None, "on_topic_and_alt_describes": None}
    labels = [truth.image(e.image_url) for e in top]
    return {"n": len(top), "on_topic": sum(s for s, _ in labels) / len(top),
            "alt_describes": sum(d for _, d in labels) / len(top),
            "on_topic_and_alt_describes": sum(s and d for s, d in labels) / len(top)}


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None
