"""``focuscrawl demo`` end to end: bundled web, real server, real focused spider, outputs."""
from __future__ import annotations

import json

import pytest

from focuscrawl.cli import main
from focuscrawl.eval.crawl_metrics import read_tsv
from focuscrawl.testweb.textpool import TextPool


def test_bundled_pool_is_small_and_real():
    from importlib import resources

    data = resources.files("focuscrawl.testweb").joinpath("demo_textpool.json.gz").read_bytes()
    assert len(data) < 1_000_000
    pool = TextPool.from_bundle()
    assert len(pool.topic_photos("cat")) >= 100 and len(pool.topic_photos("dog")) >= 100
    assert "Cat" in pool.leads and len(pool.documents) >= 20


@pytest.mark.slow(11)
def test_demo_crawls_the_bundled_web(tmp_path, capsys):
    assert main(["demo", "--pages", "40", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "crawled 40 pages" in out and str(tmp_path / "run") in out
    listed = next(line for line in out.splitlines() if line.startswith("outputs in ")).split(": ", 1)[1].split(", ")
    assert "pages.tsv" in listed and "records" in listed  # the run's files, not its lock or emptied state logs
    assert ".focuscrawl.lock" not in listed and "sightings.log" not in listed
    # the summary every crawl ends with
    assert f"demo crawl summary: 40 pages and " in out and "stopped: page budget reached (40 pages)" in out
    assert "mode learning" in out and (tmp_path / "run" / "link_learner.pkl").exists()  # the default mode
    pages = read_tsv(tmp_path / "run" / "pages.tsv")
    assert len(pages) == 40  # the budget is exact in page rows
    assert all(p["url"].startswith("http://") and ".test/" in p["url"] for p in pages)
    assert (tmp_path / "run" / "images.tsv").exists() and (tmp_path / "web" / "truth_pages.tsv.gz").exists()
    summary = json.loads((tmp_path / "demo.json").read_text())
    assert summary["pages"] == 40 and summary["on_topic_pages"] > 0
    assert summary["funnel"]["initial"] >= summary["funnel"]["language"] >= summary["funnel"]["format"] \
        >= summary["funnel"]["score"] > 0
    # the language column (issue #30): the demo web is English, as the cats bundle
    assert all(p["language"] in ("en", "") for p in pages) and any(p["language"] == "en" for p in pages)
    assert "languages (column language of pages.tsv, images.tsv, the exports" in out and "pages en " in out
    on_topic = summary["score_cut"]["on_topic"]
    assert on_topic["images"] == on_topic["below"] + on_topic["above"] + on_topic["kept"] > 0
    # the ranking by the cats bundle's P(cat) and SPEC's cut, side by side
    assert f"of the {on_topic['images']} images that show a cat" in out
    assert f"[2, 70000] keeps {on_topic['kept']})" in out
    assert summary["ranking"] == "combined" and "top_thesis" in summary
    # near-duplicates are collapsed as `focuscrawl rank` does by default, and the demo says so
    assert f"near-duplicates: {summary['collapsed']} collapsed into a better-ranked twin" in out
