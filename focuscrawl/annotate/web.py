"""The annotation web app (Flask, Jinja2 templates, served by cheroot): login, one image at
a time, two questions, hotkeys.

Security: session tokens are random (``secrets``), stored only as hashes, sent as
HttpOnly SameSite=Strict cookies; every form carries a CSRF token (per session, or a
double-submit cookie on the login form); every page is a Jinja2 template with
auto-escaping, so crawl text is HTML-escaped, and a strict Content-Security-Policy
allows no inline script; images are served by item id only, from inside the run
directory; an annotator's pages show only their own answers. Refusals from the
database are typed exceptions (``focuscrawl.annotate.db``) mapped to fixed messages.
"""
from __future__ import annotations

import hmac
import logging
import mimetypes
import secrets
import selectors
import threading
import time
from functools import partial, wraps
from pathlib import Path
from typing import Callable

from cheroot import wsgi
from flask import Flask, Response, abort, g, redirect, render_template, request, send_file
from werkzeug.exceptions import HTTPException

from focuscrawl.annotate.db import (TEXT_LABELS, AlreadyAnswered, AnnotationDB, AnnotationError, InvalidAnswer,
                                    InvalidUserName, ItemFull, NotAssigned, User, UserExists, WeakPassword,
                                    normalize_user_name, parse_item_id)

logger = logging.getLogger(__name__)

SESSION_COOKIE = "fc_session"
#: Failed logins per user name allowed within LOGIN_WINDOW seconds before logins are refused.
LOGIN_MAX_FAILURES = 10
LOGIN_WINDOW = 15 * 60
#: User names whose failed logins are remembered at most (a bound on the throttle's memory).
LOGIN_MAX_NAMES = 50_000
LOGIN_CSRF_COOKIE = "fc_login_csrf"
MAX_FORM_BYTES = 64 * 1024
IMAGE_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif",
               ".webp": "image/webp"}
TEXT_KEYS = ("↑", "↓", "←", "→")
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; img-src 'self'; style-src 'self'; script-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
MESSAGES = {  # fixed texts selected by code: nothing from the request is reflected
    "saved": "Saved. Here is the next image.",
    "full": "That image already had all its answers; here is another one.",
    "again": "You had answered that image already.",
    "invalid": "Please choose one answer for each question.",
    "notyours": "That image was not given to you.",
    "login": "Wrong user name or password.",
    "throttled": "Too many failed logins for this user; try again in 15 minutes.",
    "user-added": "User added.",
    "user-name": "User not added: a name is 1-64 letters of one script, digits, '.', '_' or '-', "
                 "starting and ending with a letter or digit.",
    "user-exists": "User not added: that name, or one that looks like it, exists already.",
    "user-password": "User not added: the password needs 8 or more characters.",
}
#: Refusals of ``AnnotationDB.answer`` -> message code (by type, never by message text).
ANSWER_REFUSALS: dict[type[AnnotationError], str] = {
    ItemFull: "full", AlreadyAnswered: "again", NotAssigned: "notyours", InvalidAnswer: "invalid"}
USER_REFUSALS: dict[type[AnnotationError], str] = {
    InvalidUserName: "user-name", UserExists: "user-exists", WeakPassword: "user-password"}
#: cheroot worker threads (each keeps one SQLite connection) and the listen backlog.
SERVER_THREADS = 16
SERVER_BACKLOG = 1024
#: A request's header block: at most this many bytes (cheroot answers 413 past it), all of it
#: within HEADER_TIMEOUT seconds of its first byte, then its body (at most MAX_FORM_BYTES)
#: within BODY_TIMEOUT seconds (about 2 KiB/s for the largest form); a connection that sends
#: nothing is closed after IDLE_TIMEOUT seconds (cheroot's ``timeout``).
MAX_HEADER_BYTES = 64 * 1024
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 30.0
IDLE_TIMEOUT = 10.0


def refusal_code(exc: AnnotationError, table: dict[type[AnnotationError], str]) -> str:
    """The message code of the most specific refusal type in ``table`` that ``exc`` is."""
    return next(table[cls] for cls in type(exc).__mro__ if cls in table)


class LoginThrottle:
    """Failed logins per (normalised) user name in a sliding window, shared by the server's threads.

    Names whose failures are all older than the window are swept out (at most once per window),
    and at most ``max_names`` names are kept (the longest untouched go first), so failed logins
    under ever new names do not grow the server."""

    def __init__(self, max_failures: int = LOGIN_MAX_FAILURES, window: float = LOGIN_WINDOW,
                 max_names: int = LOGIN_MAX_NAMES) -> None:
        self.max_failures, self.window, self.max_names = max_failures, window, max_names
        self._failures: dict[str, list[float]] = {}  # oldest last failure first
        self._lock = threading.Lock()
        self._swept = time.monotonic()

    def __len__(self) -> int:
        return len(self._failures)

    def blocked(self, name: str, failed: bool = False) -> bool:
        """Count a failed login (``failed``) and tell whether ``name`` has too many recent failures."""
        now = time.monotonic()
        with self._lock:
            if now - self._swept > self.window:
                self._failures = {k: v for k, v in self._failures.items() if now - v[-1] < self.window}
                self._swept = now
            times = [t for t in self._failures.pop(name, []) if now - t < self.window]
            if failed:
                times.append(now)
            if times:
                self._failures[name] = times[-self.max_failures:]
                while len(self._failures) > self.max_names:
                    del self._failures[next(iter(self._failures))]
            return len(times) >= self.max_failures


def create_app(db: AnnotationDB, run_dir: str | Path, secure_cookies: bool = False) -> Flask:
    """The Flask app; ``run_dir`` is the only directory images are served from."""
    app = Flask(__name__)
    app.config.update(MAX_CONTENT_LENGTH=MAX_FORM_BYTES, SEND_FILE_MAX_AGE_DEFAULT=300)
    run_dir = Path(run_dir).resolve()
    throttle = LoginThrottle()

    def set_cookie(response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(name, value, max_age=max_age, path="/", httponly=True, samesite="Strict",
                            secure=secure_cookies)

    def csrf_ok(expected: str) -> bool:
        given = request.form.get("csrf", "")
        return bool(expected) and bool(given) and hmac.compare_digest(expected.encode(), given.encode())

    def page(template: str, title: str, **context) -> str:
        code = request.args.get("m", "")
        user, csrf = g.get("session") or (None, "")
        return render_template(template, title=title, user=user, csrf=csrf, message=MESSAGES.get(code), **context)

    def progress(user: User) -> dict:
        p = db.progress(user)
        return {**p, "share": 100.0 * p["answers"] / p["needed"] if p["needed"] else 100.0}

    def login_required(view: Callable, to_login: bool = True) -> Callable:
        """Pages redirect to /login without a session (``to_login``); form posts and images get 403.
        A form post also needs the session's CSRF token."""
        @wraps(view)
        def wrapper(*args, **kwargs):
            g.session = db.session_user(request.cookies.get(SESSION_COOKIE, ""))
            if g.session is None:
                if request.method == "POST" or not to_login:
                    abort(403, "Please log in.")
                return redirect("/login", 303)
            if request.method == "POST" and not csrf_ok(g.session[1]):
                abort(403, "Form expired or forged (CSRF check failed). Reload the page.")
            return view(g.session[0], *args, **kwargs)
        return wrapper

    def admin_required(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(user: User, *args, **kwargs):
            if not user.is_admin:
                abort(403, "Admins only.")
            return view(user, *args, **kwargs)
        return login_required(wrapper)

    @app.after_request
    def headers(response: Response) -> Response:
        response.headers.update(SECURITY_HEADERS)
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    @app.errorhandler(HTTPException)
    def error(exc: HTTPException):
        if exc.code and exc.code >= 500:
            text = "Internal error."
        elif exc.code == 404:
            text = "Not found."
        elif exc.code == 405:
            text = "Method not allowed."
        elif exc.code == 413:
            text = "Request too large."
        else:
            text = exc.description or exc.name
        response = Response(page("error.html", "Error", text=text), exc.code or 500, mimetype="text/html")
        if exc.code == 405:
            response.headers["Allow"] = ", ".join(exc.valid_methods or [])
        return response

    @app.get("/login")
    def login_page():
        if db.session_user(request.cookies.get(SESSION_COOKIE, "")):
            return redirect("/", 303)
        token = secrets.token_urlsafe(32)
        response = Response(page("login.html", "Log in", login_csrf=token), mimetype="text/html")
        set_cookie(response, LOGIN_CSRF_COOKIE, token, 3600)
        return response

    @app.post("/login")
    def login():
        if not csrf_ok(request.cookies.get(LOGIN_CSRF_COOKIE, "")):
            abort(403, "Form expired or forged (CSRF check failed). Reload the login page.")
        name = normalize_user_name(request.form.get("name", ""))
        if throttle.blocked(name):
            return redirect("/login?m=throttled", 303)
        user = db.authenticate(name, request.form.get("password", ""))
        if user is None:
            throttle.blocked(name, failed=True)
            return redirect("/login?m=login", 303)
        token, _ = db.create_session(user)
        response = redirect("/", 303)
        set_cookie(response, SESSION_COOKIE, token, 7 * 24 * 3600)
        set_cookie(response, LOGIN_CSRF_COOKIE, "", 0)
        return response

    @app.post("/logout")
    def logout():
        session = db.session_user(request.cookies.get(SESSION_COOKIE, ""))
        if session is None:
            return redirect("/login", 303)
        if not csrf_ok(session[1]):
            abort(403, "CSRF check failed.")
        db.end_session(request.cookies.get(SESSION_COOKIE, ""))
        response = redirect("/login", 303)
        set_cookie(response, SESSION_COOKIE, "", 0)
        return response

    @app.get("/")
    @login_required
    def annotate(user: User):
        item = db.next_item(user)
        if item is None:
            return page("done.html", "Done", p=progress(user))
        return page("annotate.html", "Annotate", item=item, image_labels=db.image_labels,
                    text_choices=list(zip(TEXT_KEYS, TEXT_LABELS)), p=progress(user))

    @app.post("/answer")
    @login_required
    def answer(user: User):
        item_id = parse_item_id(request.form.get("item", ""))
        if item_id is None:
            abort(400, "No such image.")
        try:
            image, text = int(request.form.get("image", "")), int(request.form.get("text", ""))
        except ValueError:
            return redirect("/?m=invalid", 303)
        try:
            db.answer(user, item_id, image, text)
        except tuple(ANSWER_REFUSALS) as exc:
            return redirect(f"/?m={refusal_code(exc, ANSWER_REFUSALS)}", 303)
        return redirect("/?m=saved", 303)

    @app.get("/answers")
    @login_required
    def my_answers(user: User):
        return page("answers.html", "My answers", answers=db.my_answers(user), image_labels=db.image_labels,
                    text_labels=TEXT_LABELS)

    @app.get("/help")
    @login_required
    def help_page(user: User):
        labels = db.image_labels
        return page("help.html", "Help", image_labels=labels, topic=labels[0], text_keys=TEXT_KEYS)

    @app.get("/admin")
    @admin_required
    def admin(user: User):
        return page("admin.html", "Admin", users=db.users(), p=progress(user))

    @app.post("/admin/users")
    @admin_required
    def add_user(user: User):
        try:
            db.add_user(request.form.get("name", ""), request.form.get("password", ""),
                        request.form.get("admin") == "1")
        except tuple(USER_REFUSALS) as exc:
            return redirect(f"/admin?m={refusal_code(exc, USER_REFUSALS)}", 303)
        return redirect("/admin?m=user-added", 303)

    @app.get("/img/<path:item_id>")
    @partial(login_required, to_login=False)
    def image(user: User, item_id: str):
        number = parse_item_id(item_id)
        item = db.item(number) if number is not None else None
        if item is None or not item.image_path:
            abort(404)
        path = (run_dir / item.image_path).resolve()
        content_type = IMAGE_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0]
        if not path.is_relative_to(run_dir) or not path.is_file() or not (content_type or "").startswith("image/"):
            abort(404)
        response = send_file(path, mimetype=content_type, max_age=3600, conditional=True, etag=False)
        response.cache_control.private = True
        response.cache_control.public = False
        return response

    @app.get("/favicon.ico")
    def favicon():
        return Response(b"", 204, mimetype="text/plain")

    return app


def chunked_body_end(data: bytes, start: int) -> int | None:
    """Where a chunked request body that begins at ``data[start:]`` ends (after its last chunk
    and trailer), or ``None`` while it is incomplete; ``ValueError`` for a malformed one."""
    pos = start
    while True:
        line_end = data.find(b"\r\n", pos)
        if line_end < 0:
            return None
        size = int(data[pos:line_end].split(b";", 1)[0].strip() or b"x", 16)  # ValueError if not hex
        if size < 0:
            raise ValueError("negative chunk size")
        pos = line_end + 2
        if size == 0:
            break
        if len(data) < pos + size + 2:
            return None
        pos += size + 2
    while True:  # trailer fields, up to the empty line
        line_end = data.find(b"\r\n", pos)
        if line_end < 0:
            return None
        if line_end == pos:
            return pos + 2
        pos = line_end + 2


def request_end(data: bytes) -> int | None:
    """Where the first request in ``data`` ends (header block and body), or ``None`` while more
    must come. A request whose end cannot be told here (a malformed or oversized header or
    body length) counts as complete at its header, so that cheroot and the app answer it."""
    start = len(data) - len(bytes(data).lstrip(b"\r\n"))  # empty lines before a request are ignored
    header_end = data.find(b"\r\n\r\n", start)
    if header_end < 0:
        lf_end = data.find(b"\n\n")
        return lf_end + 2 if lf_end >= 0 else None  # bare-LF headers: cheroot answers 400
    body_start = header_end + 4
    fields: dict[bytes, bytes] = {}
    for line in bytes(data[start:header_end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    try:
        if fields.get(b"transfer-encoding", b"").lower().endswith(b"chunked"):
            end = chunked_body_end(data, body_start)
            return end if end is not None or len(data) - body_start > MAX_FORM_BYTES + 4096 else None
        length = int(fields.get(b"content-length", b"0"))
    except ValueError:
        return body_start
    if length < 0 or length > MAX_FORM_BYTES:
        return body_start  # refused (400/413) without reading the body
    return body_start + length if len(data) >= body_start + length else None


class _WholeRequestServer(wsgi.Server):
    """cheroot's WSGI server that hands a connection to a worker thread only once its next
    request is there entire: the header block and the body (a form of at most
    ``MAX_FORM_BYTES``, by Content-Length or chunked). Until then the connection waits in
    cheroot's selector and what arrives is read without blocking, so slow or silent clients
    hold no worker thread (slowloris, slow bodies): one whose header block takes longer than
    ``header_timeout`` seconds, or whose body then takes longer than ``body_timeout``, is
    closed, and so is one silent for cheroot's ``timeout``. A request that cannot be
    complete (oversized or malformed lengths, a header block past its bound) goes to a worker
    at once to be refused (413/400), and the connection is closed after the answer. No TLS
    here (raw reads of the socket): behind TLS, a proxy terminates it (``--secure-cookies``)."""

    header_timeout = HEADER_TIMEOUT
    body_timeout = BODY_TIMEOUT

    def process_conn(self, conn) -> None:
        if self._request_arrived(conn):
            super().process_conn(conn)

    def _request_arrived(self, conn) -> bool:
        """Read what the client sent (non-blocking); ``True`` when a whole request is buffered;
        otherwise the connection waits in the selector again, or is closed (hung up, too slow)."""
        pending = conn.__dict__.setdefault("pending_request", bytearray())
        rfile = conn.rfile
        if rfile.has_data():  # bytes of a pipelined request left after the previous one
            pending += rfile._read_buf[rfile._read_pos:]
            rfile._read_buf, rfile._read_pos = b"", 0
        now = time.monotonic()
        if getattr(conn, "request_started", None) is None:
            conn.request_started, conn.header_done = now, None
        try:
            conn.socket.settimeout(0)  # read what is there (a socket with a timeout would wait)
            data = conn.socket.recv(MAX_HEADER_BYTES + MAX_FORM_BYTES)
        except BlockingIOError:  # nothing yet (a new connection, or a pipelined request whole)
            data = None
        except OSError:  # reset by the client
            data = b""
        finally:
            conn.socket.settimeout(self.timeout)
        if data == b"" and not pending:
            conn.close()
            return False
        conn.last_used = time.time()  # cheroot's idle expiry (``timeout``) counts from the last byte
        pending += data or b""
        end = request_end(pending)
        if end is None and len(pending) > MAX_HEADER_BYTES and b"\r\n\r\n" not in pending:
            end = len(pending)  # a header block past its bound: cheroot answers 413
        if end is not None:
            rfile._read_buf, rfile._read_pos = bytes(pending), 0  # cheroot's own buffer (_pyio)
            pending.clear()
            conn.request_started = None
            return True
        header_end = pending.find(b"\r\n\r\n", len(pending) - len(pending.lstrip(b"\r\n")))
        if conn.header_done is None and header_end >= 0:
            conn.header_done = now
            if b"100-continue" in pending[:header_end].lower():  # the client waits for this before its body
                try:
                    conn.socket.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                except OSError:
                    data = b""
        too_slow = (now - conn.request_started > self.header_timeout if conn.header_done is None
                    else now - conn.header_done > self.body_timeout)
        if data == b"" or too_slow:
            conn.close()  # hung up before the request was whole, or too slow: nothing to answer
            return False
        self._connections._selector.register(conn.socket.fileno(), selectors.EVENT_READ, data=conn)
        return False


class AnnotationServer:
    """cheroot's thread-pool WSGI server bound at construction: ``SERVER_THREADS`` workers, a
    listen backlog of ``SERVER_BACKLOG`` (the stdlib server's 5 reset connections under load),
    idle keep-alive connections and connections still sending their headers parked in a
    selector, not in a thread, until their whole request is there: a header block of at most
    ``MAX_HEADER_BYTES`` within ``HEADER_TIMEOUT`` seconds, then a body within ``BODY_TIMEOUT``
    seconds (``_WholeRequestServer``)."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 8000, threads: int = SERVER_THREADS,
                 backlog: int = SERVER_BACKLOG, header_timeout: float = HEADER_TIMEOUT,
                 body_timeout: float = BODY_TIMEOUT,
                 timeout: float = IDLE_TIMEOUT) -> None:
        self.server = _WholeRequestServer((host, port), app, numthreads=threads, request_queue_size=backlog,
                                         server_name="focuscrawl-annotate", shutdown_timeout=5, timeout=timeout)
        self.server.max_request_header_size = MAX_HEADER_BYTES
        self.server.header_timeout, self.server.body_timeout = header_timeout, body_timeout
        self.server.prepare()  # binds and listens: OSError here for a busy port

    @property
    def server_port(self) -> int:
        return self.server.bind_addr[1]

    def serve_forever(self) -> None:
        try:
            self.server.serve()
        except KeyboardInterrupt:
            pass
        finally:
            self.server.stop()

    def shutdown(self) -> None:
        self.server.stop()


def serve_in_thread(app, host: str = "127.0.0.1", port: int = 0) -> tuple[AnnotationServer, threading.Thread]:
    """Start a server in a background thread (tests, notebooks); stop it with ``server.shutdown()``."""
    server = AnnotationServer(app, host, port)
    thread = threading.Thread(target=server.serve_forever, name="annotation-server", daemon=True)
    thread.start()
    return server, thread
