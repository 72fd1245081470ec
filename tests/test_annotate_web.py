"""The annotation app over real HTTP on 127.0.0.1: login, answering, and the security rules."""
from __future__ import annotations

import threading

import pytest

from tests.support.annotate import Client, logged_in, running_app
from tests.support.runfixture import make_run_dir

XSS_ALT = '<script>alert("x")</script><img src=x onerror=alert(1)>'
ROWS = [{"url": f"http://a.org/{i}.jpg", "score": 10 + i, "alt": f"cat number {i}"} for i in range(4)]
ROWS[0]["alt"] = XSS_ALT


@pytest.fixture
def app(tmp_path):
    run_dir = make_run_dir(tmp_path / "run", ROWS)
    (tmp_path / "secret.png").write_bytes(b"\x89PNG outside the run directory")
    with running_app(run_dir, tmp_path / "db.sqlite3", 2, {"anna": False, "bert": False, "boss": True}) as (db, port):
        yield db, port, tmp_path


def test_login_logout_and_cookie_flags(app):
    db, port, _ = app
    client = Client(port)
    assert client.get("/")[0] == 303  # redirected to /login
    assert client.login("anna", "wrong-password") == (303, "/login?m=login")
    assert "fc_session" not in client.cookies
    assert client.login("anna", "anna-password") == (303, "/")
    session_cookie = [h for h in client.set_cookie_headers if h.startswith("fc_session=")][0]
    assert "HttpOnly" in session_cookie and "SameSite=Strict" in session_cookie
    status, headers, page = client.get("/")
    assert status == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
    assert client.post("/logout", {"csrf": client.csrf()})[0] == 303
    assert client.get("/")[0] == 303


def test_alt_text_is_escaped(app):
    _, port, _ = app
    page = logged_in(port, "anna").get("/")[2]
    assert "<script>alert" not in page and "onerror=alert(1)>" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page  # Jinja2 (markupsafe) escaping


def test_answer_flow_and_progress(app):
    db, port, _ = app
    client = logged_in(port, "anna")
    first = client.current_item()
    status, headers, _ = client.post("/answer", {"csrf": client.csrf(), "item": first, "image": 0, "text": 1})
    assert (status, headers["Location"]) == (303, "/?m=saved")
    assert db.all_answers() == [(first, "anna", 0, 1)]
    page = client.get("/?m=saved")[2]
    assert client.current_item() != first and 'id="mine">1<' in page


def test_post_without_or_with_wrong_csrf_is_refused(app):
    db, port, _ = app
    client = logged_in(port, "anna")
    item = client.current_item()
    assert client.post("/answer", {"item": item, "image": 0, "text": 0})[0] == 403
    assert client.post("/answer", {"csrf": "forged", "item": item, "image": 0, "text": 0})[0] == 403
    other = logged_in(port, "bert")  # another session's token does not work either
    assert client.post("/answer", {"csrf": other.csrf(), "item": item, "image": 0, "text": 0})[0] == 403
    assert client.post("/logout", {})[0] == 403
    assert db.all_answers() == []
    fresh = Client(port)
    fresh.get("/login")
    assert fresh.post("/login", {"name": "anna", "password": "anna-password"})[0] == 403
    boss = logged_in(port, "boss")
    assert boss.post("/admin/users", {"name": "eve", "password": "eve-password"})[0] == 403
    assert [u["name"] for u in db.users()] == ["anna", "bert", "boss"]


TRAVERSALS = [
    "/img/../../secret.png", "/img/..%2F..%2Fsecret.png", "/img/%2e%2e/images.tsv", "/img/1/../../secret.png",
    "/static/../db.py", "/static/..%2fweb.py", "/../secret.png", "/images.tsv", "/img/99", "/img/-1",
]


def test_traversal_and_unknown_paths_are_404(app):
    _, port, _ = app
    client = logged_in(port, "anna")
    for path in TRAVERSALS:
        status, _, body = client.get(path)
        assert (path, status) == (path, 404) and "PNG" not in body


def test_image_paths_outside_the_run_dir_are_not_served(app):
    db, port, tmp_path = app
    import sqlite3

    with sqlite3.connect(db.path) as conn:  # a hostile images.tsv pointing outside the run
        conn.execute("UPDATE items SET image_path = '../secret.png' WHERE id = 2")
    client = logged_in(port, "anna")
    assert client.get("/img/2")[0] == 404
    status, headers, _ = client.get("/img/1")
    assert status == 200 and headers["Content-Type"] == "image/png"
    assert Client(port).get("/img/1")[0] == 403  # images only for logged-in users


def test_annotators_cannot_read_or_change_each_others_answers(app):
    db, port, _ = app
    anna, bert = logged_in(port, "anna"), logged_in(port, "bert")
    item = anna.current_item()
    anna.post("/answer", {"csrf": anna.csrf(), "item": item, "image": 0, "text": 0})
    # bert cannot answer (or overwrite) an image he was not given
    bert_item = bert.current_item()
    assert bert_item == item  # per_image=2: bert gets the same image next...
    status, headers, _ = bert.post("/answer", {"csrf": bert.csrf(), "item": 3, "image": 4, "text": 3})
    assert headers["Location"] == "/?m=notyours"
    assert (item, "anna", 0, 0) in db.all_answers() and len(db.all_answers()) == 1
    # bert's answers page lists only his own answers, whatever he asks for
    page = bert.get("/answers")[2]
    assert "&lt;script&gt;" not in bert.get("/answers?user=anna")[2]
    assert "cat number" not in page and "&lt;script&gt;" not in page
    assert "&lt;script&gt;" in anna.get("/answers")[2]
    # the admin page is for admins only
    assert bert.get("/admin")[0] == 403


def test_admin_page_adds_users(app):
    db, port, _ = app
    boss = logged_in(port, "boss")
    status, headers, _ = boss.post("/admin/users", {"csrf": boss.csrf("/admin"), "name": "carl",
                                                    "password": "carl-password"})
    assert headers["Location"] == "/admin?m=user-added"
    assert logged_in(port, "carl").current_item() is not None


def test_concurrent_http_answers_are_counted_once(app):
    db, port, _ = app
    db.add_user("cara", "cara-password")
    clients = [logged_in(port, n) for n in ("anna", "bert", "cara")]
    items = [c.current_item() for c in clients]
    assert items[0] == items[1] != items[2]  # two slots per image
    item = items[0]
    tokens = [c.csrf() for c in clients]
    results = []

    def post_twice(client, token):
        for _ in range(2):  # a double click
            results.append(client.post("/answer", {"csrf": token, "item": item, "image": 1, "text": 2})[1]["Location"])

    threads = [threading.Thread(target=post_twice, args=(c, t)) for c, t in zip(clients, tokens)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    answers = [a for a in db.all_answers() if a[0] == item]
    assert sorted(a[1] for a in answers) == ["anna", "bert"]
    assert sorted(results).count("/?m=saved") == 2


def test_repeated_failed_logins_are_throttled(app):
    from focuscrawl.annotate import web

    _, port, _ = app
    client = Client(port)
    for _ in range(web.LOGIN_MAX_FAILURES):
        assert client.login("anna", "wrong-password") == (303, "/login?m=login")
    assert client.login("anna", "anna-password") == (303, "/login?m=throttled")  # even the right one
    assert logged_in(port, "bert").current_item() is not None  # other users are not affected
