"""The few places where focuscrawl needs something Scrapy has no public API for.

Every use of a Scrapy internal (a private name, an undocumented attribute or an
exception's message text) lives here, each with the reason, so that a Scrapy
upgrade breaks one module and ``tests/test_scrapy_compat.py``, which pins what each
workaround relies on, instead of failing silently across the crawler.
"""
from __future__ import annotations

import pickle
from pathlib import Path
from time import monotonic
from typing import Any, Callable

import logging

from scrapy import Request as _Request
from scrapy.core.downloader import Downloader as _Downloader
from scrapy.exceptions import (CannotResolveHostError, DownloadCancelledError, DownloadConnectionRefusedError,
                               DownloadFailedError, DownloadTimeoutError, IgnoreRequest, ResponseDataLossError)
from scrapy.extensions.throttle import AutoThrottle as _AutoThrottle
# media failures of this type are expected: logged without a traceback
from scrapy.pipelines.media import _MediaRequestFiltered as ExpectedMediaFailure
from scrapy.statscollectors import MemoryStatsCollector as _MemoryStatsCollector
from scrapy.utils.asyncio import call_later
from scrapy.utils.conf import build_component_list
from scrapy.utils.defer import _schedule_coro
from scrapy.utils.misc import load_object
from twisted.internet.error import ConnectError, ConnectionDone, ConnectionLost

__all__ = ["ExpectedMediaFailure", "forget_media_result", "spider_middleware_enabled", "read_seen_fingerprints",
           "seen_record", "request_to_dict", "rerank_queue_top", "lowest_priority", "wake_engine", "download_past_scheduler", "release_from_engine", "is_decompression_too_big", "is_too_many_redirects",
           "is_over_download_maxsize", "quiet_robots_network_errors", "MemoryStatsCollector", "SlotBoundDownloader"]

_SEEN_SIZE_BYTES = 2  # RFPDupeFilter's requests.seen: 2-byte big-endian length + fingerprint


def spider_middleware_enabled(settings: Any, middleware: type | str) -> bool:
    """``middleware`` (a class or its import path), or a subclass of it, is among the crawl's
    spider middlewares (``SPIDER_MIDDLEWARES`` over its base, ``None`` = off, as Scrapy builds it)."""
    base = load_object(middleware) if isinstance(middleware, str) else middleware
    return any(isinstance(cls := load_object(path), type) and issubclass(cls, base)
               for path in build_component_list(settings.getwithbase("SPIDER_MIDDLEWARES")))


def read_seen_fingerprints(path: Path) -> set[bytes]:
    """Fingerprints in ``JOBDIR/requests.seen`` (empty if there is none).

    The format (a 2-byte big-endian length, then the fingerprint; since Scrapy 2.13)
    is described in ``RFPDupeFilter``'s docstring but not exposed as a function. A
    record torn by a kill is ignored, as ``RFPDupeFilter`` itself does.
    """
    if not path.exists():
        return set()
    data, pos, found = path.read_bytes(), 0, set()
    while pos + _SEEN_SIZE_BYTES <= len(data):
        size = int.from_bytes(data[pos:pos + _SEEN_SIZE_BYTES], "big")
        pos += _SEEN_SIZE_BYTES
        fingerprint = data[pos:pos + size]
        if len(fingerprint) < size:
            break
        found.add(fingerprint)
        pos += size
    return found


def seen_record(fingerprint: bytes) -> bytes:
    """One fingerprint as ``RFPDupeFilter`` appends it to ``requests.seen`` (and reads it back
    when it opens the file): the frontier journal rebuilds that file from its fingerprints
    after a kill instead of rebuilding a request for each and asking the dupefilter."""
    return len(fingerprint).to_bytes(_SEEN_SIZE_BYTES, "big") + fingerprint


def request_to_dict(request: Any, spider: Any) -> dict[str, Any]:
    """``request.to_dict(spider=spider)``, without its search of the spider for the callback.

    ``Request.to_dict`` names a callback by ``inspect.getmembers(spider)`` (``_find_method``),
    ~75 us a call on the focused spider: the frontier journal's, once per accepted request,
    cost more than the rest of its line, and a recovery as much again. Here a spider method is
    looked up by its own name and checked to be the same function (a method with two names
    may get the other one: the same method when read back); anything else (a lambda, a
    function of another object) goes to ``to_dict``. The rest mirrors ``to_dict``.
    """
    names = {}
    for attr in ("callback", "errback"):
        func = getattr(request, attr)
        if callable(func):
            inner = getattr(func, "__func__", None)
            if inner is None or spider is None or \
                    getattr(getattr(spider, inner.__name__, None), "__func__", None) is not inner:
                return request.to_dict(spider=spider)
            names[attr] = inner.__name__
        else:
            names[attr] = func
    d = {"url": request.url, "callback": names["callback"], "errback": names["errback"],
         "headers": dict(request.headers)}
    for attr in request.attributes:
        d.setdefault(attr, getattr(request, attr))
    if type(request) is not _Request:
        d["_class"] = type(request).__module__ + "." + type(request).__name__
    return d


def wake_engine(engine: Any) -> bool:
    """Run the engine's scheduling loop now rather than at its next 5-second heartbeat.

    Used when another process put requests in a shared (Redis) frontier or the idle
    check must be repeated: Scrapy's engine only reschedules itself when *it* queues
    something (``engine.crawl``) and has no public "wake up" call. Returns whether
    the engine had an open slot to wake.
    """
    slot = getattr(engine, "_slot", None)
    if slot is None:
        return False
    slot.nextcall.schedule()
    return True


def close_scraper_once_idle(scraper: Any) -> None:
    """Let a closing scraper finish its close once its slot is idle (``Scraper._check_if_closing``).

    An item a spider's ``start()`` yields (a recovered image) is processed outside the
    scraper's response path, and its end does not check whether the scraper, closing since,
    is now idle: a close that began while such an item was in the pipelines waited for ever
    unless a response came after it. Call when such an item's outcome is signalled (its count
    drops just after): checks again every 50 ms until the slot is idle, then once."""
    slot = getattr(scraper, "slot", None)
    if slot is None or slot.closing is None or slot.closing.called:
        return
    if slot.is_idle():
        scraper._check_if_closing()
    else:
        call_later(0.05, close_scraper_once_idle, scraper)


def download_past_scheduler(engine: Any, request: Any) -> Any:
    """A Deferred of ``request`` downloaded as the engine downloads a scheduled one
    (``ExecutionEngine._download``: the downloader middlewares, the ``response_received``
    signal, the crawled log line), for a request that never went through the scheduler (an
    archive's page on the lean replay path: already in order, nothing to schedule). The engine
    has no public call that downloads *and* hands the response on as its own; its public
    ``download_async`` skips those signals. Call ``release_from_engine`` when done."""
    return engine._download(request)


def release_from_engine(engine: Any, request: Any) -> None:
    """Take ``request`` out of the engine's in-progress set (``_slot.remove_request``), as the
    engine does once a scheduled download is handed on: the engine stays open while it is there."""
    engine._slot.remove_request(request)


def rerank_queue_top(queue: Any, count: int, rescore: Callable[[list], None]) -> int:
    """Give the best ``count`` requests of a ``ScrapyPriorityQueue`` new priorities.

    They are taken out best first, ``rescore(requests)`` sets each one's
    ``request.priority`` (all at once: a batch scores faster), and they are pushed back in
    that order; start requests stay where they are.
    Returns how many were re-scored. ``ScrapyPriorityQueue`` has no API for this: going
    through its ``pop`` would recompute the current priority over all per-priority
    queues whenever one empties (O(queues) per request) and close and rebuild every
    queue it empties (a disk queue under JOBDIR: files). So this reads its per-priority
    ``queues`` dict (priority = ``-request.priority``, lower first) and sets ``curprio``,
    which ``pop`` starts from.
    """
    taken, emptied = [], []
    for prio in sorted(queue.queues):
        internal = queue.queues[prio]
        while len(taken) < count:
            request = internal.pop()
            if request is None:
                break
            taken.append(request)
        if not len(internal):
            emptied.append(prio)
        if len(taken) >= count:
            break
    rescore(taken)
    for request in taken:
        queue.push(request)
    for prio in emptied:  # kept while pushing back: no queue is closed and built again
        if not len(queue.queues[prio]):
            queue.queues.pop(prio).close()
    prios = set(queue.queues) | set(queue._start_queues)
    queue.curprio = min(prios) if prios else None
    return len(taken)


def pickle_request_disk_queue(queue_class: type) -> type:
    """``queue_class`` (a queuelib-style FIFO of bytes taking a path) as Scrapy builds its
    ``PickleFifoDiskQueue`` from queuelib's ``FifoDiskQueue``: requests to dicts, pickled
    (an unpicklable request raises ``ValueError`` at ``push``, so the scheduler keeps it in
    memory as before), the parent folder made. Scrapy exposes these layers only as private
    helpers of ``scrapy.squeues``. A request becomes its dict by ``request_to_dict``, not
    ``Request.to_dict``: the same dict without its search of the spider for the callback
    and errback names (~0.9 ms of the reactor a page in a JOBDIR crawl in mode ``learning``,
    whose re-ranks push hundreds of requests again after each model update)."""
    from scrapy import squeues

    serializable = squeues._serializable_queue(squeues._with_mkdir(queue_class), squeues._pickle_serialize,
                                               pickle.loads)
    scrapy_queue = squeues._scrapy_serialization_queue(serializable)

    class PickleRequestDiskQueue(scrapy_queue):  # type: ignore[valid-type,misc]
        def push(self, request: Any) -> None:
            serializable.push(self, request_to_dict(request, self.spider))

    PickleRequestDiskQueue.__name__ = PickleRequestDiskQueue.__qualname__ = f"Pickle{queue_class.__name__}"
    return PickleRequestDiskQueue


def lowest_priority(queue: Any, scan: Callable[[], None]) -> None:
    """Set a ``ScrapyPriorityQueue``'s ``curprio`` as its ``_update_curprio`` (``scan``) does, in
    one C-level ``min``: Scrapy's looks at every per-priority queue in Python each time one
    empties, and the learner's priorities (1,000 steps) keep hundreds of them. Its per-priority
    queues are dropped when they empty, so the lowest key is the answer unless start requests
    are queued or that queue is empty; then Scrapy's own ``scan`` runs."""
    queues = queue.queues
    if queues and not queue._start_queues:
        prio = min(queues)
        if queues[prio]:
            queue.curprio = prio
            return
    scan()


def forget_media_result(pipeline: Any, info: Any, request: Any) -> None:
    """Drop a media pipeline's cached result for ``request``.

    ``MediaPipeline`` keeps every URL's result in ``info.downloaded`` for the whole
    crawl so that a URL asked twice is fetched once. focuscrawl's image records
    already sends each URL once, so the cache only grows (memory over a long crawl);
    Scrapy offers no hook to turn it off.
    """
    info.downloaded.pop(pipeline.crawler.request_fingerprinter.fingerprint(request), None)


# Scrapy's downloader middlewares say no with a plain ``IgnoreRequest`` (and the
# download handlers cancel with a plain ``DownloadCancelledError``); only the message
# tells why. These match the texts of scrapy/downloadermiddlewares/httpcompression.py,
# redirect.py and core/downloader/handlers/http11.py.

def is_decompression_too_big(exc: BaseException) -> bool:
    """HttpCompressionMiddleware: the decoded body exceeds DOWNLOAD_MAXSIZE (a gzip bomb)."""
    return isinstance(exc, IgnoreRequest) and (
        type(exc.__cause__).__name__ == "_DecompressionMaxSizeExceeded" or "during decompression" in str(exc))


def is_too_many_redirects(exc: BaseException) -> bool:
    """RedirectMiddleware: more than REDIRECT_MAX_TIMES redirects."""
    return isinstance(exc, IgnoreRequest) and str(exc) == "max redirections reached"


def is_over_download_maxsize(exc: BaseException) -> bool:
    """The download handler cancelled a body larger than ``download_maxsize``."""
    return isinstance(exc, DownloadCancelledError) and "larger than download max size" in str(exc)


#: Network failures of a download (Scrapy's default RETRY_EXCEPTIONS): a host that is
#: down is input, not a bug.
NETWORK_ERRORS = (CannotResolveHostError, DownloadConnectionRefusedError, DownloadFailedError,
                  DownloadTimeoutError, ResponseDataLossError, ConnectError, ConnectionDone, ConnectionLost)
ROBOTS_LOGGER = "scrapy.downloadermiddlewares.robotstxt"


def _network_error_in_one_line(record: logging.LogRecord) -> bool:
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, NETWORK_ERRORS) or isinstance(getattr(exc, "__cause__", None), NETWORK_ERRORS):
        record.exc_info, record.exc_text = None, None
    return True


def quiet_robots_network_errors() -> None:
    """Scrapy's ``RobotsTxtMiddleware.robot_parser`` logs a failed robots.txt download at
    ERROR with ``exc_info=True`` (a refused port: ~60 lines of traceback) and has no hook to
    change that; its message already names the request and the error, so a logging filter
    keeps that one line for network failures (other errors keep their traceback)."""
    logger = logging.getLogger(ROBOTS_LOGGER)
    if _network_error_in_one_line not in logger.filters:
        logger.addFilter(_network_error_in_one_line)


#: logger -> the start of its start-up listings: the library versions, the components enabled
#: and the settings overridden, each a pprinted list or dict of dozens of lines
STARTUP_LISTINGS = {"scrapy.utils.log": "Versions:", "scrapy.addons": "Enabled ", "scrapy.middleware": "Enabled ",
                    "scrapy.crawler": "Overridden settings"}


def _startup_listing_at_debug(record: logging.LogRecord) -> bool:
    if record.levelno == logging.INFO and str(record.msg).startswith(STARTUP_LISTINGS.get(record.name, "\0")):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
    return True


def quiet_startup_listings() -> None:
    """Scrapy logs its start-up listings (versions, enabled add-ons and components, overridden settings)
    at INFO, ~50 lines of raw lists and dicts before a crawl's first page; a logging filter
    makes them DEBUG records, so they are in a DEBUG log (``-L DEBUG``) and out of an INFO one."""
    for name in STARTUP_LISTINGS:
        logger = logging.getLogger(name)
        if _startup_listing_at_debug not in logger.filters:
            logger.addFilter(_startup_listing_at_debug)


class MemoryStatsCollector(_MemoryStatsCollector):
    """Scrapy's default stats collector without the deprecation check Scrapy 2.13+ wraps
    around every method call (``StatsCollector.__getattribute__`` warns when a ``spider``
    argument is passed): a crawl calls the stats ~100 times a page (scheduler, downloader,
    link buckets, images), and the wrapper took ~5% of the crawl process's CPU
    (benchmarks/crawl_throughput.py). Same stats, same API; the ``spider`` argument is
    accepted and ignored, as by Scrapy itself. Its raw dump at the end goes to the DEBUG log:
    the crawl's summary (``focuscrawl.extensions.progress.CrawlSummary``) is what a user reads,
    and stats.json keeps every counter."""

    __getattribute__ = object.__getattribute__

    def close_spider(self, spider: Any = None, reason: str | None = None) -> None:
        if self._dump:
            logging.getLogger("scrapy.statscollectors").debug("Dumping Scrapy stats:\n%s", self)
        self._persist_stats(self._stats)


class SlotBoundDownloader(_Downloader):
    """Scrapy's downloader that keeps each slot to its concurrency.

    Scrapy (2.13+ on the asyncio reactor) starts a queued download as a task and adds it
    to ``slot.transferring`` only when that task first runs, so the loop in
    ``_process_queue`` sees the same free transfer slots for every request it pops and
    starts *all* of a slot's queued requests at once: more than
    ``CONCURRENT_REQUESTS_PER_DOMAIN`` in flight to one host whenever requests queue up
    in its slot (the engine's pages with a per-domain limit below ``CONCURRENT_REQUESTS``,
    a page's image downloads, which the media pipelines send straight to the downloader).
    Beyond the impoliteness, the connection pool keeps ``CONCURRENT_REQUESTS_PER_DOMAIN``
    idle connections per host, so every connection of a burst beyond that is opened for
    one request and closed (a benchmark crawl opened a new TCP connection for ~45% of its
    requests). This is Scrapy's ``_process_queue`` with the request counted as transferring
    as it is popped (``_download`` adds it again, a no-op, and removes it when done)."""

    def _process_queue(self, slot) -> None:
        if slot.latercall:
            return
        now = monotonic()
        delay = slot.download_delay()
        if delay:
            penalty = delay - now + slot.lastseen
            if penalty > 0:
                slot.latercall = call_later(penalty, self._latercall, slot)
                return
        while slot.queue and slot.free_transfer_slots() > 0:
            slot.lastseen = now
            request, queue_dfd = slot.queue.popleft()
            slot.transferring.add(request)  # the fix: taken before the download task starts
            _schedule_coro(self._wait_for_download(slot, request, queue_dfd))
            if delay:
                self._process_queue(slot)
                break


def hold_slot_delay(downloader: Any, key: str, delay: float) -> None:
    """At least ``delay`` seconds between the request starts of download slot ``key`` (a host),
    without Scrapy's jitter, which would start some sooner: in the slot's ``DOWNLOAD_SLOTS``
    entry (Scrapy makes a slot again from it after collecting it idle) and in the slot itself
    if it exists. ``AutoThrottle`` below keeps it as the floor of the slot's delay."""
    entry = downloader.per_slot_settings.setdefault(key, {})
    entry["delay"] = max(float(entry.get("delay", 0.0)), delay)
    entry["jitter"] = 0.0
    slot = downloader.slots.get(key)
    if slot is not None:
        slot.delay, slot.jitter = max(slot.delay, entry["delay"]), 0.0


def slot_delay_floor(downloader: Any, key: str) -> float:
    """The delay a slot's ``DOWNLOAD_SLOTS`` entry asks for (0: none)."""
    return float(downloader.per_slot_settings.get(key, {}).get("delay", 0.0))


class AutoThrottle(_AutoThrottle):
    """Scrapy's AutoThrottle, which never takes a slot's delay below its ``DOWNLOAD_SLOTS``
    entry's (a host's robots.txt ``Crawl-delay``: ``hold_slot_delay``). Scrapy's moves every
    slot's delay towards the host's latency, so a fast host got requests sooner than its
    owner asked for, and a ``DOWNLOAD_SLOTS`` delay held only until the first response."""

    def _response_downloaded(self, response, request, spider=None) -> None:
        super()._response_downloaded(response, request, spider)
        key, slot = self._get_slot(request, spider)
        if slot is not None:
            floor = slot_delay_floor(self.crawler.engine.downloader, key)
            if slot.delay < floor:
                slot.delay = floor


def held_slot_busy(downloader: Any, request: Any, limit: int = 1) -> str | None:
    """The download slot of ``request`` if its delay is held (``hold_slot_delay``, or a
    ``DOWNLOAD_SLOTS`` delay) and ``limit`` requests to it are in the downloader already (in
    its middlewares, waiting in the slot or transferring); else None. The downloader counts
    a request as active from the moment the engine hands it over."""
    if not downloader.per_slot_settings:
        return None
    key = downloader.get_slot_key(request)
    if slot_delay_floor(downloader, key) <= 0:
        return None
    busy = sum(1 for other in downloader.active if downloader.get_slot_key(other) == key)
    return key if busy >= limit else None
