"""Extension that writes ``crawl.json`` in the run directory when a crawl opens: what the crawl
was asked to do (seeds, mode, topic, User-Agent), which opt-outs it obeyed, the settings that
differ from focuscrawl's defaults, and when each session started. A corpus's dataset card
(``focuscrawl rank``) is written from it and from ``stats.json``."""
from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from focuscrawl import settings as defaults
from focuscrawl.output.files import atomic_write_bytes

logger = logging.getLogger(__name__)

MANIFEST = "crawl.json"
#: settings that name the crawl's inputs and outputs: said in their own fields, not as changes
_NOT_CHANGES = frozenset({"FOCUSCRAWL_SEEDS", "FOCUSCRAWL_OUTPUT_DIR", "LOG_FILE", "FEEDS", "JOBDIR"})


def changed_settings(settings) -> dict[str, Any]:
    """``FOCUSCRAWL_*`` and politeness settings whose value differs from focuscrawl's
    default (``focuscrawl.settings``), by name, as the crawl read them."""
    changed = {}
    for name in dir(defaults):
        if not name.isupper() or name in _NOT_CHANGES or name.startswith("_"):
            continue
        default = getattr(defaults, name)
        if isinstance(default, dict):
            continue  # component dicts: not user choices a card reports
        try:
            if isinstance(default, bool):
                value = settings.getbool(name)
            elif isinstance(default, int):
                value = settings.getint(name)
            elif isinstance(default, float):
                value = settings.getfloat(name)
            elif isinstance(default, (list, tuple)):
                value, default = settings.getlist(name), list(default)
            else:
                value = settings.get(name)
        except (TypeError, ValueError):  # not of the default's type (0.01 for an int): said as given
            value = settings.get(name)
        if value != default:
            changed[name] = value if isinstance(value, (int, float, str, bool, list)) or value is None else str(value)
    return changed


class CrawlManifest:
    """Writes ``crawl.json`` at ``spider_opened`` (a resumed crawl keeps the first start and
    adds its own to ``sessions``); the spider adds its name and seeds."""

    def __init__(self, directory: Path, fields: dict[str, Any]) -> None:
        self.directory, self.fields = directory, fields

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "CrawlManifest":
        s = crawler.settings
        directory = s.get("FOCUSCRAWL_OUTPUT_DIR")
        if not directory:
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR")
        fields = {
            "mode": s.get("FOCUSCRAWL_MODE"),
            "topic": s.get("FOCUSCRAWL_TOPIC") or "",
            "user_agent": s.get("USER_AGENT"),
            "robots_txt_obeyed": s.getbool("ROBOTSTXT_OBEY"),
            "optouts_obeyed": s.getlist("FOCUSCRAWL_OPTOUTS"),
            "ai_agents": s.getlist("FOCUSCRAWL_AI_AGENTS"),
            "settings_changed": changed_settings(s),
        }
        manifest = cls(Path(directory).resolve(), fields)
        crawler.signals.connect(manifest.write, signal=signals.spider_opened)
        return manifest

    def write(self, spider=None) -> None:
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        earlier = read_manifest(self.directory)
        manifest = {
            "started": earlier.get("started") or now,
            "sessions": list(earlier.get("sessions") or []) + [now],
            "spider": getattr(spider, "name", ""),
            "seeds": list(getattr(spider, "seed_urls", []) or []),
        } | self.fields
        self.directory.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.directory / MANIFEST, json.dumps(manifest, indent=1).encode("utf-8"))


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    """A run's ``crawl.json`` ({} if it has none or it is not readable)."""
    try:
        data = json.loads((Path(run_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
