"""A real scrapyd on 127.0.0.1 (free port) with its own config and directories in tmp."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tests.support.net import free_port


class Scrapyd:
    def __init__(self, workdir: Path, env: dict | None = None):
        self.dir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        for sub in ("eggs", "logs", "items", "dbs"):
            (workdir / sub).mkdir(parents=True, exist_ok=True)
        (workdir / "scrapyd.conf").write_text(
            "[scrapyd]\n"
            f"bind_address = 127.0.0.1\nhttp_port = {self.port}\n"
            f"eggs_dir = {workdir / 'eggs'}\nlogs_dir = {workdir / 'logs'}\n"
            f"items_dir = {workdir / 'items'}\ndbs_dir = {workdir / 'dbs'}\n"
            "max_proc = 1\npoll_interval = 0.2\njobs_to_keep = 5\nfinished_to_keep = 10\n")
        binary = shutil.which("scrapyd", path=str(Path(sys.executable).parent)) or "scrapyd"
        self.log = open(workdir / "scrapyd.out", "w")
        self.proc = subprocess.Popen([binary], cwd=workdir, env=dict(os.environ, **(env or {})),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while True:
            try:
                self.get("daemonstatus.json")
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("scrapyd did not start: " + (workdir / "scrapyd.out").read_text()[-2000:])
                time.sleep(0.2)

    def get(self, action: str, **params) -> dict:
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        with urllib.request.urlopen(self.url + action + query, timeout=10) as r:
            return json.loads(r.read())

    def post(self, action: str, data: list[tuple[str, str]]) -> dict:
        body = urllib.parse.urlencode(data).encode()
        with urllib.request.urlopen(self.url + action, data=body, timeout=10) as r:
            return json.loads(r.read())

    def wait_finished(self, project: str, job: str, timeout: float = 120) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            jobs = self.get("listjobs.json", project=project)
            for entry in jobs.get("finished", []):
                if entry["id"] == job:
                    return entry
            time.sleep(0.3)
        raise AssertionError(f"scrapyd job {job} did not finish in {timeout}s: {jobs}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
