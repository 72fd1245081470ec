"""Ranking (score cut, dedupe first seen, ascending, top N) and the four export formats
(img2dataset-grade image exports: tests/test_export.py)."""
from __future__ import annotations

import io
import json
import sys
import tarfile

import pyarrow.parquet as pq
import pytest

from focuscrawl.cli import main
from focuscrawl.corpus import RunDirError, iter_entries
from focuscrawl.ranking import RankStats, rank
from tests.support.runfixture import make_run_dir

ROWS = [
    {"url": "http://a.org/cat1.jpg", "score": 50.0, "alt": "a cat on a mat", "context": "The cat sat."},
    {"url": "http://a.org/dup.jpg", "score": 30.0, "alt": "first sighting", "page": "http://a.org/1"},
    {"url": "http://a.org/low.jpg", "score": 1.5, "alt": "below min"},
    {"url": "http://a.org/high.jpg", "score": 80000, "alt": "above max"},
    {"url": "http://a.org/dup.jpg", "score": 5.0, "alt": "second sighting", "page": "http://a.org/2"},
    {"url": "http://a.org/none.jpg", "score": None, "alt": "no score"},
    {"url": "http://a.org/cat2.jpg", "score": 2.0, "alt": "IMG_0042.jpg"},
    {"url": "http://a.org/cat3.jpg", "score": 70000, "alt": "<b>tabby</b>\tkitten", "image": False},
]


@pytest.fixture
def run_dir(tmp_path):
    return make_run_dir(tmp_path / "run", ROWS)


def test_corpus_reads_rows_scores_and_context(run_dir):
    entries = list(iter_entries(run_dir))
    assert len(entries) == len(ROWS)
    first = entries[0]
    assert (first.image_url, first.alt, first.final_score) == ("http://a.org/cat1.jpg", "a cat on a mat", 50.0)
    assert first.context_text == "The cat sat."  # parent-1 text from the info record
    assert first.scores["alt_pp"] == 123.5 and first.scores["title_wpp"] is None
    assert entries[5].final_score is None
    assert "src_guess" not in first.scores and "width" not in first.scores  # texts and sizes are not scores
    assert (first.width, first.height, first.final_context) == (40, 30, "alt+parent-1")
    assert first.scores["parent_1_wpp"] == 50.0 and first.scores["sibling_0_pp"] is None


def test_corpus_skips_malformed_rows(tmp_path, caplog):
    rows = [{"url": "http://a.org/ok.jpg", "score": 3},
            {"url": "http://a.org/bad.jpg", "score": 3, "alt": "tab\tinside", "raw": True}]
    entries = list(iter_entries(make_run_dir(tmp_path / "r", rows)))
    assert [e.image_url for e in entries] == ["http://a.org/ok.jpg"]
    assert "wrong number of columns" in caplog.text


def test_corpus_survives_bad_bytes_and_broken_records(tmp_path):
    run_dir = make_run_dir(tmp_path / "r", [{"url": "http://a.org/1.jpg", "score": 3, "alt": "cat"},
                                            {"url": "http://a.org/2.jpg", "score": 4, "alt": "dog"}])
    tsv = run_dir / "images.tsv"
    tsv.write_bytes(tsv.read_bytes().replace(b"\tcat\t", b"\tc\xffat\t"))
    entries = list(iter_entries(run_dir, with_context=False))
    assert [e.alt for e in entries] == ["c\ufffdat", "dog"]
    record = run_dir / entries[1].record_path
    record.write_text("{not json")
    entries = list(iter_entries(run_dir))
    assert entries[1].context_text == "" and entries[0].context_text == "context of http://a.org/1.jpg"


def test_corpus_rejects_non_run_dir(tmp_path):
    with pytest.raises(RunDirError):
        list(iter_entries(tmp_path))


def test_rank_cut_dedupe_first_seen_sort_top(run_dir):
    stats = RankStats()
    ranked = rank(iter_entries(run_dir), stats=stats)
    assert [e.image_url for e in ranked] == [
        "http://a.org/cat2.jpg", "http://a.org/dup.jpg", "http://a.org/cat1.jpg", "http://a.org/cat3.jpg"]
    # dedupe keeps the FIRST sighting (score 30), not the better second one (score 5)
    assert ranked[1].alt == "first sighting" and ranked[1].final_score == 30.0
    assert stats.as_dict() == {"initial": 8, "no_score": 1, "score_cut": 5, "unique": 4,
                               "filtered": {}, "ranked": 4}
    assert [e.image_url for e in rank(iter_entries(run_dir), top=2)] == [
        "http://a.org/cat2.jpg", "http://a.org/dup.jpg"]


def test_rank_bounds_and_filters(run_dir):
    ranked = rank(iter_entries(run_dir), score_min=1, score_max=100000)
    assert {e.image_url for e in ranked} >= {"http://a.org/low.jpg", "http://a.org/high.jpg"}
    stats = RankStats()
    ranked = rank(iter_entries(run_dir), filters={"odd": lambda e: "cat2" in e.image_url}, stats=stats)
    assert "http://a.org/cat2.jpg" not in [e.image_url for e in ranked]
    assert stats.filtered == {"odd": 1}


def test_cli_tsv_export(run_dir, tmp_path, capsys):
    out = tmp_path / "out.tsv"
    assert main(["rank", str(run_dir), "--top", "3", "--format", "tsv", "-o", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ranked"] == 3 and summary["written"] == 3
    lines = out.read_text().splitlines()
    header = lines[0].split("\t")
    assert header[:5] == ["rank", "final_score", "url", "caption", "key"]
    assert "score:alt_pp" in header and "context_text" in header
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:]]
    assert [r["rank"] for r in rows] == ["1", "2", "3"]
    assert rows[2]["context_text"] == "The cat sat." and rows[2]["page_url"] == "http://example.org/p"
    assert rows[0]["score:parent_1_pp"] == "17.25"


def test_cli_jsonl_export_keeps_texts_intact(run_dir, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["rank", str(run_dir), "--format", "jsonl", "-o", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["rank"] for r in records] == [1, 2, 3, 4]
    assert records[-1]["alt"] == "<b>tabby</b> kitten"
    assert records[0]["score:alt_pp"] == 123.5


def test_cli_parquet_export(run_dir, tmp_path, capsys):
    out = tmp_path / "out.parquet"
    assert main(["rank", str(run_dir), "--format", "parquet", "-o", str(out)]) == 0
    table = pq.read_table(out).to_pylist()
    assert [r["url"] for r in table][:2] == ["http://a.org/cat2.jpg", "http://a.org/dup.jpg"]
    assert table[0]["final_score"] == 2.0 and table[0]["score:alt_pp"] == 123.5
    assert table[0]["score:title_wpp"] is None


def test_cli_parquet_without_pyarrow_is_one_clear_line(run_dir, tmp_path, capsys, monkeypatch):
    # None in sys.modules is how Python blocks an import: as if the extra were not installed
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    out = tmp_path / "out.parquet"
    assert main(["rank", str(run_dir), "--format", "parquet", "-o", str(out)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert errors == [
        "focuscrawl rank: error: this needs pyarrow, an optional dependency: pip install 'focuscrawl[parquet]'"]
    assert not out.exists()


def test_cli_webdataset_reads_back_with_webdataset(run_dir, tmp_path, capsys):
    import webdataset as wds
    from PIL import Image

    out = tmp_path / "shards"
    assert main(["rank", str(run_dir), "--format", "webdataset", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == 3  # cat3 has no image file
    shards = sorted(str(p) for p in out.glob("*.tar"))
    assert len(shards) == 1
    samples = list(wds.WebDataset(shards, shardshuffle=False))
    assert len(samples) == 3
    first = samples[0]
    assert first["txt"].decode() == "IMG_0042.jpg"
    meta = json.loads(first["json"])
    assert meta["url"] == "http://a.org/cat2.jpg" and meta["rank"] == 1
    assert Image.open(io.BytesIO(first["jpg"])).size == (40, 30)  # re-encoded: one image key
    with tarfile.open(shards[0]) as tar:
        assert len(tar.getnames()) == 9


def test_cli_drop_generated_alt(run_dir, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["rank", str(run_dir), "--drop-generated-alt", "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["filtered"] == {"generated_alt": 1}
    assert "http://a.org/cat2.jpg" not in out.read_text()


def test_cli_bad_arguments_are_clear_errors(run_dir, tmp_path, capsys):
    assert main(["rank", str(tmp_path / "nope"), "-o", str(tmp_path / "x.tsv")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert main(["rank", str(run_dir), "--min", "5", "--max", "1", "-o", str(tmp_path / "x.tsv")]) == 2


def test_cli_collapse_near_duplicates(tmp_path, capsys):
    long_alt = "a grey tabby cat sleeping on a red woollen blanket next to the window in the sun"
    rows = [{"url": "http://a.org/1.jpg", "score": 9, "alt": long_alt},
            {"url": "http://b.org/1-copy.jpg", "score": 4, "alt": long_alt},  # better-scored copy
            {"url": "http://a.org/2.jpg", "score": 6, "alt": "two kittens playing with a ball of yarn on the floor"}]
    run_dir = make_run_dir(tmp_path / "run", rows)
    # the copy's picture again under another URL (same pixels) with a different text
    import shutil
    from focuscrawl.output.images import url_sha1
    shutil.copy(run_dir / f"images/{url_sha1('http://b.org/1-copy.jpg')}.png",
                run_dir / f"images/{url_sha1('http://a.org/2.jpg')}.png")
    out = tmp_path / "out.jsonl"
    assert main(["rank", str(run_dir), "--collapse-near-duplicates", "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["collapsed"] == 2
    kept = [json.loads(line)["url"] for line in out.read_text().splitlines()]
    assert kept == ["http://b.org/1-copy.jpg"]  # 1.jpg is its text twin, 2.jpg its picture
    shutil.copy(run_dir / f"images/{url_sha1('http://a.org/1.jpg')}.png",
                run_dir / f"images/{url_sha1('http://a.org/2.jpg')}.png")
    assert main(["rank", str(run_dir), "--collapse-near-duplicates", "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["collapsed"] == 1  # 2.jpg now has 1.jpg's (dropped) picture
    assert [json.loads(line)["url"] for line in out.read_text().splitlines()] == [
        "http://b.org/1-copy.jpg", "http://a.org/2.jpg"]
    assert main(["rank", str(run_dir), "--format", "jsonl", "-o", str(out)]) == 0
    assert "collapsed" not in json.loads(capsys.readouterr().out)


def test_flat_pictures_are_compared_by_text_only(tmp_path, capsys):
    from PIL import Image

    from focuscrawl.output.images import url_sha1

    rows = [{"url": f"http://a.org/{i}.jpg", "score": 3 + i, "alt": alt} for i, alt in
            enumerate(["a black cat asleep on the warm sofa cushion", "two dogs running on a sandy beach at dawn"])]
    run_dir = make_run_dir(tmp_path / "run", rows)
    for i, colour in enumerate([(200, 10, 10), (10, 10, 200)]):  # one colour each: identical pHashes
        Image.new("RGB", (40, 30), colour).save(run_dir / f"images/{url_sha1(f'http://a.org/{i}.jpg')}.png")
    out = tmp_path / "out.jsonl"
    assert main(["rank", str(run_dir), "--collapse-near-duplicates", "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["collapsed"] == 0


def test_webdataset_tar_name_gives_numbered_shards_beside_it(run_dir, tmp_path, capsys):
    """``-o X.tar`` made a directory named X.tar; now shards X-000000.tar, ... beside it."""
    import webdataset as wds

    out = tmp_path / "corpus.tar"
    assert main(["rank", str(run_dir), "--format", "webdataset", "-o", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["shards"] == str(tmp_path / "corpus-%06d.tar")
    assert not out.exists() and sorted(p.name for p in tmp_path.glob("*.tar")) == ["corpus-000000.tar"]
    assert len(list(wds.WebDataset([str(tmp_path / "corpus-000000.tar")], shardshuffle=False))) == 3


@pytest.mark.parametrize("fmt", ["tsv", "parquet", "jsonl"])
def test_empty_ranking_keeps_the_schema_and_warns_why(run_dir, tmp_path, capsys, caplog, fmt):
    """Nothing within the score cut: the same columns as a full export (Parquet had 12
    instead of every score column), and a warning with the funnel and the crawl's drops."""
    (run_dir / "stats.json").write_text(json.dumps({"focuscrawl/images/seen": 787, "focuscrawl/images/dropped/no_size": 517,
                                                    "focuscrawl/images/dropped/too_small": 250,
                                                    "focuscrawl/images/failed/http_status": 3, "focuscrawl/pages/written": 9}))
    full, empty = tmp_path / f"full.{fmt}", tmp_path / f"empty.{fmt}"
    assert main(["rank", str(run_dir), "--format", fmt, "-o", str(full)]) == 0
    assert "no image passed" not in caplog.text
    assert main(["rank", str(run_dir), "--min", "1e9", "--max", "2e9", "--format", fmt, "-o", str(empty)]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["written"] == 0
    if fmt == "tsv":
        assert empty.read_text().splitlines() == full.read_text().splitlines()[:1]
    elif fmt == "parquet":
        assert pq.read_schema(empty) == pq.read_schema(full) and len(pq.read_schema(full)) > 12
        assert pq.read_table(empty).num_rows == 0
    else:  # JSON lines: no line, no schema to keep; every record of a full export has every score
        assert empty.read_text() == ""
        records = [json.loads(line) for line in full.read_text().splitlines()]
        assert len({tuple(r) for r in records}) == 1
    warning = next(r.getMessage() for r in caplog.records if "no image passed" in r.getMessage())
    assert "8 images in images.tsv, 1 without a final score, 0 within the score cut [1e+09, 2e+09]" in warning
    assert ("the crawl saw 787 images; its main drop reasons (stats.json): dropped/no_size 517, "
            "dropped/too_small 250, failed/http_status 3") in warning
