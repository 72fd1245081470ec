"""Pins what each workaround in focuscrawl.scrapy_compat relies on in the installed Scrapy."""
from __future__ import annotations

import gzip
import logging
import sys
import textwrap

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.dupefilters import RFPDupeFilter
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from scrapy.http import Response
from scrapy.pipelines.files import FilesPipeline
from scrapy.pipelines.media import FileException, MediaPipeline
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from focuscrawl.middlewares.images import ImageExtractionMiddleware
from focuscrawl.scrapy_compat import (ExpectedMediaFailure, forget_media_result, is_decompression_too_big,
                                      is_over_download_maxsize, is_too_many_redirects, lowest_priority,
                                      read_seen_fingerprints, request_to_dict, rerank_queue_top, seen_record,
                                      spider_middleware_enabled)
from tests.support import warmfork


def test_read_seen_fingerprints_reads_what_rfpdupefilter_wrote(tmp_path):
    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path)})
    dupefilter = RFPDupeFilter.from_crawler(crawler)
    requests = [Request(f"http://127.0.0.1/{i}") for i in range(5)]
    for request in requests:
        assert not dupefilter.request_seen(request)
    dupefilter.close("finished")
    expected = {crawler.request_fingerprinter.fingerprint(r) for r in requests}
    assert read_seen_fingerprints(tmp_path / "requests.seen") == expected
    # a record torn by a kill is ignored, the whole ones are kept
    with open(tmp_path / "requests.seen", "ab") as fh:
        fh.write((20).to_bytes(2, "big") + b"torn")
    assert read_seen_fingerprints(tmp_path / "requests.seen") == expected
    assert read_seen_fingerprints(tmp_path / "absent") == set()


def test_request_to_dict_equals_scrapys_to_dict():
    from scrapy import FormRequest
    from scrapy.utils.request import request_from_dict

    from tests.support.crawler import CallbackSpider as S

    spider = S()
    requests = [Request("http://127.0.0.1/a", callback=spider.parse_page, errback=spider.failed,
                        meta={"m": 1}, priority=3, headers={"X": "1"}, cb_kwargs={"k": 2}),
                Request("http://127.0.0.1/b"),
                FormRequest("http://127.0.0.1/c", formdata={"q": "cat"}, callback=spider.parse_page)]
    for request in requests:
        assert request_to_dict(request, spider) == request.to_dict(spider=spider)
    class T(S):
        alias = S.parse_page  # one method, two names: to_dict says "alias", this "parse_page"

    other = T()
    aliased = Request("http://127.0.0.1/d", callback=other.alias)
    assert request_from_dict(request_to_dict(aliased, other), spider=other).callback == other.parse_page
    with pytest.raises(ValueError):  # not a method of the spider: to_dict's own error
        request_to_dict(Request("http://127.0.0.1/e", callback=lambda r: None), spider)


def test_rfpdupefilter_reads_a_requests_seen_written_with_seen_record(tmp_path):
    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path)})
    requests = [Request(f"http://127.0.0.1/{i}") for i in range(5)]
    (tmp_path / "requests.seen").write_bytes(
        b"".join(seen_record(crawler.request_fingerprinter.fingerprint(r)) for r in requests[:3]))
    dupefilter = RFPDupeFilter.from_crawler(crawler)
    assert [dupefilter.request_seen(r) for r in requests] == [True, True, True, False, False]
    dupefilter.close("finished")


@pytest.mark.parametrize("queue_class", ["scrapy.squeues.FifoMemoryQueue", "scrapy.squeues.PickleFifoDiskQueue"])
def test_rerank_queue_top_reorders_the_best_requests_of_scrapys_priority_queue(tmp_path, queue_class):
    from scrapy.pqueues import ScrapyPriorityQueue
    from scrapy.utils.misc import load_object

    crawler = get_crawler()
    queue = ScrapyPriorityQueue.from_crawler(crawler, load_object(queue_class), str(tmp_path / "q"),
                                             start_queue_cls=load_object(queue_class))
    for i in range(6):  # priorities 5, 5, 4, 4, 3, 3: "r0" is the best
        queue.push(Request(f"http://127.0.0.1/r{i}", priority=5 - i // 2))
    queue.push(Request("http://127.0.0.1/start", priority=4, meta={"is_start_request": True}))
    seen = []

    def rescore(requests):  # the best three sink below everything, in reverse order
        for request in requests:
            seen.append(request.url.rsplit("/", 1)[1])
            request.priority = -len(seen)

    assert rerank_queue_top(queue, 3, rescore) == 3
    assert seen == ["r0", "r1", "r2"]  # best first, FIFO within a priority; the start request stays
    assert len(queue) == 7
    assert all(len(q) for q in queue.queues.values())  # the emptied priority queue was closed and dropped
    order = []
    while (request := queue.pop()) is not None:
        order.append(request.url.rsplit("/", 1)[1])
    assert order == ["r3", "start", "r4", "r5", "r0", "r1", "r2"]  # Scrapy: other requests before start ones
    assert queue.curprio is None and len(queue) == 0
    assert rerank_queue_top(queue, 3, rescore) == 0  # an empty queue stays empty


@pytest.mark.parametrize("queue_class", ["scrapy.squeues.FifoMemoryQueue", "scrapy.squeues.PickleFifoDiskQueue"])
def test_lowest_priority_pops_in_scrapys_order(tmp_path, queue_class):
    """A queue whose ``_update_curprio`` is ``lowest_priority`` pops what Scrapy's pops, with
    the same ``curprio`` after each pop: many priorities, start requests, pushes while popping."""
    from scrapy.pqueues import ScrapyPriorityQueue
    from scrapy.utils.misc import load_object

    class Fast(ScrapyPriorityQueue):
        def _update_curprio(self):
            lowest_priority(self, super()._update_curprio)

    crawler = get_crawler()
    runs = []
    for cls in (ScrapyPriorityQueue, Fast):
        queue = cls.from_crawler(crawler, load_object(queue_class), str(tmp_path / cls.__name__),
                                 start_queue_cls=load_object(queue_class))
        for i in range(40):
            queue.push(Request(f"http://127.0.0.1/r{i}", priority=(i * 7) % 13,
                               meta={"is_start_request": i % 10 == 0}))
        run, n = [], 40
        while (request := queue.pop()) is not None:
            run.append((request.url.rsplit("/", 1)[1], queue.curprio))
            if n < 60 and len(run) % 3 == 0:  # a page's new links
                queue.push(Request(f"http://127.0.0.1/r{n}", priority=(n * 5) % 17))
                n += 1
        assert len(run) == n > 50  # every request popped once
        runs.append(run)
    assert runs[0] == runs[1]


def test_expected_media_failure_is_not_logged_as_an_error(caplog):
    """MediaPipeline logs a failed result with a traceback at ERROR, an expected one not."""
    assert issubclass(ExpectedMediaFailure, FileException)
    pipeline = FilesPipeline("/nonexistent-store", crawler=get_crawler())
    info = FilesPipeline.SpiderInfo(spider=None)
    with caplog.at_level(logging.DEBUG):
        MediaPipeline.item_completed(pipeline, [(False, Failure(ExpectedMediaFailure("filtered")))], {}, info)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    with caplog.at_level(logging.DEBUG):  # an ordinary FileException is: the contrast is real
        MediaPipeline.item_completed(pipeline, [(False, Failure(FileException("broken")))], {}, info)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_forget_media_result_empties_the_pipelines_cache():
    crawler = get_crawler()
    pipeline = FilesPipeline("/nonexistent-store", crawler=crawler)
    info = FilesPipeline.SpiderInfo(spider=None)
    request = Request("http://127.0.0.1/a.jpg")
    info.downloaded[crawler.request_fingerprinter.fingerprint(request)] = {"path": "x"}
    forget_media_result(pipeline, info, Request("http://127.0.0.1/a.jpg"))
    assert info.downloaded == {}


def test_redirect_limit_is_recognised_from_scrapys_redirect_middleware():
    crawler = get_crawler(settings_dict={"REDIRECT_MAX_TIMES": 0})
    middleware = RedirectMiddleware.from_crawler(crawler)
    request = Request("http://127.0.0.1/loop")
    response = Response("http://127.0.0.1/loop", status=302, headers={"Location": "/loop"}, request=request)
    with pytest.raises(IgnoreRequest) as caught:
        middleware.process_response(request, response)
    assert is_too_many_redirects(caught.value)
    assert not is_decompression_too_big(caught.value)


def test_decompression_bomb_is_recognised_from_scrapys_compression_middleware():
    middleware = HttpCompressionMiddleware.from_crawler(get_crawler(settings_dict={"DOWNLOAD_MAXSIZE": 1000}))
    request = Request("http://127.0.0.1/bomb")
    response = Response("http://127.0.0.1/bomb", body=gzip.compress(b"\0" * 100_000),
                        headers={"Content-Encoding": "gzip"}, request=request)
    with pytest.raises(IgnoreRequest) as caught:
        middleware.process_response(request, response)
    assert is_decompression_too_big(caught.value)
    assert not is_too_many_redirects(caught.value)


def test_download_maxsize_cancel_is_recognised():
    from scrapy.utils._download_handlers import get_maxsize_msg  # the handlers' own message text
    request = Request("http://127.0.0.1/big.jpg")
    for expected in (True, False):
        assert is_over_download_maxsize(DownloadCancelledError(get_maxsize_msg(2000, 1000, request,
                                                                               expected=expected)))
    assert not is_over_download_maxsize(DownloadCancelledError("connection lost"))
    assert not is_over_download_maxsize(IgnoreRequest("larger than download max size"))


WAKE_SCRIPT = textwrap.dedent("""
    from scrapy import Spider, signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.exceptions import DontCloseSpider
    from focuscrawl.scrapy_compat import wake_engine

    class Idle(Spider):
        name = "idle"
        idles = 0

        async def start(self):
            return
            yield

        @classmethod
        def from_crawler(cls, crawler, *args, **kwargs):
            spider = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(spider.on_idle, signal=signals.spider_idle)
            return spider

        def on_idle(self):
            Idle.idles += 1
            if Idle.idles == 1:
                from twisted.internet import reactor  # the one CrawlerProcess installed
                # no heartbeat: only the wake can bring the second idle check
                self.crawler.engine._slot.heartbeat.stop()
                reactor.callLater(0.1, lambda: print("woke", wake_engine(self.crawler.engine)))
                # a safety net: without the wake the crawl would never end
                reactor.callLater(30, lambda: (print("never woken"), reactor.stop()))
                raise DontCloseSpider

    process = CrawlerProcess({"LOG_ENABLED": False, "TELNETCONSOLE_ENABLED": False})
    process.crawl(Idle)
    process.start(stop_after_crawl=True)
    print("idle checks", Idle.idles)
""")


def test_wake_engine_reruns_the_idle_check_before_the_heartbeat(tmp_path):
    """With the engine's heartbeat stopped, the second idle check (after which the spider
    closes) comes from the wake alone."""
    done = warmfork.run([sys.executable, "-c", WAKE_SCRIPT], capture_output=True, text=True, timeout=60,
                        cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "woke True" in done.stdout and "never woken" not in done.stdout, done.stdout
    assert "idle checks 2" in done.stdout, done.stdout


def test_stats_collector_without_the_per_call_wrapper_keeps_every_stat():
    """Scrapy's collector wraps each method in a deprecation check (what the workaround
    removes); ours keeps the same values and API, and is the crawl's STATS_CLASS."""
    from scrapy.statscollectors import MemoryStatsCollector as ScrapyCollector

    from focuscrawl.resources import project_settings
    from focuscrawl.scrapy_compat import MemoryStatsCollector

    scrapy_stats, ours = ScrapyCollector(get_crawler()), MemoryStatsCollector(get_crawler())
    assert scrapy_stats.inc_value is not scrapy_stats.inc_value.__wrapped__  # the wrapper exists in Scrapy
    assert not hasattr(ours.inc_value, "__wrapped__")
    for stats in (scrapy_stats, ours):
        stats.open_spider()
        stats.inc_value("a")
        stats.inc_value("a", 2)
        stats.max_value("m", 3)
        stats.max_value("m", 1)
        stats.min_value("n", 3)
        stats.min_value("n", 1)
        stats.set_value("s", "x")
    assert ours.get_stats() == scrapy_stats.get_stats() == {"a": 3, "m": 3, "n": 1, "s": "x"}
    assert project_settings().get("STATS_CLASS") == "focuscrawl.scrapy_compat.MemoryStatsCollector"


@pytest.mark.parametrize("downloader, bounded", [("focuscrawl.scrapy_compat.SlotBoundDownloader", True),
                                                 ("scrapy.core.downloader.Downloader", False)])
def test_downloader_keeps_a_host_to_its_concurrency(tmp_path, downloader, bounded):
    """A page's six images go to the downloader together (the media pipeline bypasses the
    engine's limits). Scrapy's downloader starts every request queued in the host's slot
    at once (the bug the workaround fixes: more than CONCURRENT_REQUESTS_PER_DOMAIN in
    flight, each beyond it on a new connection); ours keeps to the limit. Slow images make
    the overlap visible at the server."""
    from tests.support.crawl import crawl
    from tests.support.imagesite import image_bytes
    from tests.support.localweb import LocalWeb, Page
    from tests.support.toymodel import ON_TOPIC

    from focuscrawl.resources import project_settings

    images = "".join(f'<img src="/img/{i}.jpg" alt="a cat" width="600" height="400">' for i in range(6))
    pages = {("cats.test", "/"): Page(f"<html><body><p>{ON_TOPIC}</p>{images}</body></html>")}
    pages.update({("cats.test", f"/img/{i}.jpg"): Page(image_bytes("JPEG"), "image/jpeg", delay=0.3)
                  for i in range(6)})
    with LocalWeb(pages) as web:
        stats, proc = crawl(web, tmp_path, "http://cats.test/", settings={
            "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 2, "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 5_000_000,
            "DOWNLOADER": downloader})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p for p in web.pages_requested() if "/img/" in p) == [f"cats.test/img/{i}.jpg" for i in range(6)]
    assert (web.max_in_flight <= 2) is bounded, web.max_in_flight
    assert project_settings().get("DOWNLOADER") == "focuscrawl.scrapy_compat.SlotBoundDownloader"


def test_a_spider_middleware_is_enabled_by_its_class_a_subclass_or_its_path():
    from scrapy.settings import Settings

    from tests.support.crawler import focused_crawler

    from focuscrawl import settings as project_settings
    from focuscrawl.middlewares.priority import LinkPriorityMiddleware

    image_middleware = "focuscrawl.middlewares.images.ImageExtractionMiddleware"
    settings = Settings()
    settings.setmodule(project_settings)
    assert spider_middleware_enabled(settings, LinkPriorityMiddleware)
    assert spider_middleware_enabled(settings, image_middleware)
    ours = settings.getdict("SPIDER_MIDDLEWARES")
    assert focused_crawler(SPIDER_MIDDLEWARES=ours).spider.focus.analysis.images  # the spider's analysis computes them
    off = {**ours, image_middleware: None}
    settings.set("SPIDER_MIDDLEWARES", off)  # switched off: no image analysis
    assert not spider_middleware_enabled(settings, ImageExtractionMiddleware)
    assert not focused_crawler(SPIDER_MIDDLEWARES=off).spider.focus.analysis.images
    own = {**off, f"{__name__}.OwnImageMiddleware": 650}
    assert focused_crawler(SPIDER_MIDDLEWARES=own).spider.focus.analysis.images  # a subclass still needs it
    neardup_off = {**ours, "focuscrawl.middlewares.neardup.NearDuplicatePageMiddleware": None}
    assert focused_crawler(SPIDER_MIDDLEWARES=ours).spider.focus.analysis.ngrams  # the near-duplicates' SimHash
    assert not focused_crawler(SPIDER_MIDDLEWARES=neardup_off).spider.focus.analysis.ngrams


class OwnImageMiddleware(ImageExtractionMiddleware):
    """A project's own image middleware: a subclass of focuscrawl's."""


def test_the_engine_internals_of_the_lean_replay_exist_with_their_signatures():
    """download_past_scheduler and release_from_engine call these by name (their behaviour is
    tested by the lean replay's crawls)."""
    import inspect

    from scrapy.core.engine import ExecutionEngine, _Slot

    assert list(inspect.signature(ExecutionEngine._download).parameters)[:2] == ["self", "request"]
    assert list(inspect.signature(_Slot.remove_request).parameters) == ["self", "request"]


def test_the_scraper_internals_of_close_scraper_once_idle_exist():
    """close_scraper_once_idle calls these by name (its behaviour is tested by the resumes of
    tests/test_write_failures.py that reach a limit while recovered images download)."""
    import inspect

    from scrapy.core.scraper import Scraper, Slot

    assert list(inspect.signature(Scraper._check_if_closing).parameters) == ["self"]
    assert list(inspect.signature(Slot.is_idle).parameters) == ["self"]
    assert "closing" in inspect.getsource(Slot.__init__)


def test_a_held_slot_delay_survives_scrapys_slot_collection_and_autothrottle():
    """hold_slot_delay writes Scrapy's DOWNLOAD_SLOTS entry of the slot, from which Scrapy makes
    the slot again after collecting it idle; AutoThrottle keeps it as the slot's floor (its
    crawl behaviour: tests/test_crawl_delay.py)."""
    import inspect

    from scrapy.core.downloader import Downloader
    from scrapy.extensions.throttle import AutoThrottle as ScrapyAutoThrottle

    from focuscrawl.scrapy_compat import hold_slot_delay, slot_delay_floor

    downloader = Downloader(get_crawler(settings_dict={"DOWNLOAD_DELAY": 0.25, "DOWNLOAD_DELAY_JITTER": 0.5}))
    downloader._start_slot_gc = lambda: None  # its looping call wants a running event loop
    request = Request("http://slow.test/a")
    key, slot = downloader._get_slot(request)
    assert (key, slot.delay, slot.jitter) == ("slow.test", 0.25, 0.5)
    hold_slot_delay(downloader, key, 2.0)
    assert (slot.delay, slot.jitter, slot_delay_floor(downloader, key)) == (2.0, 0.0, 2.0)
    assert min(slot.download_delay() for _ in range(50)) == 2.0
    del downloader.slots[key]  # what Scrapy's idle-slot collection does
    _, again = downloader._get_slot(request)
    assert (again.delay, again.jitter) == (2.0, 0.0)
    assert slot_delay_floor(downloader, "other.test") == 0.0
    assert list(inspect.signature(ScrapyAutoThrottle._response_downloaded).parameters) == [
        "self", "response", "request", "spider"]
    assert list(inspect.signature(ScrapyAutoThrottle._get_slot).parameters) == ["self", "request", "spider"]
