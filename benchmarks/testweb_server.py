"""Is the test-web server fast enough that the crawler, not the server, is the bottleneck?

Measures (1) requests/s the server answers to a keep-alive load generator (its own
process) with several concurrent connections (mixed article pages, listings, images, robots.txt),
(2) pages/s of a real ``focused`` crawl of the same web through the proxy, and prints
their ratio. Bounded in requests and time; only 127.0.0.1.

    python benchmarks/testweb_server.py [--data ../shared/data] [--requests 4000] [--pages 500]
"""
from __future__ import annotations

import argparse
import http.client
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from focuscrawl.eval.crawl_metrics import Run  # noqa: E402
from focuscrawl.eval.crawls import run_crawl  # noqa: E402
from focuscrawl.testweb.server import TestWebServer  # noqa: E402
from focuscrawl.testweb.textpool import TextPool  # noqa: E402
from focuscrawl.testweb.web import TestWeb  # noqa: E402


def sample_urls(web: TestWeb, n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    hosts = [h for h in web.hosts.values() if h.n_articles]
    urls = []
    while len(urls) < n:
        host = rng.choice(hosts)
        meta = web.article(host.name, rng.randrange(host.n_articles))
        r = rng.random()
        urls.append(meta.url if r < 0.6 else f"http://{host.name}/" if r < 0.75 else
                    f"http://{host.name}/robots.txt" if r < 0.85 else
                    (meta.images[0].url if meta.images else meta.url))
    return urls


def load_in_subprocess(port: int, urls: list[str], connections: int, seconds: float) -> tuple[int, float]:
    """The load generator runs in its own process: it must not share the server's GIL."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(load, (port, urls, connections, seconds))


def load(port: int, urls: list[str], connections: int, seconds: float) -> tuple[int, float]:
    deadline = time.perf_counter() + seconds
    done = [0]
    lock = threading.Lock()

    def worker(chunk: list[str]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for url in chunk:
            if time.perf_counter() > deadline:
                break
            conn.request("GET", url, headers={"Host": urlsplit(url).hostname})  # proxy-style request line
            conn.getresponse().read()
            with lock:
                done[0] += 1
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(urls[i::connections],)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done[0], time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--requests", type=int, default=4000)
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--pages", type=int, default=500, help="page budget of the crawl measured")
    p.add_argument("--mode", default="keywords")
    args = p.parse_args()
    web = TestWeb(TextPool.from_data(args.data), "cat", 1)
    with TestWebServer(web, slow_factor=0) as server:
        served, seconds = load_in_subprocess(server.port, sample_urls(web, args.requests), args.connections, 120)
        server_rps = served / seconds
        tmp = tempfile.TemporaryDirectory(prefix="focuscrawl-testweb-bench-")  # removed at exit
        out = Path(tmp.name)
        t0 = time.perf_counter()
        run_crawl(args.mode, web.seeds(), out, args.pages, proxy=server.proxy)
        wall = time.perf_counter() - t0
        crawl_requests = server.requests - served
    run = Run.load(out, budget=None)
    elapsed = float(run.stats.get("elapsed_time_seconds") or wall)
    pages_per_s = len(run.pages) / elapsed
    result = {"server_requests_per_s": round(server_rps, 1), "server_requests": served,
              "connections": args.connections, "crawl_mode": args.mode, "crawl_pages": len(run.pages),
              "crawl_seconds": round(elapsed, 1), "crawl_pages_per_s": round(pages_per_s, 1),
              "crawl_requests_per_s": round(crawl_requests / elapsed, 1),
              "headroom_server_over_crawler": round(server_rps / (crawl_requests / elapsed), 1)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
