"""`focuscrawl fetch`: the best candidate pairs of a replay of page-only archives, fetched
politely from a real server on 127.0.0.1 into the same run directory, and `rank` after it."""
from __future__ import annotations

import json
import shutil
import sys

import pytest

from focuscrawl.output.records import url_sha1
from tests.support.crawl import FAST, ROOT
from tests.support.localweb import CAT_TEXT, LocalWeb, Page, png_bytes
from tests.support.runfiles import keyed_rows as rows
from tests.support import warmfork

#: image path -> its ALT; the last is off topic (ranked last by the cat model)
ALTS = {"/img/tabby.png": "a tabby cat sleeping on the sofa with a kitten",
        "/img/kittens.png": "two kittens and a cat playing with the cat toy",
        "/private/cat.png": "the cat sleeps on the sofa all day long",
        "/img/noai.png": "the kitten plays with the cat on the sofa",
        "/img/broken.png": "a cat and a kitten sleeping on the sofa",
        "/reserved/cat.png": "the kitten sleeps with the cat on the sofa",
        "/img/finance.png": "quarterly revenue table of the finance department"}
TOP = 6


def site() -> dict:
    return {"/robots.txt": Page("User-agent: *\nDisallow: /private/\n", "text/plain"),
            "/img/tabby.png": Page(png_bytes(640, 480, (200, 10, 10)), "image/png"),
            "/img/kittens.png": Page(png_bytes(800, 600, (10, 200, 10)), "image/png"),
            "/private/cat.png": Page(png_bytes(640, 480), "image/png"),
            "/img/noai.png": Page(png_bytes(640, 480), "image/png", headers={"X-Robots-Tag": "noai"}),
            "/img/broken.png": Page(png_bytes(640, 480)[:60], "image/png"),
            "/reserved/cat.png": Page(png_bytes(640, 480), "image/png"),
            "/.well-known/tdmrep.json": Page(json.dumps([{"location": "/reserved*", "tdm-reservation": 1}]),
                                             "application/json"),
            "/img/finance.png": Page(png_bytes(640, 480), "image/png")}


def replay_of_pages(tmp_path, base: str):
    """A replay of a page-only WARC whose pages show the server's images: every image a candidate."""
    from tests.support.archives import write_warc

    def page(path: str, alt: str) -> bytes:
        return (f'<html><body><div><p>{CAT_TEXT}</p><img src="{base}{path}" alt="{alt}" '
                f'width="640" height="480"></div></body></html>').encode()

    warc = write_warc(tmp_path / "pages.warc.gz", [(f"http://p{n}.test/", [("Content-Type", "text/html")], page(p, a))
                                                   for n, (p, a) in enumerate(ALTS.items())])
    out = tmp_path / "out"
    proc = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "warc", str(warc), "-o", str(out), "--json",
                         *[x for s in FAST for x in ("-s", s)]], cwd=ROOT, capture_output=True, text=True,
                        timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {r["image_status"] for r in rows(out / "images.tsv", "image_url").values()} == {"not_archived"}
    return out


@pytest.fixture(scope="module")
def served_replay(tmp_path_factory):
    """The server of ``site()`` and one replay of its pages, for the module: each test fetches
    into a copy of that run directory (``replay``)."""
    with LocalWeb(site()) as web:
        yield web, replay_of_pages(tmp_path_factory.mktemp("replay"), web.base)


@pytest.fixture
def replay(served_replay, tmp_path):
    """(the server with an empty request log, a fresh copy of the replay's run directory)."""
    web, run = served_replay
    web.requests.clear()
    web.user_agents.clear()
    return web, shutil.copytree(run, tmp_path / "out")


def fetch_cli(out, top: int) -> dict:
    cmd = [sys.executable, "-m", "focuscrawl.cli", "fetch", str(out), "--top", str(top), "--scoring", "thesis",
           "--min", "0", "--max", "1e12", "--json"]
    for s in FAST:
        cmd += ["-s", s]
    proc = warmfork.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow(11)
def test_fetch_downloads_the_top_candidates_politely_and_rank_shows_them_fetched(replay, tmp_path, capsys):
    from focuscrawl.cli import main

    web, out = replay
    before = (out / "images.tsv").read_bytes()
    summary = fetch_cli(out, TOP)
    requested = list(web.requests)
    fetched_tsv = (out / "fetched.tsv").read_bytes()
    again = fetch_cli(out, TOP)  # the same N: nothing fetched twice, nothing lost
    assert web.requests == requested
    assert (out / "fetched.tsv").read_bytes() == fetched_tsv
    more = fetch_cli(out, TOP + 1)  # one more: the next candidate only
    new = web.requests[len(requested):]
    assert [r for r in new if r.startswith("127.0.0.1/img/")] == ["127.0.0.1/img/finance.png"]
    assert "127.0.0.1/robots.txt" in new  # each fetch is a new crawl: robots.txt read again
    url = {path: f"{web.base}{path}" for path in ALTS}
    assert summary["requested"] == TOP and summary["downloaded"] == 2 and summary["finish_reason"] == "finished"
    assert (summary["failed"]["filtered"], summary["robots_forbidden"]) == (1, 1)  # robots.txt
    assert summary["opted_out"] == {"tdmrep": 1, "x_robots_tag": 1}
    assert sum(summary["failed"].values()) == 2  # robots.txt and the broken image
    assert (again["requested"], again["fetched_before"], again["downloaded"]) == (0, TOP, 0)
    assert (more["requested"], more["fetched_before"], more["downloaded"]) == (1, TOP, 1)
    # robots.txt was read and obeyed, with the project's User-Agent; the off-topic image waited
    assert "127.0.0.1/robots.txt" in requested and "127.0.0.1/private/cat.png" not in requested
    assert "127.0.0.1/img/finance.png" not in requested
    assert web.user_agents["127.0.0.1/img/tabby.png"].startswith("focuscrawl/")
    assert (out / "images.tsv").read_bytes() == before  # images.tsv stays as the replay wrote it
    fetched = rows(out / "fetched.tsv", "image_url")
    assert len(fetched) == TOP + 1 and len((out / "fetched.tsv").read_text().splitlines()) == TOP + 2
    assert fetched[url["/img/tabby.png"]]["fetch_status"] == "downloaded"
    assert (fetched[url["/img/kittens.png"]]["width"], fetched[url["/img/kittens.png"]]["height"]) == ("800", "600")
    assert fetched[url["/private/cat.png"]]["fetch_status"] == "filtered"
    assert fetched[url["/img/noai.png"]]["fetch_status"].startswith("opted_out:x_robots_tag")
    assert fetched[url["/img/broken.png"]]["fetch_status"] not in ("downloaded", "filtered")
    assert fetched[url["/reserved/cat.png"]]["fetch_status"].startswith("opted_out:tdmrep")
    assert (out / fetched[url["/img/tabby.png"]]["image_path"]).is_file()
    assert fetched[url["/img/tabby.png"]]["image_path"] == f"images/{url_sha1(url['/img/tabby.png'])}.png"
    assert not (out / "images" / f"{url_sha1(url['/img/noai.png'])}.png").exists()
    stats = json.loads((out / "fetch_stats.json").read_text())
    assert (stats["focuscrawl/images/downloaded"], stats["focuscrawl/fetch/outcomes"]) == (1, 1)  # the last fetch's

    target = tmp_path / "ranked.jsonl"
    assert main(["rank", "--json", str(out), "--scoring", "thesis", "--min", "0", "--max", "1e12",
                 "--format", "jsonl", "-o", str(target)]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["filtered"] == {"fetch_failed": 4}
    exported = {r["url"]: r for r in map(json.loads, target.read_text().splitlines())}
    # the fetched images with their real size; those the fetch could not get are left out
    assert set(exported) == {url["/img/tabby.png"], url["/img/kittens.png"], url["/img/finance.png"]}
    assert {r["status"] for r in exported.values()} == {"success"}
    assert (exported[url["/img/kittens.png"]]["width"], exported[url["/img/kittens.png"]]["height"]) == (800, 600)
    assert exported[url["/img/tabby.png"]]["image_path"] == fetched[url["/img/tabby.png"]]["image_path"]


def test_rank_after_a_partial_fetch_keeps_the_rest_as_candidates(replay, tmp_path):
    from focuscrawl.cli import main

    _, out = replay
    summary = fetch_cli(out, 1)
    assert (summary["requested"], summary["downloaded"]) == (1, 1)
    target = tmp_path / "ranked.jsonl"
    assert main(["rank", str(out), "--scoring", "thesis", "--min", "0", "--max", "1e12", "--format", "jsonl",
                 "-o", str(target)]) == 0
    exported = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["status"] for r in exported] == ["success"] + ["not_fetched"] * (len(ALTS) - 1)
    assert exported[0]["width"] == int(rows(out / "fetched.tsv", "image_url")[exported[0]["url"]]["width"])


def test_a_fetch_killed_mid_row_leaves_no_half_row(replay, tmp_path):
    """A torn last line of fetched.tsv (a kill inside a write) is no row for `rank` and is cut by
    the next fetch, which then requests that image again."""
    from focuscrawl.corpus import iter_entries
    from focuscrawl.fetch_cli import top_candidates

    _, out = replay
    fetch_cli(out, 1)
    whole = (out / "fetched.tsv").read_bytes()
    second = top_candidates(out, 2, "thesis", None, 0, 1e12)[1]
    with open(out / "fetched.tsv", "ab") as fh:
        fh.write(f"{second.image_url}\tdownloaded\t1.0\timages/x.png\t64".encode())  # no newline: torn
    assert not (next(e for e in iter_entries(out) if e.image_url == second.image_url)).fetch_status
    summary = fetch_cli(out, 2)
    assert summary["requested"] == 1
    assert rows(out / "fetched.tsv", "image_url")[second.image_url]["image_path"] != "images/x.png"
    lines = (out / "fetched.tsv").read_bytes()
    assert lines.startswith(whole) and lines.count(b"\n") == whole.count(b"\n") + 1 and b"images/x.png" not in lines


def test_images_without_html_size_become_candidates_measured_when_fetched(tmp_path):
    """A page-only archive cannot measure an unsized image: it is a candidate all the same, and
    the fetch applies the size limits to the downloaded file."""
    from tests.support.archives import write_warc

    server = {"/img/big.png": Page(png_bytes(640, 480), "image/png"),
              "/img/small.png": Page(png_bytes(100, 80), "image/png")}
    with LocalWeb(server) as web:
        pages = [(f"http://u{n}.test/", [("Content-Type", "text/html")],
                  (f'<html><body><div><p>{CAT_TEXT}</p><img src="{web.base}{path}" alt="{alt}"></div>'
                   f'</body></html>').encode())
                 for n, (path, alt) in enumerate([("/img/big.png", "a tabby cat sleeping on the sofa"),
                                                  ("/img/small.png", "two kittens playing with the cat")])]
        warc = write_warc(tmp_path / "pages.warc.gz", pages)
        out = tmp_path / "out"
        proc = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "warc", str(warc), "-o", str(out),
                             *[x for s in FAST for x in ("-s", s)]], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        images = rows(out / "images.tsv", "image_url")
        assert {u: r["image_status"] for u, r in images.items()} == {
            f"{web.base}/img/big.png": "not_archived", f"{web.base}/img/small.png": "not_archived"}
        stats = json.loads((out / "stats.json").read_text())
        assert stats["focuscrawl/images/candidates/not_archived_unsized"] == 2
        assert "focuscrawl/images/size_measured/dropped" not in stats
        summary = fetch_cli(out, 2)
    assert (summary["requested"], summary["downloaded"]) == (2, 1)
    fetched = rows(out / "fetched.tsv", "image_url")
    assert fetched[f"{web.base}/img/big.png"]["fetch_status"] == "downloaded"
    assert fetched[f"{web.base}/img/small.png"]["fetch_status"] == "too_small"


def test_the_fetch_spiders_start_ends_once_every_candidate_is_processed(tmp_path):
    """``start()`` yields the candidates, then waits until each one's pipelines ended (written,
    dropped or failed): its end wakes the engine, which then closes at once (before, the
    engine saw the spider idle only on its next 5-second heartbeat, after the last image)."""
    import asyncio

    from focuscrawl.items import ImageItem
    from focuscrawl.spiders.fetch import CandidateFetchSpider

    spider = CandidateFetchSpider(run_dir=str(tmp_path), candidates=[ImageItem(image_url=f"http://a.test/{n}.png")
                                                                     for n in range(3)])

    async def run() -> list:
        start, yielded = spider.start(), []
        async for item in start:
            yielded.append(item)
            if len(yielded) == 3:
                break
        ended = asyncio.ensure_future(anext(start, "ended"))
        for n in range(3):
            await asyncio.sleep(0.01)
            assert not ended.done(), f"start() ended with {3 - n} candidate(s) in the pipelines"
            spider.item_processed(yielded[n])
        return [yielded, await asyncio.wait_for(ended, 5)]

    yielded, end = asyncio.run(run())
    assert [i["image_url"] for i in yielded] == [f"http://a.test/{n}.png" for n in range(3)] and end == "ended"
