"""Packaging and deployment: the scrapyd egg carries the bundled model, a real scrapyd runs `focused`."""
from __future__ import annotations

import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from tests.support.localweb import LocalWeb, image_site
from tests.support.scrapydserver import Scrapyd
from tests.support import warmfork

REPO = Path(__file__).resolve().parents[1]
DEPLOY = str(Path(sys.executable).parent / "scrapyd-deploy")


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def egg(tmp_path_factory) -> Path:
    """The egg as docs/DEPLOY.md builds it, in a copy of the checkout, which it leaves as it
    was (setuptools' build/ and focuscrawl.egg-info were left in the checkout)."""
    checkout = tmp_path_factory.mktemp("checkout") / "focuscrawl"
    shutil.copytree(REPO, checkout, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info",
                                                                   "__pycache__"))
    before = tree(checkout)
    path = tmp_path_factory.mktemp("egg") / "focuscrawl.egg"
    proc = warmfork.run([DEPLOY, f"--build-egg={path}"], cwd=checkout, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert tree(checkout) == before
    return path


def test_egg_carries_model_keywords_and_settings_entry_point(egg):
    with zipfile.ZipFile(egg) as z:
        names = set(z.namelist())
        entry_points = z.read("EGG-INFO/entry_points.txt").decode()
    assert {"focuscrawl/models/cats/bundle.json", "focuscrawl/models/cats/topic.arpa.gz",
            "focuscrawl/models/cats/keywords.txt", "focuscrawl/models/background.txt.gz",
            "focuscrawl/models/__init__.py", "focuscrawl/spiders/focused.py"} <= names
    assert "settings = focuscrawl.settings" in entry_points


def test_bundled_model_loads_from_the_zipped_egg(egg, tmp_path):
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import focuscrawl, json\n"
        "from focuscrawl.resources import project_settings\n"
        "from focuscrawl.crawl_scorer import scorer_from_settings\n"
        "s = scorer_from_settings(project_settings())\n"
        "print(json.dumps([focuscrawl.__file__, s.perplexity('the cat sleeps on the sofa'), s.keywords.score('the cat sleeps')]))\n")
    proc = warmfork.run([sys.executable, "-c", code, str(egg)], cwd=tmp_path, capture_output=True, text=True,
                        timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    module_file, perplexity, keyword_score = json.loads(proc.stdout.strip().splitlines()[-1])
    assert module_file.startswith(str(egg) + os.sep)  # imported from inside the zip
    assert 1 < perplexity < 1e6
    assert keyword_score > 0  # "cat" is a bundled keyword


@pytest.mark.slow(12)
def test_scrapyd_deploys_and_runs_focused(tmp_path):
    out = tmp_path / "run"
    server = Scrapyd(tmp_path / "scrapyd")
    try:
        # scrapyd-deploy reads targets from scrapy.cfg files, including $XDG_CONFIG_HOME/scrapy.cfg
        cfg = tmp_path / "xdg"
        cfg.mkdir()
        (cfg / "scrapy.cfg").write_text(f"[deploy:testserver]\nurl = {server.url}\nproject = focuscrawl\n")
        env = dict(os.environ, XDG_CONFIG_HOME=str(cfg))
        deploy = warmfork.run([DEPLOY, "testserver", "--version", "r1"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120)
        assert deploy.returncode == 0, deploy.stderr[-2000:]
        assert '"status": "ok"' in deploy.stdout or '"status": "ok"' in deploy.stderr
        assert "focused" in server.get("listspiders.json", project="focuscrawl")["spiders"]
        with LocalWeb(image_site()) as web:
            job = server.post("schedule.json", [
                ("project", "focuscrawl"), ("spider", "focused"),
                ("seeds", f"{web.base}/page0"), ("output", str(out)), ("mode", "keywords"),
                ("setting", "DOWNLOAD_DELAY=0"), ("setting", "AUTOTHROTTLE_ENABLED=False"),
                ("setting", "FOCUSCRAWL_PROGRESS_INTERVAL=0.05"), ("setting", "FOCUSCRAWL_IMAGE_KICK_UNSPECIFIED=True")])
            assert job["status"] == "ok", job
            entry = server.wait_finished("focuscrawl", job["jobid"])
            fetched = set(web.fetched())
        log = (tmp_path / "scrapyd" / "logs" / "focuscrawl" / "focused" / f"{job['jobid']}.log").read_text()
    finally:
        server.stop()
    assert "Spider closed (finished)" in log, log[-3000:]
    # the summary every crawl ends with, not Scrapy's raw stats dump
    assert f"crawl summary: 4 pages and 5 images written to {out.resolve()}" in log, log[-3000:]
    assert "Dumping Scrapy stats" not in log
    assert "progress: " in log  # setting= overrides reached the crawl (the default interval is 30 s)
    assert "Overridden settings" not in log and "Enabled extensions" not in log  # no raw listings at INFO
    assert "Traceback" not in log
    assert {f"/page{i}" for i in range(4)} <= fetched
    pages = (out / "pages.tsv").read_text().splitlines()
    assert len(pages) == 1 + 4
    images = (out / "images.tsv").read_text().splitlines()
    assert len(images) == 1 + 5  # each page's own image and the one they share
    assert all((out / "images").iterdir())
    stats = json.loads((out / "stats.json").read_text())
    assert stats["finish_reason"] == "finished"
    assert entry.get("log_url")
