"""Progress lines on stderr for evaluations that run for minutes (stdout keeps the table)."""
from __future__ import annotations

import sys
import time
from typing import TextIO

#: seconds between two lines of a long loop
EVERY = 5.0


class Progress:
    """``step`` says what starts now; ``tick`` reports a loop's count, at most every ``EVERY`` s."""

    def __init__(self, command: str, stream: TextIO | None = None) -> None:
        self.command = command
        self.stream = stream
        self.start = self.last = time.monotonic()

    def _print(self, message: str) -> None:
        self.last = time.monotonic()
        print(f"{self.command}: {message} ({self.last - self.start:.0f}s)", file=self.stream or sys.stderr,
              flush=True)

    def step(self, message: str) -> None:
        self._print(message)

    def tick(self, done: int, total: int, what: str) -> None:
        if time.monotonic() - self.last >= EVERY:
            self._print(f"{done}/{total} {what}")
