"""One owner of the run state (issue #29): the ``RunState`` extension, reached through the crawler."""
import pytest
from scrapy.exceptions import NotConfigured

from focuscrawl.output.run_state import RunState
from focuscrawl.output.run import RunOutput
from focuscrawl.pipelines.image_merge import ImageMergePipeline
from focuscrawl.pipelines.writers import ImageLogWriterPipeline, PageLogWriterPipeline
from tests.support.crawler import focuscrawl_crawler


def test_the_writers_share_the_run_directory_and_image_store_of_the_crawlers_run_state(tmp_path):
    # a spider or project that replaces EXTENSIONS keeps it: its add-on enables it
    crawler = focuscrawl_crawler(FOCUSCRAWL_OUTPUT_DIR=str(tmp_path / "run"), EXTENSIONS={})
    state = crawler.get_extension(RunState)
    assert state.output.dir == (tmp_path / "run").resolve() and state.images.run is state.output
    assert state.leases is None  # no FOCUSCRAWL_REDIS_URL
    pages = PageLogWriterPipeline.from_crawler(crawler)
    merge, images = ImageMergePipeline.from_crawler(crawler), ImageLogWriterPipeline.from_crawler(crawler)
    assert pages.run is state.output
    assert merge.store is state.images and images.store is state.images


def test_without_a_run_directory_the_writers_are_off(tmp_path):
    crawler = focuscrawl_crawler()
    state = crawler.get_extension(RunState)
    assert (state.output, state.images, state.leases) == (None, None, None)
    for pipeline in (PageLogWriterPipeline, ImageMergePipeline, ImageLogWriterPipeline):
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
