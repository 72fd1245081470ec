"""``focuscrawl eval run`` + ``report`` on a tiny bundled web: every mode, same seeds, reproducible."""
from __future__ import annotations

import json

import pytest

from focuscrawl.cli import main
from focuscrawl.eval.crawl_metrics import read_tsv

#: each crawl analyses its pages in its own process: a worker costs seconds to start
NO_WORKER = ["-s", "FOCUSCRAWL_ANALYSIS_WORKERS=0"]


@pytest.mark.slow(40)
def test_every_mode_by_default_then_report_and_deterministic_rerun(tmp_path, capsys):
    args = ["--data", "bundled", "--scale", "0.04", "--budget", "15", "--deterministic"]
    assert main(["eval", "run", *args, *NO_WORKER, "-o", str(tmp_path / "a")]) == 0
    # mode learning's page judge against the web's truth, after its run
    assert "eval run: page judge: " in capsys.readouterr().out
    meta = json.loads((tmp_path / "a" / "eval.json").read_text())
    assert [r["mode"] for r in meta["runs"]] == ["keywords", "document", "unfocused", "learning"]
    assert meta["server"]["robots_violations"] == 0
    # no model given: a held-out web and a model trained on the captions it never shows
    assert meta["web"]["heldout"] is True
    assert meta["model"] == "model/cat.arpa" and meta["runs"][0]["output"] == "runs/keywords"
    training = set((tmp_path / "a" / "model" / "corpus" / "positive" / "captions.txt").read_text().splitlines())
    served_alts = {row["alt"] for row in read_tsv(tmp_path / "a" / "web" / "truth_images.tsv.gz")}
    assert training and not training & served_alts
    keywords = (tmp_path / "a" / "model" / "cat.keywords.txt").read_text().splitlines()
    assert keywords[0].split(";")[0] == "cat"
    for mode in ("keywords", "document", "unfocused", "learning"):
        assert len(read_tsv(tmp_path / "a" / "runs" / mode / "pages.tsv")) >= 15
    assert main(["eval", "report", str(tmp_path / "a"), "--top-n", "10", "--budget", "15"]) == 0
    summary = json.loads((tmp_path / "a" / "report" / "summary.json").read_text())
    assert set(summary["runs"]) == {"keywords", "document", "unfocused", "learning"}
    assert all(r["harvest"]["pages"] == 15 for r in summary["runs"].values())
    # oracle bounds on the same graph, seeds and budget; the breadth-first crawl is the simulated one
    assert set(summary["oracle"]) == {"breadth_first", "page_classifier", "link_oracle"}
    assert summary["oracle"]["page_classifier"]["pages"] == 15
    assert summary["runs"]["unfocused"]["bounds"]["breadth_first"]["page_harvest"] == 1.0
    assert set(summary["runs"]["keywords"]["bounds"]["link_oracle"]) == {"image_harvest", "page_harvest"}
    # the upper bound no crawl order beats: every run and every simulated policy at or below it
    ub = summary["upper_bound"]
    assert ub["budget"] == 15 and ub["on_topic_pages"] <= 15
    assert all(b["on_topic_pages"] <= ub["on_topic_pages"] and b["on_topic_images"] <= ub["on_topic_images"]
               for b in summary["oracle"].values())
    assert all(0 <= f <= 1 for r in summary["runs"].values() for f in r["upper_bound"].values() if f is not None)
    assert (tmp_path / "a" / "report" / "report.html").exists()
    judge = summary["runs"]["learning"]["judge"]  # the judge's calls (judged.tsv) against the truth
    assert judge["judged"] == 15 and 0 <= judge["judged_on_topic_share"] <= 1
    assert judge["precision"] is None or 0 <= judge["precision"] <= 1
    assert "judge" not in summary["runs"]["keywords"]
    assert "Page judge (mode learning) against the ground truth" in (tmp_path / "a" / "report" / "report.html").read_text()
    # same seed and settings, one request at a time: the same crawl
    assert main(["eval", "run", *args, *NO_WORKER, "--modes", "keywords", "-o", str(tmp_path / "b")]) == 0
    first = [p["url"] for p in read_tsv(tmp_path / "a" / "runs" / "keywords" / "pages.tsv")][:15]
    again = [p["url"] for p in read_tsv(tmp_path / "b" / "runs" / "keywords" / "pages.tsv")][:15]
    assert first == again


def test_a_given_model_is_used_as_is_on_the_whole_web(tmp_path):
    from focuscrawl.topic.model import default_model_path

    model = str(default_model_path())
    args = ["--data", "bundled", "--scale", "0.04", "--budget", "3", "--modes", "unfocused", "--model", model]
    assert main(["eval", "run", *args, *NO_WORKER, "-o", str(tmp_path / "e")]) == 0
    meta = json.loads((tmp_path / "e" / "eval.json").read_text())
    assert meta["model"] == model and meta["web"]["heldout"] is False
    assert not (tmp_path / "e" / "model").exists()


@pytest.mark.slow(10)
def test_another_topic_gets_its_own_model(tmp_path):
    args = ["--data", "bundled", "--topic", "dog", "--scale", "0.04", "--budget", "3", "--modes", "keywords"]
    assert main(["eval", "run", *args, *NO_WORKER, "-o", str(tmp_path / "d")]) == 0
    keywords = (tmp_path / "d" / "model" / "dog.keywords.txt").read_text().splitlines()
    assert keywords[0].split(";")[0] == "dog"
    pages = read_tsv(tmp_path / "d" / "runs" / "keywords" / "pages.tsv")
    assert len(pages) >= 3 and all(p["perplexity"] for p in pages[:1])


@pytest.mark.slow(20)
def test_several_web_seeds_give_mean_and_spread(tmp_path):
    from focuscrawl.topic.model import default_keywords_path, default_model_path

    # the bundled model: a held-out model per web seed (trained in the tests above) costs a
    # topic build each, and the spread across seeds does not depend on which model crawls
    args = ["--data", "bundled", "--profile", "hard", "--scale", "0.1", "--budget", "6", "--deterministic",
            "--modes", "unfocused", "learning", "--seed", "1", "2", "--model", str(default_model_path()),
            "--keywords", str(default_keywords_path())]
    assert main(["eval", "run", *args, *NO_WORKER, "-o", str(tmp_path / "s")]) == 0
    for seed in (1, 2):
        meta = json.loads((tmp_path / "s" / f"seed-{seed}" / "eval.json").read_text())
        assert meta["web"]["seed"] == seed and meta["web"]["profile"] == "hard"
        assert len(read_tsv(tmp_path / "s" / f"seed-{seed}" / "runs" / "learning" / "pages.tsv")) >= 6
    assert main(["eval", "report", str(tmp_path / "s"), "--top-n", "5", "--budget", "6"]) == 0
    summary = json.loads((tmp_path / "s" / "report" / "summary.json").read_text())
    across = summary["across_seeds"]
    assert across["seeds"] == ["seed-1", "seed-2"]
    bf = across["modes"]["unfocused"]["bounds"]["breadth_first"]["page_harvest"]
    assert len(bf["values"]) == 2 and all(v in (None, 1.0) for v in bf["values"])
    learning = across["modes"]["learning"]["page_harvest"]
    assert learning["min"] <= learning["mean"] <= learning["max"] and learning["sd"] >= 0
    # the upper bound per seed, and each mode's share of it, with their spread
    assert len(across["upper_bound"]["on_topic_pages"]["values"]) == 2
    shares = across["modes"]["learning"]["upper_bound"]["on_topic_pages"]["values"]
    assert len(shares) == 2 and all(v is None or 0 <= v <= 1 for v in shares)
    assert (tmp_path / "s" / "seed-1" / "report" / "summary.json").exists()
