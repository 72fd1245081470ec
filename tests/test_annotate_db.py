"""Assignment rules of the annotation database: k distinct annotators, no repeats, no lost answers."""
from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from focuscrawl.annotate.db import ASSIGNMENT_TTL, AnnotationDB, AnnotationError, hash_password, verify_password
from focuscrawl.corpus import CorpusEntry


def entries(n):
    return [CorpusEntry(f"http://a.org/{i}.jpg", "http://a.org/", f"alt {i}", "", float(i + 2), "parent-1", "",
                        f"images/{i}.png", i) for i in range(n)]


@pytest.fixture
def db(tmp_path):
    db = AnnotationDB(tmp_path / "a.sqlite3", per_image=3)
    db.add_items(entries(2))
    return db


def test_passwords_are_salted_scrypt_hashes():
    h1, h2 = hash_password("correct horse"), hash_password("correct horse")
    assert h1 != h2 and h1.startswith("scrypt$") and "correct" not in h1
    assert verify_password("correct horse", h1) and not verify_password("wrong horse", h1)
    assert not verify_password("x", "garbage")


def test_users_and_sessions(db):
    user = db.add_user("anna", "secret-pass")
    with pytest.raises(AnnotationError):
        db.add_user("anna", "another-pass")
    with pytest.raises(AnnotationError):
        db.add_user("bad name<>", "secret-pass")
    with pytest.raises(AnnotationError):
        db.add_user("bob", "short")
    assert db.authenticate("anna", "wrong-pass") is None and db.authenticate("nobody", "secret-pass") is None
    assert db.authenticate("anna", "secret-pass").id == user.id
    token, csrf = db.create_session(user)
    with sqlite3.connect(db.path) as conn:  # only the hash of the token is stored
        assert token not in {r[0] for r in conn.execute("SELECT token_hash FROM sessions")}
    assert db.session_user(token) == (user, csrf)
    db.set_password("anna", "new-secret-pass")  # ends the sessions
    assert db.session_user(token) is None


def test_each_image_goes_to_k_distinct_annotators(db):
    users = [db.add_user(f"u{i}", "password1") for i in range(4)]
    got = [db.next_item(u).id for u in users]
    assert got == [1, 1, 1, 2]  # best rank first, 3 slots, the 4th user gets the next image
    assert db.next_item(users[0]).id == 1  # the open assignment comes back (reload)
    db.answer(users[0], 1, 0, 0)
    with pytest.raises(AnnotationError, match="already"):
        db.answer(users[0], 1, 1, 1)  # no second answer, no change
    assert db.next_item(users[0]).id == 2  # never the same image twice
    with pytest.raises(AnnotationError, match="not given"):
        db.answer(users[3], 1, 0, 0)
    with pytest.raises(AnnotationError):
        db.answer(users[1], 1, 5, 0)  # out of range


def test_abandoned_assignment_is_given_to_someone_else(db):
    users = [db.add_user(f"u{i}", "password1") for i in range(5)]
    now = time.time()
    for u in users[:3]:
        assert db.next_item(u, now).id == 1
    later = now + ASSIGNMENT_TTL + 1
    assert db.next_item(users[3], later).id == 1  # the slots expired
    for u in users[1:4]:
        db.answer(u, 1, 0, 0)
    with pytest.raises(AnnotationError, match="all its answers"):
        db.answer(users[0], 1, 0, 0)  # late: the image is complete
    assert db.next_item(users[0], later).id == 2


def test_concurrent_annotators_never_lose_or_double_count(tmp_path):
    db = AnnotationDB(tmp_path / "c.sqlite3", per_image=3)
    db.add_items(entries(6))
    users = [db.add_user(f"w{i}", "password1") for i in range(8)]
    errors = []

    def work(user):
        try:
            while (item := db.next_item(user)) is not None:
                try:
                    db.answer(user, item.id, item.id % 5, 0)
                except AnnotationError as exc:
                    errors.append(str(exc))
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    rows = db.all_answers()
    per_item = {}
    for item, name, _, _ in rows:
        per_item.setdefault(item, []).append(name)
    assert {i: len(names) for i, names in per_item.items()} == {i: 3 for i in range(1, 7)}
    assert all(len(set(names)) == 3 for names in per_item.values())
