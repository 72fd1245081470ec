import gzip
import os

import pytest

from focuscrawl.output.files import (JOB_STATE_DIR, GzipLog, LineLog, atomic_write_bytes, complete_lines_size,
                                     gzip_complete_size, iter_lines, iter_tsv, job_state_dir, parse_float)
from focuscrawl.output.tsv import cell, row


def test_line_log_cuts_partial_line_and_keeps_header(tmp_path):
    path = tmp_path / "x.tsv"
    log = LineLog(path, header="a\tb")
    log.write_lines(["1\t2", "3\t4"])
    log.close()
    with open(path, "ab") as f:
        f.write(b"5\t")  # a torn write of a killed crawl
    assert complete_lines_size(path) == len(b"a\tb\n1\t2\n3\t4\n")
    log = LineLog(path, header="a\tb")
    log.write_lines(["5\t6"])
    log.close()
    assert path.read_text() == "a\tb\n1\t2\n3\t4\n5\t6\n"


def test_line_log_rejects_other_header_and_short_file(tmp_path):
    path = tmp_path / "x.tsv"
    LineLog(path, header="a\tb").close()
    with pytest.raises(ValueError, match="other columns"):
        LineLog(path, header="a\tc")
    with pytest.raises(ValueError, match="does not belong to this JOBDIR"):
        LineLog(path, header="a\tb", truncate_to=100)


def test_line_log_truncates_to_recorded_offset(tmp_path):
    path = tmp_path / "x.txt"
    log = LineLog(path)
    log.write_lines(["one"])
    good = log.offset
    log.write_lines(["two"])
    log.close()
    log = LineLog(path, truncate_to=good)
    assert log.offset == good and path.read_text() == "one\n"
    log.close()


def test_gzip_log_members_and_torn_tail(tmp_path):
    path = tmp_path / "s.txt.gz"
    log = GzipLog(path)
    log.write_lines(["first sentence here", "second one"])
    log.write_lines(["third"])
    good = log.offset
    log.close()
    assert gzip.decompress(path.read_bytes()).decode().splitlines() == ["first sentence here", "second one", "third"]
    member = gzip.compress(b"fourth\n" * 1000)
    with open(path, "ab") as f:
        f.write(member[: len(member) // 2])  # killed in the middle of a member
    assert gzip_complete_size(path) == good
    log = GzipLog(path)
    log.write_lines(["fifth"])
    log.close()
    assert gzip.decompress(path.read_bytes()).decode().splitlines() == [
        "first sentence here", "second one", "third", "fifth"]


def test_gzip_complete_size_small_chunks(tmp_path):
    path = tmp_path / "s.gz"
    data = b"".join(gzip.compress(f"line {i}\n".encode() * 50) for i in range(5))
    path.write_bytes(data + b"\x1f\x8b\x08garbage")
    assert gzip_complete_size(path, chunk=7) == len(data)
    path.write_bytes(b"")
    assert gzip_complete_size(path) == 0


def test_atomic_write_bytes(tmp_path):
    path = tmp_path / "r.json"
    atomic_write_bytes(path, b"{}")
    atomic_write_bytes(path, b'{"a": 1}')
    assert path.read_bytes() == b'{"a": 1}'
    assert os.listdir(tmp_path) == ["r.json"]


def test_atomic_write_bytes_syncs_the_temp_file_before_the_rename(tmp_path, monkeypatch):
    """Checkpoints (offsets.json, images.pending, the learner) reach the disk before their name
    does; the per-image files opt out (fsync=False)."""
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")) or real_fsync(fd))
    atomic_write_bytes(tmp_path / "offsets.json", b"{}")
    assert [os.path.basename(p) for p in synced] == [f".offsets.json.tmp{os.getpid()}"]
    atomic_write_bytes(tmp_path / "record.json", b"{}", fsync=False)
    assert len(synced) == 1


def test_header_given_by_a_later_opener(tmp_path):
    from focuscrawl.output.run import RunOutput

    run = RunOutput(tmp_path / "out", tmp_path / "job")
    run.line_log("pages.tsv")  # e.g. the frontier reads it first, without knowing the columns
    run.line_log("pages.tsv", "url\tdepth").write_lines(["http://s.test/\t0"])
    run.close()
    assert (tmp_path / "out" / "pages.tsv").read_text() == "url\tdepth\nhttp://s.test/\t0\n"


def test_lone_surrogates_do_not_break_a_row(tmp_path):
    log = LineLog(tmp_path / "x.tsv")
    log.write_lines(["alt \ud800 text"])  # e.g. from a broken numeric character reference
    log.close()
    assert (tmp_path / "x.tsv").read_text() == "alt ? text\n"
    glog = GzipLog(tmp_path / "s.gz")
    glog.write_lines(["cat \udcff sat"])
    glog.close()
    assert gzip.decompress((tmp_path / "s.gz").read_bytes()) == b"cat ? sat\n"


def test_iter_tsv_dicts_raw_rows_gzip_and_long_cells(tmp_path):
    long_cell = "w" * 300_000  # over csv's default 128 KiB field limit
    text = f"url\ttext\nhttp://a/\t{long_cell}\n\nhttp://b/\t\"quoted\"\nhttp://c/\n"
    (tmp_path / "p.tsv").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "p.tsv.gz", "wt", encoding="utf-8") as fh:
        fh.write(text)
    for name in ("p.tsv", "p.tsv.gz"):
        rows = list(iter_tsv(tmp_path / name))  # blank line skipped, quotes kept, short row padded
        assert rows == [{"url": "http://a/", "text": long_cell}, {"url": "http://b/", "text": '"quoted"'},
                        {"url": "http://c/", "text": None}]
        raw = list(iter_tsv(tmp_path / name, raw=True))  # header first, blank line kept as []
        assert raw == [["url", "text"], ["http://a/", long_cell], [], ["http://b/", '"quoted"'], ["http://c/"]]
    assert list(iter_tsv(tmp_path / "absent.tsv")) == []


def test_iter_tsv_decoding_errors_are_the_callers_choice(tmp_path):
    (tmp_path / "bad.tsv").write_bytes(b"url\talt\nhttp://a/\tcaf\xe9\n")
    with pytest.raises(UnicodeDecodeError):
        list(iter_tsv(tmp_path / "bad.tsv"))
    assert list(iter_tsv(tmp_path / "bad.tsv", errors="replace")) == [{"url": "http://a/", "alt": "caf\ufffd"}]


@pytest.mark.parametrize("cell", [None, "", "  ", "none", "NULL", "nan", "-", float("nan")])
def test_parse_float_missing_values_give_the_callers_choice(cell):
    assert parse_float(cell, missing=None) is None
    assert parse_float(cell, missing=float("inf")) == float("inf")
    assert parse_float(cell, missing=None, strict=True) is None  # missing is not an error


def test_parse_float_numbers_text_and_infinity():
    assert parse_float(" 2.5 ", missing=None) == 2.5
    assert parse_float(3, missing=None) == 3.0
    assert parse_float("abc", missing=None) is None
    assert parse_float("abc", missing=float("inf")) == float("inf")
    with pytest.raises(ValueError, match="abc"):
        parse_float("abc", missing=None, strict=True)
    assert parse_float("inf", missing=None) == float("inf")
    assert parse_float("-inf", missing=None, finite=True) is None
    assert parse_float({"not": "a number"}, missing=None) is None


def test_first_commit_is_checkpointed_whatever_the_uptime(tmp_path):
    """The interval is measured from the previous checkpoint, not from boot: with an
    interval longer than any uptime the first commit still writes offsets.json (it
    once compared time.monotonic() with 0.0, so a machine up for less than the
    interval never checkpointed) and the next one within the interval does not."""
    import json

    from focuscrawl.output.run import OFFSETS_FILE, RunOutput

    run = RunOutput(tmp_path / "out", tmp_path / "job", checkpoint_interval=1e12)
    log = run.line_log("pages.tsv", "url")
    log.write_lines(["http://s.test/a"])
    run.commit()
    offsets = tmp_path / "job" / "focuscrawl" / OFFSETS_FILE
    first = json.loads(offsets.read_text())["files"]["pages.tsv"]
    assert first == len("url\nhttp://s.test/a\n")
    log.write_lines(["http://s.test/b"])
    run.commit()  # within the interval: no checkpoint
    assert json.loads(offsets.read_text())["files"]["pages.tsv"] == first
    run.close()  # forced
    assert json.loads(offsets.read_text())["files"]["pages.tsv"] > first


def test_rows_read_up_to_a_checkpoint_are_the_rows_a_resume_keeps(tmp_path):
    """Another process reads a killed crawl's pages.tsv up to its JOBDIR checkpoint
    (``checkpoint_offsets`` + ``iter_tsv(end=...)``): exactly the rows the crawl resumed on
    that JOBDIR keeps; no checkpoint yet: every whole row, as the resume keeps them."""
    from focuscrawl.output.run import RunOutput, checkpoint_offsets

    out, job = tmp_path / "out", tmp_path / "job"
    assert checkpoint_offsets(job, out) == {}
    run = RunOutput(out, job, checkpoint_interval=1e12)
    log = run.line_log("pages.tsv", "url\tdepth")
    log.write_lines([row(["http://a.test/", 0])])
    run.commit()
    log.write_lines([row(["http://b.test/", 1])])  # past the checkpoint: the kill comes now
    with open(out / "pages.tsv", "ab") as f:
        f.write(b"http://c.test/\t")  # and tears a row
    end = checkpoint_offsets(job, out)["pages.tsv"]
    assert [r["url"] for r in iter_tsv(out / "pages.tsv", end=end)] == ["http://a.test/"]
    assert [r["url"] for r in iter_tsv(out / "pages.tsv")] == ["http://a.test/", "http://b.test/"]
    assert list(iter_tsv(out / "pages.tsv", end=end, raw=True)) == [["url", "depth"], ["http://a.test/", "0"]]
    resumed = RunOutput(out, job)
    resumed.line_log("pages.tsv")
    assert [r["url"] for r in iter_tsv(out / "pages.tsv")] == ["http://a.test/"]
    resumed.close()
    with pytest.raises(ValueError, match="belongs to the run directory"):
        checkpoint_offsets(job, tmp_path / "elsewhere")


def test_torn_tail_is_cut_counted_and_never_read_back(tmp_path):
    path = tmp_path / "x.log"
    path.write_bytes("one\ntwo \u2028 halves\nthr".encode())  # U+2028 is not a line end
    assert list(iter_lines(path)) == ["one", "two \u2028 halves"]  # the torn "thr" is no line
    log = LineLog(path)
    assert log.cut_bytes == 3 and log.offset == len("one\ntwo \u2028 halves\n".encode())
    log.write_lines(["three"])
    assert list(log.lines()) == ["one", "two \u2028 halves", "three"]
    log.close()
    assert list(iter_lines(tmp_path / "missing.log")) == []


def test_checkpoint_truncate_and_reading_up_to_an_offset(tmp_path):
    path = tmp_path / "state.log"
    log = LineLog(path)
    log.write_lines(["W\t0\thttp://a.test/x.jpg"])
    checkpoint = log.offset
    log.write_lines(["W\t1\thttp://a.test/y.jpg"])  # after the checkpoint: a kill loses it
    assert list(iter_lines(path, checkpoint)) == ["W\t0\thttp://a.test/x.jpg"]
    log.close()
    resumed = LineLog(path, truncate_to=checkpoint)
    assert resumed.cut_bytes == len("W\t1\thttp://a.test/y.jpg\n") and path.stat().st_size == checkpoint
    resumed.write_lines(["D\t1\thttp://a.test/y.jpg\t404"])
    assert [line.split("\t")[:3] for line in resumed.lines()] == [["W", "0", "http://a.test/x.jpg"],
                                                                  ["D", "1", "http://a.test/y.jpg"]]
    resumed.truncate(0)  # a clean close with nothing left pending
    assert resumed.offset == 0 and path.read_bytes() == b"" and list(resumed.lines()) == []
    resumed.write_lines(["again"])
    resumed.close()
    assert path.read_bytes() == b"again\n"


def test_typed_rows_read_back_skip_a_torn_last_row(tmp_path, caplog):
    path = tmp_path / "pages.tsv"
    log = LineLog(path, "url\tperplexity\tsize")
    log.write_lines([row(["http://a.test/", 123.25, 10]), row(["http://b.test/", None, True])])
    log.close()
    with open(path, "ab") as f:
        f.write(b"http://c.test/\t99")  # a row torn by a kill (or still being written)
    rows = list(iter_tsv(path))
    assert [r["url"] for r in rows] == ["http://a.test/", "http://b.test/"]
    assert "pages.tsv: the last line has no newline" in caplog.text
    assert [parse_float(r["perplexity"], missing=None) for r in rows] == [123.25, None]
    assert [int(r["size"]) for r in rows] == [10, 1]


def test_one_cell_formatter_for_every_tsv():
    assert [cell(v) for v in (None, True, False, 3, 0.1, "a\tb\nc\rd")] == ["", "1", "0", "3", "0.1", "a b c d"]
    assert cell(1 / 3) == repr(1 / 3) and cell(1 / 3, float_digits=6) == "0.333333"
    assert cell(12.5, float_digits=6) == "12.5" and cell(1e-9, float_digits=6) == "1e-09"
    assert cell(float("inf")) == "inf" and cell(float("inf"), float_digits=6) == "inf"
    assert cell("  two\t\tspaces \u2028 here ", squeeze=True) == "two spaces here"
    assert cell("  two\t\tspaces ") == "  two  spaces "
    assert row([1, None, "x y"], squeeze=True) == "1\t\tx y"


def test_all_resume_state_under_one_jobdir_folder(tmp_path):
    assert job_state_dir(None) is None and job_state_dir("") is None
    assert job_state_dir(tmp_path / "job") == (tmp_path / "job" / JOB_STATE_DIR).resolve()


def test_gzip_members_are_the_batches_with_their_line_counts(tmp_path):
    from focuscrawl.output.files import gzip_members

    log = GzipLog(tmp_path / "s.txt.gz")
    log.write_lines(["a", "b"])
    log.write_lines(["c"])
    ends = [log.offset]
    log.write_lines(["d", "e", "f"])
    log.close()
    with open(tmp_path / "s.txt.gz", "ab") as f:
        f.write(gzip.compress(b"torn\n")[:9])
    members = list(gzip_members(tmp_path / "s.txt.gz", chunk=7))
    assert [n for _, n in members] == [2, 1, 3]
    assert members[1][0] == ends[0] and members[-1][0] == gzip_complete_size(tmp_path / "s.txt.gz")


def _page_writer(out, job=None, interval=0.0):
    from tests.support.crawler import focuscrawl_crawler

    from focuscrawl.output.run import RunOutput
    from focuscrawl.pipelines.writers import PageLogWriterPipeline

    crawler = focuscrawl_crawler()
    crawler.stats.open_spider()
    run = RunOutput(out, job, checkpoint_interval=interval)
    writer = PageLogWriterPipeline(run, crawler.stats, crawler.signals, 0, links_log=True)
    writer.open_spider()
    return run, writer, crawler.stats


def _page(i: int, sentences: int, links: int = 2):
    """A page item as the link middleware hands it on: with its links.tsv rows."""
    from focuscrawl.items import PageItem

    url = f"http://s.test/{i}"
    return PageItem(url=url, sentences=[f"page {i} sentence number {k} here" for k in range(sentences)],
                    link_rows=[row([url, f"http://s.test/{i}/{k}"]) for k in range(links)])


def _state(out):
    pages = [r["url"] for r in iter_tsv(out / "pages.tsv")]
    sentences = gzip.decompress((out / "sentences.txt.gz").read_bytes()).decode().splitlines()
    links = [line.split("\t")[0] for line in list(iter_lines(out / "links.tsv"))[1:]]
    return pages, sentences, links


def test_links_tsv_is_cut_back_to_the_checkpoint_with_pages_and_sentences(tmp_path):
    """A page's links.tsv rows are written in its batch, and the JOBDIR checkpoint records
    links.tsv with pages.tsv: a batch written after the last checkpoint (a kill came before
    the next one) is cut from all three files on resume, so its pages, crawled again, log
    their links once."""
    import json

    out, job = tmp_path / "out", tmp_path / "job"
    run, writer, _ = _page_writer(out, job, interval=1e12)  # only the first commit checkpoints
    writer.process_item(_page(0, 2))
    writer.process_item(_page(1, 1, links=3))  # written, not checkpointed: the kill comes now
    offsets = json.loads((job / "focuscrawl" / "offsets.json").read_text())["files"]
    assert set(offsets) >= {"pages.tsv", "sentences.txt.gz", "links.tsv"}
    assert _state(out)[2] == ["http://s.test/0"] * 2 + ["http://s.test/1"] * 3
    run, writer, stats = _page_writer(out, job)  # resumed (the killed process wrote nothing more)
    assert _state(out) == (["http://s.test/0"], [f"page 0 sentence number {k} here" for k in range(2)],
                           ["http://s.test/0"] * 2)
    writer.process_item(_page(1, 1, links=3))  # crawled again
    run.close()
    assert _state(out)[2] == ["http://s.test/0"] * 2 + ["http://s.test/1"] * 3
    assert "focuscrawl/sentences/orphans_cut" not in stats.get_stats()  # a resume is cut by its checkpoint


def test_link_rows_are_written_and_taken_off_the_item_before_feed_exports(tmp_path):
    """PageItem.link_rows is declared, but the page writer (the last pipeline) takes it off
    the item: a FEEDS export of the page (after every pipeline) has the same fields as
    without the links log."""
    import io
    import json

    from scrapy.exporters import JsonLinesItemExporter

    run, writer, _ = _page_writer(tmp_path / "out")
    item = writer.process_item(_page(0, 1, links=2))
    run.close()
    assert _state(tmp_path / "out")[2] == ["http://s.test/0"] * 2
    buffer = io.BytesIO()
    JsonLinesItemExporter(buffer).export_item(item)
    assert set(json.loads(buffer.getvalue())) == {"url", "sentences"}


def test_sentences_without_their_rows_are_cut_when_the_run_directory_is_opened(tmp_path):
    """Without JOBDIR: a kill between a batch's sentences member and its rows leaves sentences
    no row counts; a kill inside a large rows write leaves part of a batch's rows. Opening
    the run directory cuts both files back to the last batch they hold whole, and counts it."""
    out = tmp_path / "out"
    run, writer, _ = _page_writer(out)
    for i, n in enumerate([2, 0, 3]):
        writer.process_item(_page(i, n))
    run.close()
    whole = _state(out)
    sizes = {name: (out / name).stat().st_size for name in ("pages.tsv", "sentences.txt.gz")}
    run, writer, stats = _page_writer(out)  # consistent: nothing cut
    run.close()
    assert writer.cut == (0, 0) and {n: (out / n).stat().st_size for n in sizes} == sizes

    GzipLog(out / "sentences.txt.gz").write_lines(["orphan one", "orphan two"])  # the kill after the member
    run, writer, stats = _page_writer(out)
    assert writer.cut == (2, 0) and stats.get_value("focuscrawl/sentences/orphans_cut") == 2
    writer.process_item(_page(3, 1))
    run.close()
    pages, sentences, _ = _state(out)
    assert pages == whole[0] + ["http://s.test/3"] and sentences == whole[1] + ["page 3 sentence number 0 here"]

    # a batch of two rows, only the first of them written whole (a kill inside a large write)
    GzipLog(out / "sentences.txt.gz").write_lines(["page 4 a b c d", "page 5 a b c d", "page 5 e f g h"])
    with open(out / "pages.tsv", "a") as f:
        f.write("http://s.test/4\t\t\t\t\t\t\t\t1\t5\t\t\t\nhttp://s.test/5\t\t\t")
    run, writer, stats = _page_writer(out)
    run.close()
    assert writer.cut == (3, 1) and stats.get_value("focuscrawl/pages/torn_rows_cut") == 1
    assert _state(out)[:2] == (pages, sentences)

    # rows that count more sentences than the file holds (its last member lost): those rows go
    data = (out / "sentences.txt.gz").read_bytes()
    (out / "sentences.txt.gz").write_bytes(data[:gzip_complete_size(out / "sentences.txt.gz")
                                                - len(gzip.compress(b"page 3 sentence number 0 here\n", 6, mtime=0))])
    run, writer, _ = _page_writer(out)
    run.close()
    assert writer.cut == (0, 1) and _state(out)[:2] == (whole[0], whole[1])
