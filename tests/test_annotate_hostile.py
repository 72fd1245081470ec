"""Hostile input and load against the annotation app (issue #16): malformed ids, 200 clients at
once, the database file's mode, look-alike user names. Real HTTP on 127.0.0.1."""
from __future__ import annotations

import http.client
import os
import socket
import stat
import threading
import time
from urllib.parse import urlencode

import pytest

from focuscrawl.annotate.db import AnnotationDB, InvalidUserName, UserExists, parse_item_id
from focuscrawl.annotate.web import AnnotationServer, LoginThrottle, create_app
from tests.support.annotate import Client, logged_in, running_app
from tests.support.runfixture import make_run_dir
from tests.support import warmfork

ROWS = [{"url": f"http://a.org/{i}.jpg", "score": 10 + i, "alt": f"cat number {i}"} for i in range(12)]


@pytest.fixture
def app(tmp_path):
    run_dir = make_run_dir(tmp_path / "run", ROWS)
    with running_app(run_dir, tmp_path / "db.sqlite3", 2, {"anna": False, "boss": True}) as (db, port):
        yield db, port, tmp_path


BAD_IMAGE_PATHS = ["/img/%B2", "/img/%C2%B2", "/img/99999999999999999999", "/img/9223372036854775808",
                   "/img/" + "9" * 5000, "/img/0", "/img/-1", "/img/1.0", "/img/%00", "/img/1%0a"]
BAD_ITEMS = ["99999999999999999999999", "9" * 5000, "²", "١", "-1", "0", "1e3", " 1", "", "9223372036854775808"]


def test_malformed_ids_are_404_or_400_never_500(app):
    db, port, _ = app
    client = logged_in(port, "anna")
    for path in BAD_IMAGE_PATHS:
        status, _, body = client.get(path)
        assert (path[:40], status) == (path[:40], 404) and "Traceback" not in body
    csrf = client.csrf()
    for item in BAD_ITEMS:
        status, _, body = client.post("/answer", {"csrf": csrf, "item": item, "image": 0, "text": 0})
        assert (item[:40], status) == (item[:40], 400) and "Traceback" not in body
    # a well-formed id of an image not given to this user is refused as before
    status, headers, _ = client.post("/answer", {"csrf": csrf, "item": "9223372036854775807", "image": 0, "text": 0})
    assert (status, headers["Location"]) == (303, "/?m=notyours")
    assert db.all_answers() == []
    assert client.get("/img/1")[0] == 200  # the server is fine afterwards


def test_parse_item_id():
    assert parse_item_id("17") == 17 and parse_item_id("9223372036854775807") == 2**63 - 1
    for bad in ["0", "²", "١٢", "9223372036854775808", "9" * 20, "", "-3", "+3", "3 ", "0x1"]:
        assert parse_item_id(bad) is None, bad


def _raw(port: int, method: str, path: str, headers: dict, body: bytes | None, results: list, start) -> None:
    start.wait(30)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        resp.read()
        results.append((resp.status, resp.getheader("Location")))
        conn.close()
    except OSError as exc:  # ConnectionResetError, BrokenPipeError, timeouts
        results.append((type(exc).__name__, None))


def test_200_simultaneous_clients_no_reset_no_lost_answer(app):
    """200 connections opened at once (a barrier): 20 annotators post their answer, 180 clients
    load pages. Every request gets a real response and every answer is stored exactly once."""
    db, port, _ = app
    users = [db.add_user(f"u{i}", f"u{i}-password-x") for i in range(20)]
    cookies, posts = [], []
    for user in users:
        token, csrf = db.create_session(user)
        cookies.append(f"fc_session={token}")
        item = db.next_item(user)
        posts.append(urlencode({"csrf": csrf, "item": item.id, "image": 1, "text": 2}).encode())
    start = threading.Barrier(200, timeout=60)
    results: list = []
    threads = []
    for i in range(200):
        cookie = {"Cookie": cookies[i % len(users)]}
        if i < len(users):
            args = ("POST", "/answer", {**cookie, "Content-Type": "application/x-www-form-urlencoded"}, posts[i])
        else:
            args = ("GET", "/" if i % 2 else "/help", cookie, None)
        threads.append(threading.Thread(target=_raw, args=(port, *args, results, start), daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert len(results) == 200
    failures = [r for r in results if not isinstance(r[0], int)]
    assert failures == [], f"{len(failures)} connection errors: {failures[:5]}"
    assert sorted({r[0] for r in results}) == [200, 303]
    assert sorted(r[1] for r in results if r[0] == 303) == ["/?m=saved"] * len(users)
    answers = db.all_answers()
    assert sorted(a[1] for a in answers) == sorted(u.name for u in users)  # each once, none lost


def test_database_file_is_private(tmp_path):
    path = tmp_path / "new.sqlite3"
    old_umask = os.umask(0o022)
    try:
        db = AnnotationDB(path)
        db.add_user("anna", "anna-password")
    finally:
        os.umask(old_umask)
    for p in [path, *tmp_path.glob("new.sqlite3-*")]:  # -wal, -shm
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    legacy = tmp_path / "legacy.sqlite3"
    legacy.touch(mode=0o644)
    os.chmod(legacy, 0o644)
    AnnotationDB(legacy)
    assert stat.S_IMODE(legacy.stat().st_mode) == 0o600


def test_user_names_are_normalised_and_look_alikes_refused(tmp_path):
    db = AnnotationDB(tmp_path / "u.sqlite3")
    admin = db.add_user("Admin", "admin-password", is_admin=True)
    assert admin.name == "admin"
    for same in ["admin", "ADMIN", "ａｄｍｉｎ", " Admin "]:  # case, full-width (NFKC)
        with pytest.raises(UserExists):
            db.add_user(same, "other-password")
    with pytest.raises(InvalidUserName):
        db.add_user("\u0430dmin", "other-password")  # Cyrillic а + Latin dmin: mixed scripts
    db.add_user("ace", "ace-password")
    with pytest.raises(UserExists):
        db.add_user("\u0430\u0441\u0435", "other-password")  # all Cyrillic, looks like "ace"
    db.add_user("\u0431\u043e\u0440\u0438\u0441", "boris-password")  # Cyrillic name, no Latin twin
    assert db.authenticate("ADMIN", "admin-password") is not None
    assert db.authenticate("ａｄｍｉｎ", "admin-password") is not None
    assert db.authenticate("\u0430dmin", "admin-password") is None
    assert [u["name"] for u in db.users()] == ["ace", "admin", "борис"]


def test_accented_and_dotless_look_alikes_and_punctuation_names_refused(tmp_path):
    """Issue #31: 'ālice' (a with macron) and 'alıce' (dotless i) were accepted next to 'alice',
    and so were the names '-' and '.'."""
    db = AnnotationDB(tmp_path / "u.sqlite3")
    db.add_user("alice", "alice-password")
    for twin in ["\u0101lice", "al\u0131ce", "a\u0301lice", "ALICE"]:
        with pytest.raises(UserExists):
            db.add_user(twin, "other-password")
    for bad in ["-", ".", "_", "..", "-alice", "bob."]:
        with pytest.raises(InvalidUserName):
            db.add_user(bad, "other-password")
    db.add_user("jo.ann-2", "joann-password")  # punctuation inside a name is fine
    db.add_user("łukasz", "lukasz-password")
    with pytest.raises(UserExists):
        db.add_user("lukasz", "other-password")


def test_admin_page_names_the_refusal(app):
    db, port, _ = app
    boss = logged_in(port, "boss")
    for name, code in [("ANNA", "user-exists"), ("\u0430nna", "user-name"), ("x y", "user-name")]:
        status, headers, _ = boss.post("/admin/users", {"csrf": boss.csrf("/admin"), "name": name,
                                                        "password": "long-password"})
        assert headers["Location"] == f"/admin?m={code}"
    status, headers, _ = boss.post("/admin/users", {"csrf": boss.csrf("/admin"), "name": "carl",
                                                    "password": "short"})
    assert headers["Location"] == "/admin?m=user-password"
    assert "looks like it" in boss.get("/admin?m=user-exists")[2]
    assert logged_in(port, "anna").get("/")[0] == 200
    assert Client(port).login("ANNA", "anna-password") == (303, "/")  # names are case-insensitive


def test_oversized_form_is_413(app):
    _, port, _ = app
    client = logged_in(port, "anna")
    status, _, body = client.post("/answer", {"csrf": client.csrf(), "item": 1, "image": 0, "text": 0,
                                              "pad": "x" * 100_000})
    assert status == 413 and "Request too large." in body


def _socket(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def test_slow_and_silent_clients_do_not_block_a_normal_client(app):
    """Issue #31: 100 silent connections, or 16 that send one header line every few seconds,
    held every cheroot worker thread (each read waits 10 s), so GET /login timed out for as
    long as they stayed. Now a connection reaches a worker only with its whole header block."""
    _, port, _ = app
    silent = [_socket(port) for _ in range(100)]
    slow = [_socket(port) for _ in range(16)]
    stop = threading.Event()

    def drip() -> None:
        for sock in slow:
            sock.sendall(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        while not stop.wait(0.5):
            for sock in slow:
                try:
                    sock.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    try:
        for _ in range(3):  # while the slow clients are connected and sending
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/login")
            resp = conn.getresponse()
            assert resp.status == 200 and b"password" in resp.read()
            conn.close()
    finally:
        stop.set()
        dripper.join(5)
        for sock in silent + slow:
            sock.close()


def test_a_header_that_never_ends_is_closed_at_the_header_deadline(tmp_path):
    """A client that keeps sending header lines is cut off after ``header_timeout`` seconds
    (it holds no worker thread meanwhile), a silent one after cheroot's idle ``timeout``."""
    db = AnnotationDB(tmp_path / "db.sqlite3", per_image=1)
    server = AnnotationServer(create_app(db, tmp_path), port=0, header_timeout=1.0, timeout=1.0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        slow, silent = _socket(server.server_port), _socket(server.server_port)
        slow.sendall(b"GET /login HTTP/1.1\r\n")
        closed = {}
        for _ in range(40):  # up to 8 s: closed after about 1 s
            for name, sock in (("slow", slow), ("silent", silent)):
                if name in closed:
                    continue
                try:
                    if name == "slow":
                        sock.sendall(b"X-Slow: 1\r\n")
                    sock.settimeout(0.2)
                    data = sock.recv(4096)
                    if data == b"":
                        closed[name] = True
                except socket.timeout:
                    pass
                except OSError:
                    closed[name] = True
            if len(closed) == 2:
                break
        assert closed == {"slow": True, "silent": True}
        slow.close()
        silent.close()
    finally:
        server.shutdown()
        thread.join(5)


def test_a_huge_header_line_is_refused_without_reading_it(app):
    """One header line of (here up to) 8 MiB: the server answers 413 and closes after its
    header bound (64 KiB) instead of reading (and keeping) the whole line (issue #31: a
    300 MiB line grew the server from 278 MB to 1.18 GB)."""
    _, port, _ = app
    sock = _socket(port)
    sock.settimeout(10)
    sock.sendall(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Huge: ")
    sent, piece = 0, b"a" * 65536
    try:
        while sent < 8 * 1024 * 1024:
            sock.sendall(piece)
            sent += len(piece)
    except OSError:  # the server closed the connection: the rest is not read
        pass
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except OSError:
        pass
    sock.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 8 * 1024 * 1024  # cut off long before the whole line
    assert Client(port).get("/login")[0] == 200


def _slow_body(port: int, path: str = "/login", length: int = 60000) -> socket.socket:
    """A POST whose header block is complete but whose body of ``length`` bytes has not come."""
    sock = _socket(port)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                 f"Content-Length: {length}\r\n\r\n".encode("ascii"))
    return sock


def test_slow_request_bodies_do_not_block_logins(app):
    """40 POSTs (more than the server's worker threads) announce a 60000-byte body and send one
    byte of it every half second: a login still answers within seconds, as it does alone."""
    _, port, _ = app
    slow = [_slow_body(port, path) for path in ("/login", "/answer") * 20]
    stop = threading.Event()

    def drip() -> None:
        while not stop.wait(0.5):
            for sock in slow:
                try:
                    sock.sendall(b"x")
                except OSError:
                    pass

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    try:
        for _ in range(3):
            started = time.monotonic()
            client = Client(port, timeout=5)
            assert client.login("anna", "anna-password") == (303, "/")
            assert time.monotonic() - started < 5
    finally:
        stop.set()
        dripper.join(5)
        for sock in slow:
            sock.close()


def test_a_body_that_never_ends_is_closed_at_the_body_deadline(tmp_path):
    """A body still incomplete ``body_timeout`` seconds after its header block is cut off; one
    announced larger than a form may be is refused (413) at once, without waiting for it."""
    db = AnnotationDB(tmp_path / "db.sqlite3", per_image=1)
    server = AnnotationServer(create_app(db, tmp_path), port=0, body_timeout=1.0, timeout=5.0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        slow = _slow_body(server.server_port)
        slow.settimeout(0.3)
        started, answer = time.monotonic(), None
        while answer is None and time.monotonic() - started < 8:
            try:
                slow.sendall(b"x")
                answer = slow.recv(4096)
            except socket.timeout:
                pass
            except OSError:
                answer = b""
        assert answer == b"" and time.monotonic() - started < 4  # closed after about 1 s
        huge = _slow_body(server.server_port, length=10_000_000)
        huge.settimeout(5)
        assert huge.recv(4096).startswith(b"HTTP/1.1 413")
        for sock in (slow, huge):
            sock.close()
    finally:
        server.shutdown()
        thread.join(5)


def test_chunked_expect_continue_and_pipelined_requests_are_served(app):
    """The body is awaited in its every form: chunked, after a 100-continue
    the server sends, and a second request pipelined behind the first."""
    _, port, _ = app
    token = Client(port).csrf("/login")  # any login form token works with its cookie
    form = urlencode({"csrf": token, "name": "anna", "password": "anna-password"}).encode("ascii")
    head = (f"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: fc_login_csrf={token}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n")
    sock = _socket(port)
    sock.settimeout(5)
    answers = sock.makefile("rb")

    def answer() -> bytes:
        """One response's status line and header block (its body read past)."""
        lines = [answers.readline()]
        while lines[-1] not in (b"\r\n", b""):
            lines.append(answers.readline())
        length = next((int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length:")), 0)
        answers.read(length)
        return b"".join(lines)

    chunked = b"%x\r\n%s\r\n5\r\n%s\r\n0\r\n\r\n" % (len(form) - 5, form[:-5], form[-5:])
    sock.sendall(head.encode() + b"Transfer-Encoding: chunked\r\n\r\n" + chunked[:7])
    time.sleep(0.3)
    sock.sendall(chunked[7:])
    assert b"Location: /\r\n" in answer()
    sock.sendall(f"{head}Content-Length: {len(form)}\r\nExpect: 100-continue\r\n\r\n".encode())
    assert answer().startswith(b"HTTP/1.1 100 Continue")
    sock.sendall(form + b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    final = answer()
    while final.startswith(b"HTTP/1.1 100 "):  # cheroot's own 100 Continue (clients skip any 1xx)
        final = answer()
    assert b"Location: /\r\n" in final
    assert answer().startswith(b"HTTP/1.1 200")
    sock.close()


def test_the_login_throttle_stays_bounded_under_ever_new_names():
    """Failed logins under new random names each left an entry that was never removed; now
    expired names are swept and at most ``max_names`` are kept, while a throttled name stays."""
    throttle = LoginThrottle(max_failures=3, window=0.5, max_names=100)
    for _ in range(3):
        throttle.blocked("victim", failed=True)
    assert throttle.blocked("victim")
    for i in range(1000):
        throttle.blocked(f"random-{i}", failed=True)
        if i % 50 == 0:
            throttle.blocked("victim")  # still being tried: kept
    assert len(throttle) <= 100 and throttle.blocked("victim")
    time.sleep(0.6)
    throttle.blocked("someone", failed=True)
    assert len(throttle) == 1 and not throttle.blocked("victim")


RSS_PROBE = """
import re, sys, threading
from focuscrawl.annotate.db import AnnotationDB
def rss():
    return int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) // 1024
db = AnnotationDB(sys.argv[1])
db.add_user("anna", "anna-password")
before = rss()
def fail(i):
    for j in range(3):
        db.authenticate(f"nobody-{i}-{j}", "wrong-password")
        db.authenticate("anna", "wrong-password")
threads = [threading.Thread(target=fail, args=(i,)) for i in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print(rss() - before)
"""


def test_failed_logins_on_every_server_thread_keep_the_process_small(tmp_path):
    """16 server threads checking passwords at once: each scrypt takes 16 MiB that the thread's
    malloc arena keeps, so the server grew by about 16 MiB per thread (177 -> 418 MB);
    hashing on a few threads bounds the growth. In a fresh process (arenas unused)."""
    import sys

    out = warmfork.run([sys.executable, "-c", RSS_PROBE, str(tmp_path / "db.sqlite3")], check=True,
                       capture_output=True, text=True, env={**os.environ}, timeout=120).stdout
    assert int(out) < 100, f"grew by {out.strip()} MB"


def test_accented_and_dotless_twins_are_refused_alike_through_the_admin_page(app):
    """'ālice' and 'alıce' next to 'alice' are both refused as look-alikes (the safer rule: one
    skeleton, accents dropped and confusable letters mapped), whichever of the three came first."""
    db, port, _ = app
    boss = logged_in(port, "boss")
    for first, twins in (("alice", ["\u0101lice", "al\u0131ce"]), ("\u0101nton", ["anton", "\u0430nton"]),
                         ("v\u0131ctor", ["victor", "v\u012bctor"])):
        assert boss.post("/admin/users", {"csrf": boss.csrf("/admin"), "name": first,
                                          "password": "long-password"})[1]["Location"] == "/admin?m=user-added"
        for twin in twins:
            location = boss.post("/admin/users", {"csrf": boss.csrf("/admin"), "name": twin,
                                                  "password": "long-password"})[1]["Location"]
            assert location in ("/admin?m=user-exists", "/admin?m=user-name"), twin
    assert {u["name"] for u in db.users()} == {"anna", "boss", "alice", "\u0101nton", "v\u0131ctor"}
