"""The one owner of the crawl's image records (``ImageStore``): merge by URL, then commit or drop.

Each image URL gets one record. ``ImageRecordsPipeline`` is the only component that drives
the store (``RunState.images``); the others tell it what happened through Scrapy's own item
signals, so what it does does not hang on where they sit in ``ITEM_PIPELINES``:

- its ``process_item`` (after the final score, before the download): a first sighting of a URL
  goes on; a later one (the same image on another page) joins the image's record with its
  page, texts, contexts and final score, and stops (``DropItem`` at DEBUG level);
- ``item_scraped`` (a first sighting through every pipeline): its record and images.tsv row
  are written (``ImageStore.commit``); once a checkpoint covers them, the
  ``image_rows_committed`` signal names the item (the Redis profile releases its page's lease
  then, as ``page_rows_committed`` does for pages: focuscrawl.distributed);
- ``item_dropped`` (a first sighting given up by any pipeline, e.g. a failed download, which
  says why with ``ImageDropped``): its URL is marked dropped, later sightings are not kept.

After a failed write of the run neither happens: the image stays pending and a resume
downloads it again.
- ``take_recovered``: the first sightings a killed crawl had accepted but never written, for
  the image middleware to send through the pipelines again at start.

Unique images are counted by the context of their final score
(``focuscrawl/images/final_context/<label>``).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured

from focuscrawl.items import ImageItem
from focuscrawl.output.images import ImageStore
from focuscrawl.output.run_state import RunState


#: the reason kept for a first sighting dropped by a pipeline that gives none
DROPPED_BY_PIPELINE = "dropped"

#: Signal ``image_rows_committed(items)``: these ImageItems' outcomes survive a kill (and a
#: resume): their images.tsv rows are checkpointed (or they had nothing to write).
image_rows_committed = object()


class ImageDropped(DropItem):
    """A first sighting given up for good (``reason``: a ``focuscrawl/images/failed/<reason>``
    name, or ``opted_out``): the image records mark its URL dropped."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, log_level="DEBUG")
        self.reason = reason


class ImageMerged(DropItem):
    """A later sighting, merged into its image's record here: the outcome of no first sighting
    (a recovered image whose URL was seen again first carries an old ``first_seen``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level="DEBUG")


class ImageRecordsPipeline:
    """Merges each sighting into its image's record; commits or drops first sightings on the
    outcome Scrapy signals (see the module docstring)."""

    def __init__(self, store: ImageStore, stats, signals_manager=None) -> None:
        self.store = store
        self.stats = stats
        self.signals = signals_manager
        #: URL -> (``first_seen``, final context) of each first sighting accepted here whose
        #: outcome is not known yet
        self._accepted: dict[str, tuple[int, str]] = {}
        #: scraped items not yet covered by a checkpoint (``image_rows_committed``)
        self._written: list[ImageItem] = []
        self.store.run.register(self)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "ImageRecordsPipeline":
        store = crawler.get_extension(RunState).images
        if store is None:
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR: images are not merged")
        pipeline = cls(store, crawler.stats, crawler.signals)
        crawler.signals.connect(pipeline.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(pipeline.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(pipeline.spider_idle, signal=signals.spider_idle)
        return pipeline

    # -- Checkpointed (with the run directory's logs) -------------------------------------------
    def restore(self) -> None:
        pass  # the store restores the records

    def checkpoint(self) -> None:
        """The images scraped before this checkpoint are safe: tell who waits for them (leases)."""
        if self._written:
            items, self._written = self._written, []
            if self.signals is not None:
                self.signals.send_catch_log(image_rows_committed, items=items)

    def close(self) -> None:
        pass

    def uncommitted_counts(self) -> Counter:
        """The counters of the first sightings accepted and not written yet: a kill now leaves
        them in images.pending, and the resume accepts (and counts) them again."""
        counts: Counter = Counter()
        for _, context in self._accepted.values():
            counts["focuscrawl/images/unique"] += 1
            counts[f"focuscrawl/images/final_context/{context}"] += 1
        return counts

    def spider_idle(self, spider=None) -> None:
        """An idle crawl checkpoints the images it wrote: none waits for a later write."""
        if self._written:
            self.store.run.commit(force=True)

    def process_item(self, item):
        if not isinstance(item, ImageItem):
            return item
        if self.store.first_sighting(item):
            context = item.get("final_context") or "none"
            self._accepted[item["image_url"]] = (item["first_seen"], context)
            self.stats.inc_value("focuscrawl/images/unique")
            self.stats.inc_value(f"focuscrawl/images/final_context/{context}")
            return item
        self.stats.inc_value("focuscrawl/images/merge/later_sightings")
        raise ImageMerged(f"image {item['image_url']} already seen: merged into its record")

    def _outcome_of_accepted(self, item: Any) -> bool:
        """``item`` is a first sighting accepted here (not a later sighting of its URL, dropped
        here or before) and the run can still be written; forgotten now."""
        if not isinstance(item, ImageItem):
            return False
        url = item.get("image_url")
        if url not in self._accepted or self._accepted[url][0] != item.get("first_seen"):
            return False
        del self._accepted[url]
        return self.store.run.failure is None

    def item_scraped(self, item: Any, **kwargs: Any) -> None:
        """A first sighting went through every pipeline: its record and images.tsv row (then a
        checkpoint, which names it in ``image_rows_committed``)."""
        if self._outcome_of_accepted(item):
            self._written.append(item)
            self.stats.inc_value("focuscrawl/images/written")  # (in the stats its checkpoint keeps)
            self.store.commit(item)
        elif isinstance(item, ImageItem) and self.store.run.failure is None:
            self._written.append(item)  # nothing to write: safe at the next checkpoint

    def item_dropped(self, item: Any, exception: BaseException | None = None, **kwargs: Any) -> None:
        """A first sighting given up by a pipeline: its URL is marked dropped (with the reason
        an ``ImageDropped`` gives)."""
        if not isinstance(exception, ImageMerged) and self._outcome_of_accepted(item):
            self.store.drop(item["image_url"], getattr(exception, "reason", None) or DROPPED_BY_PIPELINE)

    def take_recovered(self) -> list[ImageItem]:
        """The first sightings a killed crawl had accepted but never written, once."""
        return self.store.take_recovered()

    def has_recovered(self) -> bool:
        """Recovered first sightings not taken yet (``take_recovered``)."""
        return bool(self.store.recovered)

    def close_spider(self) -> None:
        self.store.close()
