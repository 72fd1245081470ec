"""``focuscrawl eval run`` + ``report`` on a tiny bundled web: three modes, same seeds, reproducible."""
from __future__ import annotations

import json

from focuscrawl.cli import main
from focuscrawl.eval.crawl_metrics import read_tsv


def test_three_modes_then_report_and_deterministic_rerun(tmp_path):
    args = ["--data", "bundled", "--scale", "0.04", "--budget", "15", "--deterministic"]
    assert main(["eval", "run", *args, "-o", str(tmp_path / "a")]) == 0
    meta = json.loads((tmp_path / "a" / "eval.json").read_text())
    assert [r["mode"] for r in meta["runs"]] == ["keywords", "document", "unfocused"]
    assert meta["server"]["robots_violations"] == 0
    for mode in ("keywords", "document", "unfocused"):
        assert len(read_tsv(tmp_path / "a" / "runs" / mode / "pages.tsv")) >= 15
    assert main(["eval", "report", str(tmp_path / "a"), "--top-n", "10", "--budget", "15"]) == 0
    summary = json.loads((tmp_path / "a" / "report" / "summary.json").read_text())
    assert set(summary["runs"]) == {"keywords", "document", "unfocused"}
    assert all(r["harvest"]["pages"] == 15 for r in summary["runs"].values())
    assert (tmp_path / "a" / "report" / "report.html").exists()
    # same seed and settings, one request at a time: the same crawl
    assert main(["eval", "run", *args, "--modes", "keywords", "-o", str(tmp_path / "b")]) == 0
    first = [p["url"] for p in read_tsv(tmp_path / "a" / "runs" / "keywords" / "pages.tsv")][:15]
    again = [p["url"] for p in read_tsv(tmp_path / "b" / "runs" / "keywords" / "pages.tsv")][:15]
    assert first == again
