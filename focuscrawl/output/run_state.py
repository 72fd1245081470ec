"""The one owner of a crawl's run state (docs/ARCHITECTURE.md "Target shape").

``RunState`` is an extension (its add-on, ``RunStateAddon`` in ``ADDONS``, enables it) so that
it exists before every component that needs it: Scrapy builds the extensions before the
engine, the scheduler, the middlewares and the pipelines, and those find it with
``crawler.get_extension(RunState)`` in their ``from_crawler`` (other extensions, built
alongside it, look it up at ``spider_opened``). It owns the run directory (``RunOutput``: the
logs and their JOBDIR checkpoint), the ``ImageStore`` that writes into it, and in a Redis
crawl the worker's ``LeaseBook``. It lives with the crawl state it owns (``focuscrawl.output``,
a layer below the components: the frontier gets it too).
"""
from __future__ import annotations

import logging
from functools import partial
from typing import Callable, TypeVar

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.signalmanager import SignalManager
from scrapy.settings import BaseSettings
from scrapy.utils.defer import deferred_from_coro

from focuscrawl.output.files import AppendFile, DirectoryLock, job_state_dir, lock_directory
from focuscrawl.output.images import ImageStore
from focuscrawl.output.leases import LeaseBook
from focuscrawl.output.run import Checkpointed, RunOutput

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: the finish reason of a crawl stopped by a failed write of its run directory or JOBDIR
WRITE_FAILED = "write_failed"
#: the stat that says which write failed (set only then)
WRITE_FAILED_STAT = "focuscrawl/output/write_failed"


class RunState:
    """Extension: the crawl's run directory, image store and lease book, one of each per crawler.

    ``output`` and ``images`` are ``None`` when ``FOCUSCRAWL_OUTPUT_DIR`` is empty (nothing is
    written, images are not downloaded); ``leases`` is ``None`` unless ``FOCUSCRAWL_REDIS_URL``."""

    def __init__(self, output: RunOutput | None, images: ImageStore | None,
                 leases: LeaseBook | None = None, locks: list[DirectoryLock] = (),
                 signals: SignalManager | None = None, on_failure: Callable[[OSError], None] | None = None) -> None:
        self.output = output
        self.images = images
        self.leases = leases
        #: the states registered here, closed (after a last checkpoint) at ``spider_closed``
        self._states: list[Checkpointed] = []
        #: the writer locks of the JOBDIR and the run directory (``lock_directory``), held until the
        #: crawl's last write (``stats.json``, at ``engine_stopped``)
        self.locks = list(locks)
        self._engine_started = False
        self._signals = signals  # the crawler's: its engine_stopped releases the locks
        #: told of the first failed write (``stop_crawl``); also the run directory's
        self.on_failure = on_failure
        if output is not None:
            output.on_failure = on_failure
        #: without a run directory: the first failed write of a JOBDIR state, and the logs it stops
        self._failure: OSError | None = None
        self._guarded: list[AppendFile] = []

    def register(self, state: Checkpointed) -> None:
        """Restore ``state`` from the last checkpoint now, checkpoint it with the run directory's
        logs from now on (without a run directory: once, at ``spider_closed``), and ``close()``
        it after the last checkpoint."""
        if self.output is not None:
            self.output.register(state)
        else:
            state.restore()
        self._states.append(state)

    def registered(self, kind: type[T]) -> T | None:
        """The first state of type ``kind`` registered here (``None``: none): a component finds
        a state another one registered (the re-ranking queue, the crawl's link learner)."""
        return next((state for state in self._states if isinstance(state, kind)), None)

    @property
    def failure(self) -> OSError | None:
        """The first failed write of the run directory or JOBDIR (None: none): the crawl stopped."""
        return self.output.failure if self.output is not None else self._failure

    def guard(self, log: AppendFile) -> AppendFile:
        """``log`` (a JOBDIR state's): a failed write to it stops the crawl, and a failed write
        of the run stops it (``RunOutput.guard``); also without a run directory."""
        if self.output is not None:
            return self.output.guard(log)
        log.on_error = self._fail
        log.stopped = self._failure is not None
        self._guarded.append(log)
        return log

    def fail(self, exc: OSError) -> None:
        """A write of the run directory or JOBDIR outside its logs failed (Scrapy's disk queue):
        the crawl stops as on a failed write of a log."""
        if self.output is not None:
            self.output.fail(exc)
        else:
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        """A JOBDIR write of a crawl without a run directory failed: nothing more is written
        there, said in one line, the crawl stops (as ``RunOutput.fail``)."""
        if self._failure is not None:
            return
        self._failure = exc
        for log in self._guarded:
            log.stopped = True
        logger.error("cannot write%s: %s; the crawl stops; everything up to then is kept: make room and "
                     "run the same command again (same JOBDIR) to resume",
                     f" {exc.filename}" if exc.filename else "", exc.strerror or exc)
        if self.on_failure is not None:
            self.on_failure(exc)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "RunState":
        s = crawler.settings
        directory = s.get("FOCUSCRAWL_OUTPUT_DIR") or ""
        output = images = None
        locks: list[DirectoryLock] = []
        try:
            if s.get("JOBDIR"):  # one crawl per JOBDIR: taken before anything in it is read or cut back
                state_dir = job_state_dir(s.get("JOBDIR"))
                state_dir.mkdir(parents=True, exist_ok=True)
                locks.append(lock_directory(state_dir, "JOBDIR"))
            if directory:
                output = RunOutput(directory, s.get("JOBDIR") or None, s.getfloat("FOCUSCRAWL_CHECKPOINT_INTERVAL"))
                locks.append(lock_directory(output.dir, "output directory"))  # (the one RunOutput holds)
                images = ImageStore(output, crawler.stats,
                                    max_parents=s.getint("FOCUSCRAWL_IMAGE_MAX_PARENTS"),
                                    max_siblings=s.getint("FOCUSCRAWL_IMAGE_MAX_SIBLINGS"),
                                    max_sightings=s.getint("FOCUSCRAWL_IMAGE_MAX_SIGHTINGS"))
                logger.info("run directory %s%s", output.dir, " (resumed)" if output.resumed else "")
            else:
                logger.info("FOCUSCRAWL_OUTPUT_DIR is empty: no run directory is written, images are not downloaded")
            leases = None
            if s.get("FOCUSCRAWL_REDIS_URL"):
                leases = LeaseBook.from_crawler(crawler)
        except BaseException:  # refused: nothing is kept locked
            if output is not None:
                output.close()
            for lock in locks:
                lock.release()
            raise
        state = cls(output, images, leases, locks, crawler.signals, partial(cls.stop_crawl, crawler))
        crawler.signals.connect(state.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(state.engine_started, signal=signals.engine_started)
        return state

    @staticmethod
    def stop_crawl(crawler: Crawler, exc: OSError) -> None:
        """A write of the run failed: the crawl stops (finish reason ``write_failed``; the
        commands exit with ``EXIT_FAILED``), the stat says why."""
        crawler.stats.set_value(WRITE_FAILED_STAT, f"{exc.strerror or exc}: {exc.filename or ''}")
        engine = crawler.engine
        if engine is not None and engine.spider is not None:  # (a crawl already closing goes on closing)
            deferred_from_coro(engine.close_spider_async(reason=WRITE_FAILED))

    def spider_closed(self, spider=None) -> None:
        """The last checkpoint (the run directory's, with its states), then every registered
        state closed, in the order they registered. After a failed write the states are left
        as a kill leaves them (no checkpoint, no clean-stop marker): a resume recovers them."""
        try:
            if self.output is not None:
                self.output.close()
                if self.output.failure is not None:
                    return
            elif self._failure is not None:
                return  # left as a kill leaves them: a resume recovers them
            else:
                for state in self._states:
                    state.checkpoint()
            for state in self._states:
                state.close()
        finally:
            if not self._engine_started:  # (a crawl that never started: no engine_stopped comes)
                self.release_locks()

    def engine_started(self) -> None:
        """Hold the locks until ``engine_stopped``: connected now, after every component's
        handler, so they go after the last write (``StatsFileWriter``'s)."""
        self._engine_started = True
        self._signals.connect(self.release_locks, signal=signals.engine_stopped)

    def release_locks(self) -> None:
        """The crawl writes its run directory and JOBDIR no more: another crawl may."""
        for lock in self.locks:
            lock.release()


class RunStateAddon:
    """Add-on: enables ``RunState`` whatever ``EXTENSIONS`` a spider or project sets, since the
    scheduler, middlewares and pipelines get it from the crawler. At 890: its
    ``spider_closed`` (closing the run directory) runs after the extensions numbered below."""

    def update_settings(self, settings: BaseSettings) -> None:
        settings.set_in_component_priority_dict("EXTENSIONS", RunState, 890)
