"""One owner of the run state (issue #29): the ``RunState`` extension, reached through the crawler."""
import pytest
from scrapy import signals
from scrapy.exceptions import NotConfigured

from focuscrawl.output.run_state import RunState
from focuscrawl.output.run import RunOutput
from focuscrawl.pipelines.image_records import ImageRecordsPipeline
from focuscrawl.pipelines.writers import PageLogWriterPipeline
from tests.support.crawler import focuscrawl_crawler


def test_the_writers_share_the_run_directory_and_image_store_of_the_crawlers_run_state(tmp_path):
    # a spider or project that replaces EXTENSIONS keeps it: its add-on enables it
    crawler = focuscrawl_crawler(FOCUSCRAWL_OUTPUT_DIR=str(tmp_path / "run"), EXTENSIONS={})
    state = crawler.get_extension(RunState)
    assert state.output.dir == (tmp_path / "run").resolve() and state.images.run is state.output
    assert state.leases is None  # no FOCUSCRAWL_REDIS_URL
    pages = PageLogWriterPipeline.from_crawler(crawler)
    records = ImageRecordsPipeline.from_crawler(crawler)
    assert pages.run is state.output
    assert records.store is state.images


def test_without_a_run_directory_the_writers_are_off(tmp_path):
    crawler = focuscrawl_crawler()
    state = crawler.get_extension(RunState)
    assert (state.output, state.images, state.leases) == (None, None, None)
    for pipeline in (PageLogWriterPipeline, ImageRecordsPipeline):
        with pytest.raises(NotConfigured):
            pipeline.from_crawler(crawler)


def test_committed_rows_are_those_before_the_last_checkpoint(tmp_path):
    """The one reader of "the pages committed so far": with JOBDIR, rows written after the last
    checkpoint are not committed yet (a kill cuts them back); a resumed run reads what it kept."""
    out, jobdir = tmp_path / "run", tmp_path / "job"
    run = RunOutput(out, jobdir, checkpoint_interval=3600)
    log = run.line_log("pages.tsv", "url\tdepth")
    log.write_lines(["http://a/\t0"])
    run.commit()
    log.write_lines(["http://b/\t1"])
    run.commit()  # within the interval: no checkpoint
    assert run.committed_page_urls() == {"http://a/"}
    log.write_lines(["http://c/\t1"])  # then a kill: no close
    resumed = RunOutput(out, jobdir)
    assert resumed.resumed and [r["url"] for r in resumed.committed_rows("pages.tsv")] == ["http://a/"]
    resumed.line_log("pages.tsv").write_lines(["http://d/\t1"])
    resumed.close()  # a clean close checkpoints every row
    assert resumed.committed_page_urls() == {"http://a/", "http://d/"}


def test_without_jobdir_every_whole_row_is_committed(tmp_path):
    run = RunOutput(tmp_path / "run")
    log = run.line_log("pages.tsv", "url\tdepth")
    log.write_lines(["http://a/\t0"])
    log.write_bytes(b"http://torn")
    assert run.committed_page_urls() == {"http://a/"}


def test_a_registered_state_is_restored_once_and_checkpointed_after_the_logs(tmp_path):
    """``Checkpointed``: ``restore()`` when registered; ``checkpoint()`` after each checkpoint of
    the logs' offsets (so what it writes never runs ahead of the logs it describes)."""
    run = RunOutput(tmp_path / "run", tmp_path / "job")
    log = run.line_log("pages.tsv", "url")
    calls = []

    class State:
        def restore(self):
            calls.append("restore")

        def checkpoint(self):
            calls.append(("checkpoint", [r["url"] for r in run.committed_rows("pages.tsv")]))

    run.register(State())
    log.write_lines(["http://a/"])
    run.commit()
    run.close()
    assert calls == ["restore", ("checkpoint", ["http://a/"]), ("checkpoint", ["http://a/"])]


class Recorded:
    """A ``Checkpointed`` state that records what ``RunState`` asks of it."""

    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def restore(self):
        self.calls.append(("restore", self.name))

    def checkpoint(self):
        self.calls.append(("checkpoint", self.name))

    def close(self):
        self.calls.append(("close", self.name))


def test_a_state_registered_without_a_run_directory_is_restored_checkpointed_and_closed(tmp_path):
    """JOBDIR-only states (frontier journal, near-duplicate fingerprints, link learner) run
    without FOCUSCRAWL_OUTPUT_DIR too: RunState restores them when registered and, at
    spider_closed, checkpoints then closes them, in the order they registered."""
    crawler = focuscrawl_crawler(JOBDIR=str(tmp_path / "job"))
    state = crawler.get_extension(RunState)
    assert state.output is None
    calls = []
    state.register(Recorded("a", calls))
    state.register(Recorded("b", calls))
    assert calls == [("restore", "a"), ("restore", "b")]
    crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")
    assert calls[2:] == [("checkpoint", "a"), ("checkpoint", "b"), ("close", "a"), ("close", "b")]


def test_with_a_run_directory_registered_states_are_closed_after_the_last_checkpoint(tmp_path):
    crawler = focuscrawl_crawler(JOBDIR=str(tmp_path / "job"), FOCUSCRAWL_OUTPUT_DIR=str(tmp_path / "run"))
    state = crawler.get_extension(RunState)
    calls = []
    state.register(Recorded("a", calls))
    state.output.line_log("pages.tsv", "url").write_lines(["http://a/"])
    crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")
    assert calls == [("restore", "a"), ("checkpoint", "a"), ("close", "a")]
    assert state.output.committed_page_urls() == {"http://a/"}


def test_the_jobdir_states_are_restored_and_closed_through_run_state_without_a_run_directory(tmp_path):
    """The near-duplicate fingerprints without FOCUSCRAWL_OUTPUT_DIR: written in one crawl,
    closed by RunState at spider_closed, read back by the next one's registration."""
    from scrapy import Spider
    from focuscrawl.middlewares.neardup import NearDuplicatePageMiddleware

    def session():
        crawler = focuscrawl_crawler(Spider, JOBDIR=str(tmp_path / "job"))
        return crawler, NearDuplicatePageMiddleware.from_crawler(crawler)

    crawler, mw = session()
    assert crawler.get_extension(RunState).output is None
    mw.check_page("http://a.test/", 0x0123456789ABCDEF)
    crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")
    assert mw.log.fd == -1  # closed by RunState
    crawler2, mw2 = session()
    assert mw2.urls == ["http://a.test/"]
    assert mw2.check_page("http://b.test/", 0x0123456789ABCDEF) == "http://a.test/"
