"""Hostile input and load against the annotation app (issue #16): malformed ids, 200 clients at
once, the database file's mode, look-alike user names. Real HTTP on 127.0.0.1."""
from __future__ import annotations

import http.client
import os
import socket
import stat
import threading
from urllib.parse import urlencode

import pytest

from focuscrawl.annotate.db import AnnotationDB, InvalidUserName, UserExists, parse_item_id
from focuscrawl.annotate.web import AnnotationServer, create_app
from tests.support.annotate import Client, logged_in, running_app
from tests.support.runfixture import make_run_dir

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
