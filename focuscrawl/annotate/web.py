"""The annotation web app (WSGI, stdlib only): login, one image at a time, two questions, hotkeys.

Security: session tokens are random (``secrets``), stored only as hashes, sent as
HttpOnly SameSite=Strict cookies; every form carries a CSRF token (per session, or a
double-submit cookie on the login form); everything from the crawl is HTML-escaped
and a strict Content-Security-Policy allows no inline script; images are served by
item id only, from inside the run directory; an annotator's pages show only their
own answers.
"""
from __future__ import annotations

import hmac
import html
import logging
import mimetypes
import secrets
import socket
import threading
import time
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from importlib import resources
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Callable, Iterable
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from focuscrawl.annotate.db import TEXT_LABELS, AnnotationDB, AnnotationError, User

logger = logging.getLogger(__name__)

SESSION_COOKIE = "fc_session"
#: Failed logins per user name allowed within LOGIN_WINDOW seconds before logins are refused.
LOGIN_MAX_FAILURES = 10
LOGIN_WINDOW = 15 * 60
LOGIN_CSRF_COOKIE = "fc_login_csrf"
MAX_FORM_BYTES = 64 * 1024
IMAGE_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif",
               ".webp": "image/webp"}
TEXT_KEYS = ("↑", "↓", "←", "→")
STATIC_FILES = {"app.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"}
SECURITY_HEADERS = [
    ("Content-Security-Policy", "default-src 'none'; img-src 'self'; style-src 'self'; script-src 'self'; "
                                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
]
MESSAGES = {  # fixed texts selected by code: nothing from the request is reflected
    "saved": "Saved. Here is the next image.",
    "full": "That image already had all its answers; here is another one.",
    "again": "You had answered that image already.",
    "invalid": "Please choose one answer for each question.",
    "notyours": "That image was not given to you.",
    "login": "Wrong user name or password.",
    "throttled": "Too many failed logins for this user; try again in 15 minutes.",
    "user-added": "User added.",
    "user-error": "User not added: check the name (letters, digits, . _ -) and the password (8+ characters); "
                  "the name may exist already.",
}


def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


class Response:
    def __init__(self, status: int = 200, body: bytes | str = b"", content_type: str = "text/html; charset=utf-8",
                 headers: list[tuple[str, str]] | None = None):
        self.status = status
        self.body = body.encode("utf-8") if isinstance(body, str) else body
        self.headers = [("Content-Type", content_type)] + (headers or [])

    @classmethod
    def redirect(cls, location: str, headers: list[tuple[str, str]] | None = None) -> "Response":
        return cls(303, b"", "text/plain", [("Location", location)] + (headers or []))


class Request:
    def __init__(self, environ: dict):
        self.environ = environ
        self.method = environ.get("REQUEST_METHOD", "GET")
        self.path = environ.get("PATH_INFO", "/") or "/"
        self.query = parse_qs(environ.get("QUERY_STRING", ""))
        cookie = SimpleCookie()
        try:
            cookie.load(environ.get("HTTP_COOKIE", ""))
        except CookieError:
            pass
        self.cookies = {k: m.value for k, m in cookie.items()}
        self._form: dict[str, list[str]] | None = None

    @property
    def form(self) -> dict[str, list[str]]:
        if self._form is None:
            try:
                length = int(self.environ.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > MAX_FORM_BYTES:
                raise AnnotationError("form too large")
            body = self.environ["wsgi.input"].read(length) if length > 0 else b""
            self._form = parse_qs(body.decode("utf-8", "replace"))
        return self._form

    def field(self, name: str) -> str:
        values = self.form.get(name)
        return values[0] if values else ""


def _cookie(name: str, value: str, max_age: int | None, secure: bool) -> tuple[str, str]:
    parts = [f"{name}={value}", "Path=/", "HttpOnly", "SameSite=Strict"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if secure:
        parts.append("Secure")
    return ("Set-Cookie", "; ".join(parts))


class AnnotationApp:
    """The WSGI application. ``run_dir`` is the only directory images are served from."""

    def __init__(self, db: AnnotationDB, run_dir: str | Path, secure_cookies: bool = False):
        self.db = db
        self.run_dir = Path(run_dir).resolve()
        self.secure_cookies = secure_cookies
        self._failures: dict[str, list[float]] = {}  # user name -> times of failed logins
        self._failures_lock = threading.Lock()
        self.routes: dict[tuple[str, str], Callable] = {
            ("GET", "/"): self.page_annotate,
            ("GET", "/login"): self.page_login,
            ("POST", "/login"): self.do_login,
            ("POST", "/logout"): self.do_logout,
            ("POST", "/answer"): self.do_answer,
            ("GET", "/help"): self.page_help,
            ("GET", "/answers"): self.page_answers,
            ("GET", "/admin"): self.page_admin,
            ("POST", "/admin/users"): self.do_add_user,
            ("GET", "/favicon.ico"): lambda request: Response(204, b"", "text/plain"),
        }

    # --- WSGI ---------------------------------------------------------------------------
    def __call__(self, environ: dict, start_response) -> Iterable[bytes]:
        request = Request(environ)
        try:
            response = self.dispatch(request)
        except Exception:  # noqa: BLE001 - one clear 500, the details go to the log
            logger.exception("error serving %s %s", request.method, request.path)
            response = self.error(500, "Internal error.")
        headers = response.headers + SECURITY_HEADERS + [("Content-Length", str(len(response.body)))]
        if not any(h[0] == "Cache-Control" for h in headers):
            headers.append(("Cache-Control", "no-store"))
        start_response(f"{response.status} {HTTPStatus(response.status).phrase}", headers)
        return [response.body] if request.method != "HEAD" else [b""]

    def dispatch(self, request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        if method == "GET" and request.path.startswith("/static/"):
            return self.static(request.path[len("/static/"):])
        if method == "GET" and request.path.startswith("/img/"):
            return self.image(request, request.path[len("/img/"):])
        handler = self.routes.get((method, request.path))
        if handler is None:
            known = any(path == request.path for _, path in self.routes)
            return self.error(405 if known else 404, "Method not allowed." if known else "Not found.")
        if method == "POST":
            try:
                request.form  # noqa: B018 - read the body once, with its size limit
            except AnnotationError:
                return self.error(413, "Request too large.")
        return handler(request)

    def error(self, status: int, text: str) -> Response:
        return Response(status, self.layout("Error", f"<p class='error'>{esc(text)}</p>", None))

    # --- sessions and CSRF ----------------------------------------------------------------
    def current(self, request: Request) -> tuple[User, str] | None:
        return self.db.session_user(request.cookies.get(SESSION_COOKIE, ""))

    @staticmethod
    def csrf_ok(expected: str, request: Request) -> bool:
        given = request.field("csrf")
        return bool(expected) and bool(given) and hmac.compare_digest(expected.encode(), given.encode())

    # --- pages ---------------------------------------------------------------------------
    def layout(self, title: str, body: str, session: tuple[User, str] | None) -> str:
        nav = ""
        if session:
            user, csrf = session
            admin = '<a href="/admin">Admin</a>' if user.is_admin else ""
            nav = (f'<nav><span class="user">{esc(user.name)}</span> <a href="/">Annotate</a> '
                   f'<a href="/help">Help</a> <a href="/answers">My answers</a> {admin}'
                   f'<form method="post" action="/logout" class="inline">'
                   f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
                   f'<button type="submit" class="link">Log out</button></form></nav>')
        return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">'
                f'<title>{esc(title)} · focuscrawl annotation</title>'
                f'<link rel="stylesheet" href="/static/app.css"></head>'
                f'<body><header><h1>focuscrawl annotation</h1>{nav}</header><main>{body}</main>'
                f'<script src="/static/app.js"></script></body></html>')

    def message(self, request: Request) -> str:
        code = (request.query.get("m") or [""])[0]
        return f'<p class="message" role="status">{esc(MESSAGES[code])}</p>' if code in MESSAGES else ""

    def page_login(self, request: Request) -> Response:
        if self.current(request):
            return Response.redirect("/")
        token = secrets.token_urlsafe(32)
        body = (f'{self.message(request)}<form method="post" action="/login" class="login">'
                f'<input type="hidden" name="csrf" value="{esc(token)}">'
                f'<label>User <input name="name" autocomplete="username" required autofocus></label>'
                f'<label>Password <input name="password" type="password" autocomplete="current-password" '
                f'required></label><button type="submit">Log in</button></form>')
        return Response(200, self.layout("Log in", body, None),
                        headers=[_cookie(LOGIN_CSRF_COOKIE, token, 3600, self.secure_cookies)])

    def do_login(self, request: Request) -> Response:
        if not self.csrf_ok(request.cookies.get(LOGIN_CSRF_COOKIE, ""), request):
            return self.error(403, "Form expired or forged (CSRF check failed). Reload the login page.")
        name = request.field("name").strip()
        if self._throttled(name):
            return Response.redirect("/login?m=throttled")
        user = self.db.authenticate(name, request.field("password"))
        if user is None:
            self._throttled(name, failed=True)
            return Response.redirect("/login?m=login")
        token, _ = self.db.create_session(user)
        return Response.redirect("/", [_cookie(SESSION_COOKIE, token, 7 * 24 * 3600, self.secure_cookies),
                                       _cookie(LOGIN_CSRF_COOKIE, "", 0, self.secure_cookies)])

    def _throttled(self, name: str, failed: bool = False) -> bool:
        """Count a failed login (``failed``) and tell whether ``name`` has too many recent failures."""
        now = time.monotonic()
        with self._failures_lock:
            times = [t for t in self._failures.get(name, []) if now - t < LOGIN_WINDOW]
            if failed:
                times.append(now)
            if times:
                self._failures[name] = times
            else:
                self._failures.pop(name, None)
            return len(times) >= LOGIN_MAX_FAILURES

    def do_logout(self, request: Request) -> Response:
        session = self.current(request)
        if session is None:
            return Response.redirect("/login")
        if not self.csrf_ok(session[1], request):
            return self.error(403, "CSRF check failed.")
        self.db.end_session(request.cookies.get(SESSION_COOKIE, ""))
        return Response.redirect("/login", [_cookie(SESSION_COOKIE, "", 0, self.secure_cookies)])

    def progress_html(self, user: User) -> str:
        p = self.db.progress(user)
        share = 100.0 * p["answers"] / p["needed"] if p["needed"] else 100.0
        return (f'<div class="progress"><progress max="{p["needed"]}" value="{p["answers"]}"></progress>'
                f'<span>You: <b id="mine">{p["mine"]}</b> answered · all: {p["answers"]} of {p["needed"]} '
                f'answers ({share:.1f}%), {p["complete"]} of {p["items"]} images complete</span></div>')

    def page_annotate(self, request: Request) -> Response:
        session = self.current(request)
        if session is None:
            return Response.redirect("/login")
        user, csrf = session
        item = self.db.next_item(user)
        if item is None:
            body = (f'{self.message(request)}<p class="done">No image is waiting for you. Thank you!</p>'
                    f'{self.progress_html(user)}')
            return Response(200, self.layout("Done", body, session))
        labels = self.db.image_labels
        image_choices = "".join(
            f'<label class="choice"><input type="radio" name="image" value="{i}" required>'
            f'<kbd>{i + 1}</kbd> {esc(label)}</label>' for i, label in enumerate(labels))
        text_choices = "".join(
            f'<label class="choice"><input type="radio" name="text" value="{i}" required>'
            f'<kbd>{key}</kbd> {esc(label)}</label>' for i, (key, label) in enumerate(zip(TEXT_KEYS, TEXT_LABELS)))
        text = item.alt or item.title
        text_kind = "ALT text" if item.alt else "Title"
        body = (f'{self.message(request)}'
                f'<figure class="task"><img src="/img/{item.id}" alt="image {item.rank} to annotate" '
                f'id="task-image"><figcaption><span class="kind">{text_kind}:</span> '
                f'<q id="alt-text">{esc(text)}</q></figcaption></figure>'
                f'<form method="post" action="/answer" id="answer-form">'
                f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
                f'<input type="hidden" name="item" value="{item.id}">'
                f'<fieldset><legend>Which topic is the image about? (keys 1-5)</legend>{image_choices}</fieldset>'
                f'<fieldset><legend>The text … (arrow keys)</legend>{text_choices}</fieldset>'
                f'<button type="submit" id="send">Submit <kbd>Enter</kbd></button></form>'
                f'{self.progress_html(user)}')
        return Response(200, self.layout("Annotate", body, session))

    def do_answer(self, request: Request) -> Response:
        session = self.current(request)
        if session is None:
            return self.error(403, "Please log in.")
        user, csrf = session
        if not self.csrf_ok(csrf, request):
            return self.error(403, "Form expired or forged (CSRF check failed). Reload the page.")
        try:
            item_id, image, text = int(request.field("item")), int(request.field("image")), int(request.field("text"))
        except ValueError:
            return Response.redirect("/?m=invalid")
        try:
            self.db.answer(user, item_id, image, text)
        except AnnotationError as exc:
            code = {"this image has all its answers already": "full",
                    "you have answered this image already": "again",
                    "this image was not given to you": "notyours"}.get(str(exc), "invalid")
            return Response.redirect(f"/?m={code}")
        return Response.redirect("/?m=saved")

    def page_answers(self, request: Request) -> Response:
        session = self.current(request)
        if session is None:
            return Response.redirect("/login")
        user = session[0]
        labels = self.db.image_labels
        rows = "".join(
            f'<tr><td>{item.rank}</td><td><img class="thumb" src="/img/{item.id}" alt=""></td>'
            f'<td>{esc(item.alt or item.title)}</td><td>{esc(labels[image])}</td><td>{esc(TEXT_LABELS[text])}</td></tr>'
            for item, image, text in self.db.my_answers(user))
        body = ('<h2>My latest answers</h2><table class="answers"><thead><tr><th>#</th><th>Image</th><th>Text</th>'
                f'<th>Topic</th><th>The text …</th></tr></thead><tbody>{rows}</tbody></table>')
        return Response(200, self.layout("My answers", body, session))

    def page_help(self, request: Request) -> Response:
        session = self.current(request)
        if session is None:
            return Response.redirect("/login")
        labels = self.db.image_labels
        topic = labels[0]
        image_help = [
            f"the image shows a {topic.lower()} (also a drawing, a sculpture or a part of one, e.g. a paw)",
            "the image shows another pet (dog, hamster, rabbit, budgie …)",
            "the image shows another animal (a lion, a horse, a cow …)",
            "the image shows another living being (a person, a bird in the wild, a plant …)",
            "anything else: objects, text, logos, landscapes, products without an animal",
        ]
        text_help = [
            ("describes the image", f'"{topic.lower()} in a carrier" under a photo of exactly that'),
            ("fits the topic", f'"Top 10 {topic.lower()} breeds" under a photo of one such animal'),
            ("irrelevant", '"Click here to subscribe", "Photo credit: J. Smith"'),
            ("misleading", f'"A dog playing in the park" under a photo of a {topic.lower()}'),
        ]
        image_rows = "".join(f"<tr><td><kbd>{i + 1}</kbd></td><td>{esc(label)}</td><td>{esc(image_help[i])}</td></tr>"
                             for i, label in enumerate(labels))
        text_rows = "".join(f"<tr><td><kbd>{TEXT_KEYS[i]}</kbd></td><td>{esc(name)}</td><td>{esc(example)}</td></tr>"
                            for i, (name, example) in enumerate(text_help))
        body = (f'<h2>How to annotate</h2><p>You see one image and the text the web page gave it '
                f'(its ALT text). Answer two questions, then press <kbd>Enter</kbd>. Judge the image by '
                f'what it shows, not by the text. Use the most specific category that fits: a '
                f'{esc(topic.lower())} is always <b>{esc(topic)}</b>, never just "Pet".</p>'
                f'<h3>1. Which topic is the image about?</h3><table class="help">{image_rows}</table>'
                f'<h3>2. The text …</h3><table class="help">{text_rows}</table>'
                f'<p>Every image is shown to several people; you never see the same image twice. '
                f'When unsure, choose what most people would say.</p><p><a href="/">Back to annotating</a></p>')
        return Response(200, self.layout("Help", body, session))

    def page_admin(self, request: Request) -> Response:
        session = self.current(request)
        if session is None:
            return Response.redirect("/login")
        user, csrf = session
        if not user.is_admin:
            return self.error(403, "Admins only.")
        rows = "".join(f"<tr><td>{esc(u['name'])}</td><td>{'admin' if u['is_admin'] else ''}</td>"
                       f"<td>{u['answers']}</td></tr>" for u in self.db.users())
        body = (f'{self.message(request)}<h2>Annotators</h2>{self.progress_html(user)}'
                f'<table class="answers"><thead><tr><th>Name</th><th>Role</th><th>Answers</th></tr></thead>'
                f'<tbody>{rows}</tbody></table><h3>Add an annotator</h3>'
                f'<form method="post" action="/admin/users" class="login">'
                f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
                f'<label>User <input name="name" required></label>'
                f'<label>Password <input name="password" type="password" minlength="8" required '
                f'autocomplete="new-password"></label>'
                f'<label class="choice"><input type="checkbox" name="admin" value="1"> admin</label>'
                f'<button type="submit">Add</button></form>')
        return Response(200, self.layout("Admin", body, session))

    def do_add_user(self, request: Request) -> Response:
        session = self.current(request)
        if session is None or not session[0].is_admin:
            return self.error(403, "Admins only.")
        if not self.csrf_ok(session[1], request):
            return self.error(403, "CSRF check failed.")
        try:
            self.db.add_user(request.field("name"), request.field("password"), request.field("admin") == "1")
        except AnnotationError:
            return Response.redirect("/admin?m=user-error")
        return Response.redirect("/admin?m=user-added")

    # --- files -----------------------------------------------------------------------------
    def static(self, name: str) -> Response:
        if name not in STATIC_FILES:
            return self.error(404, "Not found.")
        data = resources.files("focuscrawl.annotate").joinpath("static", name).read_bytes()
        return Response(200, data, STATIC_FILES[name], [("Cache-Control", "max-age=300")])

    def image(self, request: Request, item_id: str) -> Response:
        if self.current(request) is None:
            return self.error(403, "Please log in.")
        if not item_id.isdigit():
            return self.error(404, "Not found.")
        item = self.db.item(int(item_id))
        if item is None or not item.image_path:
            return self.error(404, "Not found.")
        path = (self.run_dir / item.image_path).resolve()
        content_type = IMAGE_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0]
        if not path.is_relative_to(self.run_dir) or not path.is_file() or not (content_type or "").startswith("image/"):
            return self.error(404, "Not found.")
        return Response(200, path.read_bytes(), content_type, [("Cache-Control", "private, max-age=3600")])


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def setup(self) -> None:
        super().setup()
        # wsgiref writes headers and body separately: without this, Nagle + delayed ACK add ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        logger.info("%s %s", self.address_string(), format % args)


def make_annotation_server(app: AnnotationApp, host: str = "127.0.0.1", port: int = 8000) -> WSGIServer:
    return make_server(host, port, app, server_class=ThreadingWSGIServer, handler_class=QuietHandler)


def serve_in_thread(app: AnnotationApp, host: str = "127.0.0.1", port: int = 0) -> tuple[WSGIServer, threading.Thread]:
    """Start a server in a background thread (tests, notebooks); stop it with ``server.shutdown()``."""
    server = make_annotation_server(app, host, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="annotation-server", daemon=True)
    thread.start()
    return server, thread
