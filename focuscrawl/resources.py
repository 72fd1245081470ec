"""The package's own resources, found wherever a command runs: the bundled cats topic
bundle (demo model, keywords, ...; importlib.resources) and the project's Scrapy settings.

Works from a source tree, a wheel and a zipped scrapyd egg: files inside a zip are
extracted once to a temporary file that lives as long as the process (KenLM needs
a real path).
"""
from __future__ import annotations

import atexit
import contextlib
import os
from importlib import resources
from pathlib import Path

from scrapy.settings import Settings

BUNDLED_TOPIC = "cats"  # the cats demo as a topic bundle (focuscrawl topic build; models/README.md)

_files = contextlib.ExitStack()
atexit.register(_files.close)
_cache: dict[str, Path] = {}


def bundled_path(name: str) -> Path:
    """A filesystem path to the bundled resource ``name`` in ``focuscrawl.models``."""
    if name not in _cache:
        ref = resources.files("focuscrawl.models").joinpath(name)
        if not ref.is_file():
            raise FileNotFoundError(f"bundled resource {name!r} is missing from focuscrawl.models")
        _cache[name] = _files.enter_context(resources.as_file(ref))
    return _cache[name]


def default_topic_path() -> Path:
    """A folder path to the bundled cats topic bundle (files of a zipped egg extracted once)."""
    if BUNDLED_TOPIC not in _cache:
        ref = resources.files("focuscrawl.models").joinpath(BUNDLED_TOPIC)
        if isinstance(ref, Path):
            if not (ref / "bundle.json").is_file():
                raise FileNotFoundError(f"bundled topic {BUNDLED_TOPIC!r} is missing from focuscrawl.models")
            _cache[BUNDLED_TOPIC] = ref
        else:  # inside a zip: copy its files to a temporary folder that lives as long as the process
            import tempfile

            folder = Path(_files.enter_context(tempfile.TemporaryDirectory(prefix="focuscrawl-topic-")))
            for item in ref.iterdir():
                (folder / item.name).write_bytes(item.read_bytes())
            _cache[BUNDLED_TOPIC] = folder
    return _cache[BUNDLED_TOPIC]


def user_cache_dir() -> Path:
    """focuscrawl's per-user cache (``$XDG_CACHE_HOME/focuscrawl``, by default
    ``~/.cache/focuscrawl``): files a command can rebuild, never written into the installed
    package (read-only installs, one install shared by several users)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "focuscrawl"


def project_settings(overrides: dict | None = None) -> Settings:
    """focuscrawl's Scrapy settings (``focuscrawl.settings``) whatever the current folder:
    ``get_project_settings()`` would read a ``scrapy.cfg`` there (or none, and then the
    spider loader knows no focuscrawl spider). ``overrides`` are set with ``cmdline``
    priority, as ``-s NAME=VALUE`` would be.

    Components read ``FOCUSCRAWL_*`` settings without fallbacks (their defaults are in
    ``focuscrawl.settings`` only), so every entry point that builds its own ``Settings``
    starts from this."""
    settings = Settings()
    settings.setmodule("focuscrawl.settings", priority="project")
    if overrides:
        settings.setdict(overrides, priority="cmdline")
    return settings
