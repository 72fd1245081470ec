"""A real annotation server on 127.0.0.1 and a small cookie-keeping HTTP client for tests."""
from __future__ import annotations

import http.client
import re
from contextlib import contextmanager
from http.cookies import SimpleCookie
from urllib.parse import urlencode

from focuscrawl.annotate.db import AnnotationDB
from focuscrawl.annotate.web import create_app, serve_in_thread
from focuscrawl.corpus import iter_entries
from focuscrawl.ranking import rank


def start_server(run_dir, db_path, per_image=3):
    db = AnnotationDB(db_path, per_image=per_image)
    db.add_items(e for e in rank(iter_entries(run_dir)) if e.image_path)
    server, thread = serve_in_thread(create_app(db, run_dir))
    return db, server, thread


@contextmanager
def running_app(run_dir, db_path, per_image: int, passwords: dict[str, bool]):
    """A served app with the accounts ``{name: is_admin}`` (password ``<name>-password``):
    yields ``(db, port)``, stops the server afterwards."""
    db, server, thread = start_server(run_dir, db_path, per_image=per_image)
    for name, is_admin in passwords.items():
        db.add_user(name, f"{name}-password", is_admin=is_admin)
    try:
        yield db, server.server_port
    finally:
        server.shutdown()
        thread.join(5)


def logged_in(port: int, name: str) -> "Client":
    client = Client(port)
    status, location = client.login(name, f"{name}-password")
    assert (status, location) == (303, "/")
    return client


class Client:
    """Raw HTTP (paths are sent exactly as given, e.g. with ``../``), cookies kept, no redirects followed."""

    def __init__(self, port: int, timeout: float = 10):
        self.port, self.timeout = port, timeout
        self.cookies: dict[str, str] = {}
        self.set_cookie_headers: list[str] = []

    def request(self, method: str, path: str, form: dict | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        headers = {}
        body = None
        if form is not None:
            body = urlencode(form).encode("ascii")  # one send with the headers (no Nagle stall)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        for header in resp.headers.get_all("Set-Cookie") or []:
            self.set_cookie_headers.append(header)
            cookie = SimpleCookie()
            cookie.load(header)
            for k, m in cookie.items():
                if m.value:
                    self.cookies[k] = m.value
                else:
                    self.cookies.pop(k, None)
        conn.close()
        return resp.status, resp.headers, data.decode("utf-8", "replace")

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, form):
        return self.request("POST", path, form)

    def csrf(self, path="/"):
        status, _, page = self.get(path)
        match = re.search(r'name="csrf" value="([^"]+)"', page)
        assert match, f"no CSRF token on {path} ({status})"
        return match.group(1)

    def login(self, name, password):
        token = self.csrf("/login")
        status, headers, _ = self.post("/login", {"csrf": token, "name": name, "password": password})
        return status, headers.get("Location")

    def current_item(self):
        _, _, page = self.get("/")
        match = re.search(r'name="item" value="(\d+)"', page)
        return int(match.group(1)) if match else None
