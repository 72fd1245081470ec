"""A downloader middleware for resume tests: the crawl process SIGKILLs itself at a chosen moment.

``KillInResponseChain`` kills the process while the response of
``TEST_KILL_AT_RESPONSE_URL`` passes back through the downloader middlewares: after
Scrapy's ``request_left_downloader`` signal, before ``response_received``, the window
in which an unlucky ``kill -9`` used to lose the page (focuscrawl.frontier).
"""
from __future__ import annotations

import os
import signal

from scrapy.exceptions import NotConfigured


class KillInResponseChain:
    def __init__(self, url: str) -> None:
        self.url = url

    @classmethod
    def from_crawler(cls, crawler):
        url = crawler.settings.get("TEST_KILL_AT_RESPONSE_URL")
        if not url:
            raise NotConfigured
        return cls(url)

    def process_response(self, request, response):
        if response.url == self.url:
            os.kill(os.getpid(), signal.SIGKILL)
        return response


class KillAfterResponses:
    """Kills the process when its ``TEST_KILL_AFTER_RESPONSES``-th HTML page has just been
    downloaded: the pages before it are parsed (their rows still in the writer's batch) and
    their requests, in a Redis crawl, still leased."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.seen = 0

    @classmethod
    def from_crawler(cls, crawler):
        count = crawler.settings.getint("TEST_KILL_AFTER_RESPONSES")
        if count <= 0:
            raise NotConfigured
        return cls(count)

    def process_response(self, request, response):
        if b"html" in response.headers.get(b"Content-Type", b""):
            self.seen += 1
            if self.seen >= self.count:
                os.kill(os.getpid(), signal.SIGKILL)
        return response
