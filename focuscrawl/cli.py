"""The ``focuscrawl`` command: subcommands registered by the modules of each concern.

Each module in ``COMMAND_MODULES`` has ``register(subparsers)`` that adds its
subcommands with ``set_defaults(func=...)``; ``func(args)`` returns an exit code.
``COMMANDS`` names the module of each subcommand, so that running one imports its
module alone (``focuscrawl warc`` does not load pandas, scipy and aiohttp: ~1.4 s of
start-up); ``--help`` and unknown commands import them all.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

#: subcommand -> the module that registers it
COMMANDS = {
    "crawl": "focuscrawl.crawl_cli",
    "score": "focuscrawl.lm.cli",
    "keywords": "focuscrawl.lm.cli",
    "train-lm": "focuscrawl.lm.cli",
    "extract": "focuscrawl.text.cli",
    "testweb": "focuscrawl.testweb.cli",
    "demo": "focuscrawl.demo",
    "eval": "focuscrawl.eval.cli",
    "rank": "focuscrawl.ranking",
    "annotate": "focuscrawl.annotate.cli",
    "warc": "focuscrawl.archive.engine",  # focuscrawl.archive.cli's warc with --engine
    "fetch": "focuscrawl.fetch_cli",
    "merge": "focuscrawl.output.merge",
    "topic": "focuscrawl.topic.cli",
}
COMMAND_MODULES = list(dict.fromkeys(COMMANDS.values()))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or with ``command``'s module alone when it is known."""
    parser = argparse.ArgumentParser(prog="focuscrawl", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def configure_logging(verbose: bool) -> None:
    """The commands' log: one stderr handler on the root logger (also in worker processes)."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")


class CommandError(Exception):
    """A user error: printed as one clear line, exit code 2, no traceback."""


#: optional dependencies (pyproject's extras) and the extra that installs each
OPTIONAL_MODULES = {"matplotlib": "plots", "pyarrow": "parquet", "scrapyd": "deploy",
                    "scrapyd_client": "deploy", "dask": "distributed", "distributed": "distributed"}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one-line advice for an optional dependency that is not installed, else None."""
    top = (exc.name or "").split(".")[0]
    extra = OPTIONAL_MODULES.get(top)
    if extra is None:
        return None
    return f"this needs {top}, an optional dependency: pip install 'focuscrawl[{extra}]'"


@contextmanager
def _interrupts_noted() -> Iterator[list[int]]:
    """A Ctrl-C in the block is noted (in the list given), not raised: while the command's
    modules load, a ``KeyboardInterrupt`` is a traceback of the imports, or is swallowed
    ("Exception ignored") by the import machinery and the command runs on."""
    noted: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, previous)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with _interrupts_noted() as interrupted:
        # the subcommand is the first word that is no option (the only global option, -v, takes no value)
        parser = build_parser(next((word for word in argv if not word.startswith("-")), None))
        args = parser.parse_args(argv)
    if interrupted:
        return 128 + signal.SIGINT
    if not getattr(args, "scrapy_logging", False):  # `crawl` logs as Scrapy does (its own root handler)
        configure_logging(args.verbose)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:  # `focuscrawl ... | head`: the reader has what it wanted; end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to flush at exit
        return 1
    except (CommandError, FileNotFoundError, ValueError) as exc:
        print(f"focuscrawl {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk, a folder where a file is expected, no permission: one line
        where = f": {exc.filename}" if exc.filename else ""
        # a write cut short (a full disk, a file size limit) can come without an errno (numpy, io buffers)
        reason = f"a write was cut short ({exc}): disk full or file size limit?" \
            if exc.errno is None or isinstance(exc, BlockingIOError) else exc.strerror or exc
        print(f"focuscrawl {args.command}: error: {reason}{where}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:
        advice = missing_extra(exc)
        if advice is None:
            raise
        print(f"focuscrawl {args.command}: error: {advice}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
