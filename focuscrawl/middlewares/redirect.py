"""Scrapy's redirect middlewares for a crawl without ``RefererMiddleware``.

``REFERER_ENABLED = False`` (settings.py: its per-link referrer policy costs ~10% of
the CPU), and Scrapy's redirect middlewares then warn at every start that no
``RefererMiddleware`` handles the Referer header on redirects. Their documented fix
is a subclass overriding ``handle_referer()``: here a redirected request keeps the
Referer it was sent with (an image download sends its page's URL, as a browser does
across redirects) and nothing else adds one.
"""
from __future__ import annotations

from scrapy import Request
from scrapy.downloadermiddlewares import redirect
from scrapy.http import Response


class _KeepReferer:
    def handle_referer(self, request: Request, response: Response) -> None:
        """The redirected request keeps the original request's Referer, if any."""

    def _engine_started(self) -> None:
        """No lookup of (and no warning about) a missing RefererMiddleware."""


class RedirectMiddleware(_KeepReferer, redirect.RedirectMiddleware):
    pass


class MetaRefreshMiddleware(_KeepReferer, redirect.MetaRefreshMiddleware):
    pass
