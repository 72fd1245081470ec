"""A frontier journal in JOBDIR so that a killed crawl loses (almost) no scheduled work.

Scrapy saves its request queue only on a clean stop; after SIGKILL, OOM or a power
cut the requests it had queued are gone while ``requests.seen`` remembers them, so
they are never crawled. ``JournaledScheduler`` (Scrapy's scheduler plus a journal)
appends one line per *accepted* request and one when a request leaves the
downloader, to ``JOBDIR/focuscrawl/frontier.log``:

    +<TAB>fingerprint<TAB>base64(pickle(request_to_dict))   accepted into the queue
    p<TAB>fingerprint<TAB>url                                a page was downloaded (may get a pages.tsv row)
    -<TAB>fingerprint                                        left the downloader

A request whose response is not 2xx, or whose download failed, keeps its ``-`` until
its outcome is known: the redirect or retry a downloader middleware made of it has
been journaled (``+`` first: the follow-up carries its parent's fingerprint in
``meta["frontier_fp"]``), or the final response reached the engine
(``response_received``). A kill between leaving the downloader and the follow-up
being queued thus finds the request still pending; a download that failed for good
stays pending and is tried once more after a kill (it wrote no output).

Every line is written with one unbuffered ``write`` as it happens. A page's ``p``
is written on ``response_downloaded``, which Scrapy sends before
``request_left_downloader``: so at every instant a fetched page is still pending
or known as a page, and a kill can never leave it in neither state (with ``p`` on
``response_received``, a kill while the response passed back through the
downloader middlewares lost the page and every link on it). After an
unclean stop (no ``frontier.clean`` marker) the scheduler rebuilds the frontier
from it: Scrapy's stale disk queue and seen-set are discarded, the seen-set is
rebuilt from the journal, and every accepted request that had not left the
downloader, plus every page that arrived but whose row is not in the
checkpointed ``pages.tsv`` (the run directory is cut back to its last commit), is
queued again. Fingerprints in Scrapy's seen-set that are missing from the journal
are reported as ``focuscrawl/frontier/unrecovered``.
"""
from __future__ import annotations

import base64
import logging
import pickle
import shutil
from pathlib import Path

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import Scheduler
from scrapy.pqueues import ScrapyPriorityQueue
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.request import request_from_dict

from focuscrawl.lm.link_learner import url_host
from focuscrawl.output.files import LineLog, iter_tsv
from focuscrawl.output.run import run_output
from focuscrawl.scrapy_compat import read_seen_fingerprints, rerank_queue_top

logger = logging.getLogger(__name__)

JOURNAL = "frontier.log"
CLEAN_MARKER = "frontier.clean"
PARENT_META = "frontier_fp"  # a request's fingerprint, inherited by its redirects and retries


def read_journal(path: Path) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """``(pending fp -> encoded request, every accepted fp -> encoded, page fp -> url)``."""
    encoded: dict[str, str] = {}
    pending: set[str] = set()
    pages: dict[str, str] = {}
    if not path.exists():
        return {}, {}, {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2:
                continue
            kind, fp = parts[0], parts[1]
            if kind == "+" and len(parts) == 3:
                encoded[fp] = parts[2]
                pending.add(fp)
            elif kind == "-":
                pending.discard(fp)
            elif kind == "p" and len(parts) == 3:
                pages[fp] = parts[2]
    return {fp: encoded[fp] for fp in encoded if fp in pending}, encoded, pages


def _page_urls_written(run) -> set[str]:
    return set() if run is None else {row["url"] for row in iter_tsv(run.path("pages.tsv"))}


def _open_journal(crawler: Crawler, jobdir: Path, state_dir: Path) -> tuple[LineLog, tuple[list, list], set[str]]:
    """``(journal, (requests to queue again, requests to mark seen), fingerprints still queued)``."""
    state_dir.mkdir(parents=True, exist_ok=True)
    run = run_output(crawler)
    path = state_dir / JOURNAL
    clean = (state_dir / CLEAN_MARKER).exists()
    existed = path.exists() and path.stat().st_size > 0
    # Not cut back to the outputs' checkpoint: a page's row can be committed before
    # its links are queued, so the journal must run ahead; pages whose rows were cut
    # back are found by their "p" lines and crawled again.
    journal = LineLog(path)  # a torn last line (kill mid-write) is dropped here
    recovery = _prepare_recovery(crawler, path, run, jobdir) if existed and not clean else ([], [])
    # After a clean stop Scrapy restores its own queue: those requests are still pending
    # in the journal and must get their "p" and "-" when fetched in this session, or a
    # later kill would queue them again although their rows were written.
    queued = set(read_journal(path)[0]) if existed and clean else set()
    (state_dir / CLEAN_MARKER).unlink(missing_ok=True)
    return journal, recovery, queued


def _prepare_recovery(crawler: Crawler, path: Path, run, jobdir: Path) -> tuple[list[str], list[Request]]:
    """Unclean stop: drop the stale queue and seen-set; return (requests to queue again,
    requests to mark as seen) as rebuilt from the journal."""
    stats = crawler.stats
    pending, accepted, pages = read_journal(path)
    if run is not None:
        run.line_log("pages.tsv")  # cut pages.tsv back to its checkpoint before reading it
    written = _page_urls_written(run)
    lost_pages = {fp for fp, url in pages.items() if url not in written and fp not in pending}
    seen_path = jobdir / "requests.seen"
    unrecovered = len(read_seen_fingerprints(seen_path) - {bytes.fromhex(fp) for fp in accepted})
    shutil.rmtree(jobdir / "requests.queue", ignore_errors=True)
    seen_path.unlink(missing_ok=True)
    recovery = list(pending.values())
    recovery += [e for e in (_encoded_for(path, fp) for fp in sorted(lost_pages)) if e]
    seen = [_fingerprint_request(e) for e in accepted.values()]
    stats.set_value("focuscrawl/frontier/recovered", len(pending))
    stats.set_value("focuscrawl/frontier/recovered_pages_without_rows", len(lost_pages))
    stats.set_value("focuscrawl/frontier/unrecovered", unrecovered)
    logger.warning(
        "frontier: unclean stop detected in %s: %d queued/in-flight requests and %d fetched pages "
        "without committed rows recovered from the journal; %d requests Scrapy had scheduled were "
        "not in the journal's checkpoint and could not be recovered", jobdir, len(pending),
        len(lost_pages), unrecovered)
    return recovery, seen


def _decode(encoded: str) -> dict:
    return pickle.loads(base64.b64decode(encoded))


def _fingerprint_request(encoded: str) -> Request:
    """A callback-free copy of a journaled request, enough for the dupefilter's fingerprint."""
    d = _decode(encoded)
    return Request(d["url"], method=d.get("method", "GET"), body=d.get("body") or b"",
                   headers=d.get("headers"))


def _encoded_for(path: Path, fp: str) -> str | None:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith(f"+\t{fp}\t"):
                return line.rstrip("\n").split("\t")[2]
    return None


class JournaledScheduler(Scheduler):
    """Scrapy's scheduler; with JOBDIR it journals the frontier and recovers it after a kill.

    ``journal`` is None without JOBDIR or with ``FOCUSCRAWL_FRONTIER_JOURNAL`` off: then
    it is Scrapy's scheduler unchanged. ``recovery`` is (encoded requests to queue again,
    requests to mark as seen); ``queued`` the fingerprints Scrapy's own queue restores.

    ``__init__`` keeps the signature of Scrapy's ``Scheduler`` (``dupefilter, jobdir, ...,
    crawler=``), which needs the crawler; ``from_crawler`` reads the settings and opens the
    journal.
    """

    def __init__(self, dupefilter, jobdir: str | None = None, *, journal: LineLog | None = None,
                 state_dir: Path | None = None, recovery: tuple[list[str], list[Request]] = ([], []),
                 queued: set[str] = frozenset(), crawler: Crawler | None = None, **kwargs) -> None:
        super().__init__(dupefilter, jobdir, crawler=crawler, **kwargs)
        self.journal, self.state_dir = journal, state_dir
        self._recovery_encoded, seen = list(recovery[0]), recovery[1]
        for request in seen:  # rebuild requests.seen in the dupefilter's own format
            self.df.request_seen(request)
        self._pending: set[str] = set(queued)
        self._statuses: dict[str, int] = {}
        self._awaiting: set[str] = set()
        if journal is not None and crawler is not None:
            crawler.signals.connect(self._left_downloader, signal=signals.request_left_downloader)
            crawler.signals.connect(self._response_downloaded, signal=signals.response_downloaded)
            crawler.signals.connect(self._response_received, signal=signals.response_received)
            crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "JournaledScheduler":
        settings = crawler.settings
        jobdir = job_dir(settings)
        journal, state_dir, recovery, queued = None, None, ([], []), set()
        if jobdir and settings.getbool("FOCUSCRAWL_FRONTIER_JOURNAL"):
            # before Scrapy's dupefilter reads requests.seen and its queue is opened
            state_dir = Path(jobdir) / "focuscrawl"
            journal, recovery, queued = _open_journal(crawler, Path(jobdir), state_dir)
        return cls(
            build_from_crawler(load_object(settings["DUPEFILTER_CLASS"]), crawler),
            jobdir,
            dqclass=load_object(settings["SCHEDULER_DISK_QUEUE"]),
            mqclass=load_object(settings["SCHEDULER_MEMORY_QUEUE"]),
            logunser=settings.getbool("SCHEDULER_DEBUG"),
            stats=crawler.stats,
            pqclass=load_object(settings["SCHEDULER_PRIORITY_QUEUE"]),
            crawler=crawler,
            journal=journal, state_dir=state_dir, recovery=recovery, queued=queued,
        )

    def _fp(self, request: Request) -> str:
        return self.crawler.request_fingerprinter.fingerprint(request).hex()

    def open(self, spider: Spider):
        result = super().open(spider)
        for encoded in self._recovery_encoded:
            try:
                request = request_from_dict(_decode(encoded), spider=spider)
            except Exception as exc:  # a callback renamed since the crawl started, ...
                self.crawler.stats.inc_value("focuscrawl/frontier/recovery_errors")
                logger.warning("frontier: cannot restore a journaled request: %s", exc)
                continue
            self.enqueue_request(request.replace(dont_filter=True))
        self._recovery_encoded = []
        return result

    def enqueue_request(self, request: Request) -> bool:
        if self.journal is None:
            return super().enqueue_request(request)
        parent = request.meta.get(PARENT_META)
        fp = self._fp(request)
        request.meta[PARENT_META] = fp  # before the queue serialises it
        accepted = super().enqueue_request(request)
        if accepted:
            data = base64.b64encode(pickle.dumps(request.to_dict(spider=self.crawler.spider),
                                                 protocol=4)).decode("ascii")
            self.journal.write_lines([f"+\t{fp}\t{data}"])
            self._pending.add(fp)
        if parent != fp and parent in self._awaiting:  # a redirect: its follow-up is journaled
            self._done(parent)
        return accepted

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
        else:  # a redirect, a retry or a failure may follow: see the module docstring
            self._awaiting.add(fp)

    def _response_received(self, response: Response, request: Request, spider: Spider | None = None) -> None:
        fp = self._fp(request)
        if fp in self._awaiting:
            self._done(fp)

    def _response_downloaded(self, response: Response, request: Request, spider: Spider | None = None) -> None:
        # Before "-" (see the module docstring). The response is still raw here: a body
        # whose type is only known after decoding (plain ``Response``) counts as a page.
        fp = self._fp(request)
        if fp not in self._pending:
            return
        self._statuses[fp] = response.status
        if 200 <= response.status < 300 and (isinstance(response, HtmlResponse) or type(response) is Response):
            self.journal.write_lines([f"p\t{fp}\t{response.url}"])

    def _spider_closed(self, spider: Spider, reason: str) -> None:
        # Scrapy has saved its queue (close() runs before spider_closed): a clean stop
        (self.state_dir / CLEAN_MARKER).write_text(reason + "\n")


class RerankingPriorityQueue(ScrapyPriorityQueue):
    """Scrapy's priority queue that re-ranks its top when the link learner's model changes.

    Mode ``learning`` sets a link's priority from the model of the moment. Re-scoring
    the whole frontier per page would cost O(frontier); instead, on the first ``pop``
    after a model update the best ``FOCUSCRAWL_LEARNING_RERANK_TOP`` requests are taken
    out, re-scored from the feature vector and host kept in their meta (the host term uses
    the hosts' harvest as of now) and pushed back: what the crawl fetches next is
    always ranked by a recent model. Requests keep the same meta, so the disk queues
    of a JOBDIR and the frontier journal are unaffected. Without a learner (other
    modes) it is Scrapy's queue. (Taking out and pushing back the top reads Scrapy's
    internals: ``focuscrawl.scrapy_compat.rerank_queue_top``.)

    ``__init__`` keeps the signature Scrapy's scheduler builds priority queues with
    (``crawler, downstream_queue_cls, key, startprios``); ``from_crawler`` reads the settings.
    """

    def __init__(self, crawler, downstream_queue_cls, key, startprios=(), *, start_queue_cls=None,
                 learner=None, top: int = 0):
        super().__init__(crawler, downstream_queue_cls, key, startprios, start_queue_cls=start_queue_cls)
        self.learner = learner
        self.top = top
        self.stats = crawler.stats
        self.ranked_version, self.ranked_trust = 0, 0.0

    @classmethod
    def from_crawler(cls, crawler, downstream_queue_cls, key, startprios=(), *, start_queue_cls=None):
        from focuscrawl.lm.link_learner import link_learner

        s = crawler.settings
        learner = link_learner(crawler) if s.get("FOCUSCRAWL_MODE") == "learning" else None
        return cls(crawler, downstream_queue_cls, key, startprios, start_queue_cls=start_queue_cls,
                   learner=learner, top=s.getint("FOCUSCRAWL_LEARNING_RERANK_TOP"))

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

    def _rescore(self, request) -> None:
        vector = request.meta.get("link_vector")
        if vector is not None:
            learned = self.learner.score(None, request.meta.get("link_score"), url_host(request.url), vector)
            request.meta["link_learned"] = learned
            request.priority = self.learner.priority(learned)
