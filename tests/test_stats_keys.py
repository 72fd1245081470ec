"""One stats-key scheme, ``focuscrawl/<area>/<name>`` (issue #17): every stat focuscrawl
writes is named so, and eval, rank and merge read a run's stats by these names."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import focuscrawl
from focuscrawl.eval.crawl_metrics import Run, image_funnel
from focuscrawl.output.merge import merge_runs
from focuscrawl.output.stats import read_stats
from focuscrawl.pipelines.writers import PAGE_COLUMNS
from focuscrawl.ranking import _crawl_drops_text, run_topic_bundle
from focuscrawl.resources import default_topic_path

PACKAGE = Path(focuscrawl.__file__).parent
STATS_METHODS = {"inc_value", "set_value", "max_value", "min_value"}

#: a run's stats.json
NEW = {"focuscrawl/images/seen": 20, "focuscrawl/images/dropped/no_alt_title": 6,
       "focuscrawl/images/dropped/size_unspecified": 4, "focuscrawl/images/dropped/format": 2,
       "focuscrawl/images/kept": 8, "focuscrawl/images/failed/http_status": 3, "focuscrawl/pages/written": 2,
       "focuscrawl/sentences/written": 7, "focuscrawl/pages/crawled": 3, "focuscrawl/pages/without_text": 1,
       "focuscrawl/budget/reached": 2, "focuscrawl/frontier/recovered": 4, "focuscrawl/neardup/near_duplicates": 1,
       "focuscrawl/warc/records": 5, "focuscrawl/archive/missing": 1, "focuscrawl/lm/queries": 9,
       "focuscrawl/redis/throttle_requests": 6, "focuscrawl/redis/idle_waits": 2, "focuscrawl/links/found": 11,
       "focuscrawl/scope/host_limit": 1, "downloader/response_count": 5, "elapsed_time_seconds": 1.5,
       "finish_reason": "finished"}


def _run(folder: Path, stats: dict) -> Path:
    folder.mkdir()
    rows = ["\t".join(PAGE_COLUMNS)] + [f"http://c.test/{i}\t0\t200\tc.test" + "\t" * (len(PAGE_COLUMNS) - 4)
                                        for i in (1, 2)]
    (folder / "pages.tsv").write_text("\n".join(rows) + "\n")
    (folder / "stats.json").write_text(json.dumps(stats))
    return folder


def test_read_stats(tmp_path):
    assert read_stats(_run(tmp_path / "new", NEW) / "stats.json") == NEW
    (tmp_path / "list.json").write_text("[1, 2]")
    try:
        read_stats(tmp_path / "list.json")
    except ValueError as exc:
        assert "not a JSON object" in str(exc)
    else:
        raise AssertionError("a JSON list is not a stats file")


def test_eval_rank_and_merge_read_a_runs_stats(tmp_path):
    run = _run(tmp_path / "run", NEW)
    assert image_funnel(Run.load(run)) == {"initial": 10, "language": 10, "format": 8, "score": 0, "unique": 0}
    assert "20 images; its main drop reasons (stats.json): dropped/no_alt_title 6" in _crawl_drops_text(run)
    bundle = str(default_topic_path())
    (run / "stats.json").write_text(json.dumps({**NEW, "focuscrawl/topic/bundle": bundle}))
    assert run_topic_bundle(run) == bundle
    merge_runs([run, _run(tmp_path / "other", NEW)], tmp_path / "merged")
    parts = json.loads((tmp_path / "merged" / "stats.json").read_text())["parts"]
    assert parts["run"]["focuscrawl/topic/bundle"] == bundle and parts["other"] == NEW


def _written_keys(tree: ast.AST):
    """(line, key or key prefix) of every literal first argument of a stats call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STATS_METHODS \
                and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield node.lineno, arg.value
            elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                yield node.lineno, arg.values[0].value
            elif isinstance(arg, ast.JoinedStr):
                yield node.lineno, "{...}"


def test_every_stat_focuscrawl_writes_is_focuscrawl_area_name():
    found, wrong = 0, []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, key in _written_keys(ast.parse(path.read_text(encoding="utf-8"))):
            found += 1
            parts = key.split("/")
            if parts[0] != "focuscrawl" or len(parts) < 3 or not parts[1]:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {key}")
    assert found > 50 and wrong == []


def test_lm_counters_are_in_the_scheme(cats_scorer):
    cats_scorer.score("the cat sleeps")
    assert set(cats_scorer.counters()) == {"focuscrawl/lm/queries", "focuscrawl/lm/cache_hits",
                                           "focuscrawl/lm/cache_misses"}
