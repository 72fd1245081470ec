"""Several crawler processes sharing one Redis frontier (real redis-server, real crawls)."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
import redis

from focuscrawl.distributed import _RESERVE_SLOT
from focuscrawl.output.files import iter_tsv
from focuscrawl.output.merge import merge_runs
from tests.support.crawl import FAST, ROOT, crawl_here, run_links, scrapy_cmd, start_links
from tests.support.localweb import LocalWeb, Page, assert_paced, image_site, link_site, png_bytes
from tests.support.processes import wait_gone
from tests.support.runfiles import keyed_rows, sightings
from tests.support import warmfork


def jsonl_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def redis_settings(server, crawl="t", delay=0.02):
    return [f"FOCUSCRAWL_REDIS_URL={server.url}", f"FOCUSCRAWL_REDIS_CRAWL={crawl}",
            f"FOCUSCRAWL_REDIS_HOST_DELAY={delay}", "CONCURRENT_REQUESTS=2",
            "FOCUSCRAWL_REDIS_BUSY_TIMEOUT=1.5"]


def focused_cmd(base: str, out, *settings: str) -> list[str]:
    """``scrapy crawl focused`` from ``base``/page0 into ``out`` with the fast test settings."""
    return scrapy_cmd("crawl", "focused", *settings, seeds=f"{base}/page0", output=out)


def single_run(base: str, out, *settings: str, timeout: float = 180) -> None:
    """What ``focused_cmd(base, out, *settings)`` runs, to its end in this process
    (``crawl_here``: the same spider and components, no Scrapy start-up): the reference run
    of one process that the shared-frontier runs are compared with."""
    pairs = dict(s.split("=", 1) for s in FAST + list(settings))
    _, done = crawl_here(None, pairs, {"seeds": f"{base}/page0", "output": str(out)}, timeout)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]


def set_delay(pages: dict, seconds: float, only: str = "") -> None:
    """Every page of ``pages`` whose path starts with ``only`` answers after ``seconds`` from
    now on: a crawl is slowed only while its timing matters (a reference run, or the crawl
    after a kill has landed, needs no slow web)."""
    for path, page in pages.items():
        if path.startswith(only):
            page.delay = seconds


def wait_for_lines(logs: list, line: str, procs: list, timeout: float = 60) -> None:
    """Until every log of ``logs`` has ``line`` (or one of ``procs`` has ended, or ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not all(line in log.read_text() for log in logs) and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            return
        time.sleep(0.02)


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
    with LocalWeb(pages) as web:
        single = run_links(f"{web.base}/p0", out=tmp_path / "single.jsonl")
        assert single.returncode == 0, single.stderr[-2000:]
        single_urls = {r["url"] for r in jsonl_rows(tmp_path / "single.jsonl")}
        web.requests.clear()
        set_delay(pages, 0.05)  # slow enough that both processes get work
        # LOG_LEVEL=DEBUG: the stats dump the throttle's counter is read from
        procs = [start_links(f"{web.base}/p0", *redis_settings(redis_server), "LOG_LEVEL=DEBUG",
                             out=tmp_path / f"w{i}.jsonl", log=tmp_path / f"w{i}.log") for i in range(2)]
        for p in procs:
            assert p.wait(90) == 0, (tmp_path / "w0.log").read_text()[-3000:]
        fetched = Counter(web.fetched())
    both = jsonl_rows(tmp_path / "w0.jsonl") + jsonl_rows(tmp_path / "w1.jsonl")
    assert len(single_urls) == 24
    assert {r["url"] for r in both} == single_urls
    assert len(both) == 24  # no page processed twice
    assert max(fetched.values()) == 1 and len(fetched) == 24  # server saw each page once
    assert len({r["pid"] for r in both}) == 2, "both processes must have crawled"
    log = (tmp_path / "w0.log").read_text()
    assert "focuscrawl/redis/throttle_requests" in log


def test_a_hosts_crawl_delay_holds_across_processes(tmp_path, redis_server):
    """Each process reads the host's robots.txt; the shared per-host throttle spaces the two
    processes' requests by its Crawl-delay, not by FOCUSCRAWL_REDIS_HOST_DELAY (0.02 s)."""
    pages = link_site(8)
    pages["/robots.txt"] = Page("User-agent: *\nCrawl-delay: 0.5\n", "text/plain")
    with LocalWeb(pages) as web:
        procs = [start_links(f"{web.base}/p0", *redis_settings(redis_server, crawl="paced"), "ROBOTSTXT_OBEY=True",
                             out=tmp_path / f"w{i}.jsonl", log=tmp_path / f"w{i}.log") for i in range(2)]
        for p in procs:
            assert p.wait(90) == 0, (tmp_path / "w0.log").read_text()[-3000:]
    times = [t for t, what in web.request_times if what.startswith("127.0.0.1/p")]
    both = jsonl_rows(tmp_path / "w0.jsonl") + jsonl_rows(tmp_path / "w1.jsonl")
    assert len(times) == 8 and len(both) == 8
    assert len({r["pid"] for r in both}) == 2, "both processes must have crawled"
    assert_paced([b - a for a, b in zip(times, times[1:])], 0.5)


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
    def focused(out, *extra):
        return focused_cmd(web.base, out, "CONCURRENT_REQUESTS=1", *extra)

    pages = image_site()
    with LocalWeb(pages) as web:
        single_run(web.base, tmp_path / "single", "CONCURRENT_REQUESTS=1")
        web.requests.clear()
        set_delay(pages, 0.3)  # long enough that the process that gets page0 cannot take every page
        # no answer before both spiders are open: the first process started cannot crawl the
        # whole web while the second one still starts (a loaded machine's start-up jitter)
        web.hold = threading.Event()
        logs = [tmp_path / f"part-{i}.log" for i in range(2)]
        procs = [warmfork.popen(focused(tmp_path / f"part-{i}", *redis_settings(redis_server, crawl="focused")),
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(log, "w")) for i, log in enumerate(logs)]
        wait_for_lines(logs, "Spider opened", procs=procs)
        web.hold.set()
        for p in procs:
            assert p.wait(120) == 0
        fetched = Counter(web.fetched())
    page_fetches = {p: n for p, n in fetched.items() if p.startswith("/page")}
    assert len(page_fetches) == 4 and max(page_fetches.values()) == 1  # every page once
    # documented limit: image downloads are deduplicated per process, not across
    # processes (an image on pages crawled by both may be fetched by each)
    assert max(fetched.values()) <= 2
    parts = [tmp_path / "part-0", tmp_path / "part-1"]
    assert all(len(keyed_rows(p / "pages.tsv", "url")) > 0 for p in parts), "both processes crawled pages"
    merge_runs(parts, tmp_path / "merged")  # (the command: tests/test_merge_runs.py, and below)
    single_dir, merged_dir = tmp_path / "single", tmp_path / "merged"
    assert set(keyed_rows(merged_dir / "pages.tsv", "url")) == set(keyed_rows(single_dir / "pages.tsv", "url"))
    assert set(keyed_rows(merged_dir / "images.tsv", "image_url")) == set(keyed_rows(single_dir / "images.tsv", "image_url"))
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


def kill_site(n: int = 36) -> dict:
    """A tree of ``n`` cat pages (three links each), every third page with its own image, a 404
    and a too long redirect chain."""
    text = "The cat sleeps on the sofa and the kitten plays with the cat toy all day long."
    pages = {"/robots.txt": Page(b"User-agent: *\nAllow: /\n", "text/plain")}
    for i in range(n):
        links = "".join(f'<a href="/page{j}">cats {j}</a>' for j in range(3 * i + 1, min(n, 3 * i + 4)))
        img = f'<img src="/cat{i}.png" alt="a cat on the sofa {i}" width="640" height="480">' if i % 3 == 0 else ""
        pages[f"/page{i}"] = Page(f"<html><body><p>{text} Page {i}.</p>{img}{links}</body></html>".encode(),
                                  delay=0.05)
        if i % 3 == 0:
            pages[f"/cat{i}.png"] = Page(png_bytes(640, 480, (i * 5 % 255, 100, 50)), "image/png")
    # requests whose end no middleware sees on the way (a 404 for the errback; more redirects
    # than REDIRECT_MAX_TIMES: IgnoreRequest raised in process_response): their leases end too
    pages["/page1"].body = pages["/page1"].body.replace(b"</body>", b'<a href="/missing">x</a><a href="/r0">y</a></body>')
    pages["/missing"] = Page(b"gone", "text/plain", status=404)
    for k in range(25):
        pages[f"/r{k}"] = Page(b"", "text/plain", status=302, headers={"Location": f"/r{k + 1}"})
    return pages


def page_urls(run) -> list[str]:
    path = run / "pages.tsv"
    lines = path.read_text().splitlines()[1:] if path.exists() else []
    return [line.split("\t", 1)[0] for line in lines]


def kill_after(pages: int) -> list[str]:
    """Settings that make a crawl SIGKILL itself when its ``pages``-th HTML page arrives."""
    from focuscrawl.settings import DOWNLOADER_MIDDLEWARES

    return [f"TEST_KILL_AFTER_RESPONSES={pages}", "DOWNLOADER_MIDDLEWARES=" + json.dumps(
        {**DOWNLOADER_MIDDLEWARES, "tests.support.killswitch.KillAfterResponses": 1000})]


def test_sigkilled_worker_loses_nothing(tmp_path, redis_server):
    """Two focused workers (each with its JOBDIR); worker A SIGKILLs itself at its 6th page, when
    it holds leased requests and parsed pages whose rows sit in its unwritten sentence batch.
    A is restarted on its run directory; both run to the end. The merged run has every page of
    the single-process run exactly once, and every image."""
    import signal

    def focused(out, *extra):
        return focused_cmd(web.base, out, "CONCURRENT_REQUESTS=2", *extra)

    shared = redis_settings(redis_server, crawl="kill", delay=0.001)
    kill = kill_after(6)
    a, b = tmp_path / "part-a", tmp_path / "part-b"
    site = kill_site()
    with LocalWeb(site) as web:
        set_delay(site, 0, only="/page")
        single_run(web.base, tmp_path / "single", "CONCURRENT_REQUESTS=2")
        web.requests.clear()
        set_delay(site, 0.05, only="/page")
        # no answer before both spiders are open: B, started second, cannot crawl the pages A
        # needs to reach its kill while A still starts
        web.hold = threading.Event()
        logs = [tmp_path / "a.log", tmp_path / "b.log"]
        proc_a = warmfork.popen(focused(a, *shared, f"JOBDIR={tmp_path / 'job-a'}", *kill), cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=open(logs[0], "w"))
        proc_b = warmfork.popen(focused(b, *shared, f"JOBDIR={tmp_path / 'job-b'}"), cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=open(logs[1], "w"))
        wait_for_lines(logs, "Spider opened", procs=[proc_a, proc_b])
        web.hold.set()
        # wait for A's death without reaping it (a zombie counts as gone): its pid stays taken,
        # so B does not take its leases back before they are inspected here
        assert not wait_gone({proc_a.pid}, 120), "worker A never reached its kill"
        leased_key = [k for k in redis_server.client.keys("focuscrawl:kill:leased:*") if str(a).encode() in k]
        leased = {json_url(m) for k in leased_key for m in redis_server.client.zrange(k, 0, -1)}
        committed = set(page_urls(a))
        fetched = {web.base + p for p in web.fetched("/page")}
        assert proc_a.wait(10) == -signal.SIGKILL
        assert leased, "A held no leases when it was killed"
        unwritten = (leased & fetched) - committed  # the killing page and pages parsed before it
        assert len(unwritten) >= 2, f"A had no parsed page without a row (leased {leased}, rows {committed})"
        set_delay(site, 0.03, only="/page")  # still slow enough for the restarted A to find B crawling
        restart = warmfork.popen(focused(a, *shared, f"JOBDIR={tmp_path / 'job-a'}"), cwd=ROOT,
                                 stdout=subprocess.DEVNULL, stderr=open(tmp_path / "a2.log", "w"))
        assert restart.wait(180) == 0, (tmp_path / "a2.log").read_text()[-3000:]
        assert proc_b.wait(180) == 0, (tmp_path / "b.log").read_text()[-3000:]
    stats = {p.name: json.loads((p / "stats.json").read_text()) for p in (a, b)}
    recovered = sum(s.get("focuscrawl/redis/leases_recovered", 0) + s.get("focuscrawl/redis/leases_recovered_own", 0)
                    + s.get("focuscrawl/redis/leases_already_committed", 0) for s in stats.values())
    assert recovered >= len(leased)
    assert all(s.get("focuscrawl/redis/leases_requeued_at_close", 0) == 0 for s in stats.values())
    assert sum(s.get("focuscrawl/redis/leases_ended_unseen", 0) for s in stats.values()) >= 1  # the last redirect
    expected = set(page_urls(tmp_path / "single"))
    both = page_urls(a) + page_urls(b)
    assert len(expected) == 36
    assert sorted(both) == sorted(expected), "pages lost or written twice"
    merge_runs([a, b], tmp_path / "merged")
    merged_pages = page_urls(tmp_path / "merged")
    assert len(merged_pages) == len(set(merged_pages)) == 36 and set(merged_pages) == expected
    images = set(keyed_rows(tmp_path / "merged" / "images.tsv", "image_url"))
    assert images == set(keyed_rows(tmp_path / "single" / "images.tsv", "image_url")) and len(images) == 12
    assert not redis_server.client.keys("focuscrawl:kill:leased:*")  # every lease released


def json_url(member: bytes) -> str:
    from scrapy_redis import picklecompat

    return picklecompat.loads(member)["url"]


def test_restarted_worker_takes_back_its_own_leases(tmp_path, redis_server):
    """One worker alone, SIGKILLed at its 6th page and restarted on its run directory: nobody
    else could give its leases back, the restart does (after cutting pages.tsv back to its
    JOBDIR checkpoint), and the run ends with each of the 36 pages once."""
    import signal

    out, job = tmp_path / "out", f"JOBDIR={tmp_path / 'job'}"
    settings = redis_settings(redis_server, crawl="solo", delay=0.001)
    site = kill_site()
    with LocalWeb(site) as web:
        first = warmfork.run(focused_cmd(web.base, out, "CONCURRENT_REQUESTS=2", *settings, job, *kill_after(6)),
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert first.returncode == -signal.SIGKILL
        held = [m for k in redis_server.client.keys("focuscrawl:solo:leased:*")
                for m in redis_server.client.zrange(k, 0, -1)]
        fetched = {web.base + p for p in web.fetched("/page")}
        unwritten = ({json_url(m) for m in held} & fetched) - set(page_urls(out))
        assert len(unwritten) >= 2  # the killing page and pages parsed before it, without rows
        set_delay(site, 0)
        second = warmfork.run(focused_cmd(web.base, out, "CONCURRENT_REQUESTS=2", *settings, job),
                              cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert second.returncode == 0, second.stderr[-3000:]
    stats = json.loads((out / "stats.json").read_text())
    taken_back = stats.get("focuscrawl/redis/leases_recovered_own", 0) + stats.get(
        "focuscrawl/redis/leases_already_committed", 0)
    assert taken_back == len(held)
    urls = page_urls(out)
    assert len(urls) == len(set(urls)) == 36
    assert not redis_server.client.keys("focuscrawl:solo:leased:*")


def test_a_dead_worker_on_another_host_is_forgotten_and_its_pages_merge_once(tmp_path, redis_server):
    """Worker A is SIGKILLed at its 6th page and made to look as if it ran on another host (its
    rows cannot be read here), holding besides its open leases one for a page whose row it had
    committed (it died between the checkpoint and the release). Worker B gives all of A's
    leases back, crawls that page again, and forgets A: no entry of A is left in Redis. The
    merge keeps each page once and says how many it dropped."""
    import signal
    import socket

    from scrapy_redis import picklecompat

    shared = redis_settings(redis_server, crawl="xhost", delay=0.001) + ["FOCUSCRAWL_REDIS_LEASE_TIMEOUT=2",
                                                                        "FOCUSCRAWL_LINKS_LOG=True"]
    a, b = tmp_path / "part-a", tmp_path / "part-b"
    r = redis_server.client
    site = kill_site()
    with LocalWeb(site) as web:
        first = warmfork.run(focused_cmd(web.base, a, "CONCURRENT_REQUESTS=2", "FOCUSCRAWL_SENTENCES_BATCH_BYTES=1",
                                         *shared, *kill_after(6)),
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert first.returncode == -signal.SIGKILL
        committed = page_urls(a)
        assert committed, "A committed no page before it was killed"
        set_delay(site, 0)
        # A as it would look from here had it run on another host, dead since now
        here = socket.gethostname().encode()
        [(worker, token)] = r.hgetall("focuscrawl:xhost:workers").items()
        [leased_key] = r.keys("focuscrawl:xhost:leased:*")
        held = r.zrange(leased_key, 0, -1, withscores=True)
        assert held, "A held no leases when it was killed"
        # a committed page no lease names yet: on a loaded machine A can die between the checkpoint
        # and the release by itself, and a lease of committed[-1] made again from held[0] (the
        # same request) would be the same member: one lease fewer than ``held`` counts
        leased = {picklecompat.loads(member)["url"] for member, _ in held}
        extra = next((url for url in reversed(committed) if url not in leased), None)
        assert extra, "A holds a lease on every page it committed"
        request = picklecompat.loads(held[0][0])
        request["url"] = extra  # checkpointed, never released
        held.append((picklecompat.dumps(request), held[0][1]))
        other_worker, other_token = worker.replace(here, b"otherhost", 1), b"otherhost:4242:1.0"
        r.delete(leased_key, "focuscrawl:xhost:workers")
        r.zrem("focuscrawl:xhost:alive", token)
        r.hdel("focuscrawl:xhost:jobdirs", token)
        r.zadd(leased_key.replace(here, b"otherhost", 1), dict(held))
        r.hset("focuscrawl:xhost:workers", other_worker, other_token)
        # its last heartbeat long past the lease timeout: B finds it dead at its first look, so
        # when B takes the leases back does not hang on how fast B starts
        r.zadd("focuscrawl:xhost:alive", {other_token: time.time() - 60})
        r.hset("focuscrawl:xhost:jobdirs", other_token, "")
        second = warmfork.run(focused_cmd(web.base, b, "CONCURRENT_REQUESTS=2", *shared),
                              cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert second.returncode == 0, second.stderr[-3000:]
    stats = json.loads((b / "stats.json").read_text())
    assert stats["focuscrawl/redis/leases_recovered"] == len(held)  # none could be known committed
    assert stats["focuscrawl/redis/dead_workers_removed"] == 1
    # nothing of A (nor of B, which stopped cleanly) is left
    assert not r.hgetall("focuscrawl:xhost:workers") and not r.zrange("focuscrawl:xhost:alive", 0, -1)
    assert not r.hgetall("focuscrawl:xhost:jobdirs")
    assert other_worker not in r.zrange("focuscrawl:xhost:busy", 0, -1)
    assert not r.keys("focuscrawl:xhost:leased:*")
    twice = set(page_urls(a)) & set(page_urls(b))
    assert extra in twice
    merged = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "merge", str(a), str(b), "-o",
                           str(tmp_path / "merged"), "--json"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr[-2000:]
    summary = json.loads(merged.stdout)
    assert summary["duplicate_pages"] == len(twice)
    assert f"merge: left out the later fetches of {len(twice)} pages" in merged.stderr
    merged_pages = page_urls(tmp_path / "merged")
    assert sorted(merged_pages) == sorted({f"{web.base}/page{i}" for i in range(36)})
    # the page fetched twice has its links once (the later fetch's are dropped), and so has
    # every page A parsed without committing its row
    def links(run):
        return Counter((r["from"], r["to"]) for r in iter_tsv(run / "links.tsv"))
    a_links, b_links, merged_links = links(a), links(b), links(tmp_path / "merged")
    assert any(f == extra for f, _ in a_links) and any(f == extra for f, _ in b_links)
    assert max(merged_links.values()) == 1 and {f for f, _ in merged_links} <= set(merged_pages)
    assert summary["duplicate_links"] == sum((a_links + b_links - merged_links).values()) > 0
    assert summary["links"] == sum(merged_links.values())


def test_rows_a_dead_worker_wrote_past_its_checkpoint_are_crawled_again(tmp_path, redis_server):
    """Worker A writes every page's row at once but checkpoints only its first batch
    (``FOCUSCRAWL_CHECKPOINT_INTERVAL`` of an hour), and is SIGKILLed at its 8th page: its
    pages.tsv holds rows past its JOBDIR checkpoint whose requests it still leases. Worker B (same
    host) gives A's leases back; then A is restarted on its JOBDIR, which cuts pages.tsv back to
    the checkpoint. B must have kept only the leases of A's checkpointed rows: each of the 36
    pages is in exactly one part, none lost."""
    import signal

    shared = redis_settings(redis_server, crawl="past", delay=0.001)
    a, b = tmp_path / "part-a", tmp_path / "part-b"
    job_a = f"JOBDIR={tmp_path / 'job-a'}"
    a_settings = ["CONCURRENT_REQUESTS=2", "FOCUSCRAWL_SENTENCES_BATCH_BYTES=1",
                  "FOCUSCRAWL_CHECKPOINT_INTERVAL=3600", *shared, job_a]
    site = kill_site()
    with LocalWeb(site) as web:
        first = warmfork.run(focused_cmd(web.base, a, *a_settings, *kill_after(8)),
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert first.returncode == -signal.SIGKILL, first.stderr[-3000:]
        checkpoint = json.loads((tmp_path / "job-a" / "focuscrawl" / "offsets.json").read_text())["files"]
        with open(a / "pages.tsv", "rb") as f:
            past = [line.split(b"\t", 1)[0].decode() for line in f.read()[checkpoint["pages.tsv"]:].splitlines()]
        leased = {json_url(m) for k in redis_server.client.keys("focuscrawl:past:leased:*")
                  for m in redis_server.client.zrange(k, 0, -1)}
        assert past and set(past) <= leased, f"no leased row past A's checkpoint (past {past}, leased {leased})"
        set_delay(site, 0)
        second = warmfork.run(focused_cmd(web.base, b, "CONCURRENT_REQUESTS=2", *shared, f"JOBDIR={tmp_path / 'job-b'}"),
                              cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert second.returncode == 0, second.stderr[-3000:]
        restart = warmfork.run(focused_cmd(web.base, a, *a_settings), cwd=ROOT, capture_output=True, text=True,
                               timeout=120)
        assert restart.returncode == 0, restart.stderr[-3000:]
    stats_b = json.loads((b / "stats.json").read_text())
    assert stats_b["focuscrawl/redis/leases_recovered"] + stats_b.get("focuscrawl/redis/leases_already_committed", 0) \
        == len(leased)
    assert set(past) <= set(page_urls(b)), "B did not crawl again the rows past A's checkpoint"
    both = page_urls(a) + page_urls(b)
    assert sorted(both) == sorted({f"{web.base}/page{i}" for i in range(36)}), "pages lost or written twice"
    summary = merge_runs([a, b], tmp_path / "merged")
    assert summary["pages"] == 36 and summary["duplicate_pages"] == 0
    assert not redis_server.client.keys("focuscrawl:past:leased:*")
    assert not redis_server.client.hgetall("focuscrawl:past:workers")
    assert not redis_server.client.hgetall("focuscrawl:past:jobdirs")  # A's went when B forgot it


class GatedPage(Page):
    """A page answered only once ``gate`` is set (60 s at most): images held back until then."""

    def __init__(self, page: Page, gate: threading.Event) -> None:
        super().__init__(page.body, page.content_type, page.status, page.headers)
        self.gate = gate

    @property
    def delay(self) -> float:
        self.gate.wait(60)
        return 0.0

    @delay.setter
    def delay(self, value: float) -> None:
        pass


def test_images_of_a_dead_worker_that_never_comes_back_reach_the_merge(tmp_path, redis_server):
    """Worker A SIGKILLs itself at its 6th page while the downloads of its pages' images are held
    back, so it dies with committed page rows whose images it never wrote; it does not come back.
    Worker B, finding A dead, must produce those images: the merge holds every image of every
    page once. Then A does come back after all (its JOBDIR replays its pending images): the merge
    still holds each image once."""
    import signal

    from focuscrawl.output.merge import merge_runs

    gate = threading.Event()
    site = {path: GatedPage(page, gate) if path.endswith(".png") else page for path, page in kill_site(12).items()
            if not path.startswith(("/r", "/missing"))}
    # room for pages beside the held image downloads
    shared = redis_settings(redis_server, crawl="noreturn", delay=0.001) + [
        "FOCUSCRAWL_SENTENCES_BATCH_BYTES=1", "CONCURRENT_REQUESTS=6", "CONCURRENT_REQUESTS_PER_DOMAIN=6"]
    a, b, job_a = tmp_path / "part-a", tmp_path / "part-b", f"JOBDIR={tmp_path / 'job-a'}"
    with LocalWeb(site) as web:
        # A alone first: the pages it writes before it dies are the first ones, page0 and page3
        # among them, whatever the machine's load
        first = warmfork.run(focused_cmd(web.base, a, *shared, job_a, *kill_after(6)), cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert first.returncode == -signal.SIGKILL, first.stderr[-3000:]
        images_of_a = {f"{web.base}/cat{int(u.rsplit('page', 1)[1])}.png" for u in page_urls(a)
                       if int(u.rsplit("page", 1)[1]) % 3 == 0}
        assert images_of_a, "A committed no page with an image"
        assert not (a / "images.tsv").exists() or not list(iter_tsv(a / "images.tsv")), "an image was not held back"
        gate.set()
        set_delay(site, 0)
        second = warmfork.run(focused_cmd(web.base, b, *shared), cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert second.returncode == 0, second.stderr[-3000:]

        def merged_images(out):
            merge_runs([a, b], out)
            pages = page_urls(out)
            assert sorted(pages) == sorted({f"{web.base}/page{i}" for i in range(12)}), "pages lost or twice"
            rows = Counter(r["image_url"] for r in iter_tsv(out / "images.tsv"))
            expected = {f"{web.base}/cat{i}.png" for i in range(0, 12, 3)}
            assert rows == Counter(expected), f"images lost or written twice: {rows}"
            records = sightings(out)
            assert {url: len(s) for url, s in records.items()} == {url: 1 for url in expected}

        merged_images(tmp_path / "merged")
        assert json.loads((b / "stats.json").read_text())["focuscrawl/redis/pages_fetched_again_for_images"] >= 1
        # A after all: it writes the images it had pending, which B wrote too; merged once
        restart = warmfork.run(focused_cmd(web.base, a, *shared, job_a), cwd=ROOT, capture_output=True, text=True,
                               timeout=120)
        assert restart.returncode == 0, restart.stderr[-3000:]
    assert list(iter_tsv(a / "images.tsv")), "A, back, wrote none of the images it had pending"
    merged_images(tmp_path / "merged-again")
    assert not redis_server.client.keys("focuscrawl:noreturn:leased:*")


def test_a_worker_killed_after_an_image_is_scraped_but_before_its_row_keeps_the_lease(tmp_path, redis_server):
    """Worker A SIGKILLs itself when page0's image has gone through every pipeline, before its
    images.tsv row is written (``KillBeforeImageCommit``): page0's row is committed, so only
    the lease still says that its image is not safe. A must die holding it; worker B, finding
    A dead, fetches page0 again for its image, and A, restarted on its JOBDIR, writes the image
    it had pending: the merge holds every page and every image once."""
    import signal

    from focuscrawl.settings import ITEM_PIPELINES

    site = {path: page for path, page in kill_site(12).items() if not path.startswith(("/r", "/missing"))}
    site["/cat0.png"].delay = 0.3  # page0's row is committed before its image arrives
    shared = redis_settings(redis_server, crawl="window", delay=0.001) + ["FOCUSCRAWL_SENTENCES_BATCH_BYTES=1"]
    a, b, job_a = tmp_path / "part-a", tmp_path / "part-b", f"JOBDIR={tmp_path / 'job-a'}"
    with LocalWeb(site) as web:
        image = f"{web.base}/cat0.png"
        kill = [f"TEST_KILL_BEFORE_IMAGE_COMMIT_URL={image}", "ITEM_PIPELINES=" + json.dumps(
            {**ITEM_PIPELINES, "tests.support.killswitch.KillBeforeImageCommit": 150})]
        first = warmfork.run(focused_cmd(web.base, a, *shared, job_a, *kill), cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert first.returncode == -signal.SIGKILL, first.stderr[-3000:]
        assert f"{web.base}/page0" in page_urls(a)
        assert not (a / "images.tsv").exists() or image not in keyed_rows(a / "images.tsv", "image_url")
        leased = {json_url(m) for k in redis_server.client.keys("focuscrawl:window:leased:*")
                  for m in redis_server.client.zrange(k, 0, -1)}
        assert f"{web.base}/page0" in leased, "page0's lease was released before its image was written"
        set_delay(site, 0)
        second = warmfork.run(focused_cmd(web.base, b, *shared), cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert second.returncode == 0, second.stderr[-3000:]
        assert image in keyed_rows(b / "images.tsv", "image_url")

        def merged_once(out):
            merge_runs([a, b], out)
            assert sorted(page_urls(out)) == sorted({f"{web.base}/page{i}" for i in range(12)})
            rows = Counter(r["image_url"] for r in iter_tsv(out / "images.tsv"))
            assert rows == Counter({f"{web.base}/cat{i}.png" for i in range(0, 12, 3)}), rows

        merged_once(tmp_path / "merged")
        restart = warmfork.run(focused_cmd(web.base, a, *shared, job_a), cwd=ROOT, capture_output=True,
                               text=True, timeout=120)
        assert restart.returncode == 0, restart.stderr[-3000:]
    assert image in keyed_rows(a / "images.tsv", "image_url")
    merged_once(tmp_path / "merged-again")
    assert not redis_server.client.keys("focuscrawl:window:leased:*")


def limits_settings(server) -> list[str]:
    """The settings of both workers of the limits tests: room for pages beside held image downloads."""
    return redis_settings(server, crawl="limits", delay=0.001) + [
        "FOCUSCRAWL_SENTENCES_BATCH_BYTES=1", "CONCURRENT_REQUESTS=6", "CONCURRENT_REQUESTS_PER_DOMAIN=6"]


@pytest.fixture(scope="module")
def worker_dead_before_its_images(tmp_path_factory):
    """Worker A of the limits tests, SIGKILLed at its 6th page while the downloads of its pages'
    images are held back, on a redis-server of its own: (the web it crawled, serving on with
    its images answered at once now; A's run directory; the Redis keys A left, dumped). Each
    test restores the keys into its own redis-server; A's run is read there, never changed."""
    import signal

    from tests.support.redisserver import RedisServer

    tmp = tmp_path_factory.mktemp("limits")
    gate = threading.Event()
    site = {path: GatedPage(page, gate) if path.endswith(".png") else page for path, page in kill_site(12).items()
            if not path.startswith(("/r", "/missing"))}
    site["/page1"].body = site["/page1"].body.replace(b'<a href="/missing">x</a><a href="/r0">y</a>', b"")
    server, a = RedisServer(tmp), tmp / "part-a"
    try:
        with LocalWeb(site) as web:
            first = warmfork.run(focused_cmd(web.base, a, *limits_settings(server), *kill_after(6)), cwd=ROOT,
                                 capture_output=True, text=True, timeout=120)
            assert first.returncode == -signal.SIGKILL, first.stderr[-3000:]
            gate.set()
            set_delay(site, 0)
            keys = {key: (server.client.pttl(key), server.client.dump(key)) for key in server.client.keys("*")}
            yield web, a, keys
    finally:
        server.stop()


@pytest.mark.parametrize("limit", ["FOCUSCRAWL_PAGE_BUDGET", "FOCUSCRAWL_MAX_PAGES_PER_HOST"])
def test_pages_fetched_again_for_a_dead_workers_images_do_not_spend_the_limits(tmp_path, redis_server, limit,
                                                                               worker_dead_before_its_images):
    """Worker A dies (SIGKILL at its 6th page) with committed rows whose images it never wrote,
    and does not come back. Worker B, with a page budget (or a per-host page limit) of exactly
    the pages A did not write, fetches A's committed pages again for their images: those write
    no row in B's run (A's run has them), so they must not spend B's limit. Every page and
    image is in the merge. Before, they counted: B stopped (or was refused) that many pages
    short, and those pages were in neither run. (A, the same for both limits, is killed once:
    ``worker_dead_before_its_images``.)"""
    web, a, keys = worker_dead_before_its_images
    for key, (ttl, dump) in keys.items():
        redis_server.client.restore(key, max(ttl, 0), dump)
    b = tmp_path / "part-b"
    left = 12 - len(page_urls(a))
    assert any(int(u.rsplit("page", 1)[1]) % 3 == 0 for u in page_urls(a)), "A wrote no page with an image"
    second = warmfork.run(focused_cmd(web.base, b, *limits_settings(redis_server), f"{limit}={left}"), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr[-3000:]
    stats = json.loads((b / "stats.json").read_text())
    assert stats["focuscrawl/redis/pages_fetched_again_for_images"] >= 1
    merge_runs([a, b], tmp_path / "merged")
    assert sorted(page_urls(tmp_path / "merged")) == sorted(f"{web.base}/page{i}" for i in range(12))
    assert len(page_urls(b)) == left
    rows = Counter(r["image_url"] for r in iter_tsv(tmp_path / "merged" / "images.tsv"))
    assert rows == Counter({f"{web.base}/cat{i}.png" for i in range(0, 12, 3)}), rows
