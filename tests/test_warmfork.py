"""The tests' warm process server (tests/support/warmfork.py) behaves as ``subprocess`` in what
the tests rely on: arguments, folder, environment, streams, exit codes, deaths by signal,
process groups, and a cold process wherever it cannot fork."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support import warmfork


@pytest.fixture(autouse=True)
def warm(monkeypatch):
    """These tests are about the forked processes: even when the suite runs cold."""
    monkeypatch.delenv("FOCUSCRAWL_TEST_COLD_PROCESSES", raising=False)

SCRIPT = """
import os, sys
print("out", sys.argv[1:], os.getcwd(), os.environ.get("WARM_PROBE"), flush=True)
print("err", __name__, file=sys.stderr, flush=True)
sys.exit(int(sys.argv[1]))
"""


def test_a_script_gets_its_arguments_folder_environment_and_streams_and_exit_code(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(SCRIPT)
    proc = warmfork.popen([sys.executable, str(script), "3", "x"], cwd=tmp_path, env=dict(os.environ, WARM_PROBE="yes"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert isinstance(proc, warmfork.WarmProcess)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert out == f"out ['3', 'x'] {tmp_path} yes\n" and err == "err __main__\n"
    done = warmfork.run([sys.executable, str(script), "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("out ['0']")


def test_a_module_runs_fresh_as_main_without_a_runpy_warning(tmp_path):
    # focuscrawl.cli is preloaded by the server; -m runs it as __main__ as a fresh interpreter would
    done = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "no-such-command"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "RuntimeWarning" not in done.stderr and "no-such-command" in done.stderr


def test_a_killed_child_reports_the_signal_and_its_group_stays_signallable_until_waited(tmp_path):
    proc = warmfork.popen([sys.executable, str(_sleeper(tmp_path))], start_new_session=True)
    assert isinstance(proc, warmfork.WarmProcess)
    assert os.getpgid(proc.pid) == proc.pid  # a group of its own
    os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(0.3)  # the server has seen the death
    os.killpg(proc.pid, signal.SIGKILL)  # not reaped yet: as with a child of the test's own, no error
    assert proc.wait(10) == -signal.SIGKILL


def test_ctrl_c_to_the_group_interrupts_as_in_a_fresh_interpreter(tmp_path):
    proc = warmfork.popen([sys.executable, str(_sleeper(tmp_path))], start_new_session=True,
                          stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGINT and "KeyboardInterrupt" in err


def test_what_cannot_fork_starts_cold(tmp_path):
    for cmd, kwargs in [([sys.executable, "-c", "print(1)"], {}),  # an interpreter option
                        (["/bin/echo", "1"], {}),  # not Python
                        ([sys.executable, "-m", "json.tool"], {"input": "{}"}),  # input on stdin
                        ([sys.executable, "-m", "json.tool"], {"stdin": subprocess.PIPE})]:
        if "input" in kwargs:
            done = warmfork.run(cmd, capture_output=True, text=True, timeout=60, **kwargs)
            assert done.returncode == 0
            continue
        proc = warmfork.popen(cmd, stdout=subprocess.PIPE, text=True, **kwargs)
        assert isinstance(proc, subprocess.Popen)
        proc.communicate(timeout=60)


def _sleeper(tmp_path):
    script = tmp_path / "sleeper.py"
    script.write_text(f"import pathlib, time\npathlib.Path({str(tmp_path / 'started')!r}).touch()\ntime.sleep(60)\n")
    return script


def test_the_childs_pythonpath_is_on_its_sys_path(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "warm_probe_module.py").write_text("VALUE = 7\n")
    script = tmp_path / "uses.py"
    script.write_text("import warm_probe_module\nprint(warm_probe_module.VALUE)\n")
    done = warmfork.run([sys.executable, str(script)], env=dict(os.environ, PYTHONPATH=str(tmp_path / "lib")),
                        capture_output=True, text=True, timeout=60)
    assert done.stdout == "7\n", done.stderr
