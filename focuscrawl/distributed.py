"""Many crawler processes, one frontier: the Redis profile (scrapy-redis + focuscrawl parts).

``-s FOCUSCRAWL_REDIS_URL=redis://...`` (the same URL and ``FOCUSCRAWL_REDIS_CRAWL`` in every
process) makes the ``RedisProfile`` add-on configure scrapy-redis's scheduler and seen-set,
``RedisHostThrottle`` (per-host politeness across processes, which scrapy-redis lacks),
``RedisWorkers`` (processes stop together when the shared frontier is exhausted) and
``LeasedPriorityQueue`` (a popped request is leased until its outcome is safe, so a killed
process loses none). What each part guarantees, and its limits: docs/DEPLOY.md.
"""
from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler as RedisScheduler
from twisted.internet import task

from focuscrawl.frontier import KnownLinks
from focuscrawl.items import ImageItem, PageItem
from focuscrawl.output.leases import ROW_COMMITTED_META, LeaseBook, redis_connection, redis_key, worker_id
from focuscrawl.output.run import checkpoint_offsets, committed_rows
from focuscrawl.output.run_state import RunState
from focuscrawl.pipelines.image_records import image_rows_committed
from focuscrawl.pipelines.writers import page_rows_committed
from focuscrawl.scrapy_compat import slot_delay_floor, wake_engine

logger = logging.getLogger(__name__)

# KEYS[1] = next-allowed-time key of the host; ARGV[1] = delay in ms.
# Returns {ms the caller must wait before its request may start, the start time in ms}.
_RESERVE_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
local start = math.max(now, nxt)
local delay = tonumber(ARGV[1])
redis.call('SET', KEYS[1], start + delay, 'PX', start - now + delay + 60000)
return {start - now, start}
"""


# KEYS[1] = shared queue, KEYS[2] = this worker's leases, KEYS[3] = workers hash; ARGV[1] =
# the worker, ARGV[2] = its process token ("": no RedisWorkers). Moves the best request from
# the queue to the leases (same score) and returns it: a request is always in one of them,
# and a worker that holds leases is registered (one forgotten after a stall registers again).
_POP_LEASE = """
local r = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #r == 0 then return false end
if ARGV[2] ~= '' then redis.call('HSETNX', KEYS[3], ARGV[1], ARGV[2]) end
redis.call('ZREM', KEYS[1], r[1])
redis.call('ZADD', KEYS[2], r[2], r[1])
return r[1]
"""

# KEYS[1] = a worker's leases, KEYS[2] = shared queue, KEYS[3] = workers hash, KEYS[4] =
# heartbeats, KEYS[5] = busy times, KEYS[6] = JOBDIRs; ARGV[1] = the worker, ARGV[2] = its process token,
# ARGV[3] = 1 to forget the worker (it is dead: its entries go with its leases),
# ARGV[4..] = pairs (a lease whose row is committed, the request that replaces it in the queue:
# the same one marked ROW_COMMITTED_META). Returns how many other leases went back as they were;
# does nothing (-1) if the worker was restarted meanwhile.
_REQUEUE_LEASES = """
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return -1 end
local m = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local again = {}
for i = 4, #ARGV, 2 do again[ARGV[i]] = ARGV[i + 1] end
local n = 0
for i = 1, #m, 2 do
  local r = again[m[i]]
  if r then redis.call('ZADD', KEYS[2], m[i + 1], r) else redis.call('ZADD', KEYS[2], m[i + 1], m[i]); n = n + 1 end
end
redis.call('DEL', KEYS[1])
if ARGV[3] == '1' then
  redis.call('HDEL', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[2])
  redis.call('ZREM', KEYS[5], ARGV[1])
  redis.call('HDEL', KEYS[6], ARGV[2])
end
return n
"""

LEASE_META = "focuscrawl_lease"
#: seconds between a worker's heartbeats (``RedisWorkers``)
HEARTBEAT_INTERVAL = 0.5


class RedisProfile:
    """Add-on: turns ``FOCUSCRAWL_REDIS_URL`` into the scrapy-redis + focuscrawl settings."""

    def update_settings(self, settings: BaseSettings) -> None:
        url = settings.get("FOCUSCRAWL_REDIS_URL")
        if not url:
            return
        for name, value in {
            "SCHEDULER": "focuscrawl.distributed.LeasedScheduler",
            "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
            "SCHEDULER_QUEUE_CLASS": "focuscrawl.distributed.LeasedPriorityQueue",
            "SCHEDULER_PERSIST": True,
            # a lease ends at a checkpoint: checkpoint every page batch
            "FOCUSCRAWL_CHECKPOINT_INTERVAL": 0,
            "REDIS_URL": url,
            "SCHEDULER_QUEUE_KEY": redis_key(settings, "requests"),
            "SCHEDULER_DUPEFILTER_KEY": redis_key(settings, "dupefilter"),
        }.items():
            # the project's settings.py names its own SCHEDULER: the profile replaces
            # project-level values, but not ones given on the command line
            if (settings.getpriority(name) or 0) <= SETTINGS_PRIORITIES["project"]:
                settings.set(name, value, "project")
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RedisHostThrottle, 560)
        settings.set_in_component_priority_dict("EXTENSIONS", RedisWorkers, 100)
        settings.set_in_component_priority_dict("SPIDER_MIDDLEWARES", SharedSeeds, 10)
        # outside the image middleware (its images are kept), inside LeaseOutcomes
        settings.set_in_component_priority_dict("SPIDER_MIDDLEWARES", RowCommittedElsewhere, 2)
        # outermost on both sides: sees every output of a response and every final failure
        settings.set_in_component_priority_dict("SPIDER_MIDDLEWARES", LeaseOutcomes, 1)
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", LeaseFailures, 1)


class SharedSeeds:
    """Spider middleware: seeds go through the shared dupefilter.

    Scrapy marks start requests ``dont_filter``; with several processes (or a
    restarted one) every process would fetch every seed again.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "SharedSeeds":
        if not crawler.settings.get("FOCUSCRAWL_REDIS_URL"):
            raise NotConfigured
        return cls()

    async def process_start(self, start):
        async for item_or_request in start:
            if isinstance(item_or_request, Request) and item_or_request.dont_filter:
                item_or_request = item_or_request.replace(dont_filter=False)
            yield item_or_request


class RowCommittedElsewhere:
    """Spider middleware: a page fetched again because another worker's run already holds its
    row (``ROW_COMMITTED_META``) yields its images and links, not a second ``PageItem``."""

    def __init__(self, stats) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "RowCommittedElsewhere":
        if not crawler.settings.get("FOCUSCRAWL_REDIS_URL"):
            raise NotConfigured
        return cls(crawler.stats)

    def _keep(self, response, output) -> bool:
        if isinstance(output, PageItem) and response.meta.get(ROW_COMMITTED_META):
            self.stats.inc_value("focuscrawl/redis/pages_fetched_again_for_images")
            return False
        return True

    def process_spider_output(self, response, result, spider=None):
        for output in result:
            if self._keep(response, output):
                yield output

    async def process_spider_output_async(self, response, result, spider=None):
        async for output in result:
            if self._keep(response, output):
                yield output


class RedisHostThrottle:
    """Downloader middleware: at most one request start per host per delay, across processes;
    a host's own delay where it asks for a longer one (robots.txt's ``Crawl-delay``, which each
    process reads: ``focuscrawl.middlewares.optout``). Takes the crawler for its downloader, which
    holds those delays at run time."""

    def __init__(self, crawler: Crawler, stats, server, delay: float, key: str):
        self.crawler = crawler
        self.stats = stats
        self.server = server
        self.delay_ms = int(delay * 1000)
        self.key = key
        self.reserve = server.register_script(_RESERVE_SLOT)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "RedisHostThrottle":
        s = crawler.settings
        if not s.get("FOCUSCRAWL_REDIS_URL"):
            raise NotConfigured
        delay = s.getfloat("FOCUSCRAWL_REDIS_HOST_DELAY")
        if delay < 0:
            delay = s.getfloat("DOWNLOAD_DELAY")
        spider_key = redis_key(s, "host").replace("%(spider)s", crawler.spidercls.name)
        return cls(crawler, crawler.stats, redis_connection(s), delay, spider_key)

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        if request.meta.get("dont_throttle"):
            return None
        host = urlsplit(request.url).hostname or ""
        delay_ms = max(self.delay_ms, int(1000 * slot_delay_floor(self.crawler.engine.downloader, host)))
        if delay_ms <= 0:
            return None
        wait_ms = int(self.reserve(keys=[f"{self.key}:{host}"], args=[delay_ms])[0])
        stats = self.stats
        stats.inc_value("focuscrawl/redis/throttle_requests")
        if wait_ms > 0:
            stats.inc_value("focuscrawl/redis/throttle_delayed")
            stats.inc_value("focuscrawl/redis/throttle_wait_ms", wait_ms)
            from twisted.internet import reactor
            await maybe_deferred_to_future(task.deferLater(reactor, wait_ms / 1000.0, lambda: None))
        return None


class RedisWorkers:
    """Extension: keeps an idle process alive while the shared crawl still has work, and gives
    the leases of dead workers back to the queue.

    Each process refreshes ``busy`` (a sorted set: worker id -> last busy time) every
    0.5 s while its engine has work. On ``spider_idle`` the process stays open if
    the shared queue is not empty, another worker was busy within
    ``FOCUSCRAWL_REDIS_BUSY_TIMEOUT`` seconds (its pages may still add links), or a
    worker that holds leases stopped beating (they come back when it is known dead).
    ``workers`` (hash: worker id -> process token ``host:pid:start``) says which
    process runs a worker now; ``alive`` (sorted set: token -> last heartbeat)
    whether it still does. A dead worker's entries in the three go with its leases.

    Takes the crawler because it uses it at run time: whether the engine (which does not exist
    yet when ``from_crawler`` runs) is busy, and the run directory a dead worker's leases are
    checked against.
    """

    def __init__(self, crawler: Crawler, server, key: str, queue_key: str, busy_timeout: float,
                 lease_timeout: float, worker: str, output: str, jobdir: str = "") -> None:
        """``crawler``: its engine (is it busy?), stats and ``RunState`` (lease book, run
        directory), at run time: an extension cannot reach another one while they are built."""
        self.crawler = crawler
        self.server = server
        self.key = key
        prefix = key.rsplit(":", 1)[0]
        self.alive_key = prefix + ":alive"
        self.workers_key = prefix + ":workers"
        self.jobdirs_key = prefix + ":jobdirs"
        self.leased_prefix = prefix + ":leased:"
        self.queue_key = queue_key
        self.busy_timeout = busy_timeout
        self.lease_timeout = lease_timeout
        self.worker = worker
        self.token = f"{socket.gethostname()}:{os.getpid()}:{time.time():.3f}"
        self.output = output
        self.jobdir = jobdir
        self.book: LeaseBook | None = None  # RunState's, at spider_opened (before the first pop)
        self._requeue = server.register_script(_REQUEUE_LEASES)
        self._previous = self._claim()
        self._loop = task.LoopingCall(self._beat)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "RedisWorkers":
        s = crawler.settings
        if not s.get("FOCUSCRAWL_REDIS_URL"):
            raise NotConfigured
        name = crawler.spidercls.name
        ext = cls(crawler, redis_connection(s), redis_key(s, "busy").replace("%(spider)s", name),
                  s.get("SCHEDULER_QUEUE_KEY") % {"spider": name},
                  s.getfloat("FOCUSCRAWL_REDIS_BUSY_TIMEOUT"), s.getfloat("FOCUSCRAWL_REDIS_LEASE_TIMEOUT"),
                  worker_id(s), s.get("FOCUSCRAWL_OUTPUT_DIR") or "",
                  os.path.abspath(s.get("JOBDIR")) if s.get("JOBDIR") else "")
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    # --- liveness ----------------------------------------------------------------------
    def _gone(self, token: str) -> bool:
        """The process ``token`` has ended: same host, no such pid; or no heartbeat for
        ``lease_timeout`` seconds."""
        host, pid, _ = token.rsplit(":", 2)
        if host == socket.gethostname():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                return True
            except (PermissionError, ValueError):
                pass
        seen = self.server.zscore(self.alive_key, token)
        return seen is None or seen < time.time() - self.lease_timeout

    def _claim(self) -> str:
        """Become the process of this worker; refuse a run directory a live process writes.
        Returns the token of the killed process this one replaces ("": none)."""
        previous = ""
        # beat before claiming: a claimed worker without a heartbeat looks dead to the others;
        # say where its checkpoint is: the others read its rows only up to it once it is dead
        self.server.zadd(self.alive_key, {self.token: time.time()})
        self.server.hset(self.jobdirs_key, self.token, self.jobdir)
        while not self.server.hsetnx(self.workers_key, self.worker, self.token):
            previous = (self.server.hget(self.workers_key, self.worker) or b"").decode()
            if previous and not self._gone(previous):
                self.server.zrem(self.alive_key, self.token)
                self.server.hdel(self.jobdirs_key, self.token)
                raise ValueError(f"output directory {self.output} is being written by worker {previous} of "
                                 f"this Redis crawl: give every process its own -a output=... and merge them "
                                 f"with 'focuscrawl merge'")
            # its process is gone: take the worker over unless another process just did
            if self.server.hget(self.workers_key, self.worker) == previous.encode():
                self.server.hset(self.workers_key, self.worker, self.token)
                self.server.zrem(self.alive_key, previous)
                self.server.hdel(self.jobdirs_key, previous)
                break
        return previous

    def _recover_own(self) -> None:
        """A restarted worker takes back the leases its killed predecessor held."""
        run = self.crawler.get_extension(RunState).output
        committed = run.committed_page_urls() if run is not None else set()
        self._recover(self.worker, self.token, committed, "focuscrawl/redis/leases_recovered_own")

    def _recover(self, worker: str, token: str, committed: set[str], stat: str, forget: bool = False) -> int:
        """Move ``worker``'s leases back to the queue, except those whose page rows are committed;
        ``forget``: the worker is dead, its entries (``workers``, ``alive``, ``busy``) go too."""
        key = self.leased_prefix + worker
        members = self.server.zrange(key, 0, -1)
        if not members and not forget:
            return 0
        again = [(m, a) for m in members if committed and self.book.url(m) in committed
                 for a in [self._row_committed(m)] if a is not None]
        n = int(self._requeue(keys=[key, self.queue_key, self.workers_key, self.alive_key, self.key,
                                    self.jobdirs_key],
                              args=[worker, token, int(forget), *(x for pair in again for x in pair)]))
        if forget and n >= 0:
            self.crawler.stats.inc_value("focuscrawl/redis/dead_workers_removed")
        if n >= 0 and (n > 0 or again):
            self.crawler.stats.inc_value(stat, n)
            self.crawler.stats.inc_value("focuscrawl/redis/leases_already_committed", len(again))
            logger.warning("redis: %d requests leased by worker %s back in the queue, %d already committed "
                           "(fetched again for their images only) (%s)", n, worker, len(again),
                           stat.rsplit("/", 1)[1])
        return n

    def _row_committed(self, member: bytes) -> bytes | None:
        """The queue member of ``member``'s request marked ``ROW_COMMITTED_META`` (None: unreadable,
        it goes back as it is). A lease is held until the page's images are written, so a committed
        row under a held lease may have images its worker never wrote: whoever pops this fetches the
        page again and keeps its images (and links), not its row."""
        serializer = self.book.serializer
        try:
            request = serializer.loads(member)
            request.setdefault("meta", {})[ROW_COMMITTED_META] = True
            return serializer.dumps(request)
        except Exception:  # noqa: BLE001 - an unreadable member is re-queued, never dropped
            return None

    def _recover_dead(self) -> bool:
        """Give back the leases of every dead worker; True while a worker that holds leases has
        stopped beating but is not yet known dead (its leases come back within the lease timeout)."""
        dying = False
        for worker, token in self.server.hgetall(self.workers_key).items():
            worker, token = worker.decode(), token.decode()
            if worker == self.worker:
                continue
            if self._gone(token):
                host, _, path = worker.partition(":")
                readable = host == socket.gethostname() and os.path.isdir(path) \
                    and self.server.zcard(self.leased_prefix + worker) > 0
                committed = self._checkpointed_rows(path, token) if readable else set()
                self._recover(worker, token, committed, "focuscrawl/redis/leases_recovered", forget=True)
            elif not self.server.zcard(self.leased_prefix + worker):
                continue
            else:
                # two missed heartbeats, and no later than its busy time runs out: a worker that
                # died holding leases keeps the others open until it is known dead
                seen = self.server.zscore(self.alive_key, token)
                stale = min(self.busy_timeout, 2 * HEARTBEAT_INTERVAL)
                dying = dying or seen is None or seen < time.time() - stale
        return dying

    def _checkpointed_rows(self, path: str, token: str) -> set[str]:
        """URLs of the rows in the dead process ``token``'s pages.tsv that a restart on its JOBDIR
        keeps: those before its checkpoint (without JOBDIR, every whole row). Rows past it are
        cut by that restart, so their pages must be crawled again. Unknown (no JOBDIR entry, an
        unreadable checkpoint): none, every lease goes back (a page may then be in two parts,
        ``focuscrawl merge`` keeps one)."""
        jobdir = self.server.hget(self.jobdirs_key, token)
        if jobdir is None:
            return set()
        end = None
        if jobdir:
            try:
                end = checkpoint_offsets(jobdir.decode(), path).get("pages.tsv")
            except (OSError, ValueError) as exc:
                logger.warning("redis: the checkpoint of dead worker %s is unreadable (%s): all its leases go "
                               "back to the queue", token, exc)
                return set()
        return {row["url"] for row in committed_rows(Path(path) / "pages.tsv", end)}

    # --- signals --------------------------------------------------------------------------
    def spider_opened(self, spider: Spider) -> None:
        self.book = self.crawler.get_extension(RunState).leases
        self.book.token = self.token
        if self._previous:
            self._recover_own()
        self.server.zadd(self.key, {self.worker: time.time()})
        self._loop.start(HEARTBEAT_INTERVAL, now=False)

    def _beat(self) -> None:
        self.server.zadd(self.alive_key, {self.token: time.time()})
        # a process that stalled past the lease timeout was forgotten: it registers again
        if self.server.hsetnx(self.workers_key, self.worker, self.token):
            self.server.hset(self.jobdirs_key, self.token, self.jobdir)
        self._recover_dead()
        engine = self.crawler.engine
        if engine is None:
            return
        idle = engine.spider_is_idle()  # False too while the shared queue is not empty
        if not idle:
            self.server.zadd(self.key, {self.worker: time.time()})
        if idle or self.server.zcard(self.queue_key) > 0:
            # Pull what another process queued, or re-run the idle check, now instead
            # of at the engine's next 5-second heartbeat.
            wake_engine(engine)

    def spider_idle(self, spider: Spider) -> None:
        now = time.time()
        self.server.zremrangebyscore(self.key, "-inf", now - 3600)
        self.book.engine_idle()
        if self._recover_dead():
            raise DontCloseSpider("a worker holding leased requests stopped beating")
        if self.server.zcard(self.queue_key) > 0:
            raise DontCloseSpider("shared frontier not empty")
        others = [w for w, t in self.server.zrangebyscore(self.key, now - self.busy_timeout, "+inf",
                                                          withscores=True)
                  if w.decode() != self.worker]
        if others:
            self.crawler.stats.inc_value("focuscrawl/redis/idle_waits")
            raise DontCloseSpider(f"other workers busy: {len(others)}")

    def spider_closed(self, spider: Spider) -> None:
        if self._loop.running:
            self._loop.stop()
        # Leases still held have no known safe outcome (a stop mid-download): back to the queue.
        if self.book.held:
            self.crawler.stats.set_value("focuscrawl/redis/leases_requeued_at_close", len(self.book.held))
        self._recover(self.worker, self.token, set(), "focuscrawl/redis/leases_requeued")
        self.book.held.clear()
        self.server.zrem(self.key, self.worker)
        self.server.zrem(self.alive_key, self.token)
        if (self.server.hget(self.workers_key, self.worker) or b"").decode() == self.token:
            self.server.hdel(self.workers_key, self.worker)
        self.server.hdel(self.jobdirs_key, self.token)


class LeasedPriorityQueue(PriorityQueue):
    """scrapy-redis's priority queue whose ``pop`` leases: the request moves atomically to this
    worker's leased set and stays there until ``LeaseBook.release``."""

    def __init__(self, server, spider, key, serializer=None):
        super().__init__(server, spider, key, serializer)
        self.book = spider.crawler.get_extension(RunState).leases
        self._pop_lease = server.register_script(_POP_LEASE)

    def pop(self, timeout=0):
        member = self._pop_lease(keys=[self.key, self.book.key, self.book.workers_key],
                                 args=[self.book.worker, self.book.token])
        if not member:
            return None
        request = self._decode_request(member)
        request.meta[LEASE_META] = self.book.lease(member)
        return request


class LeasedScheduler(RedisScheduler):
    """scrapy-redis's scheduler; a request that comes back carrying a lease (a redirect or a
    retry of a leased request) is queued first, then its parent's lease is released."""

    def open(self, spider: Spider):
        self.book: LeaseBook = spider.crawler.get_extension(RunState).leases
        #: the spider's memory of out-links already scheduled (``focuscrawl.frontier.KnownLinks``)
        self.known_links: KnownLinks | None = getattr(spider, "known_links", None)
        return super().open(spider)

    def enqueue_request(self, request: Request) -> bool:
        token = request.meta.pop(LEASE_META, None)
        accepted = super().enqueue_request(request)
        if self.known_links is not None:  # accepted or filtered: in the shared seen-set now
            self.known_links.scheduled(request)
        if token is not None:
            self.book.release(token)
        return accepted


def _token(response) -> str | None:
    request = getattr(response, "request", None)
    return request.meta.get(LEASE_META) if request is not None else None


class LeaseOutcomes:
    """Spider middleware (outermost): counts the items of each leased response and releases the
    lease when its output is done and every item is safe (left the pipelines; a page's or an
    image's row checkpointed, ``page_rows_committed``, ``image_rows_committed``: a worker killed
    before that checkpoint keeps the lease, so another worker fetches the page again)."""

    def __init__(self, book: LeaseBook, pages_via_writer: bool, images_via_records: bool = False) -> None:
        self.book = book
        self.pages_via_writer = pages_via_writer
        self.images_via_records = images_via_records

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "LeaseOutcomes":
        s = crawler.settings
        if not s.get("FOCUSCRAWL_REDIS_URL"):
            raise NotConfigured
        pipelines = s.getwithbase("ITEM_PIPELINES")
        output = bool(s.get("FOCUSCRAWL_OUTPUT_DIR"))
        mw = cls(crawler.get_extension(RunState).leases,
                 output and pipelines.get("focuscrawl.pipelines.writers.PageLogWriterPipeline") is not None,
                 output and pipelines.get("focuscrawl.pipelines.image_records.ImageRecordsPipeline") is not None)
        crawler.signals.connect(mw.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(mw.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(mw.item_dropped, signal=signals.item_error)
        crawler.signals.connect(mw.rows_committed, signal=page_rows_committed)
        crawler.signals.connect(mw.rows_committed, signal=image_rows_committed)
        return mw

    def _row_checkpointed(self, item) -> bool:
        """``item`` is safe once a checkpoint covers its row, not when it leaves the pipelines."""
        return (self.pages_via_writer and isinstance(item, PageItem)) or \
            (self.images_via_records and isinstance(item, ImageItem))

    def _started(self, token: str | None, output) -> None:
        if token is not None and not isinstance(output, Request):
            self.book.item_started(token, output, self._row_checkpointed(output))

    def process_spider_output(self, response, result, spider=None):
        token = _token(response)
        try:
            for output in result:
                self._started(token, output)
                yield output
        finally:
            if token is not None:
                self.book.output_finished(token)

    async def process_spider_output_async(self, response, result, spider=None):
        token = _token(response)
        try:
            async for output in result:
                self._started(token, output)
                yield output
        finally:
            if token is not None:
                self.book.output_finished(token)

    def item_scraped(self, item, response, spider=None) -> None:
        if not self._row_checkpointed(item):  # else: at its checkpoint
            self.book.item_done(_token(response))

    def item_dropped(self, item, response, spider=None, **kwargs) -> None:
        if self._row_checkpointed(item):
            self.book.row_done(item)
        else:
            self.book.item_done(_token(response))

    def rows_committed(self, items) -> None:
        for item in items:
            self.book.row_done(item)


class LeaseFailures:
    """Downloader middleware (outermost): a leased request whose download failed for good (no
    retry took it over) has no output to wait for."""

    def __init__(self, book: LeaseBook) -> None:
        self.book = book

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "LeaseFailures":
        if not crawler.settings.get("FOCUSCRAWL_REDIS_URL"):
            raise NotConfigured
        return cls(crawler.get_extension(RunState).leases)

    def process_exception(self, request, exception, spider=None):
        token = request.meta.get(LEASE_META)
        if token is not None:
            self.book.output_finished(token)
        return None
