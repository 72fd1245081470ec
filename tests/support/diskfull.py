"""An extension for write-failure tests: the run directory's disk fills up mid-crawl.

``DiskFullAfter`` makes every write under ``FOCUSCRAWL_OUTPUT_DIR`` fail with ENOSPC once
``TEST_DISK_FULL_AFTER_BYTES`` bytes were written there, as a full disk does: the write that
crosses the limit writes its first part, then fails. It wraps the one function every file of
the run directory is written through (``focuscrawl.output.files._write_all``: the logs, the
records, the image files, ``stats.json``); the JOBDIR (elsewhere) keeps working unless
``TEST_DISK_FULL_JOBDIR`` puts it on the same disk (focuscrawl's state files and
``spider.state``; Scrapy's own queue files are written otherwise and keep working), also in a
crawl without a run directory.
"""
from __future__ import annotations

import errno
import os

from scrapy.exceptions import NotConfigured

from focuscrawl.output import files


class DiskFullAfter:
    """``TEST_DISK_FULL_JOBDIR``: the JOBDIR is on the same full disk."""

    def __init__(self, directories: list[str], limit: int) -> None:
        self.directories = tuple(os.path.realpath(d) + os.sep for d in directories)
        self.left = limit
        self._write_all = files._write_all
        files._write_all = self.write_all

    @classmethod
    def from_crawler(cls, crawler):
        limit = crawler.settings.getint("TEST_DISK_FULL_AFTER_BYTES")
        directories = [d for d in [crawler.settings.get("FOCUSCRAWL_OUTPUT_DIR")] if d]
        if crawler.settings.getbool("TEST_DISK_FULL_JOBDIR") and crawler.settings.get("JOBDIR"):
            directories.append(crawler.settings.get("JOBDIR"))
        if limit <= 0 or not directories:
            raise NotConfigured
        return cls(directories, limit)

    def write_all(self, fd: int, data) -> None:
        if not os.readlink(f"/proc/self/fd/{fd}").startswith(self.directories):
            return self._write_all(fd, data)
        if len(data) > self.left:
            if self.left:
                os.write(fd, bytes(data[:self.left]))
            self.left = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.left -= len(data)
        return self._write_all(fd, data)


class QueueDiskFullAfterPages:
    """Scrapy's disk queue (queuelib's ``FifoDiskQueue``, in the JOBDIR) finds its disk full
    once ``TEST_QUEUE_DISK_FULL_AFTER_PAGES`` pages were scraped: every later write of it fails
    with ENOSPC (a push, the state an emptied queue saves at its close). The other files are
    written as before, so what fails is the queue's own write, wherever the scheduler makes it."""

    def __init__(self, pages: int) -> None:
        from queuelib.queue import FifoDiskQueue

        self.left = pages
        push, saveinfo = FifoDiskQueue.push, FifoDiskQueue._saveinfo
        full = self.full

        def push_or_fail(queue, data):
            if full():
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # (os.write names no file)
            return push(queue, data)

        def saveinfo_or_fail(queue, info):
            if full():
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(queue._infopath()))
            return saveinfo(queue, info)

        FifoDiskQueue.push, FifoDiskQueue._saveinfo = push_or_fail, saveinfo_or_fail

    def full(self) -> bool:
        return self.left <= 0

    @classmethod
    def from_crawler(cls, crawler):
        from scrapy import signals

        pages = crawler.settings.getint("TEST_QUEUE_DISK_FULL_AFTER_PAGES")
        if pages <= 0:
            raise NotConfigured
        ext = cls(pages)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        return ext

    def item_scraped(self, item, **kwargs) -> None:
        from focuscrawl.items import PageItem

        if isinstance(item, PageItem):
            self.left -= 1
