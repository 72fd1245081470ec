"""The processes a test started and their children, read from ``/proc`` (Linux)."""
from __future__ import annotations

import os
import time
from pathlib import Path


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, parent pid)`` of a process, ``None`` once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid = stat[stat.rindex(")") + 2:].split()[:2]  # the name may hold spaces and parentheses
    return state, int(ppid)


def descendants(pid: int) -> set[int]:
    """Every live process under ``pid`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) and stat[0] != "Z":
            children.setdefault(stat[1], []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (a zombie waiting for its reaper is gone)."""
    return {pid for pid in pids if (stat := _stat(pid)) and stat[0] != "Z"}


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait up to ``timeout`` seconds for ``pids`` to end; those still alive then."""
    deadline = time.monotonic() + timeout
    while (left := alive(pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def wait_children(pid: int, n: int, timeout: float = 60) -> set[int]:
    """Wait until ``pid`` has at least ``n`` live descendants; returns them."""
    deadline = time.monotonic() + timeout
    while len(found := descendants(pid)) < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} never had {n} children: {found}")
        time.sleep(0.02)
    return found


def ctrl_c_once(proc, ready, timeout: float = 60, settle: float = 0.0, log: Path | None = None,
                poll: float = 0.05) -> int:
    """Wait until ``ready()`` (``proc`` still running), then Ctrl-C ``proc``'s process group (as
    a terminal does; it was started with ``start_new_session=True``) ``settle`` seconds later;
    its exit code (``ready`` is asked every ``poll`` seconds). Whatever of the group is left
    after 60 s is killed."""
    import signal
    from contextlib import suppress

    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()[-3000:] if log else proc.args
            time.sleep(poll)
        time.sleep(settle)
        os.killpg(proc.pid, signal.SIGINT)
        return proc.wait(60)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
