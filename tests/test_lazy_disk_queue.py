"""LazyFifoDiskQueue: a priority's disk queue is made only when it holds enough requests
or at a clean stop, FIFO order kept across the move, what a stop wrote read back."""
import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from focuscrawl.frontier import LazyFifoDiskQueue, PickleLazyFifoDiskQueue


def test_a_short_queue_stays_in_memory_and_a_long_one_moves_to_disk_in_order(tmp_path):
    path = tmp_path / "q" / "5"
    q = LazyFifoDiskQueue(path)
    n = LazyFifoDiskQueue.MEMORY_ITEMS
    for i in range(n):
        q.push(b"%d" % i)
    assert not path.exists() and len(q) == n  # nothing made on disk
    assert q.peek() == b"0" and q.pop() == b"0"
    for i in range(n, 3 * n):
        q.push(b"%d" % i)
    assert path.is_dir() and len(q) == 3 * n - 1  # moved to disk, memory items first
    assert [q.pop() for _ in range(3 * n - 1)] == [b"%d" % i for i in range(1, 3 * n)]
    assert q.pop() is None and q.peek() is None
    q.close()
    assert not path.exists()  # an empty queue leaves nothing, as Scrapy's


def test_an_empty_queue_that_never_reached_disk_leaves_nothing(tmp_path):
    path = tmp_path / "q" / "7"
    q = LazyFifoDiskQueue(path)
    q.push(b"a")
    assert q.pop() == b"a"
    q.close()
    assert not path.exists() and not (tmp_path / "q").exists()


@pytest.mark.parametrize("pushed", [3, 20])
def test_a_clean_stop_writes_the_queue_and_a_resume_reads_it_in_order(tmp_path, pushed):
    path = tmp_path / "q" / "1"
    q = LazyFifoDiskQueue(path)
    for i in range(pushed):
        q.push(b"r%d" % i)
    q.pop()
    q.close()
    assert path.is_dir()
    again = LazyFifoDiskQueue(path)
    assert len(again) == pushed - 1
    again.push(b"new")
    assert [again.pop() for _ in range(pushed)] == [b"r%d" % i for i in range(1, pushed)] + [b"new"]


def test_requests_are_serialised_at_push_and_come_back_equal(tmp_path):
    """As Scrapy's PickleFifoDiskQueue: a request that cannot be pickled is refused at push
    (the scheduler keeps it in memory), the others come back with their meta."""
    crawler = get_crawler(Spider)
    crawler.spider = Spider("s")
    q = PickleLazyFifoDiskQueue.from_crawler(crawler, str(tmp_path / "q" / "3"))
    q.push(Request("http://s.test/a", priority=3, meta={"depth": 2}))
    with pytest.raises(ValueError):
        q.push(Request("http://s.test/b", meta={"bad": lambda: None}))
    back = q.pop()
    assert (back.url, back.priority, back.meta["depth"]) == ("http://s.test/a", 3, 2)
    assert len(q) == 0


def test_a_request_is_written_as_scrapys_to_dict_writes_it_without_searching_the_spider(tmp_path, monkeypatch):
    """The dict pickled for a request with the spider's callback and errback is
    ``Request.to_dict(spider=...)``'s, and the callbacks come back bound to the spider;
    Scrapy's search of the spider's members (``_find_method``) is not run."""
    import pickle

    import scrapy.http.request as scrapy_request

    from tests.support.crawler import CallbackSpider

    crawler = get_crawler(CallbackSpider)
    crawler.spider = spider = CallbackSpider()
    request = Request("http://s.test/a", callback=spider.parse_page, errback=spider.failed, priority=2,
                      meta={"depth": 2})
    expected = request.to_dict(spider=spider)
    written = []
    q = PickleLazyFifoDiskQueue.from_crawler(crawler, str(tmp_path / "q" / "2"))
    monkeypatch.setattr(LazyFifoDiskQueue, "push", lambda self, data: written.append(data))
    monkeypatch.setattr(scrapy_request, "_find_method", lambda *a: pytest.fail("the spider was searched"))
    q.push(request)
    assert written and pickle.loads(written[0]) == expected
    monkeypatch.undo()
    q = PickleLazyFifoDiskQueue.from_crawler(crawler, str(tmp_path / "q" / "2"))
    q.push(request)
    back = q.pop()
    assert (back.callback, back.errback, back.meta) == (spider.parse_page, spider.failed, {"depth": 2})


def test_link_facts_queued_in_separate_meta_keys_come_back_in_one_link_facts(tmp_path):
    """A request a JOBDIR queued with its link facts in separate meta keys comes back with them
    in its ``LinkFacts`` (the re-ranking queue and the learner read nothing else); a seed's are
    dropped, other keys stay."""
    from focuscrawl.focus.ranker import LINK_META, LinkFacts

    crawler = get_crawler(Spider)
    crawler.spider = Spider("s")
    q = PickleLazyFifoDiskQueue.from_crawler(crawler, str(tmp_path / "q" / "4"))
    vector = ([3, 9], [0.5, 0.5])
    q.push(Request("http://s.test/a", meta={"anchor": "cats", "link_score": 40.0, "link_bucket": "b1",
                                            "link_vector": vector, "link_learned": 0.7, "parent_topicality": 0.2,
                                            "link_origin": ("http://s.test/", 2), "link_demoted": True,
                                            "depth": 2}))
    q.push(Request("http://s.test/", meta={"seed": True, "link_bucket": "seed"}))
    assert q.pop().meta == {"depth": 2, LINK_META: LinkFacts("cats", 40.0, "b1", vector=vector, learned=0.7,
                                                             parent_topicality=0.2, origin=("http://s.test/", 2),
                                                             demoted=True)}
    assert q.pop().meta == {"seed": True}


def test_the_crawl_queues_on_it_with_jobdir():
    from scrapy.utils.misc import load_object

    from focuscrawl.resources import project_settings

    assert load_object(project_settings()["SCHEDULER_DISK_QUEUE"]) is PickleLazyFifoDiskQueue
