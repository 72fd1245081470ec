"""An extension for lock tests: whether another process could take the run directory's and
the JOBDIR's writer locks after the crawl's last write.

``LockProbe`` (at a number above ``StatsFileWriter``'s, so its ``engine_stopped`` handler
runs after ``stats.json`` is written) asks a process of its own to take each lock and
writes ``{"stats_written": ..., "output directory": <taken?>, "JOBDIR": <taken?>}`` as JSON
to ``TEST_LOCK_PROBE_FILE``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from scrapy import signals
from scrapy.exceptions import NotConfigured

from focuscrawl.output.files import job_state_dir

ROOT = Path(__file__).resolve().parents[2]
TRY_LOCK = """import sys
from focuscrawl.output.files import DirectoryInUse, lock_directory
try:
    lock_directory(sys.argv[1], "folder")
except DirectoryInUse:
    sys.exit(3)
"""


def taken_elsewhere(directory: str | Path) -> bool:
    """Whether another process takes ``directory``'s writer lock (then lets it go)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    code = subprocess.run([sys.executable, "-c", TRY_LOCK, str(directory)], env=env, timeout=60).returncode
    assert code in (0, 3), code
    return code == 0


class LockProbe:
    def __init__(self, out: Path, jobdir: Path, report: Path) -> None:
        self.out, self.jobdir, self.report = out, jobdir, report

    @classmethod
    def from_crawler(cls, crawler):
        s = crawler.settings
        if not s.get("TEST_LOCK_PROBE_FILE"):
            raise NotConfigured
        probe = cls(Path(s.get("FOCUSCRAWL_OUTPUT_DIR")), job_state_dir(s.get("JOBDIR")), Path(s.get("TEST_LOCK_PROBE_FILE")))
        crawler.signals.connect(probe.engine_stopped, signal=signals.engine_stopped)
        return probe

    def engine_stopped(self) -> None:
        self.report.write_text(json.dumps({"stats_written": (self.out / "stats.json").exists(),
                                           "output directory": taken_elsewhere(self.out),
                                           "JOBDIR": taken_elsewhere(self.jobdir)}))
