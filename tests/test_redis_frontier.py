"""Several crawler processes sharing one Redis frontier (real redis-server, real crawls)."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter

import redis

from focuscrawl.distributed import _RESERVE_SLOT
from tests.support.crawl import ROOT, run_links, start_links
from tests.localweb import LocalWeb, Page, link_site


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def redis_settings(server, crawl="t", delay=0.02):
    return [f"FOCUSCRAWL_REDIS_URL={server.url}", f"FOCUSCRAWL_REDIS_CRAWL={crawl}",
            f"FOCUSCRAWL_REDIS_HOST_DELAY={delay}", "CONCURRENT_REQUESTS=2",
            "FOCUSCRAWL_REDIS_BUSY_TIMEOUT=1.5"]


def test_host_slots_are_spaced_across_clients(redis_server):
    """The Lua reservation is atomic: 4 clients x 10 reservations get distinct slots 50 ms apart."""
    waits: list[int] = []
    lock = threading.Lock()

    def client():
        script = redis.Redis(port=redis_server.port).register_script(_RESERVE_SLOT)
        for _ in range(10):
            _wait, start = script(keys=["h:example"], args=[50])
            with lock:
                waits.append(int(start))
    threads = [threading.Thread(target=client) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    starts = sorted(waits)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert len(starts) == 40
    assert min(gaps) == 50  # distinct slots, exactly one delay apart (Redis clock)


def test_two_processes_share_one_frontier(tmp_path, redis_server):
    pages = link_site(24)
    for path, page in pages.items():
        page.delay = 0.05  # slow enough that both processes get work
    with LocalWeb(pages) as web:
        single = run_links(f"{web.base}/p0", out=tmp_path / "single.jsonl")
        assert single.returncode == 0, single.stderr[-2000:]
        single_urls = {r["url"] for r in rows(tmp_path / "single.jsonl")}
        web.requests.clear()
        procs = [start_links(f"{web.base}/p0", *redis_settings(redis_server), out=tmp_path / f"w{i}.jsonl",
                             log=tmp_path / f"w{i}.log") for i in range(2)]
        for p in procs:
            assert p.wait(90) == 0, (tmp_path / "w0.log").read_text()[-3000:]
        fetched = Counter(web.fetched())
    both = rows(tmp_path / "w0.jsonl") + rows(tmp_path / "w1.jsonl")
    assert len(single_urls) == 24
    assert {r["url"] for r in both} == single_urls
    assert len(both) == 24  # no page processed twice
    assert max(fetched.values()) == 1 and len(fetched) == 24  # server saw each page once
    assert len({r["pid"] for r in both}) == 2, "both processes must have crawled"
    log = (tmp_path / "w0.log").read_text()
    assert "redis_throttle/requests" in log


def test_priorities_hold_across_processes(tmp_path, redis_server):
    """A hub links to 30 leaves (shuffled) with priorities 0..29: two workers fetch them best-first."""
    import random
    leaves = list(range(30))
    random.Random(7).shuffle(leaves)
    links = "".join(f'<a href="/leaf{j}" data-priority="{j}">leaf</a>' for j in leaves)
    pages = {"/robots.txt": Page(b"User-agent: *\n", "text/plain"),
             "/hub": Page(f"<html><body>{links}</body></html>".encode())}
    pages.update({f"/leaf{j}": Page(b"<html><body>leaf</body></html>") for j in range(30)})
    with LocalWeb(pages) as web:
        procs = [start_links(f"{web.base}/hub", *redis_settings(redis_server, delay=0.08),
                             "CONCURRENT_REQUESTS=1", out=tmp_path / f"w{i}.jsonl") for i in range(2)]
        for p in procs:
            assert p.wait(90) == 0
        order = [int(p[5:]) for p in web.fetched("/leaf")]
    assert sorted(order) == list(range(30))
    # Only a request popped while the hub's links were still being queued, or two
    # workers' requests started in the other order, can be out of place: the fetch
    # order follows priority almost exactly (a FIFO frontier would give rho ~ 0 here).
    ranks = [sorted(order, reverse=True).index(p) for p in order]
    n = len(order)
    rho = 1 - 6 * sum((i - r) ** 2 for i, r in enumerate(ranks)) / (n * (n * n - 1))
    assert rho > 0.9, order
    assert min(order[2:10]) >= 15, order


def test_focused_spider_on_two_processes_merges_to_the_single_process_run(tmp_path, redis_server):
    """The real focused crawl: two processes, one frontier, per-process run dirs merged."""
    from tests.test_warc_replay import FAST, rows, sightings, site

    def focused(out, *extra):
        cmd = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"seeds={web.base}/page0",
               "-a", f"output={out}"]
        for s in FAST + ["CONCURRENT_REQUESTS=1"] + list(extra):
            cmd += ["-s", s]
        return cmd

    pages = site()
    for page in pages.values():
        page.delay = 0.5  # long enough that start-up jitter cannot let one process take every page
    with LocalWeb(pages) as web:
        single = subprocess.run(focused(tmp_path / "single"), cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert single.returncode == 0, single.stderr[-3000:]
        web.requests.clear()
        procs = [subprocess.Popen(focused(tmp_path / f"part-{i}", *redis_settings(redis_server, crawl="focused")),
                                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(2)]
        for p in procs:
            assert p.wait(120) == 0
        fetched = Counter(web.fetched())
    page_fetches = {p: n for p, n in fetched.items() if p.startswith("/page")}
    assert len(page_fetches) == 4 and max(page_fetches.values()) == 1  # every page once
    # documented limit: image downloads are deduplicated per process, not across
    # processes (an image on pages crawled by both may be fetched by each)
    assert max(fetched.values()) <= 2
    parts = [tmp_path / "part-0", tmp_path / "part-1"]
    assert all(len(rows(p / "pages.tsv", "url")) > 0 for p in parts), "both processes crawled pages"
    merged = subprocess.run([sys.executable, "-m", "focuscrawl.cli", "merge", *map(str, parts), "-o",
                             str(tmp_path / "merged")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr[-2000:]
    single_dir, merged_dir = tmp_path / "single", tmp_path / "merged"
    assert set(rows(merged_dir / "pages.tsv", "url")) == set(rows(single_dir / "pages.tsv", "url"))
    assert set(rows(merged_dir / "images.tsv", "image_url")) == set(rows(single_dir / "images.tsv", "image_url"))
    # every page's context of every image, once; near-duplicate marks are per process
    # (documented limit: each process has its own SimHash index)
    def contexts(run):
        return {url: sorted(json.dumps({k: v for k, v in json.loads(s).items() if k != "near_duplicate_page"},
                                       sort_keys=True) for s in ss) for url, ss in sightings(run).items()}
    assert contexts(merged_dir) == contexts(single_dir)


def test_two_processes_refuse_one_output_directory(tmp_path, redis_server):
    pages = link_site(30)
    for page in pages.values():
        page.delay = 0.4  # the first process crawls for > 6 s
    output = f"FOCUSCRAWL_OUTPUT_DIR={tmp_path / 'same'}"
    with LocalWeb(pages) as web:
        first = start_links(f"{web.base}/p0", *redis_settings(redis_server), output, out=tmp_path / "a.jsonl")
        deadline = time.time() + 30
        while not (tmp_path / "a.jsonl").exists() and time.time() < deadline:
            time.sleep(0.1)  # the first process is crawling: it has claimed the directory
        second = run_links(f"{web.base}/p0", *redis_settings(redis_server), output, out=tmp_path / "b.jsonl")
        first.terminate()  # a clean stop; no need to crawl the rest
        assert first.wait(60) == 0
    assert second.returncode != 0
    assert "is being written by worker" in second.stderr
    assert not (tmp_path / "b.jsonl").exists()  # it crawled nothing
