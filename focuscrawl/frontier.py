"""A frontier journal in JOBDIR so that a killed crawl loses (almost) no scheduled work.

Scrapy saves its request queue only on a clean stop; after SIGKILL, OOM or a power cut the
queued requests are gone while ``requests.seen`` remembers them, so they are never crawled.
``JournaledScheduler`` appends to ``JOBDIR/focuscrawl/frontier.log``, one unbuffered write a
line, each request it accepts (``+``), each page downloaded (``p``), each request whose
outcome is safe (``-``), and compaction's done marks (``s``); after an unclean stop it
rebuilds the queue and the seen-set from the journal. Guarantees: docs/DEPLOY.md "Resume".
"""
from __future__ import annotations

import base64
import logging
import os
import pickle
import shutil
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import Scheduler
from scrapy.dupefilters import RFPDupeFilter
from scrapy.pqueues import ScrapyPriorityQueue
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.request import request_from_dict

from focuscrawl.output.run_state import RunState
from focuscrawl.focus.link_learner import LearnerState, url_host
from focuscrawl.focus.ranker import (LEARNED_LOWEST_PRIORITY, LEARNED_SEED_PRIORITY, LINK_META, demoted_priority,
                                     gather_link_facts)
from focuscrawl.output.files import LineLog, complete_lines_size, job_state_dir
from focuscrawl.scrapy_compat import (held_slot_busy, lowest_priority, pickle_request_disk_queue,
                                     read_seen_fingerprints, request_to_dict, rerank_queue_top, seen_record)

logger = logging.getLogger(__name__)

JOURNAL = "frontier.log"
CLEAN_MARKER = "frontier.clean"
PARENT_META = "frontier_fp"  # a request's fingerprint, inherited by its redirects and retries


class KnownLinks:
    """URLs of out-links the scheduler has already seen: their requests went through the whole
    spider-middleware chain and reached the scheduler, which accepted them or filtered them as
    duplicates. Either way the dupefilter's seen-set holds them now, so a later link to the same
    URL would be filtered: the spider does not build its request (``FocusedSpider.parse``)
    and the link middleware decides and logs it from the page's item instead.

    Only a request that went through the spider's chain as an out-link counts (the anchor of
    its ``LinkFacts`` set by the spider, not ``dont_filter``, not a redirect's follow-up, whose URL passed no
    scope check), so a link that was razored or out of scope is tried again each time.
    After a JOBDIR resume or with a shared Redis seen-set the first link to each URL known
    from before is filtered by the scheduler once, then known here: no network round trip
    per link. Bounded: the ``size`` most recently seen URLs (least recently used forgotten
    first; a forgotten URL costs one filtered request, then is known again).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._urls: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._urls)

    def known(self, url: str) -> bool:
        urls = self._urls
        if url in urls:
            urls.move_to_end(url)
            return True
        return False

    def scheduled(self, request: Request) -> None:
        """Called by the scheduler for every request it was given, accepted or not."""
        meta = request.meta
        link = meta.get(LINK_META)
        if request.dont_filter or link is None or link.anchor is None or "redirect_urls" in meta:
            return
        urls = self._urls
        urls[request.url] = None
        urls.move_to_end(request.url)
        if len(urls) > self.size:
            urls.popitem(last=False)


@dataclass
class JournalState:
    """What a journal says, from one pass: ``pending`` fingerprint -> byte offset of its last
    ``+`` line (accepted, not left the downloader); ``pages`` fingerprint -> (url, offset of
    the ``+`` line it was fetched as); ``end``: the journal's whole lines end there."""

    pending: dict[str, int] = field(default_factory=dict)
    pages: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    end: int = 0


def _journal_lines(f: BinaryIO, end: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, line with its newline)`` of each whole line of an open journal before ``end``."""
    f.seek(0)
    pos = 0
    for raw in f:
        if pos + len(raw) > end:
            return
        yield pos, raw
        pos += len(raw)


def scan_journal(path: Path) -> JournalState:
    """The journal's state in one streamed pass (no request is decoded or kept)."""
    state = JournalState(end=complete_lines_size(path) if path.exists() else 0)
    if not state.end:
        return state
    pending, pages = state.pending, state.pages
    with open(path, "rb") as f:
        for offset, raw in _journal_lines(f, state.end):
            parts = raw[:-1].split(b"\t", 2)
            if len(parts) < 2:
                continue
            kind, fp = parts[0], parts[1].decode("ascii", "replace")
            if kind == b"+" and len(parts) == 3:
                pending[fp] = offset
            elif kind == b"-":
                pending.pop(fp, None)
            elif kind == b"p" and len(parts) == 3:
                # a page queued again by a recovery has no "+" of its own since: its first one
                offset = pending.get(fp, pages[fp][1] if fp in pages else None)
                pages[fp] = (parts[2].decode("utf-8", "replace"), offset)
    return state


def compact_journal(path: Path, state: JournalState, written: set[str], fingerprints_only: bool,
                    seen: Callable[[str], None] | None = None) -> list[int]:
    """Rewrite the journal with what a recovery still needs; returns the byte offsets, in the
    new file, of the ``+`` lines of the requests a recovery queues again.

    Kept: the last ``+`` of each pending request; ``+``, ``p``, ``-`` of each fetched page
    whose row is not in ``written`` (it is crawled again after a kill); every other accepted
    request as ``s<TAB>fingerprint`` when ``fingerprints_only`` (the dupefilter's seen-set is
    rebuilt from fingerprints: ``RFPDupeFilter``), else as its ``+`` and ``-`` (a custom
    dupefilter is given requests). Reading the result gives the same pending requests, pages
    without rows and seen-set as reading the original. ``seen`` is called with each accepted
    fingerprint. The new file is written beside the old, synced and renamed over it: a kill
    during compaction leaves the old journal whole.
    """
    lost = {fp for fp, (url, offset) in state.pages.items()
            if url not in written and fp not in state.pending and offset is not None}
    tmp = path.with_name(f".{path.name}.compact")
    requeue: list[int] = []
    with open(path, "rb") as src, open(tmp, "wb") as out:
        for offset, raw in _journal_lines(src, state.end):
            kind = raw[:1]
            if kind != b"+" and kind != b"s":
                continue
            parts = raw[:-1].split(b"\t", 2)
            if len(parts) < 2:
                continue
            fp = parts[1].decode("ascii", "replace")
            if seen is not None:
                seen(fp)
            if kind == b"+" and len(parts) == 3:
                if state.pending.get(fp) == offset:
                    requeue.append(out.tell())
                    out.write(raw)
                    continue
                if fp in lost and state.pages[fp][1] == offset:
                    requeue.append(out.tell())
                    out.write(raw + f"p\t{fp}\t{state.pages[fp][0]}\n-\t{fp}\n".encode("utf-8", "replace"))
                    continue
                if not fingerprints_only:
                    out.write(raw + f"-\t{fp}\n".encode("ascii"))
                    continue
            out.write(f"s\t{fp}\n".encode("ascii"))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    return requeue


@dataclass
class Recovery:
    """What an unclean stop leaves to do: ``requeue``, the offsets of the journal's ``+`` lines
    to queue again; ``seen``, callback-free requests for a dupefilter other than
    ``RFPDupeFilter`` (whose ``requests.seen`` is rewritten from the fingerprints instead)."""

    path: Path | None = None
    requeue: list[int] = field(default_factory=list)
    seen: Iterable[Request] = ()


class FrontierJournal:
    """``JOBDIR/focuscrawl/frontier.log`` as a resumable state (``focuscrawl.output.run.Checkpointed``,
    registered with ``RunState``, with or without a run directory). ``restore``: after an
    unclean stop, compact the journal, rebuild the seen-set from it and leave the requests
    to queue again in ``recovery``; after a clean one, ``queued`` holds the fingerprints
    Scrapy's own queue restores. ``checkpoint``: nothing, the journal is not cut back to the
    outputs' checkpoint (a page's row can be committed before its links are queued, so the
    journal runs ahead, one whole line per event; pages whose rows were cut back are found
    by their ``p`` lines and crawled again). ``close`` (a clean stop, after the outputs'
    last checkpoint): compacted, then marked clean."""

    def __init__(self, jobdir: Path, run, stats, fingerprints_only: bool, guard=None) -> None:
        self.jobdir = jobdir
        self.state_dir = job_state_dir(jobdir)
        self.path = self.state_dir / JOURNAL
        self.run = run  # the run directory's RunOutput (None: no pages are written)
        #: makes a failed write of the journal stop the crawl (``RunState.guard``; default the run's)
        self.guard = guard if guard is not None else (run.guard if run is not None else None)
        self.stats = stats
        self.fingerprints_only = fingerprints_only
        self.log: LineLog | None = None
        self.recovery = Recovery()
        self.queued: set[str] = set()

    def restore(self) -> None:
        """Before Scrapy's dupefilter reads ``requests.seen`` and its queue is opened."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        clean = (self.state_dir / CLEAN_MARKER).exists()
        existed = self.path.exists() and self.path.stat().st_size > 0
        if existed and not clean:
            self.recovery = _prepare_recovery(self.stats, self.path, self.run, self.jobdir, self.fingerprints_only)
        # After a clean stop Scrapy restores its own queue: those requests are still pending
        # in the journal and must get their "p" and "-" when fetched in this session, or a
        # later kill would queue them again although their rows were written.
        if existed and clean:
            self.queued = set(scan_journal(self.path).pending)
        self.log = LineLog(self.path)  # a torn last line (kill mid-write) is dropped here
        if self.guard is not None:  # a failed write stops the crawl, and it with the outputs (as a kill would)
            self.guard(self.log)
        (self.state_dir / CLEAN_MARKER).unlink(missing_ok=True)

    def write_lines(self, lines: list[str]) -> None:
        self.log.write_lines(lines)

    def checkpoint(self) -> None:
        """Nothing: the journal runs ahead of the outputs' checkpoint (see the class docstring)."""

    def close(self) -> None:
        """Scrapy has saved its queue (its scheduler closes before ``spider_closed``): a clean
        stop. The journal is compacted first: a kill during it finds no marker and recovers
        from the journal, old or new, which say the same."""
        self.log.close()
        size = self.path.stat().st_size
        compact_journal(self.path, scan_journal(self.path),
                        self.run.committed_page_urls() if self.run is not None else set(), self.fingerprints_only)
        self.stats.set_value("focuscrawl/frontier/compacted_bytes", size - self.path.stat().st_size)
        self.log = LineLog(self.path)  # anything said after the close goes to the new file
        (self.state_dir / CLEAN_MARKER).write_text("clean stop\n")


def _prepare_recovery(stats, path: Path, run, jobdir: Path, fingerprints_only: bool) -> Recovery:
    """Unclean stop: compact the journal, rebuild the seen-set from it, drop Scrapy's stale queue."""
    started = time.monotonic()
    size = path.stat().st_size
    state = scan_journal(path)
    written = run.committed_page_urls() if run is not None else set()
    seen_path = jobdir / "requests.seen"
    unrecovered = read_seen_fingerprints(seen_path)  # what is left of it is not in the journal
    seen_tmp = jobdir / ".requests.seen.journal"
    with open(seen_tmp, "wb") as seen_file:
        def seen(fp: str) -> None:
            record = bytes.fromhex(fp)
            unrecovered.discard(record)
            if fingerprints_only:
                seen_file.write(seen_record(record))

        requeue = compact_journal(path, state, written, fingerprints_only, seen)
    if fingerprints_only:  # RFPDupeFilter reads it when it opens
        os.replace(seen_tmp, seen_path)
    else:
        seen_tmp.unlink()
        seen_path.unlink(missing_ok=True)
    shutil.rmtree(jobdir / "requests.queue", ignore_errors=True)
    lost_pages = len(requeue) - len(state.pending)
    stats.set_value("focuscrawl/frontier/recovered", len(state.pending))
    stats.set_value("focuscrawl/frontier/recovered_pages_without_rows", lost_pages)
    stats.set_value("focuscrawl/frontier/unrecovered", len(unrecovered))
    stats.set_value("focuscrawl/frontier/compacted_bytes", size - path.stat().st_size)
    stats.set_value("focuscrawl/frontier/recovery_seconds", round(time.monotonic() - started, 3))
    logger.warning(
        "frontier: unclean stop detected in %s: %d queued/in-flight requests and %d fetched pages "
        "without committed rows recovered from the journal; %d requests Scrapy had scheduled were "
        "not in the journal's checkpoint and could not be recovered", jobdir, len(state.pending),
        lost_pages, len(unrecovered))
    seen_requests = () if fingerprints_only else _journal_requests(path, path.stat().st_size, stats)
    return Recovery(path, requeue, seen_requests)


def _decode(encoded: bytes | str) -> dict:
    return pickle.loads(base64.b64decode(encoded))


def _journal_requests(path: Path, end: int, stats) -> Iterator[Request]:
    """Callback-free copies of the journal's accepted requests, enough for a dupefilter's
    fingerprint, one at a time; ``s`` lines (fingerprints only) cannot be given to it."""
    with open(path, "rb") as f:
        for _, raw in _journal_lines(f, end):
            parts = raw[:-1].split(b"\t", 2)
            if parts[0] == b"+" and len(parts) == 3:
                d = _decode(parts[2])
                yield Request(d["url"], method=d.get("method", "GET"), body=d.get("body") or b"",
                              headers=d.get("headers"))
            elif parts[0] == b"s":
                stats.inc_value("focuscrawl/frontier/seen_not_restored")


#: requests set aside at most for hosts whose Crawl-delay keeps them busy (past it they wait
#: in the host's download slot, as in Scrapy), and popped at most in one look for another host
MAX_SET_ASIDE = 10_000
SET_ASIDE_LOOK = 256


class JournaledScheduler(Scheduler):
    """Scrapy's scheduler; with JOBDIR it journals the frontier and recovers it after a kill.

    A request for a host whose download slot holds a delay (robots.txt's ``Crawl-delay``:
    ``focuscrawl.middlewares.optout``) while a request to it is still in the downloader is set
    aside, in order, and the next best request of another host goes instead: in Scrapy the
    best links of one such host fill ``CONCURRENT_REQUESTS`` while they wait for it, and the
    whole crawl goes at that host's pace. A set-aside request goes first once its host is
    free; at a close it goes back to the queue (saved in JOBDIR), and after a kill the
    journal still has it as pending.

    ``journal`` (a ``FrontierJournal``, registered with ``RunState``, which restores and
    closes it) is None without JOBDIR or with ``FOCUSCRAWL_FRONTIER_JOURNAL`` off: then
    nothing is journaled. ``recovery`` is what an unclean stop left to do
    (requests to queue again, requests to mark as seen); ``queued`` the fingerprints
    Scrapy's own queue restores; ``fingerprints_only``: the dupefilter is Scrapy's
    ``RFPDupeFilter``, whose seen-set the journal restores from fingerprints alone.

    ``__init__`` keeps the signature of Scrapy's ``Scheduler`` (``dupefilter, jobdir, ...,
    crawler=``), which needs the crawler; ``from_crawler`` reads the settings and opens the
    journal.
    """

    def __init__(self, dupefilter, jobdir: str | None = None, *, journal: FrontierJournal | None = None,
                 recovery: Recovery | None = None,
                 queued: set[str] = frozenset(), fingerprints_only: bool = False,
                 crawler: Crawler | None = None, **kwargs) -> None:
        super().__init__(dupefilter, jobdir, crawler=crawler, **kwargs)
        self.journal, self.fingerprints_only = journal, fingerprints_only
        self._recovery = recovery or Recovery()
        for request in self._recovery.seen:  # a custom dupefilter: it is given the requests
            self.df.request_seen(request)
        self._recovery.seen = ()
        self._pending: set[str] = set(queued)
        #: the spider's memory of out-links already scheduled (``KnownLinks``), told of each request
        self.known_links: KnownLinks | None = None
        self._statuses: dict[str, int] = {}
        self._awaiting: set[str] = set()
        #: download slot -> its requests set aside while it is busy, in the order they came
        self._set_aside: dict[str, deque[Request]] = {}
        self._set_aside_count = 0
        if journal is not None and crawler is not None:
            crawler.signals.connect(self._left_downloader, signal=signals.request_left_downloader)
            crawler.signals.connect(self._response_downloaded, signal=signals.response_downloaded)
            crawler.signals.connect(self._response_received, signal=signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "JournaledScheduler":
        settings = crawler.settings
        jobdir = job_dir(settings)
        dupefilter_class = load_object(settings["DUPEFILTER_CLASS"])
        fingerprints_only = dupefilter_class is RFPDupeFilter  # it fingerprints with crawler.request_fingerprinter
        journal = None
        if jobdir and settings.getbool("FOCUSCRAWL_FRONTIER_JOURNAL"):
            run_state = crawler.get_extension(RunState)
            journal = FrontierJournal(Path(jobdir), run_state.output, crawler.stats, fingerprints_only, run_state.guard)
            run_state.register(journal)  # restored before Scrapy's dupefilter reads requests.seen
        return cls(
            build_from_crawler(dupefilter_class, crawler),
            jobdir,
            dqclass=load_object(settings["SCHEDULER_DISK_QUEUE"]),
            mqclass=load_object(settings["SCHEDULER_MEMORY_QUEUE"]),
            logunser=settings.getbool("SCHEDULER_DEBUG"),
            stats=crawler.stats,
            pqclass=load_object(settings["SCHEDULER_PRIORITY_QUEUE"]),
            crawler=crawler,
            journal=journal, recovery=journal.recovery if journal else None,
            queued=journal.queued if journal else frozenset(),
            fingerprints_only=fingerprints_only,
        )

    def _fp(self, request: Request) -> str:
        return self.crawler.request_fingerprinter.fingerprint(request).hex()

    def __len__(self) -> int:
        return super().__len__() + self._set_aside_count

    def close(self, reason: str):
        """Scrapy's close (its queue saved to JOBDIR), the requests set aside queued again first.
        After a failed write of the run (a full disk, said once) the queue cannot be saved
        either, and need not be: the stop is unclean for the journal, whose recovery rebuilds
        the queue."""
        try:
            for requests in self._set_aside.values():
                for request in requests:  # journaled and seen already: not filtered, not journaled again
                    Scheduler.enqueue_request(self, request.replace(dont_filter=True))
            self._set_aside.clear()
            self._set_aside_count = 0
            return super().close(reason)
        except OSError:
            run_state = self.crawler.get_extension(RunState)
            if run_state is None or run_state.failure is None:
                raise
            logger.debug("frontier: Scrapy's queue not saved after a failed write", exc_info=True)
            return None

    def open(self, spider: Spider):
        result = super().open(spider)
        self.known_links = getattr(spider, "known_links", None)
        recovery, self._recovery = self._recovery, Recovery()
        if recovery.requeue:
            with open(recovery.path, "rb") as f:  # the compacted journal; this session appends after them
                for offset in recovery.requeue:
                    f.seek(offset)
                    try:
                        request = request_from_dict(_decode(f.readline().split(b"\t", 2)[2]), spider=spider)
                        gather_link_facts(request.meta)
                    except Exception as exc:  # a callback renamed since the crawl started, ...
                        self.crawler.stats.inc_value("focuscrawl/frontier/recovery_errors")
                        logger.warning("frontier: cannot restore a journaled request: %s", exc)
                        continue
                    # its "+" line is in the journal already: queued without journaling it again
                    request = request.replace(dont_filter=True)
                    if Scheduler.enqueue_request(self, request):
                        self._pending.add(self._fp(request))
        return result

    def enqueue_request(self, request: Request) -> bool:
        accepted = self._enqueue(request)
        if self.known_links is not None:
            self.known_links.scheduled(request)
        return accepted

    def _enqueue(self, request: Request) -> bool:
        if self.journal is None:
            return self._queue(request)
        parent = request.meta.get(PARENT_META)
        fp = self._fp(request)
        request.meta[PARENT_META] = fp  # before the queue serialises it
        accepted = self._queue(request)
        if accepted:
            data = base64.b64encode(pickle.dumps(request_to_dict(request, self.crawler.spider),
                                                 protocol=4)).decode("ascii")
            self.journal.write_lines([f"+\t{fp}\t{data}"])
            self._pending.add(fp)
        if parent != fp and parent in self._awaiting:  # a redirect: its follow-up is journaled
            self._done(parent)
        return accepted

    def _queue(self, request: Request) -> bool:
        """Scrapy's enqueue. Its disk queue (in the JOBDIR) failing to write, on a full disk,
        stops the crawl as any failed write of the JOBDIR does (``_queue_write_failed``); the
        request is not queued."""
        try:
            return super().enqueue_request(request)
        except OSError as exc:
            self._queue_write_failed(exc)
            return False

    def next_request(self) -> Request | None:
        """Scrapy's; a pop writes to the disk queue too (a re-ranking pushes again, an emptied
        queue saves its state): failing on a full disk, it stops the crawl (``_queue_write_failed``)."""
        try:
            return self._next_for_a_free_host()
        except OSError as exc:
            self._queue_write_failed(exc)
            return None

    def _next_for_a_free_host(self) -> Request | None:
        """A set-aside request whose host is free, else the best queued request whose host is
        not busy (the busy ones set aside); None after ``SET_ASIDE_LOOK`` busy ones (the engine
        asks again when a download ends)."""
        engine = getattr(self.crawler, "engine", None)
        if engine is None or engine.downloader is None:
            return super().next_request()
        downloader = engine.downloader
        for key, requests in self._set_aside.items():
            if held_slot_busy(downloader, requests[0]) is None:
                request = requests.popleft()
                if not requests:
                    del self._set_aside[key]
                self._set_aside_count -= 1
                return request
        for _ in range(SET_ASIDE_LOOK):
            request = super().next_request()
            if request is None or self._set_aside_count >= MAX_SET_ASIDE:
                return request
            key = held_slot_busy(downloader, request)
            if key is None:
                return request
            self._set_aside.setdefault(key, deque()).append(request)
            self._set_aside_count += 1
            self.crawler.stats.inc_value("focuscrawl/politeness/requests_set_aside")
        return None

    def _queue_write_failed(self, exc: OSError) -> None:
        """``RunState.fail``: one line, exit code 1, the resume recovers from the last checkpoint."""
        self.crawler.stats.inc_value("focuscrawl/frontier/queue_write_failed")
        if exc.filename is None:  # (queuelib's os.write names no file)
            exc.filename = os.path.join(self.crawler.settings.get("JOBDIR") or "", "requests.queue")
        run_state = self.crawler.get_extension(RunState)
        if run_state is None:
            raise exc
        run_state.fail(exc)

    def _done(self, fp: str) -> None:
        self._awaiting.discard(fp)
        if fp in self._pending:
            self._pending.discard(fp)
            self.journal.write_lines([f"-\t{fp}"])

    def _left_downloader(self, request: Request, spider: Spider | None = None) -> None:
        fp = self._fp(request)
        if fp not in self._pending:
            return
        status = self._statuses.pop(fp, None)
        if status is not None and 200 <= status < 300:
            self._done(fp)
        else:
            # a redirect, retry or failure may follow: pending until the follow-up is journaled
            # ("+" first, ``meta["frontier_fp"]``) or the final response reaches the engine, so
            # a kill in between finds it pending; a download that failed for good is tried
            # once more after a kill (it wrote no output)
            self._awaiting.add(fp)

    def _response_received(self, response: Response, request: Request, spider: Spider | None = None) -> None:
        fp = self._fp(request)
        if fp in self._awaiting:
            self._done(fp)

    def _response_downloaded(self, response: Response, request: Request, spider: Spider | None = None) -> None:
        # Scrapy sends this before ``request_left_downloader`` ("-"): at every instant a fetched
        # page is pending or known as a page, so a kill cannot lose it and its links. The
        # response is still raw here: a body whose type is only known after decoding (plain
        # ``Response``) counts as a page.
        fp = self._fp(request)
        if fp not in self._pending:
            return
        self._statuses[fp] = response.status
        if 200 <= response.status < 300 and (isinstance(response, HtmlResponse) or type(response) is Response):
            self.journal.write_lines([f"p\t{fp}\t{response.url}"])


class RerankingPriorityQueue(ScrapyPriorityQueue):
    """Scrapy's priority queue that re-ranks its top when the link learner's model changes.

    Mode ``learning`` sets a link's priority from the model of the moment. Re-scoring
    the whole frontier per page would cost O(frontier); instead, on the first ``pop``
    after a model update the best ``FOCUSCRAWL_LEARNING_RERANK_TOP`` requests are taken
    out, re-scored from the feature vector kept in their ``LinkFacts`` and their host (the host term uses
    the hosts' harvest as of now) and pushed back: what the crawl fetches next is
    always ranked by a recent model. Requests keep the same meta, so the disk queues
    of a JOBDIR and the frontier journal are unaffected. Without a learner (other
    modes) it is Scrapy's queue. (Taking out and pushing back the top reads Scrapy's
    internals: ``focuscrawl.scrapy_compat.rerank_queue_top``; its pops find the next priority
    with ``lowest_priority``.)

    ``__init__`` keeps the signature Scrapy's scheduler builds priority queues with
    (``crawler, downstream_queue_cls, key, startprios``); ``from_crawler`` reads the settings.
    """

    def __init__(self, crawler, downstream_queue_cls, key, startprios=(), *, start_queue_cls=None,
                 learner=None, top: int = 0, demote=None):
        super().__init__(crawler, downstream_queue_cls, key, startprios, start_queue_cls=start_queue_cls)
        self.learner = learner
        #: the ranker's ``demoted``: a request whose ``LinkFacts.demoted`` stays below the others
        self.demote = demote
        self.top = top
        self.stats = crawler.stats
        self.ranked_version, self.ranked_trust = 0, 0.0

    @classmethod
    def from_crawler(cls, crawler, downstream_queue_cls, key, startprios=(), *, start_queue_cls=None):
        # the crawl's link learner, registered with RunState as a resumable state (mode ``learning``,
        # by the link middleware, built before the scheduler opens its queues)
        run_state = crawler.get_extension(RunState)
        learned = run_state.registered(LearnerState) if run_state is not None else None
        return cls(crawler, downstream_queue_cls, key, startprios, start_queue_cls=start_queue_cls,
                   learner=learned.learner if learned is not None else None, demote=learned_demoted,
                   top=crawler.settings.getint("FOCUSCRAWL_LEARNING_RERANK_TOP"))

    def pop(self):
        learner = self.learner
        if learner is not None and self.top > 0 and learner.version != self.ranked_version:
            self.ranked_version = learner.version
            if learner.trust > 0 or self.ranked_trust > 0:  # with no trust: the thesis's order, as queued
                self.ranked_trust = learner.trust
                self.rerank()
        return super().pop()

    def rerank(self) -> int:
        """Re-score the best ``top`` requests (start requests keep their priority)."""
        count = rerank_queue_top(self, self.top, self._rescore)
        self.stats.inc_value("focuscrawl/learning/reranked", count)
        return count

    def _update_curprio(self) -> None:
        lowest_priority(self, super()._update_curprio)

    def _rescore(self, requests: list) -> None:
        """New scores and priorities for the requests that carry a link vector (in one batch)."""
        learned, links = [], []
        for request in requests:
            link = request.meta.get(LINK_META)
            if link is not None and link.vector is not None:
                learned.append((request, link))
                links.append((link.score, url_host(request.url), link.vector, link.origin))
        scores = self.learner.scores(links)
        for (request, link), score in zip(learned, scores):
            link.learned = score
            request.priority = self.learner.priority(score)
            if link.demoted and self.demote is not None:
                request.priority = self.demote(request.priority)


def learned_demoted(priority: int) -> int:
    """``LinkRanker.demoted`` of the learned rule, whose priorities the queue re-ranks."""
    return demoted_priority(priority, LEARNED_SEED_PRIORITY, LEARNED_LOWEST_PRIORITY)


class LazyFifoDiskQueue:
    """Scrapy's persistent FIFO of one priority (queuelib's ``FifoDiskQueue``), made on disk
    only once it holds ``MEMORY_ITEMS`` requests, or at ``close`` if it still holds any.

    A disk queue is a folder with two files; made for every priority a request is pushed to
    and removed when the queue empties, it cost the crawl more than the requests it held:
    mode ``learning`` gives priorities in 1,000 steps and moves the best 500 requests to new
    ones after each model update, so a JOBDIR crawl made and removed hundreds of folders a
    second (44% of the crawl thread's samples in an 8,000-page run).
    Kept in memory, a queue's requests are the bytes it would have written (serialised at
    ``push``, so a request that cannot be is refused then, as before); FIFO order is kept:
    when the queue goes to disk its memory items are written first, and from then on every
    push goes to disk. A clean stop writes every queue that holds requests (``close``), as
    Scrapy does; after a kill the requests held in memory are recovered by the frontier
    journal with the others (Scrapy's own disk queue state is lost then anyway)."""

    #: requests a priority's queue holds before it is made on disk (a few KB each: with 1,000
    #: priorities at most a few MB in memory)
    MEMORY_ITEMS = 8

    def __init__(self, path: str | os.PathLike, chunksize: int = 100_000) -> None:
        from queuelib.queue import FifoDiskQueue

        self._make = lambda: FifoDiskQueue(path, chunksize)
        self._memory: deque[bytes] = deque()
        # a queue a stopped crawl left (its resume) is read from disk
        self._disk = self._make() if os.path.exists(path) else None

    def push(self, data: bytes) -> None:
        if self._disk is None:
            if len(self._memory) < self.MEMORY_ITEMS:
                self._memory.append(data)
                return
            self._spill()
        self._disk.push(data)

    def _spill(self) -> None:
        self._disk = self._make()
        for data in self._memory:
            self._disk.push(data)
        self._memory.clear()

    def pop(self) -> bytes | None:
        if self._memory:
            return self._memory.popleft()
        return self._disk.pop() if self._disk is not None else None

    def peek(self) -> bytes | None:
        if self._memory:
            return self._memory[0]
        return self._disk.peek() if self._disk is not None else None

    def close(self) -> None:
        if self._memory:
            self._spill()
        if self._disk is not None:
            self._disk.close()

    def __len__(self) -> int:
        return len(self._memory) + (len(self._disk) if self._disk is not None else 0)


class PickleLazyFifoDiskQueue(pickle_request_disk_queue(LazyFifoDiskQueue)):  # type: ignore[misc]
    """``SCHEDULER_DISK_QUEUE`` (focuscrawl/settings.py): Scrapy's ``PickleFifoDiskQueue`` on
    ``LazyFifoDiskQueue``. A request read back that keeps its link facts in separate meta keys
    (queued in a JOBDIR before they went in one ``LinkFacts``) gets them gathered
    (``gather_link_facts``): re-ranked by the learner and taught from as the others."""

    def pop(self):
        request = super().pop()
        if request is not None:
            gather_link_facts(request.meta)
        return request

    def peek(self):
        request = super().peek()
        if request is not None:
            gather_link_facts(request.meta)
        return request
