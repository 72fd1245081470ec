"""Many crawler processes, one frontier: the Redis profile (scrapy-redis + focuscrawl parts).

Switch it on with ``-s FOCUSCRAWL_REDIS_URL=redis://host:6379/0`` (every process of
the crawl gets the same URL and ``FOCUSCRAWL_REDIS_CRAWL`` name). The ``RedisProfile``
add-on then configures:

* scrapy-redis's ``Scheduler`` with its sorted-set ``PriorityQueue`` (score =
  ``-request.priority``: focuscrawl's integer link priority, highest first, shared
  by all processes) and its Redis ``RFPDupeFilter`` (one seen-set for all);
  ``SCHEDULER_PERSIST`` is on, so a process that stops does not wipe the frontier
  the others still use;
* ``RedisHostThrottle``: per-host politeness across processes (scrapy-redis has
  none): an atomic Lua script hands out per-host start times at least
  ``FOCUSCRAWL_REDIS_HOST_DELAY`` seconds apart;
* ``RedisWorkers``: a process whose local work is done stays alive while the shared
  queue has requests or another process is still busy (its links may come), so all
  processes stop together when the frontier is really exhausted; a process refuses
  to start on a run directory that another live process of the crawl writes.

Limits: ``CONCURRENT_REQUESTS_PER_DOMAIN`` and AutoThrottle stay per process (N
processes may have N times as many connections open to a host, but start at most
one request per host delay between them); requests popped by a process that dies
are lost from the frontier (Redis holds only not-yet-popped requests).
"""
from __future__ import annotations

import logging
import os
import socket
import time
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task

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


def redis_key(settings: BaseSettings, suffix: str) -> str:
    """``focuscrawl:<crawl>:<suffix>``; the crawl name keeps separate crawls apart."""
    return f"focuscrawl:{settings.get('FOCUSCRAWL_REDIS_CRAWL') or '%(spider)s'}:{suffix}"


def _connect(settings: BaseSettings):
    import redis
    return redis.Redis.from_url(settings.get("FOCUSCRAWL_REDIS_URL"))


class RedisProfile:
    """Add-on: turns ``FOCUSCRAWL_REDIS_URL`` into the scrapy-redis + focuscrawl settings."""

    def update_settings(self, settings: BaseSettings) -> None:
        url = settings.get("FOCUSCRAWL_REDIS_URL")
        if not url:
            return
        for name, value in {
            "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
            "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
            "SCHEDULER_QUEUE_CLASS": "scrapy_redis.queue.PriorityQueue",
            "SCHEDULER_PERSIST": True,
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


class RedisHostThrottle:
    """Downloader middleware: at most one request start per host per delay, across processes."""

    def __init__(self, crawler: Crawler, server, delay: float, key: str):
        self.crawler = crawler
        self.server = server
        self.delay_ms = int(delay * 1000)
        self.key = key
        self.reserve = server.register_script(_RESERVE_SLOT)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "RedisHostThrottle":
        s = crawler.settings
        if not s.get("FOCUSCRAWL_REDIS_URL"):
            raise NotConfigured
        delay = s.getfloat("FOCUSCRAWL_REDIS_HOST_DELAY", -1)
        if delay < 0:
            delay = s.getfloat("DOWNLOAD_DELAY")
        spider_key = redis_key(s, "host").replace("%(spider)s", crawler.spidercls.name)
        return cls(crawler, _connect(s), delay, spider_key)

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        if self.delay_ms <= 0 or request.meta.get("dont_throttle"):
            return None
        host = urlsplit(request.url).hostname or ""
        wait_ms = int(self.reserve(keys=[f"{self.key}:{host}"], args=[self.delay_ms])[0])
        stats = self.crawler.stats
        stats.inc_value("redis_throttle/requests")
        if wait_ms > 0:
            stats.inc_value("redis_throttle/delayed")
            stats.inc_value("redis_throttle/wait_ms", wait_ms)
            from twisted.internet import reactor
            await maybe_deferred_to_future(task.deferLater(reactor, wait_ms / 1000.0, lambda: None))
        return None


class RedisWorkers:
    """Extension: keeps an idle process alive while the shared crawl still has work.

    Each process refreshes ``busy`` (a sorted set: worker id -> last busy time) every
    0.5 s while its engine has work. On ``spider_idle`` the process stays open if
    the shared queue is not empty or another worker was busy within
    ``FOCUSCRAWL_REDIS_BUSY_TIMEOUT`` seconds (its pages may still add links).
    """

    def __init__(self, crawler: Crawler, server, key: str, queue_key: str, busy_timeout: float):
        self.crawler = crawler
        self.server = server
        self.key = key
        self.alive_key = key.rsplit(":", 1)[0] + ":alive"
        self.outputs_key = key.rsplit(":", 1)[0] + ":outputs"
        self.queue_key = queue_key
        self.busy_timeout = busy_timeout
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.output = crawler.settings.get("FOCUSCRAWL_OUTPUT_DIR") or ""
        if self.output:
            self._claim_output()
        self._loop = task.LoopingCall(self._beat)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "RedisWorkers":
        s = crawler.settings
        if not s.get("FOCUSCRAWL_REDIS_URL"):
            raise NotConfigured
        name = crawler.spidercls.name
        return cls(crawler, _connect(s), redis_key(s, "busy").replace("%(spider)s", name),
                   s.get("SCHEDULER_QUEUE_KEY") % {"spider": name},
                   s.getfloat("FOCUSCRAWL_REDIS_BUSY_TIMEOUT", 3.0))

    def _claim_output(self) -> None:
        """Each process needs its own run directory: refuse one a live worker writes."""
        path = f"{socket.gethostname()}:{os.path.abspath(self.output)}"
        self.server.zadd(self.alive_key, {self.worker: time.time()})
        if self.server.hsetnx(self.outputs_key, path, self.worker):
            return
        owner = (self.server.hget(self.outputs_key, path) or b"").decode()
        seen = self.server.zscore(self.alive_key, owner)
        if owner != self.worker and seen is not None and seen > time.time() - 10:
            raise ValueError(f"output directory {self.output} is being written by worker {owner} of this "
                             f"Redis crawl: give every process its own -a output=... and merge them with "
                             f"'focuscrawl merge'")
        self.server.hset(self.outputs_key, path, self.worker)  # its owner is gone

    def spider_opened(self, spider: Spider) -> None:
        self.server.zadd(self.key, {self.worker: time.time()})
        self._loop.start(0.5, now=False)

    def _beat(self) -> None:
        self.server.zadd(self.alive_key, {self.worker: time.time()})
        engine = self.crawler.engine
        if engine is None:
            return
        idle = engine.spider_is_idle()  # False too while the shared queue is not empty
        if not idle:
            self.server.zadd(self.key, {self.worker: time.time()})
        if idle or self.server.zcard(self.queue_key) > 0:
            # Pull what another process queued, or re-run the idle check, now instead
            # of at the engine's next 5-second heartbeat (Scrapy has no public call).
            slot = getattr(engine, "_slot", None)
            if slot is not None:
                slot.nextcall.schedule()

    def spider_idle(self, spider: Spider) -> None:
        now = time.time()
        self.server.zremrangebyscore(self.key, "-inf", now - 3600)
        if self.server.zcard(self.queue_key) > 0:
            raise DontCloseSpider("shared frontier not empty")
        others = [w for w, t in self.server.zrangebyscore(self.key, now - self.busy_timeout, "+inf",
                                                          withscores=True)
                  if w.decode() != self.worker]
        if others:
            self.crawler.stats.inc_value("redis_workers/idle_waits")
            raise DontCloseSpider(f"other workers busy: {len(others)}")

    def spider_closed(self, spider: Spider) -> None:
        if self._loop.running:
            self._loop.stop()
        self.server.zrem(self.key, self.worker)
        self.server.zrem(self.alive_key, self.worker)
