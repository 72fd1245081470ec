"""The page analysis gives the same run directory in the crawl process and on the worker pool,
and the pool's workers keep their guarantees (their pipes on the reactor).

Two deterministic crawls (one request at a time) of the same local web with the bundled
model, ``FOCUSCRAWL_ANALYSIS_WORKERS=0`` and ``=1``: same pages.tsv rows (but the fetch
time), same sentences, same images.tsv rows (in download order) and records, same links log and LM
counts; the second crawl really analysed its pages in a worker process.
"""
from __future__ import annotations

import csv
import gzip
import json
import os
import signal
import time
from pathlib import Path

import pytest

from focuscrawl.analysis import AnalysisConfig, analyse_page
from focuscrawl.analysis_pool import AnalysisFailed, PageAnalyser
from tests.support.crawl import crawl, on_reactor
from tests.support.localweb import LocalWeb, Page, png_bytes
from tests.support.processes import alive, descendants

CAT = ("The tabby cat sleeps on the warm sofa while the kitten chases a ball of wool.",
       "A Maine Coon is a large domestic cat breed with a long fluffy tail and tufted ears.",
       "Football fans crowded the stadium to watch the final match of the season.")


def site(n: int = 8) -> dict[str, Page]:
    pages = {"/robots.txt": Page(b"User-agent: *\nAllow: /\n", "text/plain")}
    for i in range(n):
        text = " ".join(CAT[(i + k) % 3] for k in range(3 + i % 2))
        links = "".join(f'<li><a href="/p{j}">{CAT[j % 3].split()[1]} page {j}</a></li>'
                        for j in range(n) if j != i)
        figures = "".join(
            f'<figure><img src="/img{i}-{k}.png" alt="cat picture {i} {k}" width="640" height="480">'
            f"<figcaption>{CAT[(i + k) % 3]}</figcaption></figure>" for k in range(2))
        shared = '<p><img src="/shared.png" alt="our cat logo" width="640" height="480"></p>'
        body = (f"<html><head><title>Page {i}</title></head><body><nav><ul>{links}</ul></nav>"
                f"<main><h1>Cats {i}</h1><p>{text}</p>{figures}{shared}</main></body></html>")
        pages[f"/p{i}"] = Page(body)
        for k in range(2):
            pages[f"/img{i}-{k}.png"] = Page(png_bytes(640, 480, (i * 20, k * 90, 50)), "image/png")
    pages["/shared.png"] = Page(png_bytes(640, 480, (1, 2, 3)), "image/png")
    # a near-duplicate of page 0
    pages["/p0-copy"] = Page(pages["/p0"].body.replace(b"Cats 0", b"Cats 0 again"))
    pages["/p1"] = Page(pages["/p1"].body.replace(b"</ul>", b'<li><a href="/p0-copy">cats again</a></li></ul>'))
    return pages


def tsv(path: Path, drop=("fetched_at",)) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: v for k, v in r.items() if k not in drop} for r in csv.DictReader(fh, delimiter="\t")]


def records(out: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted((out / "records").glob("*/*.json"))}


def test_pool_and_in_process_analysis_write_the_same_run(tmp_path):
    runs = {}
    with LocalWeb(site()) as web:
        for workers in (0, 1):
            tmp = tmp_path / f"w{workers}"
            tmp.mkdir()
            stats, proc = crawl(web, tmp, f"{web.base}/p0", settings={"FOCUSCRAWL_ANALYSIS_WORKERS": workers},
                                model="", keywords="", timeout=180)
            assert proc.returncode == 0, proc.stderr[-3000:]
            runs[workers] = (tmp / "out", stats)
    (a, stats_a), (b, stats_b) = runs[0], runs[1]
    pages = tsv(a / "pages.tsv")
    assert len(pages) == 9 and pages == tsv(b / "pages.tsv")
    assert all(float(p["perplexity"]) > 0 for p in pages)
    assert any(p["near_duplicate_of"] for p in pages)  # SimHash ran (in the worker for b)
    assert gzip.decompress((a / "sentences.txt.gz").read_bytes()) == gzip.decompress(
        (b / "sentences.txt.gz").read_bytes())
    # rows are written as downloads finish (concurrently): the same rows, keyed by URL
    images = {r["image_url"]: r for r in tsv(a / "images.tsv", drop=())}
    assert len(images) == 17 and images == {r["image_url"]: r for r in tsv(b / "images.tsv", drop=())}
    assert records(a) == records(b)
    assert (a / "links.tsv").read_text() == (b / "links.tsv").read_text()
    for key in ("focuscrawl/lm/queries", "focuscrawl/images/kept", "focuscrawl/links/found", "focuscrawl/neardup/near_duplicates"):
        assert stats_a.get(key) == stats_b.get(key), key
    assert stats_a.get("focuscrawl/analysis/pool_pages") is None
    assert stats_b["focuscrawl/analysis/pool_pages"] == 9



# -- the worker processes and their pipes, on the session's reactor ---------------------
def spawned_workers(before: set[int], n: int) -> list[int]:
    """The ``n`` analysis workers (spawned interpreters) this process started since ``before``."""
    deadline = time.monotonic() + 60
    while True:
        found = sorted(pid for pid in descendants(os.getpid()) - before
                       if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes())
        if len(found) >= n or time.monotonic() > deadline:
            assert len(found) == n, found
            return found
        time.sleep(0.02)


def page(i: int, padding: int = 0) -> tuple[str, str, str, int]:
    """A page of the cats site (``padding`` bytes of comment make it big and cheap to analyse)."""
    url = f"http://cats.test/p{i}"
    html = site()[f"/p{i}"].body.decode().replace("</body>", f"<!-- {'x' * padding} --></body>")
    return html, url, url, 0


@pytest.fixture
def expected(cats_scorer):
    """What the crawl process's own analysis makes of a page."""
    config = AnalysisConfig()
    return lambda args: analyse_page(*args, config, cats_scorer)


@pytest.mark.timeout(120)
def test_big_pages_for_a_stopped_worker_leave_the_reactor_free_and_close_waits_for_them(cats_scorer, expected):
    """Three pages of 2 MB each (far more than the pipe holds) for a worker that does not read
    (SIGSTOP): ``analyse`` returns at once and the reactor goes on; once the worker runs
    again, ``close`` waits for the three answers, then the worker is gone."""
    before = descendants(os.getpid())
    analyser = PageAnalyser(AnalysisConfig(), cats_scorer, workers=1)
    (worker,) = spawned_workers(before, 1)
    pages = [page(i, padding=2 * 1024 * 1024) for i in range(3)]
    os.kill(worker, signal.SIGSTOP)
    try:
        deferreds = on_reactor(lambda: [analyser.analyse(*args) for args in pages])
        assert on_reactor(lambda: [d.called for d in deferreds]) == [False, False, False]
    finally:
        os.kill(worker, signal.SIGCONT)
    on_reactor(analyser.close)
    assert [d.called for d in deferreds] == [True, True, True]
    assert [on_reactor(lambda d=d: d) for d in deferreds] == [expected(args) for args in pages]
    assert not alive({worker})
    assert analyser.worker_counters()["focuscrawl/lm/queries"] > 0


@pytest.mark.timeout(120)
def test_a_killed_worker_is_replaced_and_a_page_that_kills_two_fails(cats_scorer, expected, caplog):
    """A worker killed with a page in its pipe: a new one analyses it (one warning). A page
    whose new worker is killed too fails with ``AnalysisFailed``; the next page gets a new
    worker again."""
    before = descendants(os.getpid())
    analyser = PageAnalyser(AnalysisConfig(), cats_scorer, workers=1)
    (first,) = spawned_workers(before, 1)
    os.kill(first, signal.SIGSTOP)  # the page stays in its pipe, unread
    (held,) = on_reactor(lambda: [analyser.analyse(*page(1))])  # (a list: not waited for)
    os.kill(first, signal.SIGKILL)
    assert on_reactor(lambda: held) == expected(page(1))
    (second,) = spawned_workers(before | {first}, 1)
    os.kill(second, signal.SIGSTOP)
    (doomed,) = on_reactor(lambda: [analyser.analyse(*page(2))])
    os.kill(second, signal.SIGKILL)
    (third,) = spawned_workers(before | {first, second}, 1)
    os.kill(third, signal.SIGKILL)
    with pytest.raises(AnalysisFailed, match="died twice on http://cats.test/p2"):
        on_reactor(lambda: doomed)
    assert on_reactor(analyser.analyse, *page(3)) == expected(page(3))
    on_reactor(analyser.close)
    assert analyser.worker_counters()["focuscrawl/analysis/pool_restarts"] == 3
    assert caplog.text.count("an analysis worker died") == 3
    assert not alive({first, second, third})


@pytest.mark.timeout(120)
def test_two_workers_take_a_page_each_and_a_page_error_reaches_its_deferred(cats_scorer, expected, caplog):
    """Two workers, both stopped, two pages: each holds one (killing one sends one page
    again); a page whose analysis raises fails its Deferred with that error, the worker
    goes on."""
    before = descendants(os.getpid())
    analyser = PageAnalyser(AnalysisConfig(), cats_scorer, workers=2)
    workers = spawned_workers(before, 2)
    for pid in workers:
        os.kill(pid, signal.SIGSTOP)
    deferreds = on_reactor(lambda: [analyser.analyse(*page(i)) for i in (4, 5)])
    os.kill(workers[0], signal.SIGKILL)
    os.kill(workers[1], signal.SIGCONT)
    assert [on_reactor(lambda d=d: d) for d in deferreds] == [expected(page(4)), expected(page(5))]
    assert "analyses again the 1 page(s) it held" in caplog.text
    with pytest.raises(TypeError):
        on_reactor(analyser.analyse, None, "http://cats.test/none", "http://cats.test/none", 0)
    assert on_reactor(analyser.analyse, *page(6)) == expected(page(6))
    on_reactor(analyser.close)
    assert analyser.worker_counters()["focuscrawl/analysis/pool_restarts"] == 1
