"""The package's own resources, found wherever a command runs: the bundled demo
model and keywords (importlib.resources) and the project's Scrapy settings.

Works from a source tree, a wheel and a zipped scrapyd egg: files inside a zip are
extracted once to a temporary file that lives as long as the process (KenLM needs
a real path).
"""
from __future__ import annotations

import atexit
import contextlib
from importlib import resources
from pathlib import Path

from scrapy.settings import Settings

BUNDLED_MODEL = "cats.arpa"
BUNDLED_KEYWORDS = "cats.keywords.txt"

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


def default_model_path() -> Path:
    return bundled_path(BUNDLED_MODEL)


def default_keywords_path() -> Path:
    return bundled_path(BUNDLED_KEYWORDS)


def project_settings() -> Settings:
    """focuscrawl's Scrapy settings (``focuscrawl.settings``) whatever the current folder:
    ``get_project_settings()`` would read a ``scrapy.cfg`` there (or none, and then the
    spider loader knows no focuscrawl spider)."""
    settings = Settings()
    settings.setmodule("focuscrawl.settings", priority="project")
    return settings
