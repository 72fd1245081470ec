"""Several crawler processes sharing one Redis frontier (real redis-server, real crawls)."""
from __future__ import annotations

import json
import threading
from collections import Counter

import redis

from focuscrawl.distributed import _RESERVE_SLOT
from tests.support.crawl import run_links, start_links
from tests.support.localweb import LocalWeb, Page, link_site


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
    pages = link_site(40)
    for path, page in pages.items():
        page.delay = 0.1  # slow enough that both processes get work
    with LocalWeb(pages) as web:
        single = run_links(f"{web.base}/p0", out=tmp_path / "single.jsonl")
        assert single.returncode == 0, single.stderr[-2000:]
        single_urls = {r["url"] for r in rows(tmp_path / "single.jsonl")}
        web.log.clear()
        procs = [start_links(f"{web.base}/p0", *redis_settings(redis_server), out=tmp_path / f"w{i}.jsonl",
                             log=tmp_path / f"w{i}.log") for i in range(2)]
        for p in procs:
            assert p.wait(90) == 0, (tmp_path / "w0.log").read_text()[-3000:]
        fetched = Counter(web.fetched())
    both = rows(tmp_path / "w0.jsonl") + rows(tmp_path / "w1.jsonl")
    assert len(single_urls) == 40
    assert {r["url"] for r in both} == single_urls
    assert len(both) == 40  # no page processed twice
    assert max(fetched.values()) == 1 and len(fetched) == 40  # server saw each page once
    assert len({r["pid"] for r in both}) == 2, "both processes must have crawled"
    log = (tmp_path / "w0.log").read_text()
    assert "redis_throttle/requests" in log


def test_priorities_hold_across_processes(tmp_path, redis_server):
    """A hub links to 30 leaves with priorities 0..29: two workers fetch them best-first."""
    links = "".join(f'<a href="/leaf{j}" data-priority="{j}">leaf</a>' for j in range(30))
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
    # each fetch may be overtaken only by requests already popped by the other worker
    inversions = sum(1 for i, a in enumerate(order) for b in order[i + 1:] if b > a)
    assert order[:5] and min(order[:10]) >= 15, order
    assert inversions <= 6, order
