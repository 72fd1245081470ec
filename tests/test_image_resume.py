"""A stopped or killed crawl resumed with JOBDIR neither loses nor repeats rows (docs/OUTPUT.md)."""
from __future__ import annotations

import gzip
import json
import signal
import time
from collections import Counter

import pytest

from tests.support.crawl import crawl, start_focused
from tests.support.imagesite import image_bytes
from tests.support.localweb import LocalWeb, Page
from tests.support.runfiles import read_tsv
from tests.support.toymodel import ON_TOPIC, write_model

from focuscrawl.output.records import record_path

N = 10
JPEG = image_bytes("JPEG", (64, 48))


def chain_site() -> dict:
    """p0 -> p1, p2; p1 -> p2, p3; ... every page has its own image u<i> and the shared s.jpg."""
    pages = {}
    for i in range(N):
        links = "".join(f'<a href="/p{j}">cat page {j}</a>' for j in (i + 1, i + 2) if j < N)
        body = (f"<html><body><div><p>{ON_TOPIC} Page number {i} is here for cats.</p>"
                f'<img src="/u{i}.jpg" alt="cat {i}" width="600" height="400">'
                f'<p>cat cat shared {i}.</p><img src="/s.jpg" alt="shared cat on page {i}" width="600" height="400">'
                f"</div>{links}</body></html>")
        pages[("cats.test", f"/p{i}")] = Page(body)
        pages[("cats.test", f"/u{i}.jpg")] = Page(JPEG, "image/jpeg")
    pages[("cats.test", "/s.jpg")] = Page(JPEG, "image/jpeg")
    return pages


def check_run_dir(out, expect_all: bool) -> None:
    pages = read_tsv(out / "pages.tsv")
    urls = [p["url"] for p in pages]
    assert len(urls) == len(set(urls)), Counter(urls).most_common(3)
    sentences = gzip.decompress((out / "sentences.txt.gz").read_bytes()).decode().splitlines()
    assert len(sentences) == sum(int(p["sentences"]) for p in pages)
    assert sentences == ["cat cat cat cat cat", "page number is here for cats"] * len(pages)
    rows = read_tsv(out / "images.tsv")
    images = [r["image_url"] for r in rows]
    assert len(images) == len(set(images)), Counter(images).most_common(3)
    orders = [int(r["first_seen"]) for r in rows]
    assert len(orders) == len(set(orders))
    for r in rows:
        assert (out / r["image_path"]).read_bytes() == JPEG
    if expect_all:
        assert sorted(urls) == sorted(f"http://cats.test/p{i}" for i in range(N))
        assert sorted(images) == sorted([f"http://cats.test/u{i}.jpg" for i in range(N)] + ["http://cats.test/s.jpg"])
        shared = json.loads((out / record_path("http://cats.test/s.jpg")).read_text())
        seen_on = [s["page_url"] for s in shared["sightings"]]
        assert sorted(seen_on) == sorted(urls)  # every page's context of the shared image, once


def check_readers_of_a_killed_run(out, rows, merged) -> None:
    """Killed before its first fold, the run has no record file: every committed image's record
    is a line of its sightings log. The readers (rank's corpus, merge) read each row's record
    from there, its first sighting's context included, without touching the run directory."""
    from focuscrawl.corpus import iter_entries
    from focuscrawl.output.merge import merge_runs
    from focuscrawl.output.records import RunRecords

    assert rows and not (out / "records").exists()
    log = (out / "sightings.log").read_bytes()
    records = RunRecords(out)
    for r in rows:
        record = records.read(r["record_path"])
        assert record["image_url"] == r["image_url"] and record["sightings"][0]["page_url"] == r["page_url"]
    entries = list(iter_entries(out))
    assert [e.image_url for e in entries] == [r["image_url"] for r in rows]
    assert all(not e.record_error and e.context_text for e in entries), [e.record_error for e in entries]
    merge_runs([out], merged)
    assert sorted(p.name for p in (merged / "records").glob("*/*.json")) == sorted(
        r["record_path"].rpartition("/")[2] for r in rows)
    assert (out / "sightings.log").read_bytes() == log and not (out / "records").exists()


def test_stopped_crawl_resumes_without_loss_or_duplicates(tmp_path):
    jobdir = tmp_path / "job"
    settings = {"JOBDIR": str(jobdir), "FOCUSCRAWL_SENTENCES_BATCH_BYTES": 200}
    with LocalWeb(chain_site()) as web:
        stats1, proc = crawl(web, tmp_path, "http://cats.test/p0", settings=settings, budget=8)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert stats1["finish_reason"] == "page_budget"
        out = tmp_path / "out"
        first = read_tsv(out / "pages.tsv")
        assert 0 < len(first) < N
        check_run_dir(out, expect_all=False)
        stats2, proc = crawl(web, tmp_path, "http://cats.test/p0", settings=settings)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats2["finish_reason"] == "finished"
    check_run_dir(out, expect_all=True)
    assert read_tsv(out / "pages.tsv")[: len(first)] == first  # the first run's rows stay as they were
    assert stats2.get("file_status_count/downloaded", 0) + stats1.get("file_status_count/downloaded", 0) == N + 1


def test_killed_crawl_leaves_whole_rows_and_resumes(tmp_path):
    model, keywords = write_model(tmp_path)
    out, jobdir = tmp_path / "out", tmp_path / "job"
    settings = {"JOBDIR": str(jobdir), "DOWNLOAD_DELAY": 0.15, "AUTOTHROTTLE_ENABLED": False,
                "RANDOMIZE_DOWNLOAD_DELAY": False, "CONCURRENT_REQUESTS": 1, "LOG_LEVEL": "WARNING",
                "FOCUSCRAWL_SENTENCES_BATCH_BYTES": 0, "FOCUSCRAWL_PROGRESS_INTERVAL": 0}
    args = {"seeds": "http://cats.test/p0", "model": str(model), "keywords": str(keywords), "output": str(out)}
    with LocalWeb(chain_site()) as web:
        proc = start_focused(tmp_path / "s.json", settings, args, web=web)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                log = out / "images.tsv"
                if log.exists() and log.read_bytes().count(b"\n") >= 4:
                    break
                if proc.poll() is not None:
                    pytest.fail(f"the crawl ended (rc {proc.returncode}) before it could be killed mid-run")
                time.sleep(0.05)
            else:
                pytest.fail("the crawl logged no 4 image rows in 60 s: the kill would not be mid-run")
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(10)
        assert (out / "images.tsv").read_bytes().endswith(b"\n")
        assert (out / "pages.tsv").read_bytes().endswith(b"\n")
        check_run_dir(out, expect_all=False)
        before = read_tsv(out / "images.tsv")
        check_readers_of_a_killed_run(out, before, tmp_path / "merged")
        # resume: rows after the last checkpoint are cut back and redone (frontier journal,
        # images.pending); the crawl then completes
        stats, proc2 = crawl(web, tmp_path, "http://cats.test/p0", settings={"JOBDIR": str(jobdir)})
        assert proc2.returncode == 0, proc2.stderr[-3000:]
    check_run_dir(out, expect_all=True)  # every page and image once, the shared image's record complete
    after = read_tsv(out / "images.tsv")
    assert {r["image_url"] for r in before} <= {r["image_url"] for r in after}
