"""An extension for write-failure tests: the run directory's disk fills up mid-crawl.

``DiskFullAfter`` makes every write under ``FOCUSCRAWL_OUTPUT_DIR`` fail with ENOSPC once
``TEST_DISK_FULL_AFTER_BYTES`` bytes were written there, as a full disk does: the write that
crosses the limit writes its first part, then fails. It wraps the one function every file of
the run directory is written through (``focuscrawl.output.files._write_all``: the logs, the
records, the image files, ``stats.json``); the JOBDIR (elsewhere) keeps working.
"""
from __future__ import annotations

import errno
import os

from scrapy.exceptions import NotConfigured

from focuscrawl.output import files


class DiskFullAfter:
    def __init__(self, directory: str, limit: int) -> None:
        self.directory = os.path.realpath(directory) + os.sep
        self.left = limit
        self._write_all = files._write_all
        files._write_all = self.write_all

    @classmethod
    def from_crawler(cls, crawler):
        limit = crawler.settings.getint("TEST_DISK_FULL_AFTER_BYTES")
        directory = crawler.settings.get("FOCUSCRAWL_OUTPUT_DIR")
        if limit <= 0 or not directory:
            raise NotConfigured
        return cls(directory, limit)

    def write_all(self, fd: int, data) -> None:
        if not os.readlink(f"/proc/self/fd/{fd}").startswith(self.directory):
            return self._write_all(fd, data)
        if len(data) > self.left:
            if self.left:
                os.write(fd, bytes(data[:self.left]))
            self.left = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.left -= len(data)
        return self._write_all(fd, data)
