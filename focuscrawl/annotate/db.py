"""The annotation database (SQLite): users, sessions, items to annotate, assignments, answers.

Every image goes to exactly ``per_image`` distinct annotators. The guarantees live in
the schema and in short ``BEGIN IMMEDIATE`` transactions, so concurrent annotators
(threads of one server, or several servers on one file) never lose or double-count
an answer: ``answers`` has one row per (item, user) at most (primary key), and an
answer is only stored while the item has fewer than ``per_image`` answers.
Assignments reserve a slot for a user while they look at an image; a slot not
answered within ``ASSIGNMENT_TTL`` seconds is given to someone else.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Iterable, Iterator

from focuscrawl import settings as _defaults

DEFAULT_IMAGE_LABELS = tuple(_defaults.FOCUSCRAWL_ANNOTATION_IMAGE_LABELS)
TEXT_LABELS = ("describes the image", "fits the topic", "irrelevant", "misleading")
ASSIGNMENT_TTL = 30 * 60
SESSION_TTL = 7 * 24 * 3600
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
#: Password hashes computed at the same time. Each scrypt needs 128*N*r bytes (16 MiB) that
#: the computing thread's malloc arena keeps afterwards: hashing in every server thread at once
#: grew the server by 16 MiB per thread; a few hashing threads bound that (and the CPU).
SCRYPT_THREADS = 2
_scrypt_pool = ThreadPoolExecutor(SCRYPT_THREADS, thread_name_prefix="scrypt")
MIN_PASSWORD_LENGTH = 8

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    password TEXT NOT NULL,
    is_admin INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    token_hash TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY,
    rank INTEGER NOT NULL,
    image_url TEXT NOT NULL UNIQUE,
    image_path TEXT NOT NULL,
    page_url TEXT NOT NULL,
    alt TEXT NOT NULL,
    title TEXT NOT NULL,
    score REAL
);
CREATE TABLE IF NOT EXISTS assignments (
    item_id INTEGER NOT NULL REFERENCES items(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    assigned REAL NOT NULL,
    PRIMARY KEY (item_id, user_id)
);
CREATE TABLE IF NOT EXISTS answers (
    item_id INTEGER NOT NULL REFERENCES items(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    image_label INTEGER NOT NULL CHECK (image_label BETWEEN 0 AND 4),
    text_label INTEGER NOT NULL CHECK (text_label BETWEEN 0 AND 3),
    answered REAL NOT NULL,
    PRIMARY KEY (item_id, user_id)
);
CREATE INDEX IF NOT EXISTS answers_by_user ON answers(user_id);
CREATE INDEX IF NOT EXISTS assignments_by_user ON assignments(user_id);
"""


#: Largest item id SQLite can hold (INTEGER is a signed 64-bit value).
MAX_ITEM_ID = 2**63 - 1


class AnnotationError(ValueError):
    """A refused operation; the subclasses say which (the web app maps them to pages)."""


class DatabaseUnavailable(AnnotationError):
    """The database file cannot be opened or created."""


class InvalidSetting(AnnotationError):
    """A bad ``--per-image`` or label list."""


class InvalidUserName(AnnotationError):
    """Not 1-64 letters, digits, '.', '_' or '-' of one script."""


class UserExists(AnnotationError):
    """The name, or one that looks the same (case, compatibility forms, confusable letters), exists."""


class WeakPassword(AnnotationError):
    """Shorter than ``MIN_PASSWORD_LENGTH``."""


class NoSuchUser(AnnotationError):
    """No account of that name."""


class InvalidAnswer(AnnotationError):
    """A label out of range, or an item id that cannot exist."""


class NotAssigned(AnnotationError):
    """The user was never given that image."""


class AlreadyAnswered(AnnotationError):
    """The user answered that image before (answers cannot be changed)."""


class ItemFull(AnnotationError):
    """The image has its ``per_image`` answers already (a late slot)."""


def parse_item_id(text: str) -> int | None:
    """An item id (1 or more) from a URL or form: ASCII digits only (``str.isdigit`` also takes
    '²'), within SQLite's integer range; anything else is ``None``."""
    if not text or len(text) > 19 or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if 0 < value <= MAX_ITEM_ID else None


def normalize_user_name(name: str) -> str:
    """NFKC + casefold: 'Anna', 'ＡＮＮＡ' and 'anna' are one name."""
    return unicodedata.normalize("NFKC", name.strip()).casefold()


def name_skeleton(name: str) -> str:
    """The name as it looks, after ``normalize_user_name``: every non-ASCII character replaced by
    its look-alike in Unicode's confusables data (Cyrillic 'а' -> 'a', dotless 'ı' -> 'i'), then
    accents and other combining marks dropped ('ā' -> 'a', 'ł' -> 'l'). Two names with one
    skeleton look alike on screen."""
    from confusable_homoglyphs.confusables import confusables_data

    mapped = "".join(confusables_data[ch][0]["c"] if not ch.isascii() and confusables_data.get(ch) else ch
                     for ch in unicodedata.normalize("NFD", name))
    return "".join(ch for ch in unicodedata.normalize("NFD", mapped) if not unicodedata.combining(ch))


def check_user_name(name: str) -> str:
    """The normalised name, or ``InvalidUserName``: letters of one script, digits, '.', '_', '-',
    starting and ending with a letter or digit (no name that is only punctuation: '-', '.')."""
    from confusable_homoglyphs import categories

    name = normalize_user_name(name)
    if (not name or len(name) > 64 or not all(ch.isalnum() or ch in "._-" for ch in name)
            or not (name[0].isalnum() and name[-1].isalnum())):
        raise InvalidUserName("user name: 1-64 letters, digits, '.', '_' or '-', starting and ending with a "
                              "letter or digit")
    if len(categories.unique_aliases(name) - {"COMMON"}) > 1:
        raise InvalidUserName(f"user name {name!r} mixes scripts (e.g. Latin and Cyrillic letters)")
    return name


def _create_private(path: str) -> None:
    """Create the database file readable by its owner only (it holds password hashes and
    sessions); SQLite gives its -wal and -shm files the same mode. An existing file is made
    private too."""
    if path == ":memory:" or path.startswith("file:"):
        return
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, 0o600)
    except OSError as exc:
        raise DatabaseUnavailable(f"cannot open the annotation database {path}: {exc.strerror or exc}") from None


@dataclass
class Item:
    id: int
    rank: int
    image_url: str
    image_path: str
    page_url: str
    alt: str
    title: str
    score: float | None


@dataclass
class User:
    id: int
    name: str
    is_admin: bool


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    """``hashlib.scrypt`` on one of the ``SCRYPT_THREADS`` hashing threads (bounded memory)."""
    return _scrypt_pool.submit(hashlib.scrypt, password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                               dklen=dklen).result()


def hash_password(password: str, salt: bytes | None = None) -> str:
    """``scrypt$N$r$p$salt$hash`` with a random 16-byte salt."""
    salt = salt or secrets.token_bytes(16)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, 32)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


@cache
def _unknown_user_hash() -> str:
    """A hash to check passwords of unknown names against: the same work as for a known name."""
    return hash_password(secrets.token_urlsafe(16))


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        candidate = _scrypt(password, bytes.fromhex(salt), int(n), int(r), int(p), len(digest) // 2)
    except ValueError:
        return False
    return hmac.compare_digest(candidate.hex(), digest)


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


class AnnotationDB:
    """All reads and writes of the annotation database; one connection per thread, reused."""

    def __init__(self, path: str | Path, per_image: int | None = None):
        self.path = str(path)
        self._local = threading.local()
        _create_private(self.path)
        try:
            with self._connect() as conn:
                conn.execute("PRAGMA journal_mode = WAL")  # persistent in the file: readers never block the writer
                conn.executescript(SCHEMA)
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(f"cannot open the annotation database {self.path}: {exc}") from None
        if per_image is not None:
            if per_image < 1:
                raise InvalidSetting("--per-image must be at least 1")
            self.set_meta("per_image", str(per_image))

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection (one per thread, reused; a server thread serves one request)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA synchronous = FULL")  # every answer on disk at commit, even on power loss
            self._local.conn = conn
        yield conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the write lock up front (no lost updates)."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # --- meta ------------------------------------------------------------------------
    def set_meta(self, key: str, value: str) -> None:
        with self._write() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = ?",
                         (key, value, value))

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self._connect() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    @property
    def per_image(self) -> int:
        return int(self.get_meta("per_image", "3"))

    @property
    def image_labels(self) -> list[str]:
        value = self.get_meta("image_labels")
        return value.split("\n") if value else list(DEFAULT_IMAGE_LABELS)

    def set_image_labels(self, labels: Iterable[str]) -> None:
        labels = [" ".join(label.split()) for label in labels]
        if len(labels) != 5 or not all(labels):
            raise InvalidSetting("image labels: give exactly 5 non-empty labels (topic, pet, animal, "
                                  "living being, other)")
        self.set_meta("image_labels", "\n".join(labels))

    # --- users and sessions -------------------------------------------------------------
    def add_user(self, name: str, password: str, is_admin: bool = False) -> User:
        """A new account under the normalised name; refused if it looks like an existing one."""
        name = check_user_name(name)
        if len(password) < MIN_PASSWORD_LENGTH:
            raise WeakPassword(f"password: at least {MIN_PASSWORD_LENGTH} characters")
        skeleton = name_skeleton(name)
        password_hash = hash_password(password)
        with self._write() as conn:
            for (other,) in conn.execute("SELECT name FROM users"):
                if normalize_user_name(other) == name:
                    raise UserExists(f"user {name!r} exists already")
                if name_skeleton(normalize_user_name(other)) == skeleton:
                    raise UserExists(f"user name {name!r} looks like the existing user {other!r}")
            cur = conn.execute("INSERT INTO users(name, password, is_admin, created) VALUES (?, ?, ?, ?)",
                               (name, password_hash, int(is_admin), time.time()))
        return User(cur.lastrowid, name, is_admin)

    def _user_id(self, conn: sqlite3.Connection, name: str) -> tuple | None:
        """``(id, name, password, is_admin)`` of the account ``name`` (normalised; an account
        stored before names were normalised is found by its exact name)."""
        for candidate in dict.fromkeys((normalize_user_name(name), name.strip())):
            row = conn.execute("SELECT id, name, password, is_admin FROM users WHERE name = ?",
                               (candidate,)).fetchone()
            if row is not None:
                return row
        return None

    def set_password(self, name: str, password: str) -> None:
        if len(password) < MIN_PASSWORD_LENGTH:
            raise WeakPassword(f"password: at least {MIN_PASSWORD_LENGTH} characters")
        with self._write() as conn:
            row = self._user_id(conn, name)
            if row is None:
                raise NoSuchUser(f"no user {name!r}")
            conn.execute("UPDATE users SET password = ? WHERE id = ?", (hash_password(password), row[0]))
            conn.execute("DELETE FROM sessions WHERE user_id = ?", (row[0],))

    def users(self) -> list[dict]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT u.name, u.is_admin, COUNT(a.item_id) FROM users u "
                "LEFT JOIN answers a ON a.user_id = u.id GROUP BY u.id ORDER BY u.name").fetchall()
        return [{"name": n, "is_admin": bool(adm), "answers": c} for n, adm, c in rows]

    def authenticate(self, name: str, password: str) -> User | None:
        with self._connect() as conn:
            row = self._user_id(conn, name)
        if row is None:
            verify_password(password, _unknown_user_hash())  # one scrypt, as for a known name
            return None
        return User(row[0], row[1], bool(row[3])) if verify_password(password, row[2]) else None

    def create_session(self, user: User) -> tuple[str, str]:
        """A new session: (token for the cookie, CSRF token for the forms). Only the token's hash is stored."""
        token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with self._write() as conn:
            conn.execute("DELETE FROM sessions WHERE expires < ?", (time.time(),))
            conn.execute("INSERT INTO sessions(token_hash, user_id, csrf, expires) VALUES (?, ?, ?, ?)",
                         (_token_hash(token), user.id, csrf, time.time() + SESSION_TTL))
        return token, csrf

    def session_user(self, token: str) -> tuple[User, str] | None:
        """The user and CSRF token of a live session, or None."""
        if not token:
            return None
        with self._connect() as conn:
            row = conn.execute(
                "SELECT u.id, u.name, u.is_admin, s.csrf FROM sessions s JOIN users u ON u.id = s.user_id "
                "WHERE s.token_hash = ? AND s.expires > ?", (_token_hash(token), time.time())).fetchone()
        return (User(row[0], row[1], bool(row[2])), row[3]) if row else None

    def end_session(self, token: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM sessions WHERE token_hash = ?", (_token_hash(token),))

    # --- items --------------------------------------------------------------------------
    def add_items(self, entries: Iterable) -> int:
        """Load ranked ``CorpusEntry`` objects (rank = order); image URLs already loaded are kept."""
        with self._write() as conn:
            start = conn.execute("SELECT COALESCE(MAX(rank), 0) FROM items").fetchone()[0]
            added = 0
            for offset, e in enumerate(entries, 1):
                cur = conn.execute(
                    "INSERT OR IGNORE INTO items(rank, image_url, image_path, page_url, alt, title, score) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (start + offset, e.image_url, e.image_path, e.page_url, e.alt, e.title, e.final_score))
                added += cur.rowcount
        return added

    def count_items(self) -> int:
        with self._connect() as conn:
            return conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]

    def item(self, item_id: int) -> Item | None:
        if not 0 < item_id <= MAX_ITEM_ID:
            return None
        with self._connect() as conn:
            row = conn.execute("SELECT id, rank, image_url, image_path, page_url, alt, title, score "
                               "FROM items WHERE id = ?", (item_id,)).fetchone()
        return Item(*row) if row else None

    # --- assignment and answers -----------------------------------------------------------
    def next_item(self, user: User, now: float | None = None) -> Item | None:
        """The image this user should annotate now: their open assignment, else the best-ranked
        image that still has a free slot and that they have never been given. None = nothing left."""
        now = time.time() if now is None else now
        with self._write() as conn:
            per_image = self.per_image_in(conn)
            row = conn.execute(
                "SELECT s.item_id FROM assignments s WHERE s.user_id = ? AND s.assigned > ? "
                "AND NOT EXISTS (SELECT 1 FROM answers a WHERE a.item_id = s.item_id AND a.user_id = s.user_id) "
                "AND (SELECT COUNT(*) FROM answers a WHERE a.item_id = s.item_id) < ? "
                "ORDER BY s.assigned LIMIT 1", (user.id, now - ASSIGNMENT_TTL, per_image)).fetchone()
            if row is None:
                # taken slots = answers + live assignments of other users not yet answered
                row = conn.execute(
                    "SELECT i.id FROM items i WHERE NOT EXISTS "
                    "(SELECT 1 FROM assignments s WHERE s.item_id = i.id AND s.user_id = ?) "
                    "AND (SELECT COUNT(*) FROM answers a WHERE a.item_id = i.id) "
                    "  + (SELECT COUNT(*) FROM assignments s WHERE s.item_id = i.id AND s.assigned > ? "
                    "     AND NOT EXISTS (SELECT 1 FROM answers a WHERE a.item_id = s.item_id "
                    "                     AND a.user_id = s.user_id)) < ? "
                    "ORDER BY i.rank LIMIT 1", (user.id, now - ASSIGNMENT_TTL, per_image)).fetchone()
                if row is None:
                    return None
                conn.execute("INSERT INTO assignments(item_id, user_id, assigned) VALUES (?, ?, ?)",
                             (row[0], user.id, now))
        return self.item(row[0])

    def answer(self, user: User, item_id: int, image_label: int, text_label: int) -> None:
        """Store one answer. Refused if the user was never given the image, has answered it
        already, or the image has its ``per_image`` answers (someone else's late slot)."""
        if not (0 <= image_label < len(DEFAULT_IMAGE_LABELS)) or not (0 <= text_label < len(TEXT_LABELS)):
            raise InvalidAnswer("answer out of range")
        if not 0 < item_id <= MAX_ITEM_ID:
            raise InvalidAnswer("no such image")
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM assignments WHERE item_id = ? AND user_id = ?",
                            (item_id, user.id)).fetchone() is None:
                raise NotAssigned("this image was not given to you")
            if conn.execute("SELECT 1 FROM answers WHERE item_id = ? AND user_id = ?",
                            (item_id, user.id)).fetchone():
                raise AlreadyAnswered("you have answered this image already")
            count = conn.execute("SELECT COUNT(*) FROM answers WHERE item_id = ?", (item_id,)).fetchone()[0]
            if count >= self.per_image_in(conn):
                raise ItemFull("this image has all its answers already")
            conn.execute("INSERT INTO answers(item_id, user_id, image_label, text_label, answered) "
                         "VALUES (?, ?, ?, ?, ?)", (item_id, user.id, image_label, text_label, time.time()))

    @staticmethod
    def per_image_in(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT value FROM meta WHERE key = 'per_image'").fetchone()
        return int(row[0]) if row else 3

    def progress(self, user: User) -> dict:
        """The user's own count and the overall progress (no one else's answers)."""
        with self._connect() as conn:
            mine = conn.execute("SELECT COUNT(*) FROM answers WHERE user_id = ?", (user.id,)).fetchone()[0]
            items = conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]
            total = conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
            complete = conn.execute(
                "SELECT COUNT(*) FROM (SELECT item_id FROM answers GROUP BY item_id HAVING COUNT(*) >= ?)",
                (self.per_image_in(conn),)).fetchone()[0]
        return {"mine": mine, "items": items, "answers": total, "complete": complete,
                "needed": items * self.per_image}

    def my_answers(self, user: User, limit: int = 50) -> list[tuple[Item, int, int]]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT i.id, i.rank, i.image_url, i.image_path, i.page_url, i.alt, i.title, i.score, "
                "a.image_label, a.text_label FROM answers a JOIN items i ON i.id = a.item_id "
                "WHERE a.user_id = ? ORDER BY a.answered DESC LIMIT ?", (user.id, limit)).fetchall()
        return [(Item(*r[:8]), r[8], r[9]) for r in rows]

    def all_answers(self) -> list[tuple[int, str, int, int]]:
        """(item id, user name, image label, text label) for the statistics (admin side only)."""
        with self._connect() as conn:
            return conn.execute(
                "SELECT a.item_id, u.name, a.image_label, a.text_label FROM answers a "
                "JOIN users u ON u.id = a.user_id ORDER BY a.item_id, u.name").fetchall()

    def items_by_id(self) -> dict[int, Item]:
        with self._connect() as conn:
            rows = conn.execute("SELECT id, rank, image_url, image_path, page_url, alt, title, score "
                                "FROM items").fetchall()
        return {r[0]: Item(*r) for r in rows}
