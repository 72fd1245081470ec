"""Every "no" a site owner can say, obeyed by default, on a local web that carries each
signal beside control pages (tests/support/optoutsite.py): no opted-out text or image in
sentences.txt.gz, images.tsv or an export; no link of a nofollow page requested; every
control image exported with its licence and creator; each rule relaxed by its setting; the
same through a WARC replay."""
from __future__ import annotations

import gzip
import json
import sys

import pytest

from focuscrawl.cli import main
from focuscrawl.rights.directives import SOURCES
from tests.support.crawl import FAST, ROOT, crawl
from tests.support.localweb import LocalWeb
from tests.support.optoutsite import CASES, NEVER_REQUESTED, SEED, optout_site
from tests.support.runfiles import read_tsv
from tests.support import warmfork

SETTINGS = {"FOCUSCRAWL_SENTENCES_BATCH_BYTES": 0}


def _crawl(tmp_path, settings=None):
    with LocalWeb(optout_site()) as web:
        stats, proc = crawl(web, tmp_path, SEED, settings=SETTINGS | (settings or {}))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return stats, proc, web


def _sentences(out) -> str:
    return gzip.decompress((out / "sentences.txt.gz").read_bytes()).decode("utf-8")


def _harvest(out):
    """(text markers in sentences.txt.gz, image URLs in images.tsv)."""
    text = _sentences(out)
    images = {row["image_url"] for row in read_tsv(out / "images.tsv")}
    return {c.name for c in CASES if c.marker in text}, {c.name for c in CASES if c.image_url in images}


def _expected(relaxed: str = ""):
    text = {c.name for c in CASES if c.text or c.source == relaxed}
    images = {c.name for c in CASES if c.image or c.source == relaxed}
    return text, images


@pytest.fixture(scope="module")
def default_crawl(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("optout")
    warcs = tmp / "warcs"
    stats, proc, web = _crawl(tmp, {"FOCUSCRAWL_WARC_DIR": str(warcs)})
    return tmp, stats, proc, web


def test_every_opt_out_is_obeyed_by_default_and_every_control_is_harvested(default_crawl):
    tmp, stats, proc, web = default_crawl
    out = tmp / "out"
    assert _harvest(out) == _expected()
    requested = set(web.pages_requested())
    for never in NEVER_REQUESTED:
        assert never not in requested
    for case in CASES:  # an opted-out page is still fetched (its other links are followed)
        assert f"{case.host}{case.path}" in requested
    # pages.tsv says why; the stats count each source
    pages = {row["url"]: row for row in read_tsv(out / "pages.tsv")}
    assert pages["http://opt.test/noindex"]["optout"] == "text=meta_robots:noindex;images=meta_robots:noindex"
    assert pages["http://opt.test/nofollow"]["optout"] == "nofollow=meta_robots:nofollow"
    assert pages["http://tdm.test/reserved"]["optout"].startswith("text=tdmrep:well-known")
    assert pages["http://ai.test/aibots"]["optout"].startswith("text=robots_ai:gptbot")
    assert pages["http://opt.test/control"]["optout"] == "" and pages["http://opt.test/control"]["license"] == "CC-BY-4.0"
    assert pages["http://opt.test/tdmmeta"]["tdm_policy"] == "https://opt.test/policy.json"
    assert stats["focuscrawl/optout/text_pages/meta_robots"] == 4  # noindex, none, conflict, owntoken
    assert stats["focuscrawl/optout/text_pages/x_robots_tag"] == 2
    assert stats["focuscrawl/optout/text_pages/tdmrep"] == 3
    assert stats["focuscrawl/optout/text_pages/robots_ai"] == 3  # robots.txt, <meta name=GPTBot>, X-Robots-Tag
    assert pages["http://opt.test/gptmeta"]["optout"] == "text=robots_ai:gptbot;images=robots_ai:gptbot"
    assert pages["http://opt.test/ccbotimg"]["optout"] == "images=robots_ai:ccbot"
    assert pages["http://opt.test/aifollow"]["optout"] == ""  # nofollow for GPTBot is not ours
    assert stats["focuscrawl/optout/nofollow_pages/meta_robots"] == 2
    assert stats["focuscrawl/optout/images/x_robots_tag"] == 3  # two pages' images and one image response
    assert stats["focuscrawl/optout/images/tdmrep"] == 6  # 3 pages, an image response, an image's XMP, tdmrep.json
    assert stats["focuscrawl/optout/images/image_metadata"] == 2  # IPTC Data Mining in a PNG's and a JPEG's XMP
    # robots.txt's Content-Signal (sig.test) and Content-Usage (usage.test), a page's header
    assert stats["focuscrawl/optout/text_pages/content_signals"] == 3
    assert stats["focuscrawl/optout/content_signal_urls"] == 2  # the two pages (their images are never requested)
    assert pages["http://sig.test/signal"]["optout"].startswith("text=content_signals:ai-train=no")
    assert pages["http://usage.test/usagepath"]["optout"].startswith("text=content_signals:train-ai=n")
    assert pages["http://opt.test/sigheader"]["optout"].startswith("text=content_signals:ai-train=no")
    assert stats["focuscrawl/optout/tdmrep_files/found"] == 1
    assert stats["focuscrawl/optout/tdmrep_files/not_json"] == 1  # junk.test's broken file declares nothing
    assert "Traceback" not in proc.stderr
    # the feed's page items carry no opted-out text either
    feed = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    noindex = next(i for i in feed if i.get("url") == "http://opt.test/noindex")
    assert noindex["sentences"] == [] and noindex["optout"]["text"] == ["meta_robots:noindex"]


def test_licences_and_creators_reach_images_tsv_the_records_and_every_export(default_crawl, tmp_path):
    tmp, *_ = default_crawl
    out = tmp / "out"
    rows = {row["image_url"]: row for row in read_tsv(out / "images.tsv")}
    for case in CASES:
        if case.image:
            assert rows[case.image_url]["license"] == case.license, case.name
            assert rows[case.image_url]["creator"] == case.creator, case.name
    jsonld = rows["http://opt.test/img/jsonld.png"]
    assert jsonld["license_source"] == "jsonld:ImageObject" and jsonld["license_raw"].endswith("/zero/1.0/")
    assert jsonld["credit_text"] == "Jane Doe / Cats Inc" and jsonld["acquire_license_page"] == "http://opt.test/buy"
    exif = rows["http://opt.test/img/exif.png"]
    # the file's own metadata wins over the page's rel=license, and says so
    assert exif["license_source"] == "exif" and exif["copyright_notice"] == "CC BY-SA 4.0"
    assert rows["http://opt.test/img/xmp.png"]["license_source"] == "xmp"
    assert rows["http://opt.test/img/dmiallowed.png"]["license_source"] == "xmp"  # DMI-ALLOWED: kept
    record = json.loads((out / jsonld["record_path"]).read_text())
    assert record["rights"]["license"] == "CC0-1.0" and record["sightings"][0]["rights"]["creator"] == "Jane Doe"
    for fmt, suffix in (("jsonl", "jsonl"), ("parquet", "parquet"), ("tsv", "tsv")):
        target = tmp_path / fmt / f"corpus.{suffix}"
        assert main(["rank", "--json", str(out), "--scoring", "thesis", "--min", "0", "--max", "1e12",
                     "--keep-duplicates", "--jobs", "1", "--format", fmt, "-o", str(target)]) == 0
        if fmt == "jsonl":
            exported = {r["url"]: r for r in map(json.loads, target.read_text().splitlines())}
        elif fmt == "parquet":
            import pyarrow.parquet as pq
            exported = {r["url"]: r for r in pq.read_table(target).to_pylist()}
        else:
            exported = {r["url"]: r for r in read_tsv(target)}
        assert {c.image_url for c in CASES if c.image} == set(exported), fmt  # every control, nothing else
        for case in CASES:
            if case.image:
                assert exported[case.image_url]["license"] == case.license, (fmt, case.name)
                assert exported[case.image_url]["creator"] == case.creator, (fmt, case.name)
        card = (target.parent / "README.md").read_text()
        assert card.startswith("---\n") and "focuscrawl_card: true" in card
        front = dict(line.split(": ", 1) for line in card.split("---\n")[1].splitlines())
        assert json.loads(front["focuscrawl_licenses"]) == {"unknown": 9, "CC-BY-4.0": 2, "CC0-1.0": 1,
                                                            "CC-BY-SA-4.0": 1, "CC-BY-NC-4.0": 1}
        assert json.loads(front["focuscrawl_optouts_removed"])["text_pages/meta_robots"] == 4
        assert json.loads(front["focuscrawl_seeds"]) == [SEED]
        assert json.loads(front["focuscrawl_optouts_obeyed"]) == list(SOURCES)
        assert "FOCUSCRAWL_SENTENCES_BATCH_BYTES" in json.loads(front["focuscrawl_settings_changed"])
        assert "| CC0-1.0 | 1 |" in card


@pytest.mark.parametrize("spec, expected", [
    ("cc", {"control", "jsonld", "exif", "xmp", "dmiallowed"}),
    ("commercial", {"control", "jsonld", "exif", "dmiallowed"}),
    ("CC-BY-*", {"control", "exif", "xmp", "dmiallowed"}),
    ("unknown", {"googlebot", "otherbot", "hostile", "nofollow", "free", "junk", "usagefree", "sigyes", "aifollow"}),
])
def test_rank_license_filter(default_crawl, tmp_path, spec, expected):
    tmp, *_ = default_crawl
    target = tmp_path / "c.jsonl"
    assert main(["rank", "--json", str(tmp / "out"), "--scoring", "thesis", "--min", "0", "--max", "1e12",
                 "--keep-duplicates", "--license", spec, "--format", "jsonl", "-o", str(target)]) == 0
    urls = {json.loads(line)["url"] for line in target.read_text().splitlines()}
    assert urls == {c.image_url for c in CASES if c.name in expected}


@pytest.mark.parametrize("relaxed", SOURCES)
def test_each_rule_relaxed_by_its_setting(tmp_path, relaxed):
    stats, proc, web = _crawl(tmp_path, {"FOCUSCRAWL_OPTOUTS": [s for s in SOURCES if s != relaxed]})
    text, images = _harvest(tmp_path / "out")
    want_text, want_images = _expected(relaxed)
    # a page withheld by two sources stays withheld while either is obeyed
    assert text == want_text and images == want_images
    assert f"opt-outs: {relaxed} is not obeyed" in proc.stderr
    requested = set(web.pages_requested())
    assert ("opt.test/onlynofollow" in requested) == (relaxed == "meta_robots")
    if relaxed == "tdmrep":
        assert "tdm.test/.well-known/tdmrep.json" not in requested


def _warc(*args):
    cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", *args, "--json"]
    for s in FAST:
        cmd += ["-s", s]
    return warmfork.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180)


def test_a_warc_replay_applies_the_same_rules_from_the_archived_headers_and_files(default_crawl, tmp_path):
    tmp, *_ = default_crawl
    archives = sorted(str(p) for p in (tmp / "warcs").glob("*.warc.gz"))
    replay = tmp_path / "replay"
    proc = _warc(*archives, "-o", str(replay))
    assert proc.returncode == 0, proc.stderr[-3000:]
    text, images = _harvest(replay)
    want_text, want_images = _expected()
    assert images == want_images
    assert text == want_text
    rows = {row["image_url"]: row for row in read_tsv(replay / "images.tsv")}
    assert rows["http://opt.test/img/jsonld.png"]["creator"] == "Jane Doe"
    stats = json.loads((replay / "stats.json").read_text())
    assert stats["focuscrawl/optout/tdmrep_files/found"] == 1  # tdm.test's file, from the archive


def test_a_replay_whose_archives_lack_tdmrep_json_says_so(tmp_path):
    from tests.support.archives import write_warc
    from tests.support.optoutsite import page_html

    reserved = next(c for c in CASES if c.name == "reserved")
    warc = write_warc(tmp_path / "x.warc.gz", [(reserved.url, [("Content-Type", "text/html")],
                                                page_html(reserved).encode())])
    proc = _warc(str(warc), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["focuscrawl/optout/tdmrep_files/not_archived"] == 1
    assert "the archives hold no /.well-known/tdmrep.json for tdm.test" in proc.stderr


def test_the_crawl_summary_names_every_opt_out_counter(default_crawl):
    """The summary every crawl ends with lists the focuscrawl/optout/* counters, whatever their names."""
    tmp, stats, proc, web = default_crawl
    summary = next(line for line in proc.stderr.splitlines() if line.startswith("  opt-outs (not fetched or not kept): "))
    for key, value in stats.items():
        if key.startswith("focuscrawl/optout/") and value:
            assert f"{key.removeprefix('focuscrawl/optout/')} {value:,}" in summary, (key, summary)
