"""The bad-input corpus and the hostile loopback sites, generated on demand.

Nothing large is written: the "huge" archives are gzip streams of zeros written in
1 MiB pieces (128 MiB of zeros is ~130 KB on disk). Used by the tests
(tests/test_hostile_*.py) and by ``benchmarks/hostile_corpus.py``.

``archive_corpus(dir)`` -> {name: (path, what the reader must do)}; the sites:
``TrapSite`` (30 real pages plus crawler traps) and ``SlowImageSite`` (pages whose
images answer slowly, for resume starvation).
"""
from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import threading
import zlib
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.localweb import LocalWeb, Page, png_bytes

PAGE_TEXT = ("The cat sleeps on the sofa while the kitten plays with a toy mouse. Cats like warm "
             "places and the old cat purrs in the sun all afternoon.")


def http_response(body: bytes, content_type: str = "text/html; charset=utf-8",
                  extra: str = "") -> bytes:
    return (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"{extra}\r\n").encode("latin-1") + body


def warc_record(url: str, block: bytes, content_length: int | None = None, rec_type: str = "response") -> bytes:
    """One WARC/1.0 record, written by hand so that its headers can lie."""
    length = len(block) if content_length is None else content_length
    head = (f"WARC/1.0\r\nWARC-Type: {rec_type}\r\nWARC-Target-URI: {url}\r\n"
            f"WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:{abs(hash((url, length)))}>\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {length}\r\n\r\n")
    return head.encode("latin-1") + block + b"\r\n\r\n"


def page(n: int | str) -> bytes:
    return f"<html><body><p>{PAGE_TEXT} Page {n}.</p></body></html>".encode()


def write_records(path: Path, records: list[bytes], gz: bool) -> Path:
    with open(path, "wb") as fh:
        for rec in records:
            fh.write(gzip.compress(rec) if gz else rec)
    return path


def write_gzip_stream(path: Path, prefix: bytes, filler: bytes, size: int, suffix: bytes = b"") -> Path:
    """One gzip member: ``prefix``, ``size`` bytes of ``filler`` repeated, ``suffix``;
    compressed piece by piece so nothing of ``size`` is ever in memory."""
    piece = (filler * (1024 * 1024 // len(filler) + 1))[:1024 * 1024]
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)  # gzip framing
    with open(path, "wb") as fh:
        fh.write(comp.compress(prefix))
        left = size
        while left > 0:
            chunk = piece[:min(left, len(piece))]
            fh.write(comp.compress(chunk))
            left -= len(chunk)
        fh.write(comp.compress(suffix))
        fh.write(comp.flush())
    return path


def good(url: str, n: int | str) -> bytes:
    return warc_record(url, http_response(page(n)))


#: What the reader must make of each corpus file: the page URLs it keeps, the
#: ``archive/*`` stat of the skip (or None), and whether the file is rejected whole.
def archive_corpus(root: Path, huge: int = 128 * 1024 * 1024) -> dict[str, dict]:
    root.mkdir(parents=True, exist_ok=True)
    corpus: dict[str, dict] = {}

    def add(name, path, keep, stat=None, rejected=False):
        corpus[name] = {"path": path, "keep": keep, "stat": stat, "rejected": rejected}

    for uri, label in [("http://[::1:bad/", "bad_ipv6"), ("http://ex.test:99999/x", "bad_port"),
                       ("http://:80/nohost", "no_host"), ("http://ex.test:8o/x", "port_not_number")]:
        recs = [good("http://ok.test/before", "before"), good(uri, label), good("http://ok.test/after", "after")]
        add(f"{label}.warc.gz", write_records(root / f"{label}.warc.gz", recs, gz=True),
            ["http://ok.test/before", "http://ok.test/after"], "bad_target_uri")

    cut = good("http://ok.test/cut", "cut")
    recs = [good("http://ok.test/1", 1), good("http://ok.test/2", 2)]
    add("truncated_last.warc", write_records(root / "truncated_last.warc", recs + [cut[:len(cut) - 40]], gz=False),
        ["http://ok.test/1", "http://ok.test/2"], "truncated_record")
    path = write_records(root / "truncated_member.warc.gz", recs + [cut], gz=True)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - 30])  # the last gzip member cut short
    add("truncated_member.warc.gz", path, ["http://ok.test/1", "http://ok.test/2"], "truncated_record")

    liar = warc_record("http://ok.test/liar", http_response(page("liar")), content_length=99_999_999)
    add("lying_length.warc", write_records(root / "lying_length.warc", [good("http://ok.test/1", 1), liar,
                                                                         good("http://ok.test/swallowed", 3)], gz=False),
        ["http://ok.test/1", "http://ok.test/swallowed"], "truncated_record")
    add("lying_length.warc.gz", write_records(root / "lying_length.warc.gz", [
        good("http://ok.test/1", 1), liar, good("http://ok.test/next", 3)], gz=True),
        ["http://ok.test/1", "http://ok.test/next"], "truncated_record")
    short = warc_record("http://ok.test/short", http_response(page("short")), content_length=60)
    add("short_length.warc", write_records(root / "short_length.warc", [good("http://ok.test/1", 1), short,
                                                                         good("http://ok.test/3", 3)], gz=False),
        ["http://ok.test/1", "http://ok.test/3"], "length_mismatch")

    add("zeros.warc.gz", write_gzip_stream(root / "zeros.warc.gz", b"", b"\0", huge), [], rejected=True)
    first = gzip.compress(good("http://ok.test/1", 1))
    long_line = write_gzip_stream(root / "long_line.warc.gz", b"WARC/1.0\r\nWARC-Type: response\r\nX-Long: ",
                                  b"a", huge, b"\r\n\r\n")
    long_line.write_bytes(first + long_line.read_bytes())
    add("long_line.warc.gz", long_line, ["http://ok.test/1"], "unreadable_rest")
    many = write_gzip_stream(root / "many_headers.warc.gz", b"WARC/1.0\r\nWARC-Type: response\r\n",
                             b"X-Header: value\r\n", huge, b"\r\n")
    many.write_bytes(first + many.read_bytes())
    add("many_headers.warc.gz", many, ["http://ok.test/1"], "unreadable_rest")
    body = write_gzip_stream(root / "huge_body.warc.gz",
                             b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://ok.test/zeros\r\n"
                             b"Content-Type: application/http; msgtype=response\r\n"
                             + f"Content-Length: {huge + 200}\r\n\r\n".encode()
                             + b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", b"\0",
                             huge + 200 - len(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"), b"\r\n\r\n")
    body.write_bytes(first + body.read_bytes() + gzip.compress(good("http://ok.test/3", 3)))
    add("huge_body.warc.gz", body, ["http://ok.test/1", "http://ok.test/zeros", "http://ok.test/3"])
    return corpus


#: Content-Length values that break a record's framing without running past the end of the file
BAD_LENGTHS = ("0", "60", "5", "-5", "-100", "abc", "12x", "")


def bad_length_archives(root: Path) -> dict[str, list[str]]:
    """One file per bad ``Content-Length`` (``BAD_LENGTHS``), plain and gzip per record: a good
    record, the bad one, two good ones. -> {file name: the page URLs the reader must keep}."""
    root.mkdir(parents=True, exist_ok=True)
    files = {}
    for n, length in enumerate(BAD_LENGTHS):
        bad = warc_record("http://ok.test/bad", http_response(page("bad")), content_length=0)
        bad = bad.replace(b"Content-Length: 0\r\n", f"Content-Length: {length}\r\n".encode())
        recs = [good("http://ok.test/1", 1), bad, good("http://ok.test/2", 2), good("http://ok.test/3", 3)]
        for gz in (False, True):
            name = f"bad_length_{n}.warc" + (".gz" if gz else "")
            write_records(root / name, recs, gz=gz)
            files[name] = ["http://ok.test/1", "http://ok.test/2", "http://ok.test/3"]
    return files


@contextmanager
def full_disk(folder: Path, size: str = "64k"):
    """``folder`` as a tmpfs of ``size`` (root in a container may mount one): writes past it
    fail with ENOSPC, as on a full disk. Skips the test where mounting is not allowed."""
    import pytest

    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def file_size_limit(max_bytes: int):
    """A ``preexec_fn``: files of the child larger than ``max_bytes`` fail to grow (EFBIG, as a
    quota or a full disk would; SIGXFSZ ignored so the write fails instead of killing it)."""
    import resource

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return limit


# -- damaged topic bundles, run directories and `warc --jobs` inputs -----------------------------
#: the first line of a file outside a bundle: no error message may show it
SECRET = "root:x:0:0:the-secret-first-line"


def _set(path: list, value):
    def change(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return data
    return change


def _classifier_arrays(indices, weights):
    def change(folder: Path) -> None:
        import numpy as np

        meta = json.loads((folder / "bundle.json").read_text())["classifier"]
        if indices is not None:
            np.save(folder / meta["indices"], np.asarray(indices))
        if weights is not None:
            np.save(folder / meta["weights"], np.asarray(weights))
    return change


def _symlink(name: str, target: str):
    def change(folder: Path) -> None:
        (folder / name).unlink()
        os.symlink(folder.parent / target, folder / name)
    return change


def _write(name: str, data: bytes):
    def change(folder: Path) -> None:
        (folder / name).write_bytes(data)
    return change


def _classifier_entry(key: str, value):
    return ("bundle.json", lambda m: {**m, "classifier": {**m["classifier"], key: value}})


#: name -> (what is changed: (json file, function of its data) or function of the folder, a
#: text the one line of error must hold)
BUNDLE_DAMAGE = {
    "keywords /etc/passwd": (("bundle.json", _set(["keywords"], "/etc/passwd")), "outside the bundle"),
    "keywords ../secret.txt": (("bundle.json", _set(["keywords"], "../secret.txt")), "outside the bundle"),
    "topic_lm absolute": (("bundle.json", _set(["topic_lm"], "/etc/passwd")), "outside the bundle"),
    "classifier indices outside": (_classifier_entry("indices", "../secret.txt"), "outside the bundle"),
    "keywords a number": (("bundle.json", _set(["keywords"], 7)), "not a valid topic bundle"),
    "background_lm empty": (("bundle.json", _set(["background_lm"], "")), "not a valid topic bundle"),
    "manifest a list": (("bundle.json", lambda m: [m]), "not a valid topic bundle"),
    "order -3": (("bundle.json", _set(["order"], -3)), "not an n-gram order"),
    "background_order a string": (("bundle.json", _set(["background_order"], "5")), "not an n-gram order"),
    "format 99": (("bundle.json", _set(["format"], 99)), "a topic bundle of format 99"),
    "keywords symlink out": (_symlink("keywords.txt", "secret.txt"), "outside the bundle"),
    "calibration symlink out": (_symlink("calibration.json", "secret.txt"), "outside the bundle"),
    "calibration a list": (("calibration.json", lambda c: [c]), "not a valid calibration"),
    "calibration {}": (("calibration.json", lambda c: {}), "not a valid calibration"),
    "scorers a string": (("calibration.json", _set(["scorers"], "combined")), "not a valid calibration"),
    "a a string": (("calibration.json", _set(["scorers", "combined", "a"], "1.5")), "not a valid calibration"),
    "b null": (("calibration.json", _set(["scorers", "xent", "b"], None)), "not a valid calibration"),
    "a scorer missing": (("calibration.json", lambda c: {**c, "scorers": {
        k: v for k, v in c["scorers"].items() if k != "classifier"}}), "not a valid calibration"),
    "cut 7": (("calibration.json", _set(["thresholds", "combined", "cut"], 7)), "not a valid calibration"),
    "razor negative": (("calibration.json", _set(["thresholds", "combined", "razor"], -0.5)),
                       "not a valid calibration"),
    "quantiles too short": (("calibration.json", _set(["scorers", "combined", "quantiles", "positive", "alt"],
                                                      [0.1])), "not a valid calibration"),
    "quantile a string": (("calibration.json", _set(["scorers", "combined", "quantiles", "neutral", "sentence", 0],
                                                    "x")), "not a valid calibration"),
    "levels a dict": (("calibration.json", _set(["quantile_levels"], {"0.5": 1})), "not a valid calibration"),
    "average precision true": (("calibration.json", _set(["scorers", "combined", "average_precision", "alt"],
                                                         True)), "not a valid calibration"),
    "calibration NaN": (_write("calibration.json", b'{"scorers": NaN}'), "not a valid calibration"),
    "calibration empty file": (_write("calibration.json", b""), "not a valid calibration"),
    "calibration cut JSON": (_write("calibration.json", b"[1, 2"), "not a valid calibration"),
    "calibration not UTF-8": (_write("calibration.json", b"\xff\xfe\x00"), "not a valid calibration"),
    "calibration missing": (lambda folder: (folder / "calibration.json").unlink(), "has no calibration.json"),
    "indices out of range": (_classifier_arrays([1, 2 ** 31 - 1], [0.5, 0.5]), "classifier"),
    "indices negative": (_classifier_arrays([-3], [0.5]), "classifier"),
    "indices floats": (_classifier_arrays([1.5], [0.5]), "classifier"),
    "weights NaN": (_classifier_arrays([1, 2], [float("nan"), 0.5]), "classifier"),
    "weights of another shape": (_classifier_arrays([1, 2], [0.5, 0.5, 0.5]), "classifier"),
    "intercept a string": (_classifier_entry("intercept", "1"), "classifier"),
    "indices not numpy": (lambda folder: _write(json.loads((folder / "bundle.json").read_text())["classifier"]
                                                ["indices"], b"not numpy")(folder), "classifier"),
}


def damaged_bundles(good: Path, root: Path) -> dict[str, tuple[Path, str]]:
    """A copy of the good bundle ``good`` per ``BUNDLE_DAMAGE`` case, next to ``root/secret.txt``
    (``SECRET``): {case: (folder, a text its one line of error must hold)}."""
    import shutil

    root.mkdir(parents=True, exist_ok=True)
    (root / "secret.txt").write_text(SECRET + "\n")
    bundles = {}
    for n, (case, (damage, expected)) in enumerate(BUNDLE_DAMAGE.items()):
        folder = Path(shutil.copytree(good, root / f"b{n}"))
        if isinstance(damage, tuple):
            path = folder / damage[0]
            path.write_text(json.dumps(damage[1](json.loads(path.read_text()))))
        else:
            damage(folder)
        bundles[case] = (folder, expected)
    return bundles


def warc_jobs_inputs(root: Path) -> dict[str, list[Path]]:
    """Input sets for ``focuscrawl warc --jobs 2``: a good archive with a file that is not one
    (random bytes, empty, a gzip of zeros, HTML), or with a damaged one. -> {case: files}."""
    root.mkdir(parents=True, exist_ok=True)
    ok = write_records(root / "ok.warc.gz", [good(f"http://ok.test/{i}", i) for i in range(3)], gz=True)
    (root / "garbage.warc.gz").write_bytes(bytes(range(256)) * 20)
    (root / "empty.warc").write_bytes(b"")
    write_gzip_stream(root / "zeros.warc.gz", b"", b"\0", 1024 * 1024)
    (root / "page.warc").write_bytes(page("html"))
    bad_length = bad_length_archives(root / "bad_length")
    return {"garbage": [ok, root / "garbage.warc.gz"], "empty": [ok, root / "empty.warc"],
            "zeros": [ok, root / "zeros.warc.gz"], "html": [ok, root / "page.warc"],
            "bad lengths": [ok] + [root / "bad_length" / name for name in list(bad_length)[:4]]}


# -- hostile sites -----------------------------------------------------------------------
class _Routes:
    """A ``LocalWeb`` page table computed per request: ``get(path)`` -> ``Page`` or ``None``."""

    def __init__(self, route) -> None:
        self.route = route

    def get(self, key):
        return None if isinstance(key, tuple) else self.route(key)


class SubdomainTrap:
    """A ``LocalWeb`` page table (through the proxy) of a subdomain trap: ``http://N.sub.example.test/``
    links to hosts N+1 and N+2 for ever, each host one page (a per-host cap never ends it);
    the seed ``0.sub.example.test`` also links to ``cats.test``'s three pages."""

    DOMAIN = "sub.example.test"

    def get(self, key):
        if not isinstance(key, tuple):
            return None
        host, path = key
        if host == "cats.test" and path in ("/", "/a", "/b"):
            return Page(_html(PAGE_TEXT, ["http://cats.test/a", "http://cats.test/b"]))
        number = host[:-len(self.DOMAIN) - 1] if host.endswith("." + self.DOMAIN) else ""
        if not number.isdigit() or path != "/":
            return None
        n = int(number)
        links = [f"http://{n + 1}.{self.DOMAIN}/", f"http://{n + 2}.{self.DOMAIN}/"] + (
            ["http://cats.test/"] if n == 0 else [])
        return Page(_html(f"{PAGE_TEXT} Host {n}.", links))


def _html(text: str, links: list[str], extra: str = "") -> bytes:
    anchors = "".join(f'<a href="{h}">cat link {i}</a> ' for i, h in enumerate(links))
    return f"<html><body><p>{text}</p>{extra}<div>{anchors}</div></body></html>".encode()


class TrapSite(LocalWeb):
    """``REAL`` real pages (``/page/<n>``, each linking to three others and into every
    trap in ``traps``) plus traps that never end: ``deep``, ever-deeper paths that
    never repeat a segment (``/deep/s1/d2/d3/...``, three chains); ``calendar``
    (``/cal/<year>/<month>`` with next/previous); ``session``, session-id query variants
    of the real pages (``?sid=<counter>``, new on every visit); ``generator``
    (``/gen/<n>`` linking ten new numbers); ``query``, query-parameter variants of one
    listing (``/list?sort=<k>&page=<n>``, each linking two more); ``repeat``, relative links
    that repeat path segments (``/tag/cats/tag/cats/...``). ``real`` sets the number of real
    pages (``REAL`` by default)."""

    REAL = 30
    TRAPS = ("deep", "calendar", "session", "generator")
    ALL_TRAPS = TRAPS + ("query", "repeat")

    def __init__(self, traps: tuple[str, ...] = TRAPS, real: int | None = None) -> None:
        super().__init__(_Routes(self.route))
        self.traps = traps
        self.real = self.REAL if real is None else real
        self.counter = 0
        self.lock = threading.Lock()

    def _sid(self) -> int:
        with self.lock:
            self.counter += 1
            return self.counter

    @staticmethod
    def is_trap(path: str) -> bool:
        return path.startswith(("/deep/", "/cal/", "/gen/", "/list", "/tag/")) or "sid=" in path

    def route(self, path: str) -> Page | None:
        parts = urlsplit(path)
        p = parts.path
        if p == "/robots.txt":
            return Page(b"User-agent: *\nAllow: /\n", "text/plain")
        m = re.fullmatch(r"/page/(\d+)", p)
        if m and int(m.group(1)) < self.real:
            n = int(m.group(1))
            links = [f"/page/{(n * 7 + k) % self.real}" for k in (1, 2, 3)]
            entries = {"deep": f"/deep/s{n % 3}", "calendar": f"/cal/2026/{n % 12 + 1}",
                       "generator": f"/gen/{n * 1000}",
                       "session": f"/page/{(n + 1) % self.real}?sid={self._sid()}",
                       "query": f"/list?sort={n % 5}&page=1", "repeat": f"/tag/cats/{n % 4}/"}
            links += [entries[t] for t in self.traps]
            return Page(_html(f"{PAGE_TEXT} Real page {n}.", links))
        m = re.fullmatch(r"sort=(\d+)&page=(\d+)", parts.query)
        if p == "/list" and m:  # a grid of variants of one listing, endless both ways
            sort, number = int(m.group(1)), int(m.group(2))
            return Page(_html(f"{PAGE_TEXT} Listing {sort} {number}.",
                              [f"/list?sort={sort}&page={number + 1}", f"/list?sort={sort + 1}&page={number}"]))
        if p.startswith("/tag/"):
            return Page(_html(f"{PAGE_TEXT} Tag {p}.", ["tag/cats/", "cats/"]))  # relative: ever longer
        if p.startswith("/deep/"):
            depth = p.count("/")
            return Page(_html(f"{PAGE_TEXT} Deep {depth}.", [f"{p}/d{depth}"]))
        m = re.fullmatch(r"/cal/(\d+)/(\d+)", p)
        if m:
            y, mo = int(m.group(1)), int(m.group(2))
            nxt = (y + mo // 12, mo % 12 + 1)
            prv = (y - (mo == 1), (mo - 2) % 12 + 1)
            return Page(_html(f"{PAGE_TEXT} Calendar {y}-{mo}.",
                              [f"/cal/{nxt[0]}/{nxt[1]}", f"/cal/{prv[0]}/{prv[1]}"]))
        m = re.fullmatch(r"/gen/(\d+)", p)
        if m:
            n = int(m.group(1))
            return Page(_html(f"{PAGE_TEXT} Generated {n}.", [f"/gen/{n * 10 + k}" for k in range(10)]))
        return None  # 404


class SlowImageSite(LocalWeb):
    """``pages`` pages in a chain (each links the next three), each with ``images``
    images on the same host; those of the first ``slow_pages`` pages answer after
    ``image_delay`` seconds. A crawl killed while they download recovers them on
    resume; handed over all at once they fill the host's download slots and queue
    ahead of every new page."""

    def __init__(self, pages: int = 60, images: int = 4, image_delay: float = 8.0, slow_pages: int = 3) -> None:
        super().__init__(_Routes(self.route))
        self.n_pages, self.images, self.image_delay, self.slow_pages = pages, images, image_delay, slow_pages
        self.png = png_bytes(640, 480)

    def route(self, path: str) -> Page | None:
        p = urlsplit(path).path
        if p == "/robots.txt":
            return Page(b"User-agent: *\nAllow: /\n", "text/plain")
        m = re.fullmatch(r"/p(\d+)", p)
        if m and int(m.group(1)) < self.n_pages:
            n = int(m.group(1))
            links = [f"/p{k}" for k in range(n + 1, min(n + 4, self.n_pages))]
            imgs = "".join(f'<img src="/img/{n}-{k}.png" alt="a cat sleeping on the sofa {n} {k}" '
                           f'width="640" height="480">' for k in range(self.images))
            return Page(_html(f"{PAGE_TEXT} Page {n}.", links, imgs))
        m = re.fullmatch(r"/img/(\d+)-\d+\.png", p)
        if m:
            return Page(self.png, "image/png", delay=self.image_delay if int(m.group(1)) < self.slow_pages else 0)
        return None  # 404
