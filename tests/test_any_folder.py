"""Every ``focuscrawl`` command works from any folder: each runs here as the installed
console script from an empty temporary folder (no scrapy.cfg, no ../shared), with
its inputs given as paths, and leaves that folder empty."""
from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import webdataset as wds
from PIL import Image

from focuscrawl.topic.model import default_keywords_path, default_model_path
from tests.support.archives import write_warc
from tests.support.localweb import LocalWeb, link_site, png_bytes
from tests.support.net import free_port
from tests.support import warmfork

FOCUSCRAWL = str(Path(sys.executable).with_name("focuscrawl"))
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
TEXT = "The cat sleeps on the sofa and the kitten plays with the cat toy all day long."
ARTICLE = f"<html><body><nav>Home News</nav><article><h1>Cats</h1><p>{TEXT}</p><p>{TEXT}</p></article></body></html>"


@pytest.fixture
def empty(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    yield folder
    assert list(folder.iterdir()) == []  # nothing written to the current folder


def run(folder: Path, *args: str, stdin: str | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    proc = warmfork.run([FOCUSCRAWL, *args], cwd=folder, input=stdin, capture_output=True, text=True,
                        timeout=timeout)
    assert proc.returncode == 0, f"focuscrawl {' '.join(args)}:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr and "Dumping Scrapy stats" not in proc.stderr, proc.stderr[-3000:]
    return proc


def serve(folder: Path, args: list[str], url: str) -> str:
    """Start a serving command, wait until ``url`` answers, stop it; its stderr."""
    proc = warmfork.popen([FOCUSCRAWL, *args], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except urllib.error.HTTPError:
                break  # it answered
            except OSError:
                assert proc.poll() is None, proc.stderr.read()[-3000:]
                assert time.monotonic() < deadline, "did not start"
                time.sleep(0.2)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    return err


def test_text_and_model_commands(tmp_path, empty):
    cat, car = tmp_path / "cat.html", tmp_path / "car.txt"
    cat.write_text(ARTICLE)
    car.write_text("The car drives on the road all day long. A car needs fuel and the engine needs oil.\n")
    assert json.loads(run(empty, "score", "--json", TEXT).stdout)["perplexity"] > 0
    run(empty, "keywords", "--positive", str(cat), "--neutral", str(car), "-n", "5", "-o", str(tmp_path / "kw"))
    assert (tmp_path / "kw").read_text()
    run(empty, "train-lm", "--order", "3", "-o", str(tmp_path / "m.arpa"), str(cat), str(car))
    assert (tmp_path / "m.arpa").read_text().startswith("\\data\\")
    run(empty, "extract", str(cat), "-o", str(tmp_path / "text"))
    assert "kitten" in (tmp_path / "text" / "cat.txt").read_text()


def test_eval_commands(tmp_path, empty):
    ce = tmp_path / "ce"
    (ce / "input").mkdir(parents=True)
    (ce / "gold").mkdir()
    (ce / "input" / "1.html").write_text(ARTICLE)
    (ce / "gold" / "1.txt").write_text(f"<h> Cats\n<p> {TEXT}\n<p> {TEXT}\n")
    assert "cleaneval: 1 pages" in run(empty, "eval", "extraction", "--dataset", "cleaneval",
                                       "--extractors", "fulltext", str(ce)).stdout
    (tmp_path / "aeb" / "html").mkdir(parents=True)
    figure = ARTICLE.replace("</article>", '<figure><img src="a.jpg"><figcaption>A tabby cat asleep'
                                          '</figcaption></figure></article>')
    (tmp_path / "aeb" / "html" / "p1.html.gz").write_bytes(gzip.compress(figure.encode()))
    run(empty, "eval", "context", "--extractors", "par,figure", str(tmp_path / "aeb"))
    versions = tmp_path / "versions"
    for article in ("Alpha", "Beta"):
        (versions / article).mkdir(parents=True)
        for n in range(2):
            (versions / article / f"{n}.txt").write_text(f"{article} {TEXT} {TEXT} version {n}.")
    run(empty, "eval", "neardup", str(versions), "--max-k", "2", "--negatives", "2", "--no-minhash")


@pytest.mark.slow(18)
def test_testweb_and_crawl_commands(tmp_path, empty):
    small = ["--data", "bundled", "--scale", "0.02"]
    run(empty, "testweb", "generate", *small, "-o", str(tmp_path / "web"))
    assert (tmp_path / "web" / "web.json").exists()
    run(empty, "testweb", "heldout-corpus", "--data", "bundled", "-o", str(tmp_path / "corpus"))
    port = free_port()
    err = serve(empty, ["testweb", "serve", *small, "--port", str(port)], f"http://127.0.0.1:{port}/")
    assert "testweb serve: building the cat web from bundled ..." in err
    assert "crawled 10 pages" in run(empty, "demo", "--pages", "10", "-o", str(tmp_path / "demo")).stdout
    ev = tmp_path / "ev"
    evaluated = run(empty, "eval", "run", *small, "--budget", "5", "--modes", "keywords", "--model",
                    str(default_model_path()), "--keywords", str(default_keywords_path()), "-o", str(ev))
    assert "not upper bounds" in evaluated.stdout and "oracle bounds" not in evaluated.stdout  # as the report says
    run(empty, "eval", "report", str(ev))
    assert (ev / "report" / "summary.json").exists()


def test_warc_then_run_directory_commands(tmp_path, empty):
    """warc crashed outside the project folder (KeyError 'Spider not found: archive'); its
    run directory then goes through rank, merge and annotate."""
    page = f'<html><body><p>{TEXT}</p><img src="/cat.png" alt="a cat on the sofa" width="640" height="480">'
    warc = write_warc(tmp_path / "x.warc.gz", [
        ("http://a.test/", [("Content-Type", "text/html")], page.encode()),
        ("http://a.test/cat.png", [("Content-Type", "image/png")], png_bytes(640, 480)),
    ])
    run_dir = tmp_path / "out"
    proc = run(empty, "warc", str(warc), "-o", str(run_dir), "--json")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["finish_reason"] == "finished" and summary["focuscrawl/pages/written"] == 1
    run(empty, "rank", str(run_dir), "--min", "0", "--max", "1e9", "--format", "jsonl",
        "-o", str(tmp_path / "ranked.jsonl"))
    assert len((tmp_path / "ranked.jsonl").read_text().splitlines()) == 1
    # the image workers (spawned from the installed command) resize and re-encode the cat
    run(empty, "rank", str(run_dir), "--min", "0", "--max", "1e9", "--format", "webdataset", "--image-size", "64",
        "--jobs", "2", "-o", str(tmp_path / "shards.tar"))
    [(jpg, meta)] = wds.WebDataset([str(tmp_path / "shards-000000.tar")], shardshuffle=False).to_tuple("jpg", "json")
    assert Image.open(io.BytesIO(jpg)).size == (64, 64) and json.loads(meta)["original_width"] == 640
    run(empty, "merge", str(run_dir), "-o", str(tmp_path / "merged"))
    assert (tmp_path / "merged" / "pages.tsv").exists()
    db = str(tmp_path / "a.sqlite3")
    run(empty, "annotate", "add-user", "anna", "--password-stdin", "--db", db, stdin="a-long-password\n")
    assert run(empty, "annotate", "users", "--db", db).stdout.startswith("anna")
    run(empty, "annotate", "stats", "--db", db, "--json")
    port = free_port()
    serve(empty, ["annotate", "serve", str(run_dir), "--db", db, "--port", str(port)],
          f"http://127.0.0.1:{port}/login")


def no_project_env(tmp_path: Path) -> dict[str, str]:
    """This environment without any Scrapy project: no SCRAPY_SETTINGS_MODULE, no user scrapy.cfg."""
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")  # no ~/.config/scrapy.cfg
    env["XDG_STATE_HOME"] = str(tmp_path / "state")  # where Scrapy's remote control writes its job files
    return env


def test_the_crawl_from_an_empty_folder(tmp_path, empty):
    """README "Run the crawl from anywhere": ``focuscrawl crawl`` and ``scrapy crawl focused``
    outside the checkout (before: "no active project ... crawl command is not available from
    this location") take the spider's arguments, ``-s`` settings, ``-O`` feeds and a JOBDIR."""
    env = no_project_env(tmp_path)
    with LocalWeb(link_site(6)) as web:
        for name, command in (("focuscrawl", [FOCUSCRAWL, "crawl"]), ("scrapy", [SCRAPY, "crawl", "focused"])):
            out = tmp_path / name
            proc = warmfork.run(
                [*command, "-a", f"seeds={web.base}/p0", "-a", f"output={out / 'run'}", "-a", "mode=keywords",
                 "-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "FOCUSCRAWL_PROGRESS_INTERVAL=0",
                 "-s", f"JOBDIR={out / 'job'}", "-O", f"{out / 'items.jsonl'}", "-L", "INFO"],
                cwd=empty, env=env, capture_output=True, text=True, timeout=180)
            assert proc.returncode == 0, f"{name}: {proc.stdout[-2000:]}{proc.stderr[-3000:]}"
            # a short summary, no raw stats dump, settings dict or component lists
            assert f"crawl summary: 6 pages and 0 images written to {out / 'run'}" in proc.stderr, proc.stderr[-3000:]
            assert "stopped: frontier empty" in proc.stderr
            assert not [line for line in proc.stderr.splitlines() if line.startswith((" {'", "{'", "['", " '"))], \
                proc.stderr[-3000:]
            items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
            assert sorted(item["url"] for item in items) == sorted(f"{web.base}/p{i}" for i in range(6))
            assert len((out / "run" / "pages.tsv").read_text().splitlines()) == 1 + 6
            assert (out / "job" / "requests.seen").exists() and (out / "job" / "focuscrawl").is_dir()
            # no remote-control server (it runs code sent to it) and no job file left in the user's state folder
            assert "Remote control" not in proc.stderr and not (tmp_path / "state").exists()


def test_crawl_help_shows_focuscrawls_usage_and_the_spider_arguments(tmp_path, empty):
    """``focuscrawl crawl -h`` said "Usage: scrapy crawl [options] <spider>" and named no ``-a``."""
    text = run(empty, "crawl", "-h").stdout
    assert "focuscrawl crawl -a seeds=" in text and "scrapy crawl [options] <spider>" not in text
    for name in ("seeds", "mode", "topic", "budget", "output", "domains"):
        assert f"-a {name}=" in text
    assert "-O FILE" in text and "-s NAME=VALUE" in text  # Scrapy's options stay


def test_another_projects_scrapy_cfg_still_wins(tmp_path):
    """focuscrawl's ``crawl`` is Scrapy's own inside any Scrapy project: a folder with another
    project's scrapy.cfg runs that project's spiders and settings; ``focuscrawl crawl`` is
    focuscrawl's there too."""
    project = tmp_path / "other"
    (project / "otherbot" / "spiders").mkdir(parents=True)
    (project / "scrapy.cfg").write_text("[settings]\ndefault = otherbot.settings\n")
    (project / "otherbot" / "__init__.py").write_text("")
    (project / "otherbot" / "settings.py").write_text('BOT_NAME = "otherbot"\nSPIDER_MODULES = ["otherbot.spiders"]\n')
    (project / "otherbot" / "spiders" / "__init__.py").write_text(
        'import scrapy\n\n\nclass Hello(scrapy.Spider):\n    name = "hello"\n')
    env = no_project_env(tmp_path)
    listed = warmfork.run([SCRAPY, "list"], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert listed.stdout.split() == ["hello"], listed.stderr[-2000:]
    crawl = warmfork.run([SCRAPY, "crawl", "focused"], cwd=project, env=env, capture_output=True, text=True,
                         timeout=120)
    assert crawl.returncode != 0 and "Spider not found: focused" in crawl.stderr
    bot = warmfork.run([SCRAPY, "settings", "--get", "BOT_NAME"], cwd=project, env=env, capture_output=True,
                       text=True, timeout=120)
    assert bot.stdout.strip() == "otherbot"
    ours = warmfork.run([FOCUSCRAWL, "crawl", "-a", "seeds=", "-L", "WARNING"], cwd=project, env=env,
                        capture_output=True, text=True, timeout=120)
    assert "focused" in ours.stderr and "Spider not found" not in ours.stderr, ours.stderr[-2000:]
