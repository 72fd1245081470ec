"""What a finished crawl tells its user: a few lines built from its stats alone.

Every crawl ends with the same summary (``focuscrawl crawl`` / ``scrapy crawl focused``,
``focuscrawl warc``, ``focuscrawl demo``, a scrapyd job): what was written and where, why
the crawl stopped, what limits cut it short (with the setting that raises each), what the
sites' opt-outs and errors took. ``crawl_summary`` is a pure function of the stats (as in
``stats.json``), so a command can summarise a finished run from its file too; Scrapy's
raw stats dump is logged at DEBUG only (``focuscrawl.scrapy_compat.MemoryStatsCollector``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

#: finish_reason -> why the crawl stopped, in words
STOP_REASONS = {
    "page_budget": "page budget reached",
    "finished": "frontier empty: no link left to follow",
    "shutdown": "stopped by the user (Ctrl-C or SIGTERM)",
    "closespider_timeout": "CLOSESPIDER_TIMEOUT reached",
    "closespider_itemcount": "CLOSESPIDER_ITEMCOUNT reached",
    "closespider_pagecount": "CLOSESPIDER_PAGECOUNT reached",
    "closespider_errorcount": "CLOSESPIDER_ERRORCOUNT reached",
    "memusage_exceeded": "MEMUSAGE_LIMIT_MB exceeded",
}

#: stat -> (what it dropped, the setting that raises the limit): the limits that cut a crawl short
LIMITS = (
    ("depth/request_ignored_count", "links beyond the depth limit", "DEPTH_LIMIT"),
    ("focuscrawl/scope/host_limit", "requests over the per-host cap", "FOCUSCRAWL_MAX_PAGES_PER_HOST"),
    ("focuscrawl/scope/domain_limit", "requests over the per-domain cap", "FOCUSCRAWL_MAX_PAGES_PER_DOMAIN"),
    ("focuscrawl/scope/path_repeats", "links with a repeated path segment", "FOCUSCRAWL_MAX_PATH_REPEATS"),
    ("focuscrawl/scope/path_segments", "links with too many path segments", "FOCUSCRAWL_MAX_PATH_SEGMENTS"),
    ("focuscrawl/scope/query_variants", "links over the query variants of a path", "FOCUSCRAWL_MAX_QUERY_VARIANTS"),
    ("urllength/request_ignored_count", "links longer than URLLENGTH_LIMIT", "URLLENGTH_LIMIT"),
)

#: stat prefix of the sites' opt-outs: ``focuscrawl/optout/<reason>`` (robots meta, X-Robots-Tag, TDMRep, ...)
OPTOUT_PREFIX = "focuscrawl/optout/"


def _n(stats: Mapping[str, Any], key: str) -> int:
    value = stats.get(key) or 0
    return value if isinstance(value, int) else 0


def _prefixed(stats: Mapping[str, Any], prefix: str) -> dict[str, int]:
    return {key[len(prefix):]: _n(stats, key) for key in sorted(stats) if key.startswith(prefix) and _n(stats, key)}


def _listed(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n:,}" for name, n in counts.items())


def crawl_summary(stats: Mapping[str, Any], settings: Mapping[str, Any] | None = None,
                  output: str | Path | None = None, what: str = "crawl",
                  extra_outputs: list[str] = ()) -> list[str]:
    """The summary lines of a finished crawl from its ``stats`` (and the ``settings`` whose
    values it names: DEPTH_LIMIT, the caps; read with ``.get``). ``output``: the run directory;
    ``extra_outputs``: feeds, the WARC folder (empty ones are left out)."""
    settings = settings or {}
    pages = _n(stats, "focuscrawl/pages/written")
    before = _n(stats, "focuscrawl/budget/pages_before_resume")
    images = _n(stats, "focuscrawl/images/written")
    run_pages = f" ({before + pages:,} in the run with the {before:,} before the resume)" if before else ""
    if output:
        lines = [f"{what} summary: {pages:,} pages and {images:,} images written{run_pages} to {output}"]
    else:
        lines = [f"{what} summary: {_n(stats, 'focuscrawl/pages/crawled'):,} pages crawled; no run directory "
                 f"(-a output=DIR), so no pages.tsv, images.tsv or image files"]
    reason = str(stats.get("finish_reason") or "unknown")
    why = STOP_REASONS.get(reason, reason)
    if reason == "page_budget":
        why += f" ({_n(stats, 'focuscrawl/budget/reached'):,} pages)"
    limits = []
    for key, dropped, setting in LIMITS:
        if _n(stats, key):
            value = settings.get(setting)
            named = setting if value is None else f"{setting}={value}"
            limits.append(f"{_n(stats, key):,} {dropped} ({named}; raise it with -s)")
    if reason == "finished" and limits:
        why += "; the limits below left links unfollowed"
    lines.append(f"  stopped: {why}")
    if limits:
        lines.append("  limits: " + "; ".join(limits))
    scope = {k: v for k, v in _prefixed(stats, "focuscrawl/scope/").items()
             if f"focuscrawl/scope/{k}" not in {key for key, _, _ in LIMITS}}
    if scope:
        lines.append(f"  out of scope (links not followed): {_listed(scope)}")
    optouts = {}
    if _n(stats, "robotstxt/forbidden"):
        optouts["robots.txt"] = _n(stats, "robotstxt/forbidden")
    optouts.update(_prefixed(stats, OPTOUT_PREFIX))
    if optouts:
        lines.append(f"  opt-outs (not fetched or not kept): {_listed(optouts)}")
    paced = _n(stats, "focuscrawl/politeness/crawl_delay_hosts")
    if paced:
        held = _n(stats, "focuscrawl/politeness/crawl_delay_held_to_max")
        longest = float(stats.get("focuscrawl/politeness/crawl_delay_max_seconds") or 0)
        lines.append(f"  politeness: {paced:,} hosts asked for a robots.txt Crawl-delay, obeyed (up to {longest:g} s"
                     + (f"; {held:,} held to FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX)" if held else ")"))
    errors = {}
    for prefix in ("focuscrawl/download_errors/", "focuscrawl/skipped/", "focuscrawl/images/failed/",
                   "spider_exceptions/"):
        errors.update(_prefixed(stats, prefix))
    errors.pop("IgnoreRequest", None)  # robots.txt, the caps, the opt-outs: each counted above
    if _n(stats, "log_count/ERROR"):
        errors["logged errors"] = _n(stats, "log_count/ERROR")
    if errors:
        lines.append(f"  errors and skips: {_listed(errors)}")
    dropped = _prefixed(stats, "focuscrawl/images/dropped/")
    if dropped:
        lines.append(f"  images not kept: {_listed(dropped)}")
    extra = [str(o) for o in extra_outputs if o]
    if extra:
        lines.append(f"  also written: {', '.join(extra)}")
    lines.append("  every counter: " + (f"{Path(output) / 'stats.json'}" if output else "the DEBUG log (-L DEBUG)"))
    return lines
