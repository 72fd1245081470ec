"""The eval report's computations on tiny hand-made runs (numbers checked by hand)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from focuscrawl.eval.crawl_metrics import (Run, Truth, crawl_statistics, focus_curve, harvest_curve, image_funnel,
                                           prefix_sizes, ranked_images, score_cut_by_truth, top_n_shares)
from focuscrawl.eval.crawl_report import build_report

PAGE_COLS = ["url", "depth", "status", "host", "size", "fetched_at", "perplexity", "keyword_score"]
IMAGE_COLS = ["image_url", "page_url", "alt", "image_format", "final_score"]


def write_tsv(path: Path, cols: list[str], rows: list[list], gz: bool = False) -> None:
    text = "\t".join(cols) + "\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows)
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())


def make_run(folder: Path, pages: list[str], images: list[tuple], sentences: list[str]) -> Path:
    folder.mkdir(parents=True)
    write_tsv(folder / "pages.tsv", PAGE_COLS,
              [[u, 0, 200, u.split("/")[2], 1000, 100.0 + k, 50, 0.1] for k, u in enumerate(pages)])
    write_tsv(folder / "images.tsv", IMAGE_COLS, [list(r) for r in images])
    (folder / "sentences.txt.gz").write_bytes(gzip.compress(("\n".join(sentences) + "\n").encode()))
    (folder / "stats.json").write_text(json.dumps({"elapsed_time_seconds": 4.0, "downloader/response_count": 8}))
    return folder


@pytest.fixture
def evaldir(tmp_path: Path) -> Path:
    web = tmp_path / "web"
    web.mkdir()
    write_tsv(web / "truth_pages.tsv.gz", ["url", "on_topic"],
              [["http://c.test/1", 1], ["http://c.test/2", 1], ["http://o.test/1", 0], ["http://o.test/2", 0]], gz=True)
    write_tsv(web / "truth_images.tsv.gz", ["url", "shows_topic", "alt_describes"],
              [["http://c.test/a.jpg", 1, 1], ["http://c.test/b.png", 1, 0], ["http://o.test/x.jpg", 0, 1],
               ["http://o.test/y.gif", 0, 0], ["http://c.test/w.webp", 1, 1]], gz=True)
    runs = tmp_path / "runs"
    make_run(runs / "keywords", ["http://c.test/1", "http://c.test/2", "http://o.test/1"], [
        ("http://c.test/a.jpg", "http://c.test/1", "a cat", "jpg", 10),
        ("http://c.test/b.png", "http://c.test/1", "img", "png", 20),
        ("http://c.test/a.jpg", "http://c.test/2", "a cat", "jpg", 10),  # same URL again: one unique
        ("http://o.test/x.jpg", "http://o.test/1", "bus", "jpg", 1.5),  # below the score cut
    ], ["the cat sat on the mat"] * 3)
    make_run(runs / "document", ["http://c.test/1", "http://o.test/1", "http://o.test/2"], [
        ("http://c.test/a.jpg", "http://c.test/1", "a cat", "jpg", 30),
        ("http://o.test/x.jpg", "http://o.test/1", "bus", "jpg", 10),
    ], ["a bus in the street today"] * 2)
    make_run(runs / "unfocused", ["http://o.test/1", "http://o.test/2", "http://c.test/1"], [
        ("http://o.test/x.jpg", "http://o.test/1", "bus", "jpg", 10),
        ("http://o.test/y.gif", "http://o.test/2", "", "gif", 100),
        ("http://c.test/a.jpg", "http://c.test/1", "a cat", "jpg", 90000),  # above the cut
    ], [])
    return tmp_path


def test_funnel_ranking_and_shares(evaldir):
    truth = Truth.load(evaldir / "web")
    run = Run.load(evaldir / "runs" / "keywords")
    assert image_funnel(run) == {"initial": 4, "language": 4, "format": 4, "score": 3, "unique": 2}
    ranked = ranked_images(run)
    assert [e.image_url for e in ranked] == ["http://c.test/a.jpg", "http://c.test/b.png"]
    assert top_n_shares(ranked, truth, 10) == {"n": 2, "on_topic": 1.0, "alt_describes": 0.5,
                                                "on_topic_and_alt_describes": 0.5}
    assert score_cut_by_truth(run, truth) == {  # a.jpg once (first sighting), x.jpg below 2
        "on_topic": {"images": 2, "below": 0, "above": 0, "kept": 2},
        "off_topic": {"images": 1, "below": 1, "above": 0, "kept": 0}}
    unfocused = score_cut_by_truth(Run.load(evaldir / "runs" / "unfocused"), truth)
    assert unfocused["on_topic"] == {"images": 1, "below": 0, "above": 1, "kept": 0}
    assert score_cut_by_truth(run, truth, (0.0, 15.0))["on_topic"] == {"images": 2, "below": 0, "above": 1, "kept": 1}
    doc = ranked_images(Run.load(evaldir / "runs" / "document"))
    assert top_n_shares(doc, truth, 1)["on_topic"] == 0.0  # the bus scored better than the cat
    assert top_n_shares([], truth, 5)["on_topic"] is None


def test_harvest_curve_and_budget(evaldir):
    truth = Truth.load(evaldir / "web")
    run = Run.load(evaldir / "runs" / "keywords")
    assert harvest_curve(run, truth) == {"on_topic_pages": [1, 2, 2], "on_topic_images": [2, 2, 2]}
    cut = Run.load(evaldir / "runs" / "keywords", budget=1)
    assert len(cut.pages) == 1 and {r["page_url"] for r in cut.images} == {"http://c.test/1"}


def test_focus_curve_and_statistics(evaldir):
    # every sentence of 4 words scores log10 p = -5 over 5 tokens: PP = 10
    curve = focus_curve(["a b c d"] * 250, lambda s: -5.0)
    assert [n for n, _ in curve] == [100, 200, 250]
    assert all(abs(pp - 10.0) < 1e-9 for _, pp in curve)
    assert focus_curve([], lambda s: -1.0) == []
    assert prefix_sizes(1200) == [100, 200, 500, 1000, 1200]
    stats = crawl_statistics(Run.load(evaldir / "runs" / "keywords"))
    assert stats["sentences"] == 3 and stats["tokens"] == 18 and stats["hosts"] == 2
    assert stats["uris"] == 8 and stats["uris_per_s"] == 2.0 and stats["volume_bytes"] == 3000


def test_report_files_and_ratios(evaldir, toy_arpa):
    summary = build_report(evaldir, top_n=2, model=str(toy_arpa))
    runs = summary["runs"]
    assert runs["keywords"]["top_n"]["on_topic"] == 1.0
    assert runs["document"]["top_n"]["on_topic"] == 0.5
    assert runs["unfocused"]["top_n"]["on_topic"] == 0.0
    assert summary["ratios"]["keywords_over_document"] == 2.0
    assert summary["ratios"]["keywords_over_unfocused"] is None  # no division by zero
    assert summary["thesis_ordering_holds"] is True
    for name in ("harvest_pages", "harvest_images", "focus", "top_n", "precision_at_n"):
        png = evaldir / "report" / summary["files"][name]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (evaldir / "report" / summary["files"]["html"]).read_text()
    assert "Image funnel" in html and "top_n.png" in html and "unfocused holds: yes" in html
    assert "score cut [2, 70000] by ground truth" in html
    assert json.loads((evaldir / "report" / summary["files"]["summary"]).read_text())["runs"]["keywords"]["funnel"]["unique"] == 2


def test_report_without_ground_truth(evaldir, toy_arpa):
    import shutil

    shutil.rmtree(evaldir / "web")
    summary = build_report(evaldir, model=str(toy_arpa))
    assert summary["ground_truth"] is False and "ratios" not in summary
    assert "top_n" not in summary["runs"]["keywords"] and "harvest_pages" not in summary["files"]
    assert summary["runs"]["keywords"]["statistics"]["sentences"] == 3
    assert (evaldir / "report" / summary["files"]["focus"]).exists()


def test_funnel_from_stats_and_records(tmp_path):
    run_dir = make_run(tmp_path / "run", ["http://c.test/1", "http://c.test/2"], [], ["a cat"])
    rec = tmp_path / "run" / "records" / "ab"
    rec.mkdir(parents=True)
    # one image seen on two pages: scores 10 (kept) and 80000 (cut); another one with score 1 (cut)
    (rec / "a.json").write_text(json.dumps({"sightings": [
        {"page_url": "http://c.test/1", "final_score": 10.0}, {"page_url": "http://c.test/2", "final_score": 80000}]}))
    (rec / "b.json").write_text(json.dumps({"sightings": [{"page_url": "http://c.test/2", "final_score": 1.0}]}))
    write_tsv(run_dir / "images.tsv", IMAGE_COLS + ["record_path"], [
        ["http://c.test/a.jpg", "http://c.test/1", "cat", "jpg", 10.0, "records/ab/a.json"],
        ["http://c.test/b.jpg", "http://c.test/2", "cat", "jpg", 1.0, "records/ab/b.json"]])
    (run_dir / "stats.json").write_text(json.dumps({
        "focuscrawl/images/seen": 23, "focuscrawl/images/dropped/no_alt_title": 6, "focuscrawl/images/dropped/size_unspecified": 4,
        "focuscrawl/images/dropped/other_language": 3, "focuscrawl/images/dropped/format": 2,
        "focuscrawl/images/kept": 8}))
    # the language filter (issue #30) between the HTML rules and the format filter
    assert image_funnel(Run.load(run_dir)) == {"initial": 13, "language": 10, "format": 8, "score": 1, "unique": 1}
    only_first = Run.load(run_dir, budget=1)
    assert only_first.sightings == [("http://c.test/a.jpg", 10.0)]
    for damaged in ("[]", '{"sightings": 5}', '{"sightings": [5]}', '{"sight'):  # crashed the report
        (rec / "b.json").write_text(damaged)  # the images.tsv row's score stands in
        assert Run.load(run_dir).sightings[-1] == ("http://c.test/b.jpg", 1.0)


# -- the report stands on its own (issue #27) -----------------------------------------------
@pytest.fixture
def figures(monkeypatch):
    """Every matplotlib figure the report saves, kept open for inspection."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    saved = {}
    real_close = plt.close

    def close(fig=None):
        if fig is not None and fig.axes:
            saved[fig.axes[0].get_title()] = fig
        else:
            real_close(fig)

    monkeypatch.setattr(plt, "close", close)
    yield saved
    for fig in saved.values():
        real_close(fig)


def _with_references(evaldir: Path) -> Path:
    """A web whose truth has image pages and simulated reference crawls (web/oracle.json)."""
    write_tsv(evaldir / "web" / "truth_images.tsv.gz", ["url", "page_url", "shows_topic", "alt_describes"],
              [["http://c.test/a.jpg", "http://c.test/1", 1, 1], ["http://c.test/b.png", "http://c.test/1", 1, 0],
               ["http://o.test/x.jpg", "http://o.test/1", 0, 1], ["http://o.test/y.gif", "http://o.test/2", 0, 0],
               ["http://c.test/w.webp", "http://c.test/2", 1, 1]], gz=True)
    pages = ["http://c.test/1", "http://c.test/2", "http://o.test/1"]
    (evaldir / "web" / "oracle.json").write_text(json.dumps({"pages": {
        "breadth_first": pages[::-1], "page_classifier": pages, "link_oracle": pages}}))
    (evaldir / "eval.json").write_text(json.dumps({"budget": 3, "modes": ["keywords", "document", "unfocused"]}))
    return evaldir


def test_every_plot_is_understandable_on_its_own(evaldir, toy_arpa, figures):
    """The bounds read as ceilings, the learning line hid under the link oracle, focus.png never
    said lower = more on topic, top_n.png said Top-500 for 2 images and had no y label."""
    build_report(_with_references(evaldir), top_n=500, model=str(toy_arpa))
    titles = list(figures)
    assert len(titles) == 5 and not any("500" in t for t in titles)
    for title, fig in figures.items():
        ax = fig.axes[0]
        assert title and ax.get_xlabel() and ax.get_ylabel(), title
        assert ax.get_legend() is not None and all(t.get_text() for t in ax.get_legend().get_texts())
    harvest = next(f for t, f in figures.items() if t.startswith("Image harvest"))
    labels = [t.get_text() for t in harvest.axes[0].get_legend().get_texts()]
    assert "reference crawl: perfect page classifier (simulated)" in labels and not any("bound" in x for x in labels)
    assert "not upper bounds" in " ".join(t.get_text().replace("\n", " ") for t in harvest.texts)
    modes = [line for line in harvest.axes[0].get_lines() if line.get_label().startswith("mode: ")]
    assert len({(line.get_linestyle(), line.get_marker()) for line in modes}) == len(modes) == 3
    focus = next(f for t, f in figures.items() if t.startswith("Focus"))
    assert "lower = more on topic" in focus.axes[0].get_ylabel()
    top = next(f for t, f in figures.items() if t.startswith("Top-N"))
    assert [t.get_text() for t in top.axes[0].get_xticklabels()] == ["keywords\nN = 2", "document\nN = 2",
                                                                      "unfocused\nN = 2"]
    assert "share" in top.axes[0].get_ylabel()


def test_summary_records_the_budget_and_html_has_human_titles(evaldir, toy_arpa):
    summary = build_report(_with_references(evaldir), top_n=2, model=str(toy_arpa))
    assert json.loads((evaldir / "report" / "summary.json").read_text())["budget"] == 3  # was null
    html = (evaldir / "report" / "report.html").read_text()
    assert "<title>focuscrawl evaluation: keywords, document, unfocused</title>" in html
    assert "three-run" not in html and "<h2>harvest_images</h2>" not in html
    assert "<h2>Image harvest</h2>" in html and "<h2>Focus (thesis Fig. 5.1)</h2>" in html
    assert "reference crawl: perfect link oracle (simulated)" in html and "bound:" not in html
    # one definition per count: the harvest table names both image counts apart, as the plot does
    keywords = summary["runs"]["keywords"]["harvest"]
    assert keywords["on_topic_content_images"] == 3 and keywords["on_topic_images"] == 2
    assert "on-topic content images on the pages fetched" in html and "on-topic images logged by the crawl" in html


def test_top_n_uses_the_default_ranking_of_rank(evaldir, toy_arpa, monkeypatch):
    """With a topic bundle the top N was the thesis ranking while the report named `combined`."""
    from focuscrawl.resources import default_topic_path

    _with_references(evaldir)
    meta = json.loads((evaldir / "eval.json").read_text())
    (evaldir / "eval.json").write_text(json.dumps(meta | {"topic_bundle": str(default_topic_path())}))
    summary = build_report(evaldir, top_n=5, model=str(toy_arpa))
    assert summary["default_scoring"] == "combined"
    run = Run.load(evaldir / "runs" / "keywords")
    expected = top_n_shares(ranked_images(run, bundle=default_topic_path(), collapse=True), Truth.load(evaldir / "web"), 5)
    assert summary["runs"]["keywords"]["top_n"] == expected
    assert "ranking: combined P(on topic)" in (evaldir / "report" / "report.html").read_text()


def test_report_prints_a_short_summary(evaldir, toy_arpa, capsys):
    from focuscrawl.cli import main

    _with_references(evaldir)
    assert main(["eval", "report", str(evaldir), "--model", str(toy_arpa), "--top-n", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"report: {evaldir / 'report' / 'report.html'} (plots and summary.json beside it)"
    assert lines[1] == "3 modes, 3 pages each; images ranked by SPEC's thesis ranking"
    assert lines[2].startswith("  keywords   on-topic pages 2/3 (0.667), image harvest ")
    assert main(["eval", "report", str(evaldir), "--model", str(toy_arpa), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["budget"] == 3
