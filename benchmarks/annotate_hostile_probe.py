"""Hostile clients against a real ``focuscrawl annotate serve`` process on 127.0.0.1: login
latency while slow request bodies are open, and the server's RSS over rounds of hostile traffic.

Usage: python benchmarks/annotate_hostile_probe.py [--slow-bodies 100] [--rounds 20] [--per-round 400]

Phase 1 opens --slow-bodies POSTs that announce a 60000-byte body and send one byte of it
every --drip seconds, then times 5 logins (each must answer; a worker thread held by every
slow body made them time out). Phase 2 runs --rounds rounds of a hostile mix (failed logins
under new random names, successful logins that are never logged out, slow and huge header
blocks, oversized and slow bodies, malformed image ids) and prints the server's VmRSS after
each; a bounded server levels off instead of growing with the rounds.
"""
from __future__ import annotations

import argparse
import http.client
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.annotate import Client  # noqa: E402
from tests.support.runfixture import make_run_dir  # noqa: E402

SLOW_BODY = ("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
             "Content-Length: 60000\r\n\r\n")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        return int(re.search(r"VmRSS:\s+(\d+)", fh.read()).group(1)) / 1024


def start_server(work: Path) -> tuple[subprocess.Popen, int]:
    run_dir = work / "run"
    make_run_dir(run_dir, [{"url": f"http://a.org/{i}.jpg", "score": 3 + i, "alt": f"cat {i}"} for i in range(50)])
    db = str(work / "db.sqlite3")
    cmd = [sys.executable, "-m", "focuscrawl.cli", "annotate"]
    for name in ("anna", "boss"):
        subprocess.run(cmd + ["add-user", name, "--db", db, "--password-stdin"], input=f"{name}-password\n",
                       text=True, check=True, capture_output=True)
    proc = subprocess.Popen(cmd + ["serve", str(run_dir), "--db", db, "--port", "0"], stderr=subprocess.PIPE,
                            text=True)
    for line in proc.stderr:
        match = re.search(r"serving http://127.0.0.1:(\d+)/", line)
        if match:
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep the pipe drained
            return proc, int(match.group(1))
    raise RuntimeError("the server did not start")


def timed_login(port: int, timeout: float = 60) -> float:
    started = time.monotonic()
    try:
        status = Client(port, timeout=timeout).login("anna", "anna-password")
    except OSError:
        return float("inf")
    return time.monotonic() - started if status == (303, "/") else float("inf")


def slow_bodies(port: int, n: int, drip: float, seconds: float) -> list[float]:
    socks = []
    for i in range(n):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(SLOW_BODY.format(path=("/login", "/answer")[i % 2]).encode())
        socks.append(sock)
    stop = threading.Event()

    def drip_loop() -> None:
        while not stop.wait(drip):
            for sock in socks:
                try:
                    sock.sendall(b"x")
                except OSError:
                    pass

    thread = threading.Thread(target=drip_loop, daemon=True)
    thread.start()
    latencies = []
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline or not latencies:
            latencies.append(timed_login(port))
            time.sleep(max(0.0, min(seconds / 5, deadline - time.monotonic())))
    finally:
        stop.set()
        thread.join(5)
        for sock in socks:
            sock.close()
    return latencies


def raw(port: int, data: bytes, wait: float = 0.0) -> None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(data)
            if wait:
                time.sleep(wait)
            sock.settimeout(2)
            sock.recv(65536)
    except OSError:
        pass


def hostile_request(port: int, i: int) -> None:
    kind = i % 8
    if kind in (0, 1):  # a failed login under a name never seen before
        Client(port).login("u" + secrets.token_hex(8), "wrong-password")
    elif kind == 2:  # a successful login whose session is never ended
        Client(port).login("anna", "anna-password")
    elif kind == 3:
        raw(port, b"GET /login HTTP/1.1\r\nHost: x\r\nX-Huge: " + b"a" * 200_000)
    elif kind == 4:
        raw(port, b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\n" + b"a" * 1000)
    elif kind == 5:
        raw(port, SLOW_BODY.format(path="/answer").encode() + b"a" * 100, wait=0.05)
    elif kind == 6:
        for path in ("/img/%00", "/img/" + "9" * 3000, "/img/-1", "/nope/../../etc/passwd"):
            try:
                Client(port).get(path)
            except OSError:
                pass
    else:
        raw(port, b"GET /login HTTP/1.1\r\nHost: x\r\n", wait=0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slow-bodies", type=int, default=100)
    ap.add_argument("--drip", type=float, default=5.0, help="seconds between the bytes of a slow body")
    ap.add_argument("--slow-seconds", type=float, default=30.0, help="how long the slow bodies stay open")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--per-round", type=int, default=400)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="annotate-probe-") as tmp:
        proc, port = start_server(Path(tmp))
        try:
            print(f"server pid {proc.pid}, RSS at start {rss_mb(proc.pid):.0f} MB")
            alone = [timed_login(port) for _ in range(3)]
            print(f"login alone: {max(alone):.3f} s (slowest of 3)")
            if args.slow_bodies:
                lat = slow_bodies(port, args.slow_bodies, args.drip, args.slow_seconds)
                print(f"login with {args.slow_bodies} slow bodies open: slowest {max(lat):.3f} s of {len(lat)}"
                      f" (inf = no answer within 60 s)")
            with ThreadPoolExecutor(16) as pool:
                for r in range(args.rounds):
                    list(pool.map(lambda i: hostile_request(port, i), range(r * args.per_round,
                                                                          (r + 1) * args.per_round)))
                    print(f"round {r + 1}: {(r + 1) * args.per_round} hostile requests, RSS {rss_mb(proc.pid):.0f} MB",
                          flush=True)
            print(f"login after: {timed_login(port):.3f} s")
        finally:
            proc.terminate()
            proc.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
