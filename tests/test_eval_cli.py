"""The ``eval`` command group picks up subcommands from ``EVAL_COMMAND_MODULES``."""
import sys
import types

import pytest

from focuscrawl import cli
from focuscrawl.eval import cli as eval_cli


def test_eval_group_registers_listed_modules(monkeypatch, capsys):
    plugin = types.ModuleType("focuscrawl_test_eval_plugin")

    def register(eval_sub):
        p = eval_sub.add_parser("dummy")
        p.add_argument("n", type=int)
        p.set_defaults(func=lambda args: print(f"dummy {args.n}") or 0)

    plugin.register = register
    monkeypatch.setitem(sys.modules, plugin.__name__, plugin)
    monkeypatch.setattr(eval_cli, "EVAL_COMMAND_MODULES", [*eval_cli.EVAL_COMMAND_MODULES, plugin.__name__])
    assert cli.main(["eval", "dummy", "7"]) == 0
    assert capsys.readouterr().out == "dummy 7\n"


def test_eval_without_subcommand_is_a_usage_error():
    with pytest.raises(SystemExit) as exc:
        cli.main(["eval"])
    assert exc.value.code == 2
