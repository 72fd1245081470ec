"""``focuscrawl eval SUBCOMMAND``: one command group, subcommands contributed by modules.

Each module listed in ``EVAL_COMMAND_MODULES`` has ``register(eval_subparsers)`` that adds
its subcommands to the ``eval`` group with ``set_defaults(func=...)``; ``func(args)``
returns an exit code. To plug in a new measurement, add its module here.
"""
from __future__ import annotations

import argparse
import importlib

EVAL_COMMAND_MODULES: list[str] = [
    "focuscrawl.eval.extraction",
    "focuscrawl.eval.context",
    "focuscrawl.eval.neardup",
    "focuscrawl.eval.crawls",
]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("eval", help="measure quality: extraction, image context, near-duplicates, crawls")
    eval_sub = parser.add_subparsers(dest="eval_command", metavar="EVAL_COMMAND", required=True)
    for name in EVAL_COMMAND_MODULES:
        importlib.import_module(name).register(eval_sub)
