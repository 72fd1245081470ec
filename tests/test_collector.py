"""CollectorTuning: the heap alive at spider_opened is out of the cyclic collector's reach and
the young generation's threshold is the crawl's, both put back at spider_closed."""
import gc

import pytest
from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured

from focuscrawl.extensions.collector import CollectorTuning
from focuscrawl.resources import project_settings
from tests.support.crawler import focuscrawl_crawler


def collected(obj) -> bool:
    """Whether the collector's generations hold ``obj`` (frozen objects are in none)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture
def process_gc():
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.unfreeze()
    yield
    gc.set_threshold(*threshold)
    if frozen:
        gc.freeze()


def test_enabled_for_every_crawl_of_the_project():
    assert "focuscrawl.extensions.collector.CollectorTuning" in project_settings().getdict("EXTENSIONS")


def test_freezes_at_open_and_puts_the_collector_back_at_close(process_gc):
    crawler = focuscrawl_crawler(FOCUSCRAWL_GC_THRESHOLD=12345)
    ext = CollectorTuning.from_crawler(crawler)  # noqa: F841 (the signals hold weak references)
    before = gc.get_threshold()
    loaded = [object()]  # a container alive when the crawl opens (like a module's, a model's)
    spider = Spider("s")
    crawler.signals.send_catch_log(signals.spider_opened, spider=spider)
    made = [object()]  # made during the crawl: collected as usual
    assert not collected(loaded) and collected(made)
    assert gc.get_freeze_count() > 0 and gc.get_threshold() == (12345, *before[1:])
    crawler.signals.send_catch_log(signals.spider_closed, spider=spider, reason="finished")
    assert collected(loaded) and gc.get_freeze_count() == 0 and gc.get_threshold() == before


def test_threshold_zero_keeps_pythons(process_gc):
    crawler = focuscrawl_crawler(FOCUSCRAWL_GC_THRESHOLD=0)
    ext = CollectorTuning.from_crawler(crawler)  # noqa: F841 (the signals hold weak references)
    before = gc.get_threshold()
    crawler.signals.send_catch_log(signals.spider_opened, spider=Spider("s"))
    assert gc.get_threshold() == before and gc.get_freeze_count() > 0


def test_off():
    with pytest.raises(NotConfigured):
        CollectorTuning.from_crawler(focuscrawl_crawler(FOCUSCRAWL_GC_FREEZE=False, FOCUSCRAWL_GC_THRESHOLD=0))
