"""Python processes forked from a warm parent, for tests that start (and signal or kill) many
crawl processes.

A crawl process spends seconds of CPU importing Scrapy, scikit-learn, SciPy and focuscrawl
before it fetches its first page; the kill/resume tests start dozens. ``popen`` starts
``python SCRIPT ARGS`` or ``python -m MODULE ARGS`` as a child of one server process per
test process, which has imported those modules once and forks for each command: the child
is a real process of its own (its own pid, process group if asked, signals, exit status,
file descriptors), that runs the script or module as ``__main__`` as the interpreter would,
without the imports. The returned object is used as a ``subprocess.Popen``: ``pid``,
``wait``, ``poll``, ``send_signal``, ``kill``, ``communicate``, ``returncode``.

The server (one per test process, started on first use) imports modules only, never
Twisted's reactor (each crawl installs its own), and has no thread when it forks. Commands
that are not a Python script or module, ``subprocess`` arguments it does not honour (input on
stdin, ``stderr=STDOUT``, ...) and ``FOCUSCRAWL_TEST_COLD_PROCESSES=1`` in the environment make
an ordinary subprocess. Tests of a process's start-up (what it imports, a Ctrl-C while it
imports) and tests that wait on the pid with ``os.wait*`` (the child is the server's) use
``subprocess`` itself.

    python tests/support/warmfork.py SOCKET   (the server; ends when its stdin closes)
"""
from __future__ import annotations

import atexit
import gc
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: what a crawl process imports before its first page (modules only: no reactor)
PRELOAD = ("scrapy.crawler", "scrapy.core.downloader.handlers.http11", "scrapy.core.downloader.handlers.http2",
           "focuscrawl.cli", "focuscrawl.crawl_cli", "focuscrawl.spiders.focused", "threadpoolctl",
           "trafilatura", "tldextract", "courlan", "htmldate", "numba.core.inline_closurecall")


# ---------------------------------------------------------------- server side

def _preload() -> None:
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    from scrapy.settings import default_settings

    from focuscrawl import settings
    from focuscrawl.focus.link_learner import LinkLearner

    LinkLearner()  # scikit-learn and SciPy, imported as a learning crawl imports them (without pandas)

    for value in [*vars(settings).values(), *vars(default_settings).values()]:
        if isinstance(value, dict):
            for path in value:
                if isinstance(path, str) and path.startswith(("scrapy.", "focuscrawl.")):
                    try:
                        importlib.import_module(path.rsplit(".", 1)[0])
                    except Exception:
                        pass
    # what each crawl process does once at its first page, done here once: numba's typing
    # context and the page judge's cached kernel, the text extractor's lazy tables (justext's
    # stop words of every language)
    from focuscrawl.analysis_pool import _WARM_UP_HTML
    from focuscrawl.text.extractors import extract_page, get_extractor
    from focuscrawl.topic.classifier import load_compiled_decision

    load_compiled_decision()
    extract_page(get_extractor("trafilatura"), _WARM_UP_HTML)
    from justext.core import define_stoplist
    from trafilatura.external import jt_stoplist_init

    define_stoplist(jt_stoplist_init())  # (a page trafilatura hands to justext builds both)
    # each crawl installs the reactor it is configured with: none may be installed here
    assert "twisted.internet.reactor" not in sys.modules, "a preloaded module installed a reactor"
    # the preloaded heap out of the collector's sight: a child's collections (a crawl's
    # gc.collect before it freezes its own heap) do not walk it again
    gc.collect()
    gc.freeze()


def _recv_exactly(conn: socket.socket, size: int) -> bytes:
    """``size`` bytes from ``conn`` (``EOFError`` if it closes first)."""
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _recv_request(conn: socket.socket) -> tuple[dict, list[int]]:
    header = b""
    fds: list[int] = []
    while len(header) < 4:  # the length, with the child's standard streams attached
        data, got, _, _ = socket.recv_fds(conn, 4 - len(header), 8)
        if not data:
            raise EOFError
        header += data
        fds += got
    return json.loads(_recv_exactly(conn, struct.unpack("!I", header)[0])), fds


def _run_child(request: dict, fds: list[int], started: int) -> None:
    """In the forked child: become the process the command line asked for (its session, then
    a byte on ``started``: ``popen`` returns once the process group exists, as after an exec),
    run it, exit."""
    code = 1
    try:
        # the server's signal dispositions are a fresh interpreter's (SIGINT raises
        # KeyboardInterrupt, SIGPIPE and SIGXFSZ ignored, the rest default): nothing to reset
        if request["new_session"]:
            os.setsid()
        os.write(started, b"s")
        os.close(started)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # its PYTHONPATH, after the script's folder as a fresh interpreter puts it
        sys.path[1:1] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
        import runpy

        argv = request["argv"]
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = os.getcwd()
            preloaded = sys.modules.get(argv[1])
            if preloaded is not None and not hasattr(preloaded, "__path__"):
                # a fresh interpreter has not imported the module it runs as ``__main__``
                del sys.modules[argv[1]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = str(Path(argv[0]).resolve().parent)
            runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        # as the interpreter does with an uncaught Ctrl-C: its traceback, then die of SIGINT
        import traceback

        traceback.print_exc()
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    _finish()
    os._exit(code & 0xFF)


def _finish() -> None:
    """What the interpreter does at exit: the atexit functions, then flush the standard streams."""
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def serve(path: str) -> None:
    _preload()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    print("ready", flush=True)
    waiting: dict[int, socket.socket] = {}  # running child pid -> the connection that started it
    # exited children, not reaped until their test process has read the status (as a child of
    # its own stays a zombie until ``Popen.wait``: its process group can still be signalled)
    exited: dict[socket.socket, int] = {}
    conns: list[socket.socket] = []
    while True:
        readable, _, _ = select.select([server, sys.stdin, *conns, *exited], [], [], 0.02)
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1024):
            break  # the test process is gone
        if server in readable:
            conn, _ = server.accept()
            conns.append(conn)
        for conn in [c for c in exited if c in readable]:  # status read (or the test gone): reap
            os.waitpid(exited.pop(conn), 0)
            conn.close()
        for conn in [c for c in conns if c in readable]:
            conns.remove(conn)
            try:
                request, fds = _recv_request(conn)
            except (EOFError, OSError, ValueError):
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            started, child_started = os.pipe()
            pid = os.fork()
            if pid == 0:
                server.close()
                for other in [*conns, *waiting.values(), *exited]:
                    other.close()
                conn.close()
                os.close(started)
                _run_child(request, fds, child_started)
            os.close(child_started)
            os.read(started, 1)  # empty if the child died first: its status follows
            os.close(started)
            for fd in fds:
                os.close(fd)
            conn.sendall(struct.pack("!i", pid))
            waiting[pid] = conn
        for pid in list(waiting):
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is None:
                continue
            conn = waiting.pop(pid)
            code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            try:
                conn.sendall(struct.pack("!i", code))
            except OSError:
                pass
            exited[conn] = pid


# ---------------------------------------------------------------- test side

_server: subprocess.Popen | None = None
_socket_path: str | None = None
_lock = threading.Lock()


def _server_socket() -> str | None:
    """The socket of this process's server, started on first use; ``None`` if it cannot start."""
    global _server, _socket_path
    with _lock:
        if _server is not None and _server.poll() is None:
            return _socket_path
        folder = tempfile.mkdtemp(prefix="warmfork-")
        _socket_path = os.path.join(folder, "s")
        _server = subprocess.Popen([sys.executable, __file__, _socket_path], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2])
        atexit.register(_stop_server, _server)
        if _server.stdout.readline().strip() != b"ready":
            _server.kill()
            _server = None
            return None
        return _socket_path


def _stop_server(server: subprocess.Popen) -> None:
    try:
        server.stdin.close()
        server.wait(5)
    except Exception:
        server.kill()


class WarmProcess:
    """A forked child of the warm server, used as a ``subprocess.Popen``."""

    def __init__(self, args, conn: socket.socket, pid: int, stdout, stderr) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self.stdout = stdout
        self.stderr = stderr
        self._conn = conn

    def _read_status(self, timeout: float | None) -> bool:
        if self.returncode is not None:
            return True
        ready, _, _ = select.select([self._conn], [], [], timeout)
        if not ready:
            return False
        try:
            self.returncode = struct.unpack("!i", _recv_exactly(self._conn, 4))[0]
        except EOFError:
            raise RuntimeError("the warm process server went away") from None
        try:
            self._conn.sendall(b"r")  # the server may reap the child now
        except OSError:
            pass
        self._conn.close()
        return True

    def poll(self) -> int | None:
        self._read_status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._read_status(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple:
        results: dict[str, object] = {}
        readers = [threading.Thread(target=lambda n=name, f=f: results.__setitem__(n, f.read()), daemon=True)
                   for name, f in (("stdout", self.stdout), ("stderr", self.stderr)) if f is not None]
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        for f in (self.stdout, self.stderr):
            if f is not None:
                f.close()
        return results.get("stdout"), results.get("stderr")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.wait()


def _python_argv(cmd) -> list[str] | None:
    """``cmd`` without the interpreter if it runs a script or ``-m`` module of this
    interpreter with no other option; ``None`` otherwise."""
    cmd = [str(c) for c in cmd]
    if len(cmd) < 2 or cmd[0] != sys.executable:
        return None
    if cmd[1] == "-m" and len(cmd) > 2:
        return cmd[1:]
    if cmd[1].startswith("-"):
        return None
    return cmd[1:]


def _fd_for(spec, close: list):
    """(the descriptor the child gets, the parent's end of a pipe or None)."""
    if spec is None:
        return None, None
    if spec == subprocess.DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR)
        close.append(fd)
        return fd, None
    if spec == subprocess.PIPE:
        r, w = os.pipe()
        close.append(w)
        return w, r
    fd = spec if isinstance(spec, int) else spec.fileno()
    return fd, None


#: the ``subprocess.Popen`` arguments a forked process honours; any other makes a cold process
_WARM_ARGS = {"cwd", "env", "stdout", "stderr", "text", "start_new_session", "stdin"}


def popen(cmd, **kwargs):
    """``subprocess.Popen(cmd, **kwargs)``, forked from the warm server when ``cmd`` is a
    Python script or module of this interpreter and ``kwargs`` are of ``_WARM_ARGS`` (no
    input on stdin, stderr not merged into stdout); else an ordinary ``Popen``."""
    argv = _python_argv(cmd)
    path = None
    if argv is not None and os.environ.get("FOCUSCRAWL_TEST_COLD_PROCESSES") != "1" \
            and set(kwargs) <= _WARM_ARGS and kwargs.get("stdin", subprocess.DEVNULL) == subprocess.DEVNULL \
            and kwargs.get("stderr") != subprocess.STDOUT:
        path = _server_socket()
    if path is None:
        return subprocess.Popen(cmd, **kwargs)
    cwd, env, text = kwargs.get("cwd"), kwargs.get("env"), kwargs.get("text", False)
    stdout, stderr, start_new_session = kwargs.get("stdout"), kwargs.get("stderr"), kwargs.get("start_new_session")
    close: list[int] = []
    fds, parent_ends = [], []
    try:
        # stdin /dev/null; stdout and stderr as asked, this process's own when not given
        for spec, own in ((subprocess.DEVNULL, None), (stdout, sys.stdout), (stderr, sys.stderr)):
            fd, parent_end = _fd_for(spec, close)
            fds.append(own.fileno() if fd is None else fd)
            parent_ends.append(parent_end)
        request = {"argv": argv, "cwd": str(cwd or os.getcwd()), "env": dict(env if env is not None else os.environ),
                   "new_session": bool(start_new_session)}
        body = json.dumps(request).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        socket.send_fds(conn, [struct.pack("!I", len(body))], fds)
        conn.sendall(body)
        try:
            pid = struct.unpack("!i", _recv_exactly(conn, 4))[0]
        except EOFError:
            raise RuntimeError("the warm process server did not start the process") from None
    finally:
        for fd in close:
            os.close(fd)
    files = [None if end is None else open(end, "r" if text else "rb") for end in parent_ends]
    return WarmProcess(cmd, conn, pid, files[1], files[2])


def run(cmd, *, capture_output: bool = False, timeout: float | None = None, check: bool = False,
        **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` for ``popen``: cold (``subprocess.run`` itself) where ``popen`` would be."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if "input" in kwargs:
        return subprocess.run(cmd, timeout=timeout, check=check, **kwargs)
    proc = popen(cmd, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    if check and proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd, out, err)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


if __name__ == "__main__":
    serve(sys.argv[1])
