"""A real HTTP server on 127.0.0.1 (free port) serving a dict of pages, for every test crawl.

Two ways to reach it: as an HTTP proxy (``http_proxy`` env / ``web.proxy``), so pages
can live on named hosts (``a.test``, ``b.test``: separate Scrapy download slots)
without DNS and without traffic leaving the machine — keys ``(host, path)``; or
directly at ``web.base`` — keys are plain paths. ``requests`` records every request
in arrival order as ``host/path``.
"""
from __future__ import annotations

import gzip
import io
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

DIRECT_HOST = "127.0.0.1"


class Page:
    def __init__(self, body: bytes | str, content_type: str = "text/html; charset=utf-8", status: int = 200,
                 headers: dict[str, str] | None = None, delay: float = 0.0, gzip: bool = False) -> None:
        self.body = body.encode("utf-8") if isinstance(body, str) else body
        self.content_type = content_type
        self.status = status
        self.headers = headers or {}
        self.delay = delay  # seconds before answering (a slow host)
        self.gzip = gzip  # sent with Content-Encoding: gzip


def html(title: str, text: str, links: list[tuple[str, str]] = (), extra: str = "") -> str:
    anchors = "\n".join(f'<a href="{href}">{anchor}</a>' for href, anchor in links)
    return (f"<html><head><title>{title}</title></head><body><p>{text}</p>\n"
            f"<div>{anchors}</div>{extra}</body></html>")


class LocalWeb:
    """``pages[(host, path)]`` (through the proxy) or ``pages[path]`` (direct); unknown URLs get 404."""

    def __init__(self, pages: dict) -> None:
        self.pages = pages
        self.requests: list[str] = []
        self.request_times: list[tuple[float, str]] = []  # (time.monotonic() at arrival, host/path)
        self.referers: dict[str, str | None] = {}  # host/path -> Referer header of its last request
        self.user_agents: dict[str, str | None] = {}  # host/path -> User-Agent header of its last request
        self.in_flight = self.max_in_flight = 0  # requests being answered at once (politeness tests)
        #: set to an unset ``threading.Event``: every answer waits until it is set (60 s at most),
        #: so that crawls started one after the other all reach the web before any page comes
        self.hold: threading.Event | None = None
        self._lock = threading.Lock()
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                with web._lock:
                    web.in_flight += 1
                    web.max_in_flight = max(web.max_in_flight, web.in_flight)
                try:
                    self._answer()
                finally:
                    with web._lock:
                        web.in_flight -= 1

            def _answer(self) -> None:
                parts = urlsplit(self.path)
                host = (parts.hostname or self.headers.get("Host", "")).split(":")[0].lower()
                path = parts.path + (f"?{parts.query}" if parts.query else "")
                web.requests.append(f"{host}{path}")
                web.request_times.append((time.monotonic(), f"{host}{path}"))
                web.referers[f"{host}{path}"] = self.headers.get("Referer")
                web.user_agents[f"{host}{path}"] = self.headers.get("User-Agent")
                page = web.pages.get((host, path))
                if page is None and host == DIRECT_HOST:
                    page = web.pages.get(path)
                page = page or Page("not found", "text/plain", 404)
                if web.hold is not None:
                    web.hold.wait(60)
                if page.delay:
                    time.sleep(page.delay)
                body = gzip.compress(page.body) if page.gzip else page.body
                self.send_response(page.status)
                self.send_header("Content-Type", page.content_type)
                self.send_header("Content-Length", str(len(body)))
                if page.gzip:
                    self.send_header("Content-Encoding", "gzip")
                for k, v in page.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # clients that hang up (maxsize) are fine
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def proxy(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base(self) -> str:
        """URL prefix for direct access (pages keyed by plain path)."""
        return f"http://{DIRECT_HOST}:{self.port}"

    def pages_requested(self) -> list[str]:
        """Requests in arrival order, the hosts' policy files (robots.txt, tdmrep.json) left out."""
        return [r for r in self.requests if not r.endswith(("/robots.txt", "/.well-known/tdmrep.json"))]

    def fetched(self, prefix: str = "/") -> list[str]:
        """Paths fetched directly (``web.base``), in order, policy files left out."""
        paths = [r[len(DIRECT_HOST):] for r in self.pages_requested() if r.startswith(DIRECT_HOST + "/")]
        return [p for p in paths if p.startswith(prefix)]

    def __enter__(self) -> "LocalWeb":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def png_bytes(width: int = 640, height: int = 480, color=(200, 120, 40)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, "PNG")
    return buf.getvalue()


def link_site(n: int, fanout: int = 3) -> dict[str, Page]:
    """Pages /p0 ... /p{n-1} for direct access: /p{i} links to /p{fanout*i+1 ... fanout*i+fanout}
    (a tree), each link carrying ``data-priority`` = the target's number mod 7."""
    pages = {"/robots.txt": Page(b"User-agent: *\nAllow: /\n", "text/plain")}
    for i in range(n):
        links = "".join(
            f'<a href="/p{j}" data-priority="{j % 7}">page {j}</a> '
            for j in range(fanout * i + 1, min(n, fanout * i + fanout + 1)))
        pages[f"/p{i}"] = Page(f"<html><body><p>Page {i} about cats.</p>{links}</body></html>".encode())
    return pages


CAT_TEXT = "The cat sleeps on the sofa and the kitten plays with the cat toy all day long."


def image_site() -> dict[str, Page]:
    """Four pages /page0 ... /page3 for direct access, each linking the others, with its own
    640x480 PNG and one shared by all (``/catshared.png``); /page2 is sent gzip-encoded."""
    img = '<img src="/cat{0}.png" alt="a cat sleeping on the sofa {0}" width="640" height="480">'
    pages = {"/robots.txt": Page(b"User-agent: *\nAllow: /\n", "text/plain")}
    for i in range(4):
        links = "".join(f'<a href="/page{j}">cats {j}</a>' for j in range(4) if j != i)
        body = (f"<html><body><div><p>{CAT_TEXT} Page {i}.</p>{img.format(i)}"
                f"<p>{img.format('shared')}</p></div>{links}</body></html>").encode()
        pages[f"/page{i}"] = Page(body, gzip=(i == 2))
        pages[f"/cat{i}.png"] = Page(png_bytes(640, 480, (i * 40, 100, 50)), "image/png")
    pages["/catshared.png"] = Page(png_bytes(640, 480, (1, 2, 3)), "image/png")
    return pages


def assert_paced(gaps: list[float], delay: float) -> None:
    """Request starts at least ``delay`` apart, as the server sees them: an arrival can come
    late (accept, thread start on a loaded machine) and shorten the next gap, so one gap may be
    short by 20%, but the k-th arrival never comes sooner than k delays after the first, less
    one arrival's lateness (the lateness does not add up)."""
    assert min(gaps) >= 0.8 * delay, gaps
    total = 0.0
    for k, gap in enumerate(gaps, 1):
        total += gap
        assert total >= k * delay - 0.06, (k, gaps)
