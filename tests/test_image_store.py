"""ImageStore and RunOutput: merging sightings into records, JOBDIR state and offsets."""
import json

import pytest
from scrapy.utils.test import get_crawler

from focuscrawl.items import ImageItem
from focuscrawl.output.images import ImageStore
from focuscrawl.output.records import RunRecords, record_json, record_path
from focuscrawl.output.run import RunOutput
from focuscrawl.pipelines.score import FinalScorePipeline


def stats():
    s = get_crawler().stats
    s.open_spider()
    return s


def item(url, page, alt="a cat", parent="The cat sleeps."):
    """A sighting as it reaches the merge: with the final score the score pipeline gave it."""
    it = ImageItem(image_url=url, page_url=page, alt=alt, title="", alt_scores={"weighted": 4.0},
                   title_scores={"weighted": None},
                   contexts=[{"kind": "parent", "level": 0, "text": parent, "scores": {"weighted": 9.0}}])
    return FinalScorePipeline("thesis").process_item(it)


def record(run, url):
    return json.loads(run.path(record_path(url)).read_text())


def test_sightings_merge_pending_written_repeated_and_limited(tmp_path):
    run = RunOutput(tmp_path / "out")
    st = stats()
    store = ImageStore(run, st, max_parents=1, max_siblings=0, max_sightings=3)
    first = item("http://s.test/a.jpg", "http://s.test/1")
    assert store.first_sighting(first) and first["first_seen"] == 0
    assert not store.first_sighting(item("http://s.test/a.jpg", "http://s.test/2", alt="pending"))
    first["final_score"] = 6.0
    store.commit(first)
    # the record is logged whole, no file made yet; a reader of the run directory finds it
    assert not run.path(record_path("http://s.test/a.jpg")).exists()
    rec = RunRecords(run.dir).read(record_path("http://s.test/a.jpg"))
    assert [s["page_url"] for s in rec["sightings"]] == ["http://s.test/1", "http://s.test/2"]
    assert rec["sightings"][1]["final_score"] == pytest.approx(6.0) and rec["sightings"][1]["final_context"] == "alt+parent-0"
    assert not store.first_sighting(item("http://s.test/a.jpg", "http://s.test/2", alt="pending"))  # repeated
    assert not store.first_sighting(item("http://s.test/a.jpg", "http://s.test/3"))
    assert not store.first_sighting(item("http://s.test/a.jpg", "http://s.test/4"))  # over the limit of 3
    # later sightings are appended to the log too: nothing is written for each
    assert not run.path(record_path("http://s.test/a.jpg")).exists()
    assert st.get_value("focuscrawl/images/merge/logged") == 3
    store.fold()  # (at close, or once the log is big): each record read and written once
    assert (tmp_path / "out" / "sightings.log").read_bytes() == b""
    rec = record(run, "http://s.test/a.jpg")
    assert [s["page_url"] for s in rec["sightings"]] == ["http://s.test/1", "http://s.test/2", "http://s.test/3"]
    assert rec["sightings_over_limit"] == 1
    assert st.get_value("focuscrawl/images/merge/repeated") == 1 and st.get_value("focuscrawl/images/merge/over_limit") == 1
    assert st.get_value("focuscrawl/images/merge/merged") == 1  # one write for pages 1 to 4
    # the record is full: a later sighting is only counted, in a short line
    assert not store.first_sighting(item("http://s.test/a.jpg", "http://s.test/5"))
    rel, _, line = (tmp_path / "out" / "sightings.log").read_text().partition("\t")
    assert rel == record_path("http://s.test/a.jpg") and json.loads(line) == {"over_limit": 1}
    store.close()
    assert record(run, "http://s.test/a.jpg")["sightings_over_limit"] == 2
    # a dropped image: later sightings are counted, not kept
    b = item("http://s.test/b.jpg", "http://s.test/1")
    assert store.first_sighting(b) and b["first_seen"] == 1
    store.drop("http://s.test/b.jpg", "truncated")
    assert not store.first_sighting(item("http://s.test/b.jpg", "http://s.test/5"))
    assert st.get_value("focuscrawl/images/merge/into_dropped") == 1
    run.close()
    lines = (tmp_path / "out" / "images.tsv").read_text().splitlines()
    assert len(lines) == 2 and lines[1].split("\t")[0] == "0"


def test_jobdir_state_survives_and_rolls_back_to_checkpoint(tmp_path):
    out, job = tmp_path / "out", tmp_path / "job"
    run = RunOutput(out, job)
    store = ImageStore(run, stats(), max_parents=1, max_siblings=0)
    for i in range(3):
        it = item(f"http://s.test/{i}.jpg", "http://s.test/1")
        store.first_sighting(it)
        store.commit(it)
    run.close()
    # a killed crawl: a row written after the last checkpoint, and a torn line
    with open(out / "images.tsv", "ab") as f:
        f.write(b"9\t\t\tstray row\n7\tto")
    run = RunOutput(out, job)
    assert run.resumed
    store = ImageStore(run, stats(), max_parents=1, max_siblings=0)
    assert set(store.entries) == {f"http://s.test/{i}.jpg" for i in range(3)} and store.next_order == 3
    assert not store.first_sighting(item("http://s.test/1.jpg", "http://s.test/2"))  # known: merged, no new row
    new = item("http://s.test/new.jpg", "http://s.test/2")
    assert store.first_sighting(new) and new["first_seen"] == 3
    store.commit(new)
    store.close()
    run.close()
    rows = [line.split("\t") for line in (out / "images.tsv").read_text().splitlines()[1:]]
    assert [r[0] for r in rows] == ["0", "1", "2", "3"]
    assert len(record(RunOutput(out), "http://s.test/1.jpg")["sightings"]) == 2


def seen_on_two_pages(out, job):
    """A JOBDIR run whose image a.jpg was written from page 1 and seen again on page 2."""
    run = RunOutput(out, job)
    store = ImageStore(run, stats(), max_parents=1, max_siblings=0)
    first = item("http://s.test/a.jpg", "http://s.test/1")
    store.first_sighting(first)
    store.commit(first)
    store.first_sighting(item("http://s.test/a.jpg", "http://s.test/2"))
    return run, store


def test_sightings_log_after_a_kill_is_cut_to_the_checkpoint_and_folded_on_resume(tmp_path):
    """Later sightings logged before the last checkpoint reach the record on resume; those
    after it are cut back with the pages that carried them (crawled again). Without JOBDIR
    every whole logged line is folded when the run directory is opened again."""
    out, job = tmp_path / "out", tmp_path / "job"
    run, store = seen_on_two_pages(out, job)
    run.commit(force=True)
    store.first_sighting(item("http://s.test/a.jpg", "http://s.test/3"))  # after the checkpoint
    # SIGKILL: no fold, no close
    run = RunOutput(out, job)
    store = ImageStore(run, stats(), max_parents=1, max_siblings=0)
    assert [s["page_url"] for s in record(run, "http://s.test/a.jpg")["sightings"]] == \
        ["http://s.test/1", "http://s.test/2"]
    assert (out / "sightings.log").read_bytes() == b""
    offsets = json.loads((job / "focuscrawl" / "offsets.json").read_text())["files"]
    assert offsets["sightings.log"] == 0  # a kill now cuts nothing folded back in
    store.first_sighting(item("http://s.test/a.jpg", "http://s.test/3"))  # the page crawled again
    # killed again; then opened without JOBDIR: every whole line is folded
    run = RunOutput(out)
    ImageStore(run, stats(), max_parents=1, max_siblings=0)
    assert [s["page_url"] for s in record(run, "http://s.test/a.jpg")["sightings"]] == \
        ["http://s.test/1", "http://s.test/2", "http://s.test/3"]


def test_sightings_log_is_folded_at_the_checkpoint_after_it_grows_big(tmp_path, monkeypatch):
    """A long crawl does not wait for its close: the first checkpoint after the log reaches
    SIGHTINGS_FOLD_BYTES folds it, and the checkpoint then records it empty."""
    import focuscrawl.output.images as images

    monkeypatch.setattr(images, "SIGHTINGS_FOLD_BYTES", 1)
    out, job = tmp_path / "out", tmp_path / "job"
    run, store = seen_on_two_pages(out, job)
    assert (out / "sightings.log").stat().st_size > 0
    run.commit(force=True)
    assert (out / "sightings.log").read_bytes() == b""
    assert json.loads((job / "focuscrawl" / "offsets.json").read_text())["files"]["sightings.log"] == 0
    assert [s["page_url"] for s in record(run, "http://s.test/a.jpg")["sightings"]] == \
        ["http://s.test/1", "http://s.test/2"]


def test_jobdir_of_another_run_directory_is_refused(tmp_path):
    run = RunOutput(tmp_path / "out", tmp_path / "job")
    run.line_log("pages.tsv", "url").write_lines(["http://s.test/"])
    run.close()
    with pytest.raises(ValueError, match="resume with the same output directory"):
        RunOutput(tmp_path / "other", tmp_path / "job")
    (tmp_path / "out" / "pages.tsv").write_text("")
    with pytest.raises(ValueError, match="does not belong to this JOBDIR"):
        RunOutput(tmp_path / "out", tmp_path / "job").line_log("pages.tsv", "url")


def test_image_in_flight_at_a_kill_is_recovered(tmp_path):
    out, job = tmp_path / "out", tmp_path / "job"
    run = RunOutput(out, job)
    store = ImageStore(run, stats(), max_parents=1, max_siblings=0)
    done, flying = item("http://s.test/done.jpg", "http://s.test/1"), item("http://s.test/fly.jpg", "http://s.test/1")
    assert store.first_sighting(done) and store.first_sighting(flying)
    store.commit(done)
    # SIGKILL while fly.jpg downloads: no close, no commit of it; a record was mid-rename
    torn = out / "records" / "ab" / ".x.json.tmp123"
    torn.parent.mkdir(parents=True)
    torn.write_bytes(b'{"image_u')
    run = RunOutput(out, job)
    assert not torn.exists()
    store = ImageStore(run, stats(), max_parents=1, max_siblings=0)
    recovered = store.take_recovered()
    assert [i["image_url"] for i in recovered] == ["http://s.test/fly.jpg"]
    assert recovered[0]["contexts"][0]["text"] == "The cat sleeps." and store.take_recovered() == []
    assert store.first_sighting(recovered[0])  # goes through the pipelines again
    store.commit(recovered[0])
    store.close()
    run.close()
    assert (job / "focuscrawl" / "images.pending").read_bytes() == b""  # clean close: nothing pending
    header, *rows = [line.split("\t") for line in (out / "images.tsv").read_text().splitlines()]
    assert sorted(r[header.index("image_url")] for r in rows) == ["http://s.test/done.jpg", "http://s.test/fly.jpg"]


def test_a_record_reaches_its_file_once_at_the_fold_and_readers_see_it_before(tmp_path):
    """A committed image makes no file: its record is one line of the sightings log until the
    fold writes it, once, with the sightings logged after it (a new file costs the kernel more
    than the crawl's work on an image). A reader of a killed run's directory reads the logged
    record; a fold repeated after a kill (files written, log not yet emptied) writes the same
    bytes; an image never committed leaves no file."""
    out = tmp_path / "out"
    run = RunOutput(out)
    st = stats()
    store = ImageStore(run, st, max_parents=1, max_siblings=0)
    a, b, c = (item(f"http://s.test/{n}.jpg", "http://s.test/1") for n in "abc")
    assert store.first_sighting(a) and store.first_sighting(b) and store.first_sighting(c)
    store.commit(a)
    store.commit(c)
    assert not store.first_sighting(item("http://s.test/a.jpg", "http://s.test/2"))
    assert not (out / "records").exists()
    # SIGKILL here: a reader of the directory sees the records as the fold will write them
    logged = RunRecords(out)
    assert logged.logged_records() == {record_path("http://s.test/a.jpg"), record_path("http://s.test/c.jpg")}
    expected = logged.read(record_path("http://s.test/a.jpg"))
    assert [s["page_url"] for s in expected["sightings"]] == ["http://s.test/1", "http://s.test/2"]
    store.fold()
    assert sorted(p.name for p in (out / "records").rglob("*") if p.is_file()) == sorted(
        record_path(f"http://s.test/{n}.jpg").rpartition("/")[2] for n in "ac")
    assert record(run, "http://s.test/a.jpg") == expected
    assert run.path(record_path("http://s.test/c.jpg")).read_bytes() == record_json(record(run, "http://s.test/c.jpg"))
    assert st.get_value("focuscrawl/images/merge/merged") == 1 and st.get_value("focuscrawl/images/merge/new_records") == 1
    # a kill after the fold wrote the files but before it emptied the log: folded again, same bytes
    d = item("http://s.test/d.jpg", "http://s.test/3")
    assert store.first_sighting(d)
    store.commit(d)
    assert not store.first_sighting(item("http://s.test/a.jpg", "http://s.test/3"))
    log = out / "sightings.log"
    lines = log.read_bytes()
    store.fold()
    files = {p: p.read_bytes() for p in (out / "records").rglob("*.json")}
    log.write_bytes(lines)
    ImageStore(RunOutput(out), stats(), max_parents=1, max_siblings=0)  # opened again: the log folded
    assert {p: p.read_bytes() for p in (out / "records").rglob("*.json")} == files and log.read_bytes() == b""
    store.close()
    assert not run.path(record_path("http://s.test/b.jpg")).exists()  # never committed
    assert list((out / "records").rglob(".*.tmp*")) == []


def test_many_images_in_flight_at_kills_are_each_recovered_once(tmp_path):
    """Two kills in a row: images.pending holds the first session's images again after the
    second (each line once), the ones written since are not recovered."""
    out, job = tmp_path / "out", tmp_path / "job"
    urls = [f"http://s.test/{i}.jpg" for i in range(300)]
    store = ImageStore(RunOutput(out, job), stats(), max_parents=1, max_siblings=0)
    for url in urls:
        assert store.first_sighting(item(url, "http://s.test/1"))
    store = ImageStore(RunOutput(out, job), stats(), max_parents=1, max_siblings=0)  # kill 1
    for recovered in store.take_recovered()[:100]:
        assert store.first_sighting(recovered)  # the same URL goes to images.pending again
        store.commit(recovered)
    store = ImageStore(RunOutput(out, job), stats(), max_parents=1, max_siblings=0)  # kill 2
    assert [i["image_url"] for i in store.take_recovered()] == urls[100:]
    assert (job / "focuscrawl" / "images.pending").read_text().count("\n") == 200


def test_images_pending_is_compacted_at_checkpoints_and_a_kill_still_recovers_the_pending(tmp_path, monkeypatch):
    from focuscrawl.output import images

    monkeypatch.setattr(images, "PENDING_COMPACT_BYTES", 4000)
    out, job = tmp_path / "out", tmp_path / "job"
    store = ImageStore(RunOutput(out, job), stats(), max_parents=1, max_siblings=0)
    accepted = [item(f"http://s.test/{i}.jpg", "http://s.test/1") for i in range(100)]
    for i in accepted:
        assert store.first_sighting(i)
    pending = job / "focuscrawl" / "images.pending"
    assert pending.read_text().count("\n") == 100
    for i in accepted[:90]:
        store.commit(i)
    store.drop(accepted[90]["image_url"], "download failed")
    # rewritten at a checkpoint once it was 4 times what the images left then needed (24 images)
    lines = pending.read_text().splitlines()
    assert len(lines) < 30
    assert {i["image_url"] for i in accepted[91:]} <= {json.loads(line)["image_url"] for line in lines}
    assert store.stats.get_value("focuscrawl/images/pending_compacted") >= 1
    assert store.first_sighting(item("http://s.test/late.jpg", "http://s.test/1"))  # appended to the new file
    store = ImageStore(RunOutput(out, job), stats(), max_parents=1, max_siblings=0)  # a kill
    assert [i["image_url"] for i in store.take_recovered()] == \
        [i["image_url"] for i in accepted[91:]] + ["http://s.test/late.jpg"]


def test_each_sighting_keeps_the_final_score_it_came_with(tmp_path):
    """The final score is computed once, by the score pipeline (before the merge): the store
    records the score each sighting carries, the later sightings' too, and computes none."""
    from focuscrawl.resources import project_settings

    pipelines = project_settings().getwithbase("ITEM_PIPELINES")
    assert (pipelines["focuscrawl.pipelines.score.FinalScorePipeline"]
            < pipelines["focuscrawl.pipelines.image_records.ImageRecordsPipeline"])
    run = RunOutput(tmp_path / "out")
    store = ImageStore(run, stats(), max_parents=1, max_siblings=0)
    first, later, logged = (item("http://s.test/a.jpg", f"http://s.test/{n}") for n in (1, 2, 3))
    later["final_score"], later["final_context"] = 1.5, "alt+figure"  # as another context setting gave it
    assert store.first_sighting(first) and not store.first_sighting(later)
    store.commit(first)
    logged["final_score"] = None
    assert not store.first_sighting(logged)
    store.close()
    run.close()
    scores = [(s["final_score"], s["final_context"]) for s in record(run, "http://s.test/a.jpg")["sightings"]]
    assert scores == [(pytest.approx(6.0), "alt+parent-0"), (1.5, "alt+figure"), (None, "alt+parent-0")]


def test_a_fold_splices_the_logged_sightings_into_the_record_bytes_as_record_json_encodes_them(tmp_path):
    """The fold does not encode a record again: the logged sightings' JSON is spliced into its
    bytes, which are the bytes ``record_json`` gives the folded record (the files stay the same);
    with the record full, the new ``sightings_over_limit``, and a layout it does not know."""
    from focuscrawl.output.records import folded_json, record_json

    run = RunOutput(tmp_path / "out")
    store = ImageStore(run, stats(), max_parents=1, max_siblings=0, max_sightings=3)
    url = "http://s.test/a.jpg"
    first = item(url, "http://s.test/1", alt="ünï \"quoted\"\n\x01 cat", parent="Le chat\tdort. 😺")
    assert store.first_sighting(first)
    store.commit(first)
    path = run.path(record_path(url))
    for n, alt in ((2, "a cat 1e-7"), (3, "x"), (4, "y"), (2, "a cat 1e-7")):  # page 4: over the limit; page 2 again
        later = item(url, f"http://s.test/{n}", alt=alt)
        later["page_perplexity"], later["html_width"] = 1234.5678e-9, 640
        assert not store.first_sighting(later)
    store.fold()
    folded = json.loads(path.read_bytes())
    assert path.read_bytes() == record_json(folded)
    assert [s["page_url"] for s in folded["sightings"]] == [f"http://s.test/{n}" for n in (1, 2, 3)]
    assert folded["sightings"][1]["page_perplexity"] == 1234.5678e-9 and folded["sightings_over_limit"] == 1

    data = path.read_bytes()
    rec = json.loads(data)
    extra = {"page_url": "http://s.test/9", "alt": "z", "contexts": []}
    rec["sightings_over_limit"] += 2
    assert folded_json(data, rec, (3, 1), []) == record_json(rec)  # only counted
    empty = record_json({"image_url": url, "sightings": []})
    rec = json.loads(empty)
    rec["sightings"].append(extra)
    text = json.dumps(extra, ensure_ascii=False, separators=(",", ":"))
    assert folded_json(empty, rec, (0, None), [text]) == record_json(rec)
    # a record written another way, or a logged line another writer made: encoded whole
    indented = json.dumps({"image_url": url, "sightings": []}, indent=1).encode()
    assert folded_json(indented, rec, (0, None), [text]) == record_json(rec)
    assert folded_json(empty, rec, (0, None), [None]) == record_json(rec)



def test_record_and_logged_sighting_are_the_bytes_json_dumps_gives(tmp_path):
    """The store's one compact encoder (no circular-reference check, made once) writes the very
    bytes ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` did: non-ASCII kept,
    NaN and infinities as Python's json writes them, a lone surrogate replaced, keys in order."""
    from focuscrawl.output.images import sighting_of
    from focuscrawl.output.records import SIGHTINGS_LOG, compact_json

    def dumps(obj):
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))

    run = RunOutput(tmp_path / "out")
    store = ImageStore(run, stats(), max_parents=1, max_siblings=0)
    url = "http://s.test/ä.jpg"
    first = item(url, "http://s.test/1", alt="Kätzchen \ud800 schläft", parent="Ça dort. 猫")
    first["alt_scores"] = {"weighted": float("nan"), "perplexity": float("inf"), "tokens": 3}
    assert store.first_sighting(first)
    store.commit(first)
    expected = {f: first.get(f) for f in ("image_url", "first_seen", "final_score", "final_context", "image_path",
                                          "record_path", "width", "height", "image_format", "image_size",
                                          "image_sha1", "image_status", "rights")}
    expected |= {"html_width": None, "html_height": None, "sightings": [sighting_of(first)]}
    later = item(url, "http://s.test/2", alt="-Infinity", parent="zwei")
    later["title_scores"] = {"weighted": float("-inf")}
    assert not store.first_sighting(later)
    logged = (tmp_path / "out" / SIGHTINGS_LOG).read_bytes().decode("utf-8", "replace")
    assert logged == (f"{record_path(url)}\t{dumps({'record': expected})}\n"
                      f"{record_path(url)}\t{dumps({'sighting': sighting_of(later)})}\n").encode(
        "utf-8", "replace").decode("utf-8", "replace")
    store.close()
    expected["sightings"].append(sighting_of(later))
    assert run.path(record_path(url)).read_bytes() == dumps(expected).encode("utf-8", "replace")
    assert compact_json([{"b": 1.5, "a": [None, True]}]) == dumps([{"b": 1.5, "a": [None, True]}])


def test_a_record_path_that_leaves_the_run_directory_is_not_read(tmp_path):
    """``images.tsv`` is read, not trusted: a record path with ``..`` or through a link that
    points out of the run directory is refused (a reader counts the record as damaged)."""
    run_dir, outside = tmp_path / "run", tmp_path / "secret.json"
    (run_dir / "records" / "ab").mkdir(parents=True)
    outside.write_text('{"sightings": []}')
    (run_dir / "records" / "ab" / "link.json").symlink_to(outside)
    (run_dir / "records" / "ab" / "own.json").write_text('{"sightings": []}')
    records = RunRecords(run_dir)
    assert records.read("records/ab/own.json") == {"sightings": []}
    for rel in ("../secret.json", "records/ab/link.json", str(outside)):
        with pytest.raises(ValueError, match="leaves the run directory"):
            records.read(rel)


def test_the_image_records_owner_commits_and_drops_first_sightings_on_their_outcome(tmp_path):
    """``ImageRecordsPipeline`` is told the outcome of each first sighting by Scrapy's item
    signals: scraped -> written, dropped by any pipeline -> marked dropped (with the download's
    reason); a later sighting merged here is no outcome, even when it is a recovered image
    that carries the ``first_seen`` of the sighting in flight."""
    from scrapy import signals
    from scrapy.exceptions import DropItem

    from focuscrawl.output.run_state import RunState
    from focuscrawl.pipelines.image_records import ImageDropped, ImageMerged, ImageRecordsPipeline
    from tests.support.crawler import focuscrawl_crawler

    crawler = focuscrawl_crawler(FOCUSCRAWL_OUTPUT_DIR=str(tmp_path / "out"), JOBDIR=str(tmp_path / "job"))
    crawler.stats.open_spider()
    records = ImageRecordsPipeline.from_crawler(crawler)
    a, b, c = (item(f"http://s.test/{name}.jpg", "http://s.test/1") for name in "abc")
    for first in (a, b, c):
        assert records.process_item(first) is first
    recovered = item("http://s.test/a.jpg", "http://s.test/0")
    recovered["first_seen"] = a["first_seen"]  # as a killed session's images.pending gave it
    with pytest.raises(ImageMerged) as merged:
        records.process_item(recovered)
    send = crawler.signals.send_catch_log
    send(signals.item_dropped, item=recovered, response=None, spider=None, exception=merged.value)
    send(signals.item_dropped, item=b, response=None, spider=None, exception=ImageDropped("http_status", "404"))
    send(signals.item_dropped, item=c, response=None, spider=None, exception=DropItem("a project's filter"))
    send(signals.item_scraped, item=a, response=None, spider=None)
    records.close_spider()
    crawler.get_extension(RunState).spider_closed()
    rows = (tmp_path / "out" / "images.tsv").read_text().splitlines()[1:]
    assert len(rows) == 1 and "http://s.test/a.jpg" in rows[0]
    assert [s["page_url"] for s in record(crawler.get_extension(RunState).output, "http://s.test/a.jpg")
            ["sightings"]] == ["http://s.test/1", "http://s.test/0"]
    seen = (tmp_path / "job" / "focuscrawl" / "images.seen").read_text().splitlines()
    assert [line.split("\t")[2:] for line in seen] == [
        ["http://s.test/b.jpg", "http_status"], ["http://s.test/c.jpg", "dropped"], ["http://s.test/a.jpg"]]
