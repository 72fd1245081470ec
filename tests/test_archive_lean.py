"""The lean archive path (``FOCUSCRAWL_ARCHIVE_LEAN``, focuscrawl.archive.lean) writes what the
engine replay writes: on a WARC written here with warcio that holds pages and their images
with every opt-out signal (meta robots, X-Robots-Tag on pages and images, TDMRep in markup,
headers and ``/.well-known/tdmrep.json``, robots.txt with an AI-crawler group and a
disallowed page), a near-duplicate page sharing an image with its original, and an image
the archive does not hold (a candidate pair), both replays give the same pages, images,
records, sentences and image files; the lean one took no page through the scheduler."""
from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from focuscrawl.settings import EXTENSIONS
from tests.support.archives import write_warc
from tests.support.optoutsite import CASES, optout_site, page_html
from tests.support.runfiles import read_tsv
from tests.support import warmfork

ROOT = Path(__file__).resolve().parents[1]
QUIET = ["DOWNLOAD_DELAY=0", "FOCUSCRAWL_PROGRESS_INTERVAL=0", "LOG_LEVEL=INFO", "ROBOTSTXT_OBEY=True"]
#: the columns that number rows in the order they were written
ORDER_COLUMNS = {"first_seen"}


def _archive(path: Path) -> Path:
    captures = []
    for (host, where), page in optout_site().items():
        headers = [("Content-Type", page.content_type), *page.headers.items()]
        captures.append((f"http://{host}{where}", headers, page.body))
    control = next(c for c in CASES if c.name == "control")
    html = [("Content-Type", "text/html; charset=utf-8")]
    captures += [
        # the control page again under another URL: a near-duplicate, its image sighted twice
        ("http://opt.test/copy-of-control", html, page_html(control).encode()),
        # an image the archive does not hold: a candidate pair
        ("http://opt.test/unstored", html, page_html(control).replace("/img/control.png", "/img/unstored.png")
         .replace("mkcontrol", "mkunstored").replace("tabby cat and a kitten", "ginger cat on a fence").encode()),
        # disallowed by the host's archived robots.txt (ROBOTSTXT_OBEY=True)
        ("http://opt.test/private/page", html, page_html(control).replace("mkcontrol", "mkprivate").encode()),
        ("http://opt.test/robots.txt", [("Content-Type", "text/plain")], b"User-agent: *\nDisallow: /private\n"),
    ]
    return write_warc(path, captures)


def _replay(warc: Path, out: Path, settings: list[str]) -> dict:
    cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", str(warc), "-o", str(out), "--json"]
    for setting in QUIET + settings:
        cmd += ["-s", setting]
    proc = warmfork.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((out / "stats.json").read_text())


def _rows(path: Path, key: str) -> dict[str, dict]:
    return {row[key]: {k: v for k, v in row.items() if k not in ORDER_COLUMNS} for row in read_tsv(path)}


def _records(run: Path) -> dict[str, dict]:
    found = {}
    for path in (run / "records").glob("*/*.json"):
        record = {k: v for k, v in json.loads(path.read_text()).items() if k not in ORDER_COLUMNS}
        record["sightings"] = sorted(json.dumps({k: v for k, v in s.items() if k not in ORDER_COLUMNS}, sort_keys=True)
                                     for s in record["sightings"])
        found[str(path.relative_to(run))] = record
    return found


def _outputs(run: Path) -> dict:
    with gzip.open(run / "sentences.txt.gz", "rt", encoding="utf-8") as fh:
        sentences = Counter(fh)
    return {"pages": _rows(run / "pages.tsv", "url"), "images": _rows(run / "images.tsv", "image_url"),
            "records": _records(run), "sentences": sentences,
            "image_files": {p.name: p.read_bytes() for p in (run / "images").glob("*")}}


@pytest.fixture(scope="module")
def replays(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lean")
    warc = _archive(tmp / "optouts.warc.gz")
    engine = _replay(warc, tmp / "engine", ["FOCUSCRAWL_ARCHIVE_LEAN=False", "FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS=1"])
    # lean (the default) with two analysis workers, as a replay of 500 pages or more has them
    lean = _replay(warc, tmp / "lean", ["FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS=2"])
    return tmp, engine, lean


def test_the_lean_path_writes_what_the_engine_replay_writes(replays):
    tmp, engine_stats, lean_stats = replays
    engine, lean = _outputs(tmp / "engine"), _outputs(tmp / "lean")
    assert lean["pages"] == engine["pages"]
    assert lean["images"] == engine["images"]
    assert lean["records"] == engine["records"]
    assert lean["sentences"] == engine["sentences"]
    assert lean["image_files"] == engine["image_files"]
    # the lean replay took every page it replayed past the scheduler, the engine replay none
    assert lean_stats["focuscrawl/archive/lean_pages"] == lean_stats["focuscrawl/archive/html_pages"] > 20
    assert "scheduler/enqueued" not in lean_stats and "focuscrawl/archive/lean_pages" not in engine_stats
    assert lean_stats["focuscrawl/analysis/pool_pages"] > 0  # analysed on the workers
    for key in ("focuscrawl/optout/images/x_robots_tag", "focuscrawl/optout/images/tdmrep",
                "focuscrawl/optout/text_pages/robots_ai", "focuscrawl/optout/tdmrep_files/found",
                "focuscrawl/neardup/near_duplicates", "focuscrawl/images/candidates/not_archived"):
        assert lean_stats.get(key) == engine_stats.get(key), key


def test_the_lean_path_applies_opt_outs_robots_txt_and_dedup(replays):
    tmp, _, stats = replays
    lean = _outputs(tmp / "lean")
    text = "".join(lean["sentences"])
    images = set(lean["images"])
    assert {c.name for c in CASES if c.marker in text} == {c.name for c in CASES if c.text}
    assert {c.name for c in CASES if c.image_url in images} == {c.name for c in CASES if c.image}
    pages = lean["pages"]
    assert pages["http://opt.test/noindex"]["optout"] == "text=meta_robots:noindex;images=meta_robots:noindex"
    assert pages["http://tdm.test/reserved"]["optout"].startswith("text=tdmrep:well-known")
    assert pages["http://ai.test/aibots"]["optout"].startswith("text=robots_ai:gptbot")
    assert "http://opt.test/private/page" not in pages and "mkprivate" not in text  # the archive's robots.txt
    assert pages["http://opt.test/copy-of-control"]["near_duplicate_of"] == "http://opt.test/control"
    control = lean["images"]["http://opt.test/img/control.png"]
    assert control["page_url"] == "http://opt.test/control"  # the first sighting, in archive order
    assert lean["images"]["http://opt.test/img/unstored.png"]["image_status"] == "not_archived"


def test_replay_file_replays_one_file_into_a_part_with_images_from_the_others(tmp_path):
    """``replay_file``: one file's pages into a run directory, its images answered by another
    file too (the unit a distributed engine runs per file)."""
    from tests.support.localweb import png_bytes

    html = [("Content-Type", "text/html; charset=utf-8")]
    control = next(c for c in CASES if c.name == "control")
    own = write_warc(tmp_path / "own.warc.gz", [("http://opt.test/a", html, page_html(control).encode())])
    other = write_warc(tmp_path / "other.warc.gz", [
        ("http://opt.test/b", html, page_html(control).replace("mkcontrol", "mkother").encode()),
        ("http://opt.test/img/control.png", [("Content-Type", "image/png")], png_bytes(640, 480))])
    part = tmp_path / "parts" / "0"
    code = ("import json, sys; from focuscrawl.archive.cli import replay_file; "
            "print(json.dumps(replay_file(sys.argv[1], sys.argv[2], [sys.argv[3]], "
            "{'FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS': 0, 'FOCUSCRAWL_PROGRESS_INTERVAL': 0})))")
    proc = warmfork.run([sys.executable, "-c", code, str(own), str(part), str(other)], cwd=ROOT,
                        capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    assert stats["finish_reason"] == "finished" and stats["focuscrawl/archive/lean_pages"] == 1
    assert set(_rows(part / "pages.tsv", "url")) == {"http://opt.test/a"}
    image = _rows(part / "images.tsv", "image_url")["http://opt.test/img/control.png"]
    assert image["image_status"] == "downloaded" and image["page_url"] == "http://opt.test/a"


def test_the_lean_path_does_not_keep_the_pages_it_has_scraped(tmp_path, monkeypatch):
    """A CommonCrawl file holds ~40,000 pages: a scraped page's request (its meta holds the
    page's analysis: text, sentences, links, images) must go when the page is done, not at
    the end of the file."""
    control = next(c for c in CASES if c.name == "control")
    html = [("Content-Type", "text/html; charset=utf-8")]
    pages = 80
    warc = write_warc(tmp_path / "pages.warc.gz", [
        (f"http://many.test/p{i}", html, page_html(control).replace("mkcontrol", f"mk{i}").encode())
        for i in range(pages)])
    monkeypatch.setenv("TEST_ANALYSES_FROM", "40")
    stats = _replay(warc, tmp_path / "run", [
        "FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS=0", "CONCURRENT_REQUESTS=4",
        "EXTENSIONS=" + json.dumps({**EXTENSIONS, "tests.support.memoryprobe.AnalysesAlive": 0})])
    assert stats["focuscrawl/archive/lean_pages"] == pages
    assert stats["focuscrawl/pages/written"] == pages
    # the pages in the window and in the scraper's hands, not every page replayed so far
    assert 0 < stats["test/analyses_alive_max"] <= 12
