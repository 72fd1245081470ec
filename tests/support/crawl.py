"""Run crawls as real Scrapy processes (one reactor each) from tests."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINKSPIDER = ROOT / "tests" / "spiders_for_tests" / "linkspider.py"
FAST = ["DOWNLOAD_DELAY=0", "AUTOTHROTTLE_ENABLED=False", "LOG_LEVEL=INFO"]


def links_cmd(start: str, *settings: str, out: Path | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(LINKSPIDER), "-a", f"start={start}"]
    if out:
        cmd += ["-a", f"out={out}"]
    for s in FAST + list(settings):
        cmd += ["-s", s]
    return cmd


def run_links(start: str, *settings: str, out: Path | None = None, timeout: int = 60):
    return subprocess.run(links_cmd(start, *settings, out=out), cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def start_links(start: str, *settings: str, out: Path | None = None, log: Path | None = None):
    err = open(log, "w") if log else subprocess.DEVNULL
    return subprocess.Popen(links_cmd(start, *settings, out=out), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=err, text=True)
