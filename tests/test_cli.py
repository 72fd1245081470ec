"""The ``focuscrawl`` command imports only the module of the subcommand it runs."""
from __future__ import annotations

import argparse
import importlib
import sys

from focuscrawl.cli import COMMAND_MODULES, COMMANDS, build_parser
from tests.support.crawl import ROOT
from tests.support import warmfork


def test_commands_name_the_module_that_registers_each_subcommand():
    for name in COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(name).register(sub)
        assert set(sub.choices) == {command for command, module in COMMANDS.items() if module == name}
    full = build_parser()._subparsers._group_actions[0].choices
    assert set(full) == set(COMMANDS)
    for command in COMMANDS:  # each command's own parser is the one the full parser has
        alone = build_parser(command)._subparsers._group_actions[0].choices
        assert command in alone and alone[command].format_help() == full[command].format_help()


def test_a_command_loads_its_module_alone_and_help_lists_all():
    script = ("import sys\n"
              "from focuscrawl.cli import main\n"
              "code = main(['-v', 'warc', 'no-such.warc.gz', '-o', 'out'])\n"
              "heavy = sorted(m for m in ('pandas', 'scipy', 'aiohttp', 'datasketch') if m in sys.modules)\n"
              "print(code, ','.join(heavy) or '-')\n")
    proc = warmfork.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["2", "-"], proc.stdout + proc.stderr[-2000:]
    assert "focuscrawl warc: error: no such archive: no-such.warc.gz" in proc.stderr
    proc = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "--help"], cwd=ROOT, capture_output=True,
                        text=True, timeout=60)
    assert proc.returncode == 0
    assert all(command in proc.stdout for command in COMMANDS)
    proc = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "no-such-command"], cwd=ROOT,
                        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "invalid choice: 'no-such-command'" in proc.stderr and "'warc'" in proc.stderr


def test_output_into_a_closed_pipe_ends_quietly():
    """``focuscrawl topic show --json DIR | head`` ended with "error: Broken pipe"."""
    import subprocess
    import sys

    from focuscrawl.resources import default_topic_path

    proc = warmfork.popen([sys.executable, "-m", "focuscrawl.cli", "topic", "show", "--json",
                           str(default_topic_path())], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader is gone before the command writes: every write is a broken pipe
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert "Broken pipe" not in err and "Traceback" not in err and "Exception ignored" not in err, err
