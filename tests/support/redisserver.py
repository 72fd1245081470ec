"""A real redis-server on 127.0.0.1, free port, no persistence, stopped afterwards."""
from __future__ import annotations

import shutil
import subprocess
import time

import redis

from tests.support.net import free_port


class RedisServer:
    def __init__(self, workdir):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (install.sh installs it)")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(workdir), "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis(port=self.port)
        deadline = time.time() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
