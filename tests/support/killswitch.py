"""A downloader middleware for resume tests: the crawl process SIGKILLs itself at a chosen moment.

``KillInResponseChain`` kills the process while the response of
``TEST_KILL_AT_RESPONSE_URL`` passes back through the downloader middlewares: after
Scrapy's ``request_left_downloader`` signal, before ``response_received``, the window
in which an unlucky ``kill -9`` used to lose the page (focuscrawl.frontier).
``KillBeforePageRows`` (an extension) kills it inside the page writer's batch, after
the batch's sentences (and links) were written and before its ``pages.tsv`` rows;
``KillAfterImageRow`` just after a given image's ``images.tsv`` row; ``KillBeforeImageCommit``
(an item pipeline) when an image is scraped, before its row is written.
"""
from __future__ import annotations

import os
import signal

from scrapy import signals
from scrapy.exceptions import NotConfigured

from focuscrawl.output.run_state import RunState


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


class _WrapsRunLog:
    """An extension configured by ``setting`` that wraps the ``write_lines`` of the run's one
    ``log`` (which its writer shares) when the spider opens."""

    log = setting = ""

    def __init__(self, crawler, value) -> None:
        self.crawler = crawler
        self.value = value

    @classmethod
    def from_crawler(cls, crawler):
        value = crawler.settings.get(cls.setting)
        if not value or str(value) == "0":
            raise NotConfigured
        ext = cls(crawler, value)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        return ext

    def spider_opened(self, spider=None) -> None:
        log = self.crawler.get_extension(RunState).output.line_log(self.log)
        log.write_lines = self.wrap(log.write_lines)


class KillBeforePageRows(_WrapsRunLog):
    """Kills the process just before the ``TEST_KILL_BEFORE_PAGE_ROWS``-th batch of
    ``pages.tsv`` rows is written: ``PageLogWriterPipeline.flush`` has written that batch's
    ``sentences.txt.gz`` member (and ``links.tsv`` rows) but not the rows that announce them."""

    log, setting = "pages.tsv", "TEST_KILL_BEFORE_PAGE_ROWS"
    batches = 0

    def wrap(self, write_lines):
        def write_or_die(lines):
            self.batches += 1
            if self.batches >= int(self.value):
                os.kill(os.getpid(), signal.SIGKILL)
            write_lines(lines)

        return write_or_die


class _OsKillingAtJournalReplace:
    """``os`` for ``focuscrawl.frontier``, but SIGKILL just before (``before``) or just after
    (``after``) the compacted journal is renamed over ``frontier.log``."""

    def __init__(self, when: str) -> None:
        self.when = when

    def __getattr__(self, name):
        return getattr(os, name)

    def replace(self, src, dst) -> None:
        journal = str(dst).endswith("frontier.log")
        if journal and self.when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        os.replace(src, dst)
        if journal and self.when == "after":
            os.kill(os.getpid(), signal.SIGKILL)


class KillInJournalCompaction:
    """Kills the process when the frontier journal is compacted (at a clean stop, or when
    a crawl recovers from a kill): ``TEST_KILL_IN_COMPACTION`` = ``before`` (the new journal
    is whole on disk, not yet renamed) or ``after`` (renamed; the clean marker or Scrapy's
    new seen-set not yet written)."""

    @classmethod
    def from_crawler(cls, crawler):
        when = crawler.settings.get("TEST_KILL_IN_COMPACTION")
        if not when:
            raise NotConfigured
        from focuscrawl import frontier

        frontier.os = _OsKillingAtJournalReplace(when)
        return cls()


class KillAfterImageRow(_WrapsRunLog):
    """Kills the process just after the ``images.tsv`` row of ``TEST_KILL_AFTER_IMAGE_URL`` is
    written (its page's row, still in the page writer's batch, is not)."""

    log, setting = "images.tsv", "TEST_KILL_AFTER_IMAGE_URL"

    def wrap(self, write_lines):
        def write_then_die(lines):
            write_lines(lines)
            if any(self.value + "\t" in line for line in lines):
                os.kill(os.getpid(), signal.SIGKILL)

        return write_then_die


class KillBeforeImageCommit:
    """An item pipeline, put before ``ImageRecordsPipeline``: kills the process on the
    ``item_scraped`` signal of the image ``TEST_KILL_BEFORE_IMAGE_COMMIT_URL``, after the
    spider middlewares' handlers (built before the pipelines, so told first: a Redis lease's
    ``LeaseOutcomes``) and before the image records' (its images.tsv row, its checkpoint)."""

    def __init__(self, url: str) -> None:
        self.url = url

    @classmethod
    def from_crawler(cls, crawler):
        url = crawler.settings.get("TEST_KILL_BEFORE_IMAGE_COMMIT_URL")
        if not url:
            raise NotConfigured
        pipeline = cls(url)
        crawler.signals.connect(pipeline.item_scraped, signal=signals.item_scraped)
        return pipeline

    def process_item(self, item):
        return item

    def item_scraped(self, item, **kwargs) -> None:
        if item.get("image_url") == self.url:
            os.kill(os.getpid(), signal.SIGKILL)
