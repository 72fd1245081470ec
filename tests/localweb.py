"""A real HTTP server on 127.0.0.1 serving a dict of pages for many host names.

Scrapy reaches it as an HTTP proxy (``http_proxy`` env), so pages can live on named
hosts (``a.test``, ``b.test``: separate Scrapy download slots) without DNS and
without any traffic leaving the machine. ``requests`` records every request in
arrival order as ``host/path``.
"""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


class Page:
    def __init__(self, body: bytes | str, content_type: str = "text/html; charset=utf-8", status: int = 200,
                 headers: dict[str, str] | None = None, delay: float = 0.0) -> None:
        self.body = body.encode("utf-8") if isinstance(body, str) else body
        self.content_type = content_type
        self.status = status
        self.headers = headers or {}
        self.delay = delay  # seconds before answering (a slow host)


def html(title: str, text: str, links: list[tuple[str, str]] = (), extra: str = "") -> str:
    anchors = "\n".join(f'<a href="{href}">{anchor}</a>' for href, anchor in links)
    return (f"<html><head><title>{title}</title></head><body><p>{text}</p>\n"
            f"<div>{anchors}</div>{extra}</body></html>")


class LocalWeb:
    """``pages[(host, path)] = Page``; unknown URLs get 404."""

    def __init__(self, pages: dict[tuple[str, str], Page]) -> None:
        self.pages = pages
        self.requests: list[str] = []
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                parts = urlsplit(self.path)
                host = (parts.hostname or self.headers.get("Host", "")).split(":")[0].lower()
                path = parts.path + (f"?{parts.query}" if parts.query else "")
                web.requests.append(f"{host}{path}")
                page = web.pages.get((host, path)) or Page("not found", "text/plain", 404)
                if page.delay:
                    time.sleep(page.delay)
                self.send_response(page.status)
                self.send_header("Content-Type", page.content_type)
                self.send_header("Content-Length", str(len(page.body)))
                for k, v in page.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(page.body)

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

    def pages_requested(self) -> list[str]:
        """Requests in arrival order, robots.txt left out."""
        return [r for r in self.requests if not r.endswith("/robots.txt")]

    def __enter__(self) -> "LocalWeb":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
