"""The dataset card written beside every export: a ``README.md`` with YAML front matter, as
Hugging Face dataset cards are, saying where the corpus came from (crawl dates, seeds, topic),
under which licences (counts), which opt-outs were honoured and what each removed, and the
settings that differ from the defaults."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from focuscrawl.corpus import CorpusEntry
from focuscrawl.output.files import atomic_write_bytes, iter_lines
from focuscrawl.output.manifest import read_manifest
from focuscrawl.output.stats import SESSIONS_FILE, read_stats

CARD = "README.md"
#: the front-matter key that marks a card as focuscrawl's (a README without it is never replaced)
MARK = "focuscrawl_card"
OPTOUT_PREFIX = "focuscrawl/optout/"
UNKNOWN = "unknown"


def card_path(output: Path) -> Path:
    """``README.md`` in the export's folder (the WebDataset folder, or the file's folder); a
    README that is not a focuscrawl card is left alone: ``<name>.README.md`` beside the export."""
    folder = output if output.is_dir() or (not output.suffix and "%" not in output.name) else output.parent
    path = folder / CARD
    if path.exists():
        try:
            ours = f"{MARK}: true" in path.read_text(encoding="utf-8", errors="replace")[:4000]
        except OSError:
            ours = False
        if not ours:
            return output.parent / f"{output.name.split('%')[0].rstrip('-_.') or 'corpus'}.{CARD}"
    return path


def _sessions(run_dir: Path) -> list[dict]:
    """Every session's stats of a run (and of each part of a merged run)."""
    found: list[dict] = []
    try:
        current = read_stats(run_dir / "stats.json")
    except (OSError, ValueError):
        current = {}
    for line in iter_lines(run_dir / SESSIONS_FILE) if (run_dir / SESSIONS_FILE).exists() else ():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    found.append(current)
    parts = current.get("parts")
    if isinstance(parts, dict):
        found += [p for p in parts.values() if isinstance(p, dict)]
    return found


def optout_counts(run_dir: str | Path) -> dict[str, int]:
    """``focuscrawl/optout/*`` counters summed over the run's sessions (names without the prefix)."""
    totals: Counter = Counter()
    for stats in _sessions(Path(run_dir)):
        for key, value in stats.items():
            if key.startswith(OPTOUT_PREFIX) and isinstance(value, int) and not isinstance(value, bool):
                totals[key[len(OPTOUT_PREFIX):]] += value
    return dict(sorted(totals.items()))


def _crawl_dates(run_dir: Path) -> tuple[str, str]:
    starts, ends = [], []
    for stats in _sessions(run_dir):
        if isinstance(stats.get("start_time"), str):
            starts.append(stats["start_time"])
        if isinstance(stats.get("finish_time"), str):
            ends.append(stats["finish_time"])
    return (min(starts) if starts else ""), (max(ends) if ends else "")


def card_data(run_dir: str | Path, entries: Iterable[CorpusEntry], written: int, export_format: str,
              ranking: dict[str, Any]) -> dict[str, Any]:
    """The card's facts, from the run's ``crawl.json`` and stats and the exported ``entries``."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    started, finished = _crawl_dates(run_dir)
    licenses = Counter((e.rights.get("license") or UNKNOWN) for e in entries)
    creators = sum(1 for e in entries if e.rights.get("creator"))
    return {
        "crawl_started": started or manifest.get("started", ""),
        "crawl_finished": finished,
        "seeds": manifest.get("seeds", []),
        "topic": manifest.get("topic") or ranking.get("topic") or "",
        "mode": manifest.get("mode", ""),
        "user_agent": manifest.get("user_agent", ""),
        "rows": written,
        "format": export_format,
        "ranking": ranking,
        "licenses": dict(licenses.most_common()),
        "with_creator": creators,
        "robots_txt_obeyed": manifest.get("robots_txt_obeyed", True),
        "optouts_obeyed": manifest.get("optouts_obeyed", []),
        "optouts_removed": optout_counts(run_dir),
        "settings_changed": manifest.get("settings_changed", {}),
        "manifest_found": bool(manifest),
    }


def _hf_license(licenses: dict[str, int]) -> str:
    """The card's ``license`` field: the one licence of every row (HF's lower-case id), else ``other``."""
    if len(licenses) == 1:
        (only,) = licenses
        if only != UNKNOWN and not only.startswith("LicenseRef-"):
            return only.lower()
    return "other"


def render_card(data: dict[str, Any]) -> str:
    """The card: YAML front matter (JSON values are YAML) and a short text for people."""
    front = {"license": _hf_license(data["licenses"]), "pretty_name": f"focuscrawl corpus ({data['topic'] or 'topic'})",
             "task_categories": ["image-to-text"], "tags": ["focuscrawl", "web-crawl", "image-text"], MARK: True}
    front |= {f"focuscrawl_{k}": v for k, v in data.items()}
    lines = ["---"] + [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in front.items()] + ["---", ""]
    removed = data["optouts_removed"]
    lines += [
        "# Image-text corpus harvested by focuscrawl", "",
        f"{data['rows']:,} image-text pairs ({data['format']}), crawled {data['crawl_started'] or '?'} to "
        f"{data['crawl_finished'] or '?'} in mode `{data['mode'] or '?'}` from {len(data['seeds'])} seed(s)"
        + (f", topic bundle `{data['topic']}`" if data["topic"] else "") + ".", "",
        "## Licences", "",
        "Each row's `license` (SPDX id), `license_raw`, `license_source`, `creator`, `credit_text`, "
        "`copyright_notice`, `acquire_license_page` and `tdm_policy` say what the page or the image file "
        "declared; `unknown` means nothing was declared: such images are not licensed to you by this card.", "",
        "| licence | rows |", "|---|---|"]
    lines += [f"| {name} | {count:,} |" for name, count in data["licenses"].items()]
    lines += ["", f"{data['with_creator']:,} rows name a creator.", "", "## Opt-outs honoured", "",
              ("robots.txt was obeyed. " if data["robots_txt_obeyed"] else "robots.txt was NOT obeyed. ")
              + "Opt-outs obeyed: " + (", ".join(f"`{o}`" for o in data["optouts_obeyed"]) or "none") + ".", ""]
    if removed:
        lines += ["| what was withheld | count |", "|---|---|"]
        lines += [f"| {name} | {count:,} |" for name, count in removed.items()]
    else:
        lines.append("No page or image was withheld by an opt-out.")
    lines += ["", "## Crawl", "", f"User-Agent: `{data['user_agent']}`", "", "Seeds:", ""]
    lines += [f"- {seed}" for seed in data["seeds"][:50]] or ["- (not recorded)"]
    if len(data["seeds"]) > 50:
        lines.append(f"- ... and {len(data['seeds']) - 50} more")
    lines += ["", "Settings that differ from focuscrawl's defaults:", ""]
    lines += [f"- `{k}` = `{v}`" for k, v in data["settings_changed"].items()] or ["- none"]
    if not data["manifest_found"]:
        lines += ["", "The run directory has no crawl.json (a crawl made before it was written, or a merged run): "
                      "seeds and settings are not known."]
    return "\n".join(lines) + "\n"


def write_card(run_dir: str | Path, output: Path, entries: list[CorpusEntry], written: int, export_format: str,
               ranking: dict[str, Any]) -> Path:
    """Write the card beside the export ``output``; its path."""
    path = card_path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, render_card(card_data(run_dir, entries, written, export_format, ranking)).encode("utf-8"))
    return path
