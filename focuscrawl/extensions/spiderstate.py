"""``spider.state`` in JOBDIR, written whole: Scrapy's ``SpiderState`` opens ``spider.state``
for writing and pickles into it, so a full disk (or a kill) in between leaves an empty or torn
file, and every later resume then fails to open the spider's state (``EOFError``) and again
to save it at close."""
from __future__ import annotations

import logging
import pickle

from scrapy import Spider
from scrapy.extensions.spiderstate import SpiderState

from focuscrawl.output.files import atomic_write_bytes

logger = logging.getLogger(__name__)


class AtomicSpiderState(SpiderState):
    """Scrapy's ``SpiderState``; the file is replaced whole (temp file + rename), one that cannot
    be written is said in one warning, and one that cannot be read (left by an older crawl)
    starts the spider with an empty state, said in one warning."""

    def spider_closed(self, spider: Spider) -> None:
        if not self.jobdir:
            return
        try:
            atomic_write_bytes(self.statefn, pickle.dumps(getattr(spider, "state", {}), protocol=4))
        except OSError as exc:
            logger.warning("spider state not saved to %s: %s", self.statefn, exc.strerror or exc)

    def spider_opened(self, spider: Spider) -> None:
        try:
            super().spider_opened(spider)
        except (EOFError, pickle.UnpicklingError, ValueError, AttributeError, ImportError) as exc:
            logger.warning("%s cannot be read (%s: torn by a full disk or a kill?): the spider starts "
                           "with an empty state", self.statefn, type(exc).__name__)
            spider.state = {}
