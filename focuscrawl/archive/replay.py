"""Serve a crawl from web archives instead of the network.

``ArchiveDownloadHandler`` replaces the http/https download handlers: every request
(pages, images from the media pipeline, redirect targets) is answered with the
archived response of its URL, which then goes through every downloader
middleware's ``process_response`` like a fetched one (decompression, redirects,
stats), so extraction, scoring, pipelines and writers run unchanged. A URL the
archive does not hold fails with ``NotArchived`` (an ``IgnoreRequest``; counted as
``focuscrawl/archive/missing``; an image becomes a candidate pair, ``focuscrawl/images/candidates/not_archived``); a
body over the request's ``download_maxsize`` fails as Scrapy's own handlers fail it
(``DownloadCancelledError``, counted as ``focuscrawl/archive/over_max_size``), so no cut body
is ever presented as a whole page or image. No request can reach the network: there
is no network handler.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from scrapy import Request
from scrapy.core.downloader.handlers.base import BaseDownloadHandler
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest, NotConfigured
from scrapy.http import Response

from focuscrawl.archive.reader import read_response
from focuscrawl.rights.policy import POLICY_FILES
from focuscrawl.urls import request_url


class NotArchived(IgnoreRequest):
    """The archives hold no record of the requested URL."""


class ArchiveDownloadHandler(BaseDownloadHandler):
    """Download handler for http and https that reads ``crawler.spider.archive_index``.

    ``__init__(crawler)`` is the signature Scrapy builds download handlers with (its
    ``BaseDownloadHandler``); like Scrapy's own handlers it reads ``DOWNLOAD_MAXSIZE`` there.
    """

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        index = getattr(crawler.spider, "archive_index", None)
        if index is None:
            raise NotConfigured("ArchiveDownloadHandler needs a spider with an archive_index")
        self.index = index
        self.max_size = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        self.by_safe_url = {request_url(url): ref for url, ref in index.refs.items()}

    async def download_request(self, request: Request) -> Response:
        ref = self.index.get(request.url) or self.by_safe_url.get(request_url(request.url))
        stats = self.crawler.stats
        if ref is None:
            if urlsplit(request.url).path not in POLICY_FILES:  # those count their own absence
                stats.inc_value("focuscrawl/archive/missing")
            raise NotArchived(f"not in the archive: {request.url}")
        max_size = request.meta.get("download_maxsize", self.max_size)
        response = read_response(ref, max_size, request)
        if "truncated" in response.flags:  # as a live download over the limit: cancelled
            stats.inc_value("focuscrawl/archive/over_max_size")
            raise DownloadCancelledError(f"Received more than {max_size} bytes which is larger than "
                                         f"download max size ({max_size}) in request {request}.")
        stats.inc_value("focuscrawl/archive/responses")
        return response
