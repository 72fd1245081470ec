"""One HTTP server on 127.0.0.1 that answers for every host of a test web.

Crawlers reach it as an HTTP *proxy* (``http_proxy=http://127.0.0.1:PORT`` in the
environment, or ``request.meta["proxy"]``; Scrapy's ``HttpProxyMiddleware``), so the
request line carries the absolute URL and host names, robots.txt and per-host
politeness behave as on the real web. Plain requests with a ``Host`` header work too.
Threaded (stdlib), HTTP/1.1 keep-alive; ``stop()`` shuts it down cleanly.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from focuscrawl.testweb.render import respond
from focuscrawl.testweb.web import TestWeb


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "focuscrawl-testweb/1"
    # headers and body go out as two writes: without TCP_NODELAY, Nagle + delayed ACK
    # hold every keep-alive response ~40 ms (measured: 180 requests/s instead of thousands)
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # noqa: A002 - silence per-request logging
        pass

    def _target(self) -> tuple[str, str]:
        if self.path.startswith(("http://", "https://")):
            parts = urlsplit(self.path)
            return parts.hostname or "", (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return (self.headers.get("Host") or "").split(":")[0], self.path

    def _serve(self, send_body: bool) -> None:
        owner: TestWebServer = self.server.owner  # type: ignore[attr-defined]
        host, target = self._target()
        response = respond(owner.web, host, target)
        owner.record(host, target, response.status)
        if response.delay and owner.slow_factor:
            time.sleep(response.delay * owner.slow_factor)
        self.send_response(response.status)
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if send_body:
            self.wfile.write(response.body)

    def do_GET(self) -> None:  # noqa: N802
        self._serve(True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(False)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class TestWebServer:
    """Serve ``web`` on ``127.0.0.1:port`` (0 = any free port) in a background thread."""

    __test__ = False

    def __init__(self, web: TestWeb, port: int = 0, slow_factor: float = 1.0) -> None:
        self.web = web
        self.slow_factor = slow_factor
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.requests = 0
        self.statuses: Counter[int] = Counter()
        self.hosts: Counter[str] = Counter()
        self.robots_violations: list[str] = []

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def proxy(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, host: str, target: str, status: int) -> None:
        spec = self.web.hosts.get(host)
        violation = spec is not None and target != "/robots.txt" and (
            spec.robots == "disallow-all" or
            (spec.robots == "standard" and target.startswith(("/private/", "/cgi-bin/"))))
        with self._lock:
            self.requests += 1
            self.statuses[status] += 1
            self.hosts[host] += 1
            if violation:
                self.robots_violations.append(f"http://{host}{target}")

    def start(self) -> "TestWebServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="testweb-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "TestWebServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
