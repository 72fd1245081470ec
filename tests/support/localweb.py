"""A real HTTP server on 127.0.0.1 (free port) serving an in-memory site, with an access log.

Used by the deployment tests: crawls run in subprocesses against it, the log tells
which paths were fetched how often and in which order.
"""
from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Page:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    headers: dict = field(default_factory=dict)
    gzip: bool = False
    delay: float = 0.0


class LocalWeb:
    def __init__(self, pages: dict[str, Page]):
        self.pages = pages
        self.log: list[tuple[float, str, str]] = []  # (time, path, user agent)
        self._lock = threading.Lock()
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802
                with web._lock:
                    web.log.append((time.time(), self.path, self.headers.get("User-Agent", "")))
                page = web.pages.get(self.path)
                if page is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if page.delay:
                    time.sleep(page.delay)
                body = gzip.compress(page.body) if page.gzip else page.body
                self.send_response(200)
                self.send_header("Content-Type", page.content_type)
                self.send_header("Content-Length", str(len(body)))
                if page.gzip:
                    self.send_header("Content-Encoding", "gzip")
                for k, v in page.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "LocalWeb":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fetched(self, prefix: str = "/") -> list[str]:
        """Paths fetched, in order, excluding robots.txt."""
        with self._lock:
            return [p for _, p, _ in self.log if p.startswith(prefix) and p != "/robots.txt"]


def png_bytes(width: int = 640, height: int = 480, color=(200, 120, 40)) -> bytes:
    import io
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, "PNG")
    return buf.getvalue()


def link_site(n: int, fanout: int = 3) -> dict[str, Page]:
    """Pages /p0 ... /p{n-1}: /p{i} links to /p{fanout*i+1 ... fanout*i+fanout}
    (a tree), each link carrying ``data-priority`` = the target's number mod 7."""
    pages = {"/robots.txt": Page(b"User-agent: *\nAllow: /\n", "text/plain")}
    for i in range(n):
        links = "".join(
            f'<a href="/p{j}" data-priority="{j % 7}">page {j}</a> '
            for j in range(fanout * i + 1, min(n, fanout * i + fanout + 1)))
        pages[f"/p{i}"] = Page(f"<html><body><p>Page {i} about cats.</p>{links}</body></html>".encode())
    return pages
