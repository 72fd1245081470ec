"""Scrapy's remote control, loaded only when it is on."""
from __future__ import annotations

from scrapy.settings import BaseSettings

#: Scrapy's extension (``EXTENSIONS_BASE``); its module imports aiohttp
REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"


class RemoteControlWhenEnabled:
    """Add-on: Scrapy builds its remote control extension, importing aiohttp (~0.15 s of every
    crawl process's start-up), only to learn that ``REMOTE_CONTROL_ENABLED`` is off (our
    default). Left out of ``EXTENSIONS_BASE`` then: a ``None`` in ``EXTENSIONS`` would not
    do, Scrapy imports every key of ``EXTENSIONS`` to compare them (tests/test_startup.py)."""

    def update_settings(self, settings: BaseSettings) -> None:
        if settings.getbool("REMOTE_CONTROL_ENABLED"):
            return
        base = settings.getdict("EXTENSIONS_BASE")
        if base.pop(REMOTE_CONTROL, None) is not None:
            settings.set("EXTENSIONS_BASE", base, priority=settings.getpriority("EXTENSIONS_BASE"))
