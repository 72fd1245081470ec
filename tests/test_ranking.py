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
from tests.support import warmfork

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
                               "filtered": {}, "ranked": 4, "damaged_records": 0}
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
    assert main(["rank", "--json", str(run_dir), "--top", "3", "--format", "tsv", "-o", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ranked"] == 3 and summary["written"] == 3
    lines = out.read_text().splitlines()
    header = lines[0].split("\t")
    assert header[:6] == ["rank", "p_on_topic", "final_score", "url", "caption", "key"]
    assert "score:alt_pp" in header and "context_text" in header
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:]]
    assert [r["rank"] for r in rows] == ["1", "2", "3"]
    assert rows[2]["context_text"] == "The cat sat." and rows[2]["page_url"] == "http://example.org/p"
    assert rows[0]["score:parent_1_pp"] == "17.25"


def test_cli_jsonl_export_keeps_texts_intact(run_dir, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["rank", "--json", str(run_dir), "--format", "jsonl", "-o", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["rank"] for r in records] == [1, 2, 3, 4]
    assert records[-1]["alt"] == "<b>tabby</b> kitten"
    assert records[0]["score:alt_pp"] == 123.5


def test_cli_parquet_export(run_dir, tmp_path, capsys):
    out = tmp_path / "out.parquet"
    assert main(["rank", "--json", str(run_dir), "--format", "parquet", "-o", str(out)]) == 0
    table = pq.read_table(out).to_pylist()
    assert [r["url"] for r in table][:2] == ["http://a.org/cat2.jpg", "http://a.org/dup.jpg"]
    assert table[0]["final_score"] == 2.0 and table[0]["score:alt_pp"] == 123.5
    assert table[0]["score:title_wpp"] is None


def test_cli_parquet_without_pyarrow_is_one_clear_line(run_dir, tmp_path, capsys, monkeypatch):
    # None in sys.modules is how Python blocks an import: as if the extra were not installed
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    out = tmp_path / "out.parquet"
    assert main(["rank", "--json", str(run_dir), "--format", "parquet", "-o", str(out)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert errors == [
        "focuscrawl rank: error: this needs pyarrow, an optional dependency: pip install 'focuscrawl[parquet]'"]
    assert not out.exists()


def test_cli_webdataset_reads_back_with_webdataset(run_dir, tmp_path, capsys):
    import webdataset as wds
    from PIL import Image

    out = tmp_path / "shards"
    assert main(["rank", "--json", str(run_dir), "--format", "webdataset", "-o", str(out)]) == 0
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
    assert main(["rank", "--json", str(run_dir), "--drop-generated-alt", "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["filtered"] == {"generated_alt": 1}
    assert "http://a.org/cat2.jpg" not in out.read_text()


def test_cli_bad_arguments_are_clear_errors(run_dir, tmp_path, capsys):
    assert main(["rank", "--json", str(tmp_path / "nope"), "-o", str(tmp_path / "x.tsv")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert main(["rank", "--json", str(run_dir), "--min", "5", "--max", "1", "-o", str(tmp_path / "x.tsv")]) == 2


def test_cli_collapses_near_duplicates_by_default(tmp_path, capsys):
    long_alt = "a grey tabby cat sleeping on a red woollen blanket next to the window in the sun"
    rows = [{"url": "http://a.org/1.jpg", "score": 9, "alt": long_alt},
            {"url": "http://b.org/1-copy.jpg", "score": 4, "alt": long_alt},  # better-scored copy
            {"url": "http://a.org/2.jpg", "score": 6, "alt": "two kittens playing with a ball of yarn on the floor"}]
    run_dir = make_run_dir(tmp_path / "run", rows)
    # the copy's picture again under another URL (same pixels) with a different text
    import shutil
    from focuscrawl.output.records import url_sha1
    shutil.copy(run_dir / f"images/{url_sha1('http://b.org/1-copy.jpg')}.png",
                run_dir / f"images/{url_sha1('http://a.org/2.jpg')}.png")
    out = tmp_path / "out.jsonl"
    assert main(["rank", "--json", str(run_dir), "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["collapsed"] == 2
    kept = [json.loads(line)["url"] for line in out.read_text().splitlines()]
    assert kept == ["http://b.org/1-copy.jpg"]  # 1.jpg is its text twin, 2.jpg its picture
    shutil.copy(run_dir / f"images/{url_sha1('http://a.org/1.jpg')}.png",
                run_dir / f"images/{url_sha1('http://a.org/2.jpg')}.png")
    assert main(["rank", "--json", str(run_dir), "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["collapsed"] == 1  # 2.jpg now has 1.jpg's (dropped) picture
    assert [json.loads(line)["url"] for line in out.read_text().splitlines()] == [
        "http://b.org/1-copy.jpg", "http://a.org/2.jpg"]
    assert main(["rank", "--json", str(run_dir), "--keep-duplicates", "--format", "jsonl", "-o", str(out)]) == 0
    assert "collapsed" not in json.loads(capsys.readouterr().out)
    assert len(out.read_text().splitlines()) == 3


def flat_png(colour: tuple[int, int, int]) -> bytes:
    """A one-colour 40x30 PNG (no perceptual hash)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40, 30), colour).save(buf, "PNG")
    return buf.getvalue()


def test_flat_pictures_are_compared_by_text_only(tmp_path, capsys):
    from PIL import Image

    from focuscrawl.output.records import url_sha1

    rows = [{"url": f"http://a.org/{i}.jpg", "score": 3 + i, "alt": alt, "image": flat_png(colour)} for i, (alt, colour) in
            enumerate([("a black cat asleep on the warm sofa cushion", (200, 10, 10)),  # one colour each: identical pHashes
                       ("two dogs running on a sandy beach at dawn", (10, 10, 200))])]
    run_dir = make_run_dir(tmp_path / "run", rows)
    out = tmp_path / "out.jsonl"
    assert main(["rank", "--json", str(run_dir), "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["collapsed"] == 0


def test_webdataset_tar_name_gives_numbered_shards_beside_it(run_dir, tmp_path, capsys):
    """``-o X.tar`` made a directory named X.tar; now shards X-000000.tar, ... beside it."""
    import webdataset as wds

    out = tmp_path / "corpus.tar"
    assert main(["rank", "--json", str(run_dir), "--format", "webdataset", "-o", str(out)]) == 0
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
    assert main(["rank", "--json", str(run_dir), "--format", fmt, "-o", str(full)]) == 0
    assert "no image passed" not in caplog.text
    assert main(["rank", "--json", str(run_dir), "--min", "1e9", "--max", "2e9", "--format", fmt, "-o", str(empty)]) == 0
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


# -- scorer selection, damaged runs, duplicates, the summary (issues #27, #31) -------------
def test_an_asked_scorer_that_cannot_run_is_an_error(run_dir, tmp_path, capsys, monkeypatch):
    """``--scoring classifier`` on a crawl without a bundle exited 0 and ranked by SPEC."""
    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    out = tmp_path / "x.tsv"
    assert main(["rank", str(run_dir), "--scoring", "classifier", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["focuscrawl rank: error: scoring 'classifier' needs a topic bundle and the crawl used none "
                   "(stats.json): give --topic DIR, or --scoring thesis"]
    assert not out.exists()
    monkeypatch.setenv("FOCUSCRAWL_SCORING", "combined")  # asked for through the environment: the same
    assert main(["rank", str(run_dir), "-o", str(out)]) == 2
    monkeypatch.delenv("FOCUSCRAWL_SCORING")
    assert main(["rank", "--json", str(run_dir), "-o", str(out)]) == 0  # the default: SPEC, said on stderr
    assert json.loads(capsys.readouterr().out)["scoring"] == "thesis"


@pytest.mark.parametrize("stats", [None, "{not json", "[1, 2]", '{"focuscrawl/topic/bundle": "/gone/bundle"}'])
def test_a_run_that_cannot_say_its_bundle_is_refused(tmp_path, capsys, monkeypatch, stats):
    """stats.json missing, invalid or naming a bundle that is gone: the run (crawled with a bundle)
    was silently ranked by SPEC. Refused unless --topic or --scoring thesis says how."""
    from focuscrawl.resources import default_topic_path

    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    run_dir = make_run_dir(tmp_path / "run", ROWS)
    if stats is None:
        (run_dir / "stats.json").unlink()
    else:
        (run_dir / "stats.json").write_text(stats)
    out = tmp_path / "x.tsv"
    assert main(["rank", str(run_dir), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("focuscrawl rank: error: ") and "--topic DIR" in err[0]
    assert ("is gone" if "gone" in (stats or "") else "stats.json") in err[0]
    assert not out.exists()
    assert main(["rank", "--json", str(run_dir), "--scoring", "thesis", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["scoring"] == "thesis"
    assert main(["rank", "--json", str(run_dir), "--topic", str(default_topic_path()), "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["scoring"] == "combined"


def test_a_merged_run_ranks_with_its_parts_bundle(tmp_path, capsys, monkeypatch):
    from focuscrawl.resources import default_topic_path

    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    bundle = str(default_topic_path())
    run_dir = make_run_dir(tmp_path / "run", ROWS, stats={"parts": {"a": {"focuscrawl/topic/bundle": bundle},
                                                                     "b": {"focuscrawl/topic/bundle": bundle}}})
    assert main(["rank", "--json", str(run_dir), "-o", str(tmp_path / "x.tsv")]) == 0
    assert json.loads(capsys.readouterr().out)["topic"] == bundle


DAMAGED_RECORDS = ["[]", '{"sightings": 5}', '{"sightings": [5]}', '{"sightings": [{"contexts": 3}]}',
                   '{"sightings": [{"contexts": [1]}]}', '{"extra_contexts": []}', '{"image_url": "http://a.o',
                   "null", '"text"', ""]


@pytest.mark.parametrize("scoring", ["thesis", "combined"])
def test_damaged_info_records_are_skipped_with_a_count(tmp_path, capsys, caplog, monkeypatch, scoring):
    """A record of the wrong shape crashed the whole ranking (4 of 7 shapes): now each is skipped
    (its image ranked without context text), counted, and warned about in one line."""
    from focuscrawl.output.records import record_path
    from focuscrawl.resources import default_topic_path

    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    rows = [{"url": f"http://a.org/{i}.jpg", "score": 3 + i, "alt": "a cat", "context": f"a grey cat number {i} asleep"}
            for i in range(len(DAMAGED_RECORDS) + 2)]
    run_dir = make_run_dir(tmp_path / "run", rows)
    for i, text in enumerate(DAMAGED_RECORDS):
        (run_dir / record_path(f"http://a.org/{i}.jpg")).write_text(text)
    out = tmp_path / "x.jsonl"
    assert main(["rank", "--json", str(run_dir), "--scoring", scoring, "--topic", str(default_topic_path()),
                 "--min", "0", "--keep-duplicates", "--format", "jsonl", "-o", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["damaged_records"] == len(DAMAGED_RECORDS) and summary["written"] == len(rows)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [f"rank: skipped {len(DAMAGED_RECORDS)} damaged info record(s) (unreadable or of the wrong "
                        "shape); their images were ranked without context text"]
    texts = {r["url"]: r["context_text"] for r in map(json.loads, out.read_text().splitlines())}
    assert texts["http://a.org/0.jpg"] == "" and texts[f"http://a.org/{len(rows) - 1}.jpg"] == f"a grey cat number {len(rows) - 1} asleep"


def test_exact_and_near_duplicate_texts_collapse_by_default_in_ranking_order(tmp_path, capsys, monkeypatch):
    """The demo's top 5 showed "A cat eating a bird it has caught." twice. With a bundle (high
    to low) the better-ranked twin stays and the order stays high to low (the collapse sorted
    ascending, keeping the *worst* twin first)."""
    from PIL import Image

    from focuscrawl.output.records import url_sha1
    from focuscrawl.resources import default_topic_path

    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    rows = [{"url": "http://a.org/1.jpg", "score": 5, "alt": "A cat eating a bird it has caught.",
             "context": "my cat and its catch"},
            {"url": "http://b.org/2.jpg", "score": 4, "alt": "A cat eating a bird it has caught.",
             "context": "the news of the day: politics, sport and weather"},
            {"url": "http://c.org/3.jpg", "score": 3, "alt": "a grey kitten asleep in a basket of yarn",
             "context": "kittens"},
            {"url": "http://d.org/4.jpg", "score": 6, "alt": "a grey kitten asleep in a basket of yarn!",
             "context": "kittens"},
            # texts that say nothing of the picture: different pictures, not duplicates
            {"url": "http://e.org/5.jpg", "score": 7, "alt": "wp-content-uploads-2012-09-img_1081", "context": "cats"},
            {"url": "http://e.org/6.jpg", "score": 7, "alt": "wp-content-uploads-2012-09-img_1082", "context": "cats"},
            {"url": "http://e.org/7.jpg", "score": 7, "alt": "Cat", "context": "cats"},
            {"url": "http://e.org/8.jpg", "score": 7, "alt": "Cat", "context": "cats"}]
    for i, row in enumerate(rows):  # flat pictures: compared by text only
        row["image"] = flat_png((i * 30, 10, 10))
    run_dir = make_run_dir(tmp_path / "run", rows)
    out = tmp_path / "x.jsonl"
    args = ["rank", "--json", str(run_dir), "--topic", str(default_topic_path()), "--min", "0",
            "--format", "jsonl", "-o", str(out)]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["collapsed"] == 2
    records = [json.loads(line) for line in out.read_text().splitlines()]
    kept = {r["url"] for r in records}
    assert "http://b.org/2.jpg" not in kept and "http://d.org/4.jpg" not in kept and len(kept) == 6
    scores = [r["p_on_topic"] for r in records]
    assert scores == sorted(scores, reverse=True)
    assert main(args + ["--keep-duplicates"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == 8
    full = {json.loads(line)["url"]: json.loads(line)["p_on_topic"] for line in out.read_text().splitlines()}
    assert full["http://a.org/1.jpg"] > full["http://b.org/2.jpg"]  # the cat context: the better twin stayed


def test_rank_prints_a_short_summary_for_people(run_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    out = tmp_path / "x.tsv"
    assert main(["rank", str(run_dir), "--top", "3", "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"rank: 3 images written to {out} (tsv)",
                     "  ranked by SPEC's weighted perplexity, ascending, cut [2, 70000]",
                     "  8 images in images.tsv -> 5 within the cut -> 4 distinct URLs -> 0 near-duplicates collapsed "
                     "-> 3 ranked (the first 3: --top)",
                     "  1 images without a score (no words to score) were left out",
                     f"  image_path: relative to the run directory {run_dir.resolve()}",
                     f"  dataset card (sources, licences, opt-outs): {tmp_path / 'README.md'}"]


def test_rank_over_the_damaged_run_corpus_never_crashes(tmp_path, capsys, monkeypatch):
    """Every damaged run directory: exit 0 with the damaged records counted, or exit 2 with one
    clear line; never a traceback, never a half-written export."""
    from tests.support.damaged_runs import damaged_run_corpus

    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    for name, case in damaged_run_corpus(tmp_path / "runs").items():
        out = tmp_path / f"{name}.jsonl"
        assert main(["rank", "--json", str(case["path"]), "--format", "jsonl", "-o", str(out)]) == case["exit"], name
        captured = capsys.readouterr()
        if case["exit"] == 0:
            assert json.loads(captured.out)["damaged_records"] == case["damaged"], name
        else:
            lines = captured.err.strip().splitlines()
            errors = [line for line in lines if "error" in line]
            assert errors == lines[-1:] and errors[0].startswith("focuscrawl rank: error: "), (name, lines)
            assert "Traceback" not in captured.err and not out.exists(), name


@pytest.mark.parametrize("fmt", ["jsonl", "webdataset"])
def test_image_files_deleted_or_truncated_after_the_crawl_are_said_in_one_line_and_exit_1(tmp_path, capsys, caplog,
                                                                                          monkeypatch, fmt):
    """A downloaded file deleted from the run directory was exported as "failed to download"
    and a truncated one as a success (without image bytes) or a Pillow error, with exit 0. Now
    each row says what happened to the file, one warning line counts them, the export is
    whole, and the exit code is 1."""
    from focuscrawl.output.records import url_sha1

    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    from tests.support.damaged_runs import ROWS

    run_dir = make_run_dir(tmp_path / "run", ROWS)
    deleted, truncated = (run_dir / f"images/{url_sha1(ROWS[i]['url'])}.png" for i in (0, 2))
    deleted.unlink()
    size = truncated.stat().st_size
    truncated.write_bytes(truncated.read_bytes()[:100])
    out = tmp_path / ("x.tar" if fmt == "webdataset" else "x.jsonl")
    assert main(["rank", "--json", str(run_dir), "--keep-duplicates", "--format", fmt, "-o", str(out),
                 "--jobs", "1"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["damaged_image_files"] == 2
    assert summary["status"] == {"success": 2, "failed_to_download": 1, "failed_to_resize": 1}
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "rank:" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith("rank: 2 downloaded image file(s) are missing or truncated")
    missing = f"the downloaded file {deleted.relative_to(run_dir)} is missing from the run directory"
    cut = f"the downloaded file {truncated.relative_to(run_dir)} has 100 of the {size} bytes the crawl wrote"
    if fmt == "webdataset":  # samples without an image are counted in the shard's stats, as img2dataset does
        shard_stats = json.loads(out.with_name("x-000000_stats.json").read_text())
        assert shard_stats["status_dict"] == {missing: 1, cut: 1} and shard_stats["successes"] == 2
        return
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    status = {r["url"]: (r["status"], r["error_message"]) for r in rows}
    assert len(rows) == len(ROWS) and status[ROWS[0]["url"]] == ("failed_to_download", missing)
    assert status[ROWS[2]["url"]] == ("failed_to_resize", cut)
    assert {status[ROWS[i]["url"]][0] for i in (1, 3)} == {"success"}


def test_rank_prints_the_shards_it_wrote_not_their_pattern(run_dir, tmp_path, capsys):
    out = tmp_path / "corpus.tar"
    assert main(["rank", str(run_dir), "--format", "webdataset", "--shard-size", "1", "-o", str(out)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    shards = sorted(str(p) for p in tmp_path.glob("corpus-*.tar"))
    assert len(shards) == 3 and "%" not in first
    assert first == f"rank: 3 images written to 3 files: {', '.join(shards)} (webdataset)"


def test_rank_shows_its_progress_on_a_terminal_only(run_dir, tmp_path):
    """A long export said nothing for 30-40 s: on a terminal its stderr shows the images done."""
    import os
    import pty
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "focuscrawl.cli", "rank", str(run_dir), "--format", "jsonl", "-o",
           str(tmp_path / "x.jsonl")]
    env = dict(os.environ, FOCUSCRAWL_SCORING="thesis")
    master, slave = pty.openpty()
    proc = warmfork.run(cmd, stdout=subprocess.PIPE, stderr=slave, env=env, timeout=120)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal's other end is closed: all read
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.returncode == 0
    n = len((tmp_path / "x.jsonl").read_text().splitlines())
    assert n and f"rank: jsonl: {n}/{n} images (100%)".encode() in seen, seen
    piped = warmfork.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert piped.returncode == 0 and "images (" not in piped.stderr  # not a terminal: quiet
