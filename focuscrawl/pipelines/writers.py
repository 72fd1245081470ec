"""Writers of the run directory: the image log and records, pages.tsv and sentences.txt.gz.

``ImageLogWriterPipeline`` commits each unique image (record JSON + one images.tsv
row + merge state) through the shared ``ImageStore``. ``PageLogWriterPipeline``
writes one pages.tsv row per PageItem and all its sentences, in crawl order, in
batches: a batch is one gzip member of sentences.txt.gz plus its pages.tsv rows,
then a JOBDIR checkpoint (docs/OUTPUT.md). Once a checkpoint covers a batch, the
``page_rows_committed`` signal names its items (the Redis profile releases their
requests' leases then: focuscrawl.distributed).
"""
from __future__ import annotations

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from focuscrawl.items import ImageItem, PageItem
from focuscrawl.output.images import ImageStore, image_store
from focuscrawl.output.run import RunOutput, run_output
from focuscrawl.output.tsv import row

#: Signal ``page_rows_committed(items)``: these PageItems' rows survive a kill (and a resume).
page_rows_committed = object()

PAGE_COLUMNS = ["url", "depth", "status", "host", "size", "fetched_at", "perplexity", "keyword_score",
                "sentences", "tokens", "links", "images", "near_duplicate_of"]


class ImageLogWriterPipeline:
    def __init__(self, store: ImageStore, stats) -> None:
        self.store = store
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "ImageLogWriterPipeline":
        store = image_store(crawler)
        if store is None:
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR")
        return cls(store, crawler.stats)

    def process_item(self, item):
        if isinstance(item, ImageItem):
            self.store.commit(item)
            self.stats.inc_value("focuscrawl/images/written")
        return item

    def close_spider(self) -> None:
        self.store.close()


def page_row(item) -> list:
    sentences = item.get("sentences") or []
    return [item.get("url"), item.get("depth"), item.get("status"), item.get("host"), item.get("size"),
            item.get("fetched_at"), item.get("perplexity"), item.get("keyword_score"), len(sentences),
            sum(s.count(" ") + 1 for s in sentences), item.get("links"), item.get("images"),
            item.get("near_duplicate_of")]


class PageLogWriterPipeline:
    def __init__(self, run: RunOutput, stats, signals_manager, batch_bytes: int) -> None:
        self.run = run
        self.stats = stats
        self.signals = signals_manager
        self.batch_bytes = batch_bytes
        self.pages = self.run.line_log("pages.tsv", "\t".join(PAGE_COLUMNS))
        self.sentences = self.run.gzip_log("sentences.txt.gz")
        self._rows: list[str] = []
        self._lines: list[str] = []
        self._size = 0
        self._items: list[PageItem] = []  # the batch's items
        self._written: list[PageItem] = []  # written, not yet covered by a checkpoint
        self.run.checkpoint_listeners.append(self._checkpointed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "PageLogWriterPipeline":
        run = run_output(crawler)
        if run is None:
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR")
        pipeline = cls(run, crawler.stats, crawler.signals, crawler.settings.getint("FOCUSCRAWL_SENTENCES_BATCH_BYTES"))
        # an idle crawl writes its batch: a worker of a shared crawl that waits for the others
        # holds no unwritten rows (and no leases on them)
        crawler.signals.connect(pipeline.flush, signal=signals.spider_idle)
        return pipeline

    def process_item(self, item):
        if isinstance(item, PageItem):
            sentences = [s for s in (item.get("sentences") or []) if s]
            self._rows.append(row(page_row(item)))
            self._items.append(item)
            self._lines.extend(s.replace("\n", " ") for s in sentences)
            self._size += sum(len(s) + 1 for s in sentences)
            self.stats.inc_value("focuscrawl/pages/written")
            self.stats.inc_value("focuscrawl/sentences/written", len(sentences))
            if self._size >= self.batch_bytes:
                self.flush()
        return item

    def flush(self, *args, **kwargs) -> None:
        """Write the batch: sentences first, then the rows that announce them, then checkpoint."""
        if not self._rows:
            return
        self.sentences.write_lines(self._lines)
        self.pages.write_lines(self._rows)
        self._written += self._items
        self._rows, self._lines, self._size, self._items = [], [], 0, []
        self.run.commit()

    def _checkpointed(self) -> None:
        if self._written:
            items, self._written = self._written, []
            self.signals.send_catch_log(page_rows_committed, items=items)

    def close_spider(self) -> None:
        self.flush()
