"""Writer of the run directory's page logs: pages.tsv, sentences.txt.gz, links.tsv, judged.tsv.

``PageLogWriterPipeline`` writes one pages.tsv row per PageItem and all its sentences, in
crawl order, in batches: a batch is one gzip member of sentences.txt.gz, the links.tsv rows its pages
carry (``PageItem.link_rows``, taken off the item), then its pages.tsv rows, then a
JOBDIR checkpoint (docs/OUTPUT.md): the three files are cut back to the same batch on
resume. Once a checkpoint covers a batch, the ``page_rows_committed`` signal names its
items (the Redis profile releases their requests' leases then: focuscrawl.distributed).
The image log and records have their own owner (``focuscrawl.pipelines.image_records``).
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Iterable

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured

from focuscrawl.items import PageItem
from focuscrawl.middlewares.learning import judged_stat
from focuscrawl.middlewares.priority import LINKS_LOG_HEADER
from focuscrawl.output.files import GzipLog, LineLog, gzip_members
from focuscrawl.output.run_state import RunState
from focuscrawl.output.run import RunOutput
from focuscrawl.output.tsv import row

logger = logging.getLogger(__name__)

#: Signal ``page_rows_committed(items)``: these PageItems' rows survive a kill (and a resume).
page_rows_committed = object()

PAGE_COLUMNS = ["url", "depth", "status", "host", "size", "fetched_at", "perplexity", "keyword_score",
                "sentences", "tokens", "links", "images", "near_duplicate_of", "language", "optout", "license",
                "tdm_policy"]
#: A batch is also written once its links.tsv rows reach this size: pages without text add
#: no sentences, and a run of link-heavy index pages must not pile up rows in memory.
LINK_ROWS_BATCH_BYTES = 1 << 20
#: judged.tsv (mode ``learning``): the page judge's call on each page it judged, in crawl order
JUDGED_COLUMNS = ("url", "topicality", "on_topic")


def render_optout(optout: dict | None) -> str:
    """A page's opt-outs in one cell: ``nofollow=...;text=...;images=...`` ("": none)."""
    return ";".join(f"{scope}={','.join(dict.fromkeys(reasons))}" for scope, reasons in (optout or {}).items()
                    if reasons)


def page_row(item) -> list:
    sentences = item.get("sentences") or []
    rights = item.get("rights") or {}
    return [item.get("url"), item.get("depth"), item.get("status"), item.get("host"), item.get("size"),
            item.get("fetched_at"), item.get("perplexity"), item.get("keyword_score"), len(sentences),
            sum(s.count(" ") + 1 for s in sentences), item.get("links"), item.get("images"),
            item.get("near_duplicate_of"), item.get("language"), render_optout(item.get("optout")),
            rights.get("license", ""), rights.get("tdm_policy", "")]


def _last_at_most(ends: Iterable[tuple[int, int, int]], limit: float) -> tuple[int, int, int]:
    """The last ``(offset, sentences, rows)`` of ``ends`` (ascending) whose sentence count is at most ``limit``."""
    best = (0, 0, 0)
    for end in ends:
        if end[1] > limit:
            break
        best = end
    return best


def cut_sentences_without_rows(pages: LineLog, sentences: GzipLog) -> tuple[int, int]:
    """Cut ``pages.tsv`` and ``sentences.txt.gz`` back to the last batch both hold whole;
    returns ``(sentences cut, rows cut)``.

    A batch writes its sentences (one gzip member) before the rows that count them, so a
    crawl killed in between leaves sentences no row owns, and a kill inside a large rows
    write can leave part of a batch's rows: every later page would be read with another
    page's sentences. A JOBDIR resume cuts both files to its checkpoint instead.
    """
    column = PAGE_COLUMNS.index("sentences")

    def row_ends():  # after the header, then after each row: (offset, sentences so far, rows)
        pos = total = 0
        for n, line in enumerate(pages.lines("surrogateescape")):
            pos += len(line.encode("utf-8", "surrogateescape")) + 1
            if n:
                cells = line.split("\t")
                total += int(cells[column]) if len(cells) > column and cells[column].isdigit() else 0
            yield pos, total, n

    def member_ends():  # (offset, sentences so far, members)
        yield 0, 0, 0
        total = 0
        for n, (end, lines) in enumerate(gzip_members(sentences.path), 1):
            total += lines
            yield end, total, n

    _, all_counted, all_rows = _last_at_most(row_ends(), float("inf"))
    _, all_sentences, _ = _last_at_most(member_ends(), float("inf"))
    if all_counted == all_sentences:
        return 0, 0
    target = all_counted
    while True:  # both cut back to a point where the rows count exactly the sentences before it
        sentences_end, kept, _ = _last_at_most(member_ends(), target)
        pages_end, counted, kept_rows = _last_at_most(row_ends(), kept)
        if counted == kept:
            break
        target = counted
    sentences.truncate(sentences_end)
    pages.truncate(pages_end)
    return all_sentences - kept, all_rows - kept_rows


class PageLogWriterPipeline:
    def __init__(self, run: RunOutput, stats, signals_manager, batch_bytes: int, links_log: bool = False,
                 batch_seconds: float = 0.0, judged_log: bool = False) -> None:
        self.run = run
        self.stats = stats
        self.signals = signals_manager
        self.batch_bytes = batch_bytes
        self.batch_seconds = batch_seconds
        self._batch_started = 0.0
        self.pages = self.run.line_log("pages.tsv", "\t".join(PAGE_COLUMNS))
        self.sentences = self.run.gzip_log("sentences.txt.gz")
        #: links.tsv rows travel with their page's item and are written in its batch
        self.links = self.run.line_log("links.tsv", LINKS_LOG_HEADER) if links_log else None
        #: mode ``learning``: the judge's calls (``PageItem["judged"]``) travel like links.tsv rows
        self.judged = self.run.line_log("judged.tsv", "\t".join(JUDGED_COLUMNS)) if judged_log else None
        self._judged: list[str] = []
        self.cut = (0, 0)  # sentences and rows cut by restore()
        self._rows: list[str] = []
        self._lines: list[str] = []
        self._links: list[str] = []
        self._size = 0
        self._links_size = 0
        self._items: list[PageItem] = []  # the batch's items
        #: what the batch's pages added to the counters (``uncommitted_counts``)
        self._batch_counts: Counter = Counter()
        self._written: list[PageItem] = []  # written, not yet covered by a checkpoint
        self.run.register(self)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "PageLogWriterPipeline":
        run = crawler.get_extension(RunState).output
        if run is None:
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR")
        s = crawler.settings
        focus = getattr(crawler.spider, "focus", None)
        pipeline = cls(run, crawler.stats, crawler.signals, s.getint("FOCUSCRAWL_SENTENCES_BATCH_BYTES"),
                       s.getbool("FOCUSCRAWL_LINKS_LOG"), s.getfloat("FOCUSCRAWL_SENTENCES_BATCH_SECONDS"),
                       judged_log=getattr(focus, "judge", None) is not None)
        # an idle crawl writes its batch: a worker of a shared crawl that waits for the others
        # holds no unwritten rows (and no leases on them)
        crawler.signals.connect(pipeline.flush, signal=signals.spider_idle)
        return pipeline

    # -- Checkpointed: pages.tsv, sentences.txt.gz, links.tsv ---------------------------------
    def restore(self) -> None:
        """With a JOBDIR checkpoint the logs were cut back to it together. A run directory opened
        without one (a new crawl, or one restarted after a kill without JOBDIR, which appends):
        sentences without rows are cut."""
        if self.run.resumed:
            return
        sentences, rows = self.cut = cut_sentences_without_rows(self.pages, self.sentences)
        if sentences or rows:
            logger.warning("%s: cut %d sentences written without their pages.tsv rows and %d rows of a "
                           "torn batch (a crawl killed inside a batch)", self.sentences.path, sentences, rows)

    def checkpoint(self) -> None:
        """The rows written before this checkpoint are safe: tell who waits for them (leases)."""
        if self._written:
            items, self._written = self._written, []
            self.signals.send_catch_log(page_rows_committed, items=items)

    def uncommitted_counts(self) -> Counter:
        """The counters the pages of the unwritten batch added (a kill now loses their rows; the
        resume fetches, judges and counts them again): left out of the checkpointed stats."""
        return self._batch_counts

    def open_spider(self) -> None:
        sentences, rows = self.cut
        if sentences:
            self.stats.set_value("focuscrawl/sentences/orphans_cut", sentences)
        if rows:
            self.stats.set_value("focuscrawl/pages/torn_rows_cut", rows)

    def process_item(self, item):
        if isinstance(item, PageItem):
            if self.run.failure is not None:  # a resume crawls it again (frontier journal)
                raise DropItem("a write of the run failed: not written", log_level="DEBUG")
            if not self._rows:
                self._batch_started = time.monotonic()
            sentences = [s for s in (item.get("sentences") or []) if s]
            self._rows.append(row(page_row(item)))
            self._items.append(item)
            self._lines.extend(s.replace("\n", " ") for s in sentences)
            self._size += sum(len(s) + 1 for s in sentences)
            judged = item.pop("judged", None)  # written here, not exported (FEEDS)
            if judged is not None:
                self._batch_counts[judged_stat(bool(judged[1]))] += 1
            if self.judged is not None and judged is not None:
                self._judged.append(row((item.get("url"), judged[0], int(judged[1])), float_digits=6))
            links = item.pop("link_rows", None)  # written here, not exported (FEEDS)
            if self.links is not None and links:
                self._links += links
                self._links_size += sum(len(r) + 1 for r in links)
            self.stats.inc_value("focuscrawl/pages/written")
            self.stats.inc_value("focuscrawl/sentences/written", len(sentences))
            self._batch_counts["focuscrawl/pages/written"] += 1
            self._batch_counts["focuscrawl/sentences/written"] += len(sentences)
            if (self._size >= self.batch_bytes or self._links_size >= LINK_ROWS_BATCH_BYTES
                    or 0 < self.batch_seconds <= time.monotonic() - self._batch_started):
                self.flush()
        return item

    def flush(self, *args, **kwargs) -> None:
        """Write the batch: sentences and links first, then the rows that announce them, then checkpoint."""
        if not self._rows:
            return
        self.sentences.write_lines(self._lines)
        if self.links is not None:
            self.links.write_lines(self._links)
        if self.judged is not None and self._judged:
            self.judged.write_lines(self._judged)
            self._judged = []
        self.pages.write_lines(self._rows)
        if self.run.failure is None:  # (else no checkpoint covers them, ever)
            self._written += self._items
        self._rows, self._lines, self._links, self._size, self._links_size, self._items = [], [], [], 0, 0, []
        self._batch_counts = Counter()
        self.run.commit()

    def close_spider(self) -> None:
        self.flush()
