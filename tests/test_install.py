"""install.sh on a freshly booted machine: another apt/dpkg run (unattended upgrades)
holds the dpkg lock for a while; the install waits for it and says so instead of
failing at once with apt's rc 100."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DPKG_LOCKS = ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock")
HOLD_LOCKS = """
import fcntl, os, sys, time
fds = [os.open(p, os.O_RDWR | os.O_CREAT, 0o640) for p in sys.argv[2:]]
for fd in fds:
    fcntl.lockf(fd, fcntl.LOCK_EX)  # apt's own kind of lock; waits while another apt run has it
print("held", flush=True)
time.sleep(float(sys.argv[1]))
"""


def _apt_get_while_locked(*apt_args: str, hold: float = 3.0) -> tuple[subprocess.CompletedProcess, float]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCKS, str(hold), *DPKG_LOCKS],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        proc = subprocess.run([str(ROOT / "install.sh"), "apt-get", *apt_args], capture_output=True,
                              text=True, timeout=120)
        return proc, time.monotonic() - t0
    finally:
        holder.kill()
        holder.wait()


def test_apt_waits_for_the_dpkg_lock():
    proc, seconds = _apt_get_while_locked("check")
    assert proc.returncode == 0, proc.stderr
    assert seconds > 2  # it waited for the holder to let go
    assert "Waiting for cache lock" in proc.stderr  # apt's own message (DPkg::Lock::Timeout)


def test_a_lock_apt_does_not_wait_for_is_retried_and_said():
    """``apt-get update`` ignores DPkg::Lock::Timeout for its lists lock; install.sh's retry
    loop covers it (shown here on the dpkg lock with apt's own wait switched off)."""
    proc, seconds = _apt_get_while_locked("-o", "DPkg::Lock::Timeout=0", "check")
    assert proc.returncode == 0, proc.stderr
    assert seconds > 2
    assert "install.sh: another apt/dpkg run holds its lock; waiting" in proc.stderr
