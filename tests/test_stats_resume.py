"""Counters across sessions ended by SIGKILL (real crawls, real redis-server, real signals)."""
from __future__ import annotations

import json
import signal

import pytest

from tests.support.crawl import ROOT
from tests.support.localweb import LocalWeb
from tests.test_redis_frontier import focused_cmd, kill_after, kill_site, page_urls, redis_settings, single_run
from tests.support import warmfork

#: counters a page adds once when its row is kept (the learner's judgement, pages written)
PAGE_COUNTERS = ("focuscrawl/learning/judged_on_topic", "focuscrawl/learning/judged_off_topic")


#: counters of rows kept: a page's, an image's
ROW_COUNTERS = PAGE_COUNTERS + ("focuscrawl/pages/written", "focuscrawl/sentences/written",
                                "focuscrawl/images/written", "focuscrawl/images/unique",
                                "focuscrawl/images/downloaded")


def session_totals(run, keys=PAGE_COUNTERS) -> dict[str, int]:
    sessions = [json.loads(line) for line in (run / "stats.sessions.jsonl").read_text().splitlines()] \
        if (run / "stats.sessions.jsonl").exists() else []
    sessions.append(json.loads((run / "stats.json").read_text()))
    return {key: sum(s.get(key, 0) for s in sessions) for key in keys}


@pytest.mark.slow(13)
def test_counters_summed_over_sigkilled_sessions_match_an_uninterrupted_crawl(tmp_path, redis_server):
    """A Redis worker SIGKILLed twice at its 6th page and restarted on its
    JOBDIR: its killed sessions wrote no stats.json, so their counts were lost; now their
    checkpointed stats are in stats.sessions.jsonl and the sums are an uninterrupted crawl's."""
    out, job = tmp_path / "out", f"JOBDIR={tmp_path / 'job'}"
    # every page committed at once: each killed session has checkpointed (a session killed
    # before its first checkpoint kept nothing, and its stats say nothing)
    settings = redis_settings(redis_server, crawl="stats", delay=0.01) + ["FOCUSCRAWL_SENTENCES_BATCH_BYTES=1"]
    with LocalWeb(kill_site()) as web:
        single_run(web.base, tmp_path / "single", "CONCURRENT_REQUESTS=2")
        for kill in (6, 6):
            killed = warmfork.run(focused_cmd(web.base, out, "CONCURRENT_REQUESTS=2", *settings, job,
                                              *kill_after(kill)), cwd=ROOT, capture_output=True, text=True,
                                  timeout=120)
            assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
        last = warmfork.run(focused_cmd(web.base, out, "CONCURRENT_REQUESTS=2", *settings, job), cwd=ROOT,
                            capture_output=True, text=True, timeout=180)
        assert last.returncode == 0, last.stderr[-3000:]
    assert sorted(page_urls(out)) == sorted(page_urls(tmp_path / "single"))
    expected = session_totals(tmp_path / "single")
    assert sum(expected.values()) == len(page_urls(out)) == 36
    sessions = [json.loads(line) for line in (out / "stats.sessions.jsonl").read_text().splitlines()]
    assert [s.get("finish_reason") for s in sessions] == ["killed", "killed"]
    totals = session_totals(out)
    # every page's judgement counted (the killed sessions' no longer lost), once
    assert all(totals[key] >= expected[key] for key in PAGE_COUNTERS), (totals, expected)
    assert sum(totals.values()) == sum(expected.values()), (totals, expected)
    assert not (out / "stats.checkpoint.json").exists()


@pytest.mark.slow(13)
def test_counters_are_exact_across_sigkills_with_page_batches(tmp_path):
    """A crawl with JOBDIR and 64 KiB page batches (each written after 0.3 s), SIGKILLed three
    times with pages in its unwritten batch, and resumed to the end: the page and image
    counters summed over its sessions are an uninterrupted crawl's, and count the rows of
    pages.tsv, sentences.txt.gz and images.tsv (the checkpointed stats leave out what the
    resume redoes: the unwritten batch's pages, the images not yet written)."""
    from focuscrawl.output.files import iter_tsv
    from focuscrawl.output.run import RunOutput

    out, job = tmp_path / "out", f"JOBDIR={tmp_path / 'job'}"
    settings = ["CONCURRENT_REQUESTS=2", "FOCUSCRAWL_SENTENCES_BATCH_SECONDS=0.3"]
    with LocalWeb(kill_site()) as web:
        single_run(web.base, tmp_path / "single", *settings)
        for kill in (6, 9, 9):
            killed = warmfork.run(focused_cmd(web.base, out, *settings, job, *kill_after(kill)), cwd=ROOT,
                                  capture_output=True, text=True, timeout=120)
            assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
        last = warmfork.run(focused_cmd(web.base, out, *settings, job), cwd=ROOT, capture_output=True,
                            text=True, timeout=180)
        assert last.returncode == 0, last.stderr[-3000:]
    sessions = [json.loads(line) for line in (out / "stats.sessions.jsonl").read_text().splitlines()]
    assert [s.get("finish_reason") for s in sessions] == ["killed"] * 3
    # the kills came with pages in the unwritten batch (what the checkpoints used to count)
    assert sum(s.get("focuscrawl/pages/written", 0) for s in sessions) < 3 * 6
    expected, totals = session_totals(tmp_path / "single", ROW_COUNTERS), session_totals(out, ROW_COUNTERS)
    # the judge's calls, on and off topic: a page fetched again after a kill meets only the
    # near-duplicate fingerprints of pages written before it, as in the uninterrupted crawl
    assert totals == expected
    assert sorted(page_urls(out)) == sorted(page_urls(tmp_path / "single"))
    assert near_duplicates(out) == near_duplicates(tmp_path / "single")
    rows = list(iter_tsv(out / "pages.tsv"))
    assert totals["focuscrawl/pages/written"] == len(rows) == 36
    assert totals["focuscrawl/sentences/written"] == sum(int(r["sentences"]) for r in rows)
    assert sum(totals[key] for key in PAGE_COUNTERS) == 36
    images = [r["image_url"] for r in iter_tsv(out / "images.tsv")]
    assert totals["focuscrawl/images/written"] == totals["focuscrawl/images/unique"] == len(set(images)) \
        == len(images) == 12


def near_duplicates(run) -> dict[str, str]:
    """url -> near_duplicate_of of a run's pages.tsv."""
    from focuscrawl.output.files import iter_tsv

    return {r["url"]: r["near_duplicate_of"] for r in iter_tsv(run / "pages.tsv")}


def checkpointed_stats(tmp_path, jobdir) -> list[int]:
    """The value of a counter in ``stats.checkpoint.json`` after each of 5 commits of a run
    directory (the counter is bumped before each), with a 60 s checkpoint interval."""
    from types import SimpleNamespace

    from focuscrawl.output.run import RunOutput
    from focuscrawl.output.stats import CHECKPOINT_FILE, StatsFileWriter

    output = RunOutput(tmp_path / "out", jobdir, checkpoint_interval=60.0)
    stats = {"focuscrawl/pages/written": 0}
    writer = StatsFileWriter(output.dir, SimpleNamespace(get_stats=lambda: stats),
                             lambda: SimpleNamespace(output=output, register=output.register), interval=60.0)
    writer.spider_opened()
    seen = []
    for n in range(1, 6):
        stats["focuscrawl/pages/written"] = n
        output.commit(force=True)
        seen.append(json.loads((output.dir / CHECKPOINT_FILE).read_text())["focuscrawl/pages/written"])
    output.close()
    return seen


def test_without_jobdir_the_stats_checkpoint_is_written_once_an_interval_not_with_every_write(tmp_path):
    """Without JOBDIR every write is a checkpoint of the run directory; the stats (all of them
    as JSON) follow at most once per FOCUSCRAWL_CHECKPOINT_INTERVAL. With JOBDIR each
    checkpoint carries them, so a killed session's stats match the rows it kept."""
    assert checkpointed_stats(tmp_path / "plain", None) == [1, 1, 1, 1, 1]
    assert checkpointed_stats(tmp_path / "job", tmp_path / "job" / "jobdir") == [1, 2, 3, 4, 5]


def test_an_image_accepted_and_not_yet_written_is_left_out_of_the_checkpointed_stats(tmp_path):
    """Two first sightings accepted, one written (its commit is a JOBDIR checkpoint): the
    checkpointed stats count the written image (``images/written`` too) and not the other,
    which a kill now leaves in images.pending and the resume accepts, and counts, again."""
    from types import SimpleNamespace

    from focuscrawl.output.images import ImageStore
    from focuscrawl.output.run import RunOutput
    from focuscrawl.output.stats import CHECKPOINT_FILE, StatsFileWriter
    from focuscrawl.pipelines.image_records import ImageRecordsPipeline
    from tests.test_image_store import item, stats

    output = RunOutput(tmp_path / "out", tmp_path / "job", checkpoint_interval=0.0)
    st = stats()
    records = ImageRecordsPipeline(ImageStore(output, st), st)
    StatsFileWriter(output.dir, st, lambda: SimpleNamespace(output=output, register=output.register)).spider_opened()
    written, pending = item("http://s.test/a.jpg", "http://s.test/1"), item("http://s.test/b.jpg", "http://s.test/1")
    assert records.process_item(written) is written and records.process_item(pending) is pending
    records.item_scraped(written)
    checkpointed = json.loads((output.dir / CHECKPOINT_FILE).read_text())
    assert st.get_value("focuscrawl/images/unique") == 2
    assert checkpointed["focuscrawl/images/unique"] == 1 and checkpointed["focuscrawl/images/written"] == 1
    context = f"focuscrawl/images/final_context/{written['final_context']}"
    assert st.get_value(context) == 2 and checkpointed[context] == 1
    output.close()
