"""A Redis crawl's shared names and this worker's leases (docs/DEPLOY.md), kept with the run
state: ``RunState`` owns the ``LeaseBook``; the Redis components (``focuscrawl.distributed``)
use it and these names."""
from __future__ import annotations

import hashlib
import importlib
import os
import socket
from typing import Any

from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings
from scrapy_redis import picklecompat


#: meta of a request whose page row a dead (or restarted) worker had committed while its lease was
#: still held: its images (or links) may not be safe, so it is fetched again for them, not its row
#: (which counts in that worker's run: not in this one's page budget or per-host page limit)
ROW_COMMITTED_META = "focuscrawl_row_committed"
#: scrapy-redis's placeholder for the spider name in its keys
SPIDER_PLACEHOLDER = "%(spider)s"


def redis_key(settings: BaseSettings, suffix: str) -> str:
    """``focuscrawl:<crawl>:<suffix>``; the crawl name keeps separate crawls apart (an empty
    ``FOCUSCRAWL_REDIS_CRAWL`` names the crawl after its spider)."""
    return f"focuscrawl:{settings.get('FOCUSCRAWL_REDIS_CRAWL') or SPIDER_PLACEHOLDER}:{suffix}"


def redis_connection(settings: BaseSettings):
    import redis
    return redis.Redis.from_url(settings.get("FOCUSCRAWL_REDIS_URL"))


def worker_id(settings: BaseSettings) -> str:
    """``host:run directory`` (stable: a restarted worker finds its leases), else ``host:pid``."""
    output = settings.get("FOCUSCRAWL_OUTPUT_DIR") or ""
    return f"{socket.gethostname()}:{os.path.abspath(output) if output else os.getpid()}"


class LeaseBook:
    """This worker's leases: the queue member of each held request and what its release waits
    for (its spider output, its items, the checkpoint of its page and image rows). One per crawler, owned by
    ``RunState`` (``crawler.get_extension(RunState).leases``)."""

    def __init__(self, stats, server, key: str, serializer, worker: str = "", workers_key: str = "") -> None:
        self.stats = stats
        self.server = server
        self.key = key  # the worker's leased set
        self.serializer = serializer
        self.worker, self.workers_key = worker, workers_key
        self.token = ""  # the process token, set by RedisWorkers
        self.held: dict[str, bytes] = {}  # token -> member
        self.waiting: dict[str, int] = {}  # token -> items not yet safe
        self.output_done: set[str] = set()
        #: id(item) -> (token, item) of each item whose row a checkpoint must cover first
        self.rows: dict[int, tuple[str, Any]] = {}


    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "LeaseBook":
        s = crawler.settings
        name = s.get("SCHEDULER_SERIALIZER")
        serializer = importlib.import_module(name) if isinstance(name, str) and name else picklecompat
        spider = crawler.spidercls.name
        worker = worker_id(s)
        key = redis_key(s, f"leased:{worker}").replace("%(spider)s", spider)
        return cls(crawler.stats, redis_connection(s), key, serializer, worker,
                   redis_key(s, "workers").replace("%(spider)s", spider))
    def lease(self, member: bytes) -> str:
        token = hashlib.sha1(member).hexdigest()
        self.held[token] = member
        self.waiting.setdefault(token, 0)
        self.stats.inc_value("focuscrawl/redis/leases_taken")
        return token

    def item_started(self, token: str, item, row_checkpointed: bool) -> None:
        """``row_checkpointed``: the item is safe only once a checkpoint covers its row
        (``row_done``), not when it leaves the pipelines."""
        if token in self.held:
            self.waiting[token] += 1
            if row_checkpointed:
                self.rows[id(item)] = (token, item)

    def item_done(self, token: str | None) -> None:
        if token in self.held:
            self.waiting[token] -= 1
            self._release_if_safe(token)

    def row_done(self, item) -> None:
        """An item's row is checkpointed (or the item was dropped)."""
        token, _ = self.rows.pop(id(item), (None, None))
        self.item_done(token)

    def output_finished(self, token: str) -> None:
        if token in self.held:
            self.output_done.add(token)
            self._release_if_safe(token)

    def engine_idle(self) -> None:
        """Nothing is being downloaded, parsed or processed: a held request's output is over
        even if it ended where no middleware sees it (an exception in a downloader
        middleware's ``process_response`` goes straight to the errback). Pages still waiting
        for their rows' checkpoint stay held (the idle writer writes them next)."""
        for token in list(self.held):
            if token not in self.output_done:
                self.stats.inc_value("focuscrawl/redis/leases_ended_unseen")
                self.output_finished(token)

    def _release_if_safe(self, token: str) -> None:
        if token in self.output_done and self.waiting.get(token, 0) <= 0:
            self.release(token)

    def release(self, token: str) -> None:
        """Ack: the request's outcome is safe; it leaves the leased set."""
        member = self.held.pop(token, None)
        self.waiting.pop(token, None)
        self.output_done.discard(token)
        if member is not None:
            self.server.zrem(self.key, member)
            self.stats.inc_value("focuscrawl/redis/leases_released")

    def url(self, member: bytes) -> str:
        try:
            return self.serializer.loads(member).get("url", "")
        except Exception:  # noqa: BLE001 - an unreadable member is re-queued, never dropped
            return ""
