"""The crawl's worker pool for ``focuscrawl.analysis.analyse_page``: ``PageAnalyser``.

``PageAnalyser`` calls ``analyse_page`` in the crawl process (``FOCUSCRAWL_ANALYSIS_WORKERS =
0``) or in worker processes that load the models once, each with a pipe the reactor itself
reads and writes (no thread of the crawl process hands pages over), and hands the result
back as a Deferred so the reactor keeps downloading meanwhile (the second core). Workers
return notes and counts; the crawl process puts them in its stats. A worker that dies on a
page is restarted and the page tried once more (``AnalysisFailed`` after that).
"""
from __future__ import annotations

import atexit
import itertools
import logging
import multiprocessing
import os
import pickle
import select
import struct
from collections import deque
from dataclasses import dataclass

from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.interfaces import IReadWriteDescriptor
from zope.interface import implementer

from focuscrawl.analysis import AnalysisConfig, PageAnalysis, analyse_page
from focuscrawl.lm.scorer import TopicScorer
from focuscrawl.processes import signals_held, worker_process
from focuscrawl.text.extractors import extract_page, get_extractor

logger = logging.getLogger(__name__)

_worker: tuple[AnalysisConfig, TopicScorer, object] | None = None


def _init_worker(config: AnalysisConfig, topic, parent: int) -> None:
    """Load the models and the text extractor once per worker process (``topic``, a
    ``TopicModel``, arrives pickled as its folder and loads here). The worker ignores the
    group's Ctrl-C and SIGTERM (the crawl stops cleanly and still needs it for the pages in
    flight) and dies with the crawl process (``focuscrawl.processes``)."""
    global _worker
    worker_process(parent)
    _worker = (config, config.scorer.load(), topic)
    if config.extractor != "fulltext":  # its imports and lazy models now, not on the first page
        extract_page(get_extractor(config.extractor), _WARM_UP_HTML)
    config.language.identify(_WARM_UP_HTML)  # the language model too


#: a page the extractor reads at a worker's start (no LM query: the counters stay the crawl's)
_WARM_UP_HTML = "<html><body><main><p>" + "A short paragraph of plain text. " * 8 + "</p></main></body></html>"


def _analyse_in_worker(html: str, url: str, base_url: str, depth: int) -> tuple[PageAnalysis, int, int]:
    """The page's analysis and the worker's LM counters so far (queries, cache hits)."""
    config, scorer, topic = _worker
    result = analyse_page(html, url, base_url, depth, config, scorer, topic)
    return result, scorer.queries, scorer.cache_hits


def _worker_main(conn, config: AnalysisConfig, topic, parent: int) -> None:
    """A worker process: load the models, then answer the pages its pipe brings, in order, one
    message each (``(True, result)`` or ``(False, exception)``), until the crawl closes the pipe."""
    _init_worker(config, topic, parent)
    while True:
        try:
            page = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):  # the crawl is done with this worker
            return
        try:
            answer = pickle.dumps((True, _analyse_in_worker(*page)), pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # the page's error goes to its Deferred, as in the crawl process
            try:
                answer = pickle.dumps((False, exc), pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that does not pickle: its text
                answer = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")), pickle.HIGHEST_PROTOCOL)
        try:
            conn.send_bytes(answer)
        except OSError:  # the crawl closed the pipe without waiting for this page (it is exiting)
            return


class AnalysisFailed(Exception):
    """A page's analysis broke its worker twice (the worker died on it: out of memory, a crash)."""


#: the framing of ``multiprocessing.connection.Connection`` (what the worker reads and writes):
#: a 4-byte big-endian length, or -1 then an 8-byte length for messages of 2 GiB and more
_LENGTH = struct.Struct("!i")
_LONG_LENGTH = struct.Struct("!Q")
_READ_SIZE = 64 * 1024  # below malloc's mmap threshold: no page faults per read


def _frame(data: bytes) -> list[bytes]:
    n = len(data)
    return [_LENGTH.pack(n) if n <= 0x7FFFFFFF else _LENGTH.pack(-1) + _LONG_LENGTH.pack(n), data]


@dataclass
class _Page:
    """A page sent to a worker: its arguments, its Deferred and whether it is a second try."""

    args: tuple
    deferred: object
    retried: bool = False


@implementer(IReadWriteDescriptor)
class _Worker:
    """One worker process and the crawl's end of its pipe, which the reactor reads and writes:
    no thread of the crawl process waits on it. Writes that do not fit in the pipe wait in a
    buffer (a big page for a busy worker never blocks the reactor); answers come back in the
    order the pages went, each the answer to the oldest page held."""

    def __init__(self, analyser: "PageAnalyser", process, conn) -> None:
        self.analyser = analyser
        self.process = process
        self.conn = conn
        self.fd = conn.fileno()
        os.set_blocking(self.fd, False)
        self.pages: deque[_Page] = deque()  # sent, not answered yet, oldest first
        self._out: deque[memoryview] = deque()  # bytes not written yet
        self._in = bytearray()
        self._reactor = None
        self._writing = False  # registered with the reactor as a writer
        self.alive = True

    def send(self, page: _Page) -> None:
        """Hand ``page`` to the worker; written now as far as the pipe takes it, the rest as the
        worker reads."""
        if self._reactor is None:
            from twisted.internet import reactor

            self._reactor = reactor
            reactor.addReader(self)
        self.pages.append(page)
        waiting = bool(self._out)
        self._out.extend(map(memoryview, _frame(pickle.dumps(page.args, pickle.HIGHEST_PROTOCOL))))
        if not waiting:
            why = self.doWrite()
            if why is not None:
                self._lost(why)
            elif self._out:
                self._writing = True
                self._reactor.addWriter(self)

    # IReadWriteDescriptor
    def fileno(self) -> int:
        return self.fd if self.alive else -1

    def logPrefix(self) -> str:
        return "analysis-worker"

    def doWrite(self):
        while self._out:
            try:
                written = os.writev(self.fd, list(itertools.islice(self._out, 64)))
            except BlockingIOError:
                return None
            except OSError:  # the worker is gone
                return ConnectionLost()
            while written:
                head = self._out[0]
                if written < len(head):
                    self._out[0] = head[written:]
                    break
                written -= len(head)
                self._out.popleft()
        if self._writing:
            self._writing = False
            self._reactor.removeWriter(self)
        return None

    def doRead(self):
        try:
            data = os.read(self.fd, _READ_SIZE)
        except BlockingIOError:
            return None
        except OSError:
            return ConnectionLost()
        if not data:
            return ConnectionDone()
        self._in += data
        self._answers()
        return None

    def _answers(self) -> None:
        """Hand each whole message read to the oldest page held."""
        buffer, start, answers = self._in, 0, []
        with memoryview(buffer) as view:
            while len(buffer) - start >= _LENGTH.size:
                (size,), head = _LENGTH.unpack_from(buffer, start), _LENGTH.size
                if size == -1:
                    if len(buffer) - start < head + _LONG_LENGTH.size:
                        break
                    (size,), head = _LONG_LENGTH.unpack_from(buffer, start + head), head + _LONG_LENGTH.size
                if len(buffer) - start < head + size:
                    break
                answers.append(pickle.loads(view[start + head:start + head + size]))
                start += head + size
        del buffer[:start]
        # each answer's page taken first: a callback may send a page, or find the worker dead
        for page, answer in [(self.pages.popleft(), answer) for answer in answers]:
            self.analyser._answered(self, page, *answer)

    def connectionLost(self, reason) -> None:
        self._lost(reason)

    def _lost(self, reason) -> None:
        if self.alive:
            self.end()
            self.analyser._died(self)

    def end(self) -> None:
        """Close the pipe (the worker ends at its end of file) and reap the process."""
        if not self.alive:
            return
        self.alive = False
        if self._reactor is not None:
            self._reactor.removeReader(self)
            self._reactor.removeWriter(self)
        self.conn.close()
        self.process.join(_JOIN_SECONDS)
        if self.process.exitcode is None:  # stuck on a page: it has no pipe to answer on
            self.process.kill()
            self.process.join()
        self.process.close()

    def drain(self) -> None:
        """Block until every page held is answered (``close``: the reactor does not run)."""
        while self.pages and self.alive:
            readable, writable, _ = select.select([self.fd], [self.fd] if self._out else [], [])
            why = self.doWrite() if writable else None
            if why is None and readable:
                why = self.doRead()
            if why is not None:
                self._lost(why)


#: seconds a worker has to end after its pipe closed (it finishes the page it is on)
_JOIN_SECONDS = 30


class PageAnalyser:
    """Runs ``analyse_page`` in the crawl process (``workers=0``) or in worker processes.

    ``analyse`` returns the ``PageAnalysis`` directly in-process, or a Deferred that fires
    on the reactor thread with a worker's result. Each worker is a spawned interpreter
    (``multiprocessing``'s spawn start: the crawl's ``sys.path`` and main module, the config
    and topic pickled to it) with a pipe the reactor reads and writes itself; a page goes
    to the worker with the fewest pages in flight. The LM counters of the workers are summed
    into ``worker_counters()``. A worker that dies (killed, out of memory) is replaced (one
    warning) and the pages it held are analysed again; a page that kills its second worker
    too fails with ``AnalysisFailed``.
    """

    def __init__(self, config: AnalysisConfig, scorer: TopicScorer, workers: int = 0, topic=None) -> None:
        self.config = config
        self.scorer = scorer
        self.topic = topic
        self.workers = workers
        self.restarts = 0
        #: one slot per worker; ``None``: died, started again when a page comes for it
        self._workers: list[_Worker | None] = []
        #: each worker's LM counters (queries, cache hits), cumulative; a dead worker's stay
        self._worker_counters: dict[_Worker, tuple[int, int]] = {}
        self._closing = False
        if workers > 0:
            # start the workers now: they load while the crawl sets up and fetches its seeds
            self._workers = [self._start_worker() for _ in range(workers)]
            atexit.register(self._end)

    def _start_worker(self) -> _Worker:
        # spawn: a fresh interpreter per worker, no copy of the reactor's threads and sockets
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(target=_worker_main, args=(theirs, self.config, self.topic, os.getpid()),
                                  name="focuscrawl-analysis")
        with signals_held():
            process.start()
        theirs.close()  # the worker's end is the worker's alone: its death is our end of file
        return _Worker(self, process, ours)

    def analyse(self, html: str, url: str, base_url: str, depth: int):
        if not self._workers:
            return analyse_page(html, url, base_url, depth, self.config, self.scorer, self.topic)
        from twisted.internet.defer import Deferred

        page = _Page((html, url, base_url, depth), Deferred())
        self._send(page)
        return page.deferred

    def _send(self, page: _Page) -> None:
        slots = self._workers
        slot = min(range(len(slots)), key=lambda i: len(slots[i].pages) if slots[i] is not None else 0)
        if slots[slot] is None:
            slots[slot] = self._start_worker()
        slots[slot].send(page)

    def _answered(self, worker: _Worker, page: _Page, ok: bool, answer) -> None:
        if not ok:
            page.deferred.errback(answer)
            return
        result, queries, hits = answer
        self._worker_counters[worker] = (queries, hits)
        page.deferred.callback(result)

    def _died(self, worker: _Worker) -> None:
        """A worker died: its slot starts a new one for the next page, the pages it held go
        again (once)."""
        held, worker.pages = list(worker.pages), deque()
        if worker in self._workers:
            self._workers[self._workers.index(worker)] = None
        if self._closing:
            for page in held:
                page.deferred.errback(AnalysisFailed(f"its analysis worker died on {page.args[1]}"))
            return
        self.restarts += 1
        logger.warning("an analysis worker died (killed or out of memory); a new worker analyses again the "
                       "%d page(s) it held", len(held))
        for page in held:
            if page.retried:
                page.deferred.errback(AnalysisFailed(f"its analysis worker died twice on {page.args[1]}"))
            else:
                page.retried = True
                self._send(page)

    def worker_counters(self) -> dict[str, int]:
        """LM queries and cache hits of the workers (the crawl process's scorer counts its own)
        and the workers that replaced a dead one."""
        queries = sum(q for q, _ in self._worker_counters.values())
        hits = sum(h for _, h in self._worker_counters.values())
        return {"focuscrawl/lm/queries": queries, "focuscrawl/lm/cache_hits": hits,
                "focuscrawl/lm/cache_misses": queries - hits, "focuscrawl/analysis/pool_restarts": self.restarts}

    def close(self) -> None:
        """Wait for the pages in flight, then end the workers."""
        self._closing = True
        for worker in self._workers:
            if worker is not None:
                worker.drain()
        self._end()

    def _end(self) -> None:
        """End the workers at once (``close``, or the interpreter's exit: before
        ``multiprocessing``'s own exit joins them, which would wait for ever on a worker
        whose pipe is still open)."""
        workers, self._workers = self._workers, []
        for worker in workers:
            if worker is not None:
                worker.end()
        atexit.unregister(self._end)
