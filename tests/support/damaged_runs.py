"""Damaged run directories for ``focuscrawl rank``: info records of the wrong
shape, stats.json that cannot say which topic bundle the crawl used, broken image logs.

``damaged_run_corpus(dir)`` -> {name: {"path", "exit", "damaged"}}: what ``rank`` must do
with each (exit 0 with ``damaged`` records skipped and counted, or exit 2 with one
clear line), never a traceback. Used by tests/test_ranking.py and
``benchmarks/hostile_corpus.py``.
"""
from __future__ import annotations

import json
from pathlib import Path

from focuscrawl.output.records import record_path
from tests.support.runfixture import make_run_dir

ROWS = [{"url": f"http://a.test/{i}.jpg", "score": 3 + i, "alt": alt, "context": f"cat number {i} on the sofa"}
        for i, alt in enumerate(["a grey cat asleep on the sofa", "two kittens playing with a ball of yarn",
                                 "an old tabby cat sitting in the garden sun", "a black cat on a red blanket"])]
BAD_RECORDS = {"list": "[]", "sightings_int": '{"sightings": 5}', "sighting_int": '{"sightings": [5]}',
               "contexts_int": '{"sightings": [{"contexts": 3}]}', "context_int": '{"contexts": [1]}',
               "extras_list": '{"extra_contexts": []}', "truncated": '{"image_url": "http://a.te', "null": "null",
               "string": '"text"', "empty": "", "binary": "\x00\xff\xfe"}
BAD_STATS = {"stats_missing": None, "stats_not_json": "{not json", "stats_list": "[1, 2]",
             "stats_bundle_gone": json.dumps({"focuscrawl/topic/bundle": "/gone/bundle"}),
             "stats_parts_disagree": json.dumps({"parts": {"a": {"focuscrawl/topic/bundle": "/one"},
                                                           "b": {"focuscrawl/topic/bundle": "/two"}}})}


def damaged_run_corpus(root: Path) -> dict[str, dict]:
    corpus: dict[str, dict] = {}
    for name, text in BAD_RECORDS.items():
        run = make_run_dir(root / f"record_{name}", ROWS)
        (run / record_path(ROWS[1]["url"])).write_text(text, encoding="utf-8", errors="surrogateescape")
        corpus[f"record_{name}"] = {"path": run, "exit": 0, "damaged": 1}
    run = make_run_dir(root / "record_escapes", ROWS)  # a record path that leaves the run directory
    tsv = run / "images.tsv"
    tsv.write_text(tsv.read_text().replace(record_path(ROWS[2]["url"]), "../../../etc/passwd"))
    corpus["record_escapes"] = {"path": run, "exit": 0, "damaged": 1}
    run = make_run_dir(root / "record_missing", ROWS)
    (run / record_path(ROWS[3]["url"])).unlink()
    corpus["record_missing"] = {"path": run, "exit": 0, "damaged": 1}
    for name, text in BAD_STATS.items():
        run = make_run_dir(root / name, ROWS)
        if text is None:
            (run / "stats.json").unlink()
        else:
            (run / "stats.json").write_text(text)
        corpus[name] = {"path": run, "exit": 2, "damaged": None}
    run = make_run_dir(root / "images_tsv_missing", ROWS)
    (run / "images.tsv").unlink()
    corpus["images_tsv_missing"] = {"path": run, "exit": 2, "damaged": None}
    run = make_run_dir(root / "images_tsv_no_header", ROWS)
    (run / "images.tsv").write_bytes(b"\xff\xfe garbage\n")
    corpus["images_tsv_no_header"] = {"path": run, "exit": 2, "damaged": None}
    return corpus
