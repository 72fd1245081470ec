"""Per-request CPU of the opt-outs' downloader middlewares (``focuscrawl.middlewares.optout``)
once a host's robots.txt and tdmrep.json are read: the project's whole downloader middleware
chain (Scrapy's ``DownloaderMiddlewareManager`` built from focuscrawl's settings) with the
opt-outs obeyed and with ``robots_ai`` and ``tdmrep`` left out (both middlewares off), with
``ROBOTSTXT_OBEY`` on and off, for three robots.txt: none (404), one whose groups disallow
``/`` to every AI crawler of ``FOCUSCRAWL_AI_AGENTS``, and one whose AI groups disallow only a
path the requests do not take (every group is asked). Then the price of one more middleware
in the chain, one whose ``process_request`` returns None at once: a coroutine function and a
plain function (Scrapy wraps a plain return value in a coroutine too). A crawl's A/B (``crawl_throughput.py
--ab``) moves by several percent between rounds on a shared machine; this isolates the
middlewares' share of it to a microsecond.

The download function stands for Scrapy's downloader: it parses the request's URL (as the
downloader's slot does, ``urlparse_cached``) and answers with one response. Each host's two
policy files come from a stand-in for the engine's download (the middlewares fetch them
through ``crawler.engine.download_async``), once, before the clock starts.

    python benchmarks/optout_middlewares.py [--requests 2000] [--rounds 7]
"""
from __future__ import annotations

import argparse
import logging
import os
import time

from scrapy.utils.reactor import install_reactor

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")

from scrapy.core.downloader.middleware import DownloaderMiddlewareManager  # noqa: E402
from scrapy.http import HtmlResponse, Request, TextResponse  # noqa: E402
from scrapy.settings import Settings  # noqa: E402
from scrapy.utils.httpobj import urlparse_cached  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

import focuscrawl.settings as project  # noqa: E402

HOST = "127.0.0.1:8000"
OPTOUTS_OFF = "meta_robots,x_robots_tag"  # robots_ai and tdmrep out: both middlewares NotConfigured


def _robots(rule: bytes) -> bytes:
    return b"User-agent: *\nDisallow: /private/\n\n" + b"".join(
        b"User-agent: %s\nDisallow: %s\n\n" % (agent.encode(), rule) for agent in project.FOCUSCRAWL_AI_AGENTS)


ROBOTS = {"no robots.txt": None, "AI groups disallow /": _robots(b"/"),
          "AI groups disallow /members/": _robots(b"/members/")}


class PlainNoOp:
    """A downloader middleware that does nothing, synchronously."""

    def process_request(self, request: Request) -> None:
        return None


class CoroutineNoOp:
    """A downloader middleware that does nothing, as a coroutine."""

    async def process_request(self, request: Request) -> None:
        return None


def _manager(obey: bool, optouts_on: bool, extra_middleware: str = ""):
    settings = Settings()
    settings.setmodule(project, priority="project")
    extra = {"ROBOTSTXT_OBEY": obey, "FOCUSCRAWL_MAX_PAGES_PER_HOST": 0, "FOCUSCRAWL_MAX_PAGES_PER_DOMAIN": 0}
    if not optouts_on:
        extra["FOCUSCRAWL_OPTOUTS"] = OPTOUTS_OFF
    settings.update(extra, priority="cmdline")
    if extra_middleware:
        settings["DOWNLOADER_MIDDLEWARES"] = {**settings.getdict("DOWNLOADER_MIDDLEWARES"),
                                              f"{__name__}.{extra_middleware}": 120}
    crawler = get_crawler(settings_dict=dict(settings.copy_to_dict()))
    return crawler, DownloaderMiddlewareManager.from_crawler(crawler)


class _Engine:
    """The engine's download, for the middlewares' robots.txt and tdmrep.json requests."""

    def __init__(self, robots: bytes | None) -> None:
        self.robots = robots

    async def download_async(self, request: Request) -> TextResponse:
        if request.url.endswith("/robots.txt") and self.robots is not None:
            return TextResponse(request.url, status=200, body=self.robots)
        return TextResponse(request.url, status=404, body=b"not found")


async def _per_request_us(mgr, n: int, rounds: int) -> float:
    response = HtmlResponse(f"http://{HOST}/p/0", body=b"<html></html>")

    async def download(request: Request) -> HtmlResponse:
        urlparse_cached(request)
        return response

    best = float("inf")
    for _ in range(rounds):
        requests = [Request(f"http://{HOST}/p/{i}") for i in range(n)]
        start = time.process_time()
        for request in requests:
            await mgr.download_async(download, request)
        best = min(best, (time.process_time() - start) / n * 1e6)
    return best


async def measure(n: int, rounds: int) -> None:
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {n} requests to one known host, "
          f"best of {rounds} rounds; us = CPU microseconds a request through the whole chain", flush=True)
    for obey in (False, True):
        for name, body in ROBOTS.items():
            us = {}
            for on in (False, True):
                crawler, mgr = _manager(obey, on)
                crawler.engine = _Engine(body)
                await _per_request_us(mgr, 1, 1)  # the host's first request reads its policy files
                us[on] = await _per_request_us(mgr, n, rounds)
            print(f"ROBOTSTXT_OBEY={obey!s:<5} {name:<28} opt-outs off {us[False]:5.1f} us, on {us[True]:5.1f} us: "
                  f"{us[True] - us[False]:+5.1f} us a request ({4 * (us[True] - us[False]):+.0f} us a light page "
                  f"of 4 requests)", flush=True)
    crawler, mgr = _manager(False, False)
    crawler.engine = _Engine(None)
    alone = await _per_request_us(mgr, n, rounds)
    for extra in ("PlainNoOp", "CoroutineNoOp"):
        crawler, mgr = _manager(False, False, extra)
        crawler.engine = _Engine(None)
        us = await _per_request_us(mgr, n, rounds)
        print(f"one more middleware that returns None at once, {extra}: {us - alone:+5.1f} us a request "
              f"({alone:.1f} -> {us:.1f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    from twisted.internet import reactor
    from scrapy.utils.defer import deferred_from_coro

    done = deferred_from_coro(measure(args.requests, args.rounds))
    done.addErrback(lambda failure: failure.printTraceback())
    done.addBoth(lambda _: reactor.stop())
    reactor.run()


if __name__ == "__main__":
    main()
