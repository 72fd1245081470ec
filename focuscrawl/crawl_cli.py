"""The crawl from any folder: ``focuscrawl crawl [OPTIONS]`` and ``scrapy crawl focused``.

Scrapy's ``crawl`` command only runs inside a project: a ``scrapy.cfg`` in the current
folder or a parent (or ``/etc/scrapy.cfg``, ``~/.config/scrapy.cfg``, ``~/.scrapy.cfg``
naming a settings module) or ``SCRAPY_SETTINGS_MODULE``. Both commands here are that
same command with the same options (``-a``, ``-s``, ``-o``/``-O`` feeds, ``JOBDIR``,
``-L``, ``--logfile``, ...):

* ``CrawlCommand`` is installed as Scrapy's ``crawl`` (entry point ``scrapy.commands``).
  Inside any Scrapy project it is Scrapy's command, unchanged (another project's
  ``scrapy.cfg`` still wins); outside every project it runs focuscrawl's spiders with
  ``focuscrawl.settings``, so ``scrapy crawl focused`` works from any folder once the
  package is installed.
* ``focuscrawl crawl`` runs the ``focused`` spider through Scrapy's own command line
  (``scrapy.cmdline.execute``) with focuscrawl's settings wherever it runs, also inside
  another Scrapy project.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from scrapy.utils.project import inside_project

from focuscrawl.output.files import DirectoryInUse
from focuscrawl.output.run_state import WRITE_FAILED_STAT
from focuscrawl.processes import EXIT_BAD_INPUT, EXIT_FAILED, crawl_exit_code, record_stop_signals

logger = logging.getLogger(__name__)

SETTINGS_MODULE = "focuscrawl.settings"
SPIDER = "focused"


class CrawlCommand(ScrapyCrawlCommand):
    """Scrapy's ``crawl``; with no Scrapy project around, focuscrawl's project settings."""

    requires_project = False  # listed by ``scrapy`` outside a project too

    def long_desc(self) -> str:
        return (f"{super().long_desc()}. Outside any Scrapy project (no scrapy.cfg, no "
                f"SCRAPY_SETTINGS_MODULE): focuscrawl's spiders with {SETTINGS_MODULE}.")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        """Scrapy's ``run``; a focuscrawl spider's crawl exits with focuscrawl's exit codes
        (``focuscrawl.processes``: finished 0, failed 1, interrupted 128 + the signal)."""
        if len(args) != 1:
            return super().run(args, opts)  # its usage errors
        crawler = self._create_crawler(args[0])
        if not crawler.spidercls.__module__.startswith("focuscrawl."):  # another project's spider
            self.crawler_process.crawl(crawler, **opts.spargs)
            self.crawler_process.start()
            self.exitcode = 1 if self.crawler_process.bootstrap_failed else 0
            return None
        stop_signals = record_stop_signals(self.crawler_process,
                                           crawler.settings.getfloat("FOCUSCRAWL_SHUTDOWN_TIMEOUT"))
        refused: list[BaseException] = []
        on_error(self.crawler_process.crawl(crawler, **opts.spargs), refused)
        self.crawler_process.start()
        if refused:  # a run directory or JOBDIR it cannot use, a bad setting: said in one line
            exc = refused[0]
            print(f"focuscrawl: error: {error_line(exc)}", file=sys.stderr)
            self.exitcode = EXIT_BAD_INPUT if isinstance(exc, (ValueError, UsageError)) else EXIT_FAILED
            return None
        try:
            stats = crawler.stats.get_stats()
        except RuntimeError:  # (Scrapy's: the crawl never started)
            stats = {}
        failed = self.crawler_process.bootstrap_failed or WRITE_FAILED_STAT in stats
        self.exitcode = crawl_exit_code(stats.get("finish_reason"), stop_signals, failed)
        return None

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        if not inside_project():  # before the options: -s NAME=VALUE overrides these
            self.settings.setmodule(SETTINGS_MODULE, priority="project")
        super().process_options(args, opts)


def error_line(exc: BaseException) -> str:
    """An error that stopped a crawl before it started, as one line (an ``OSError`` with its file)."""
    if isinstance(exc, OSError) and exc.strerror and not isinstance(exc, DirectoryInUse):
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def on_error(crawl, refused: list[BaseException]) -> None:
    """Collect into ``refused`` the user error (``OSError``, ``ValueError``, ``UsageError`` of a
    spider argument) that stops ``crawl`` (the asyncio task or Deferred of
    ``CrawlerProcess.crawl``) while it starts, instead of the traceback asyncio or Twisted logs
    for it ("Task exception was never retrieved"); any other error is logged with its
    traceback, as before."""
    def seen(exc: BaseException | None) -> None:
        if isinstance(exc, (OSError, ValueError, UsageError)):
            refused.append(exc)
        elif exc is not None:
            logger.error("the crawl failed", exc_info=(type(exc), exc, exc.__traceback__))

    if isinstance(crawl, asyncio.Future):
        crawl.add_done_callback(lambda task: None if task.cancelled() else seen(task.exception()))
    elif crawl is not None:
        crawl.addErrback(lambda failure: seen(failure.value))


#: the focused spider's ``-a`` arguments, as ``focuscrawl crawl -h`` lists them
SPIDER_ARGUMENTS = {
    "seeds": "seed URLs: a file (one URL a line, # comments) or URL,URL,...",
    "mode": "learning (default) | keywords (the thesis exactly) | document | unfocused",
    "topic": "topic bundle folder (focuscrawl topic build): its LM and keywords score the crawl",
    "budget": "pages to crawl (pages.tsv rows); 0 = no budget",
    "output": "run directory (pages.tsv, images.tsv, images/, stats.json, ...); none = nothing written",
    "domains": "crawl only these domains and their subdomains (comma-separated)",
    "model": "ARPA or KenLM binary model instead of the bundle's",
    "keywords": "keyword file (token;score lines) instead of the bundle's",
    "extractor": "page-text extractor (default trafilatura)",
}


def crawl_help() -> str:
    """``focuscrawl crawl -h``: its usage, the spider's ``-a`` arguments, then Scrapy's options."""
    from scrapy.cmdline import ScrapyArgumentParser, ScrapyHelpFormatter

    from focuscrawl.resources import project_settings
    from focuscrawl.spiders.focused import SPIDER_ARG_SETTINGS

    parser = ScrapyArgumentParser(
        prog="focuscrawl crawl", formatter_class=ScrapyHelpFormatter, conflict_handler="resolve",
        usage="focuscrawl crawl -a seeds=FILE|URL,URL [-a NAME=VALUE ...] [-s NAME=VALUE ...] [-O FEED] [options]",
        description=f"The focused crawl (`scrapy crawl {SPIDER}` with focuscrawl's settings) from any folder.")
    command = CrawlCommand()
    command.settings = project_settings()
    command.add_options(parser)
    arguments = "\n".join(f"  -a {name}=...  {what} ({SPIDER_ARG_SETTINGS[name]})"
                          for name, what in SPIDER_ARGUMENTS.items())
    return (parser.format_help().replace("Options\n=======", f"Spider arguments\n================\n{arguments}\n\n"
                                                             "Options\n=======", 1)
            + "\nAny setting: -s NAME=VALUE (docs/CRAWL.md, focuscrawl/settings.py); -s JOBDIR=DIR makes the crawl "
              "resumable.")


def cmd_crawl(args: argparse.Namespace) -> int:
    """``scrapy crawl focused`` with the given words, focuscrawl's settings, from any folder."""
    from scrapy.cmdline import execute

    from focuscrawl.resources import project_settings

    words = list(args.scrapy_args)
    if words[:1] == [SPIDER]:  # ``focuscrawl crawl focused -a ...`` is the same
        words = words[1:]
    if "-h" in words or "--help" in words:
        print(crawl_help())
        return 0
    if args.verbose:
        words = ["--loglevel", "DEBUG", *words]
    execute(["focuscrawl crawl", "crawl", *words, SPIDER], settings=project_settings())
    return 0  # not reached: execute() exits with the crawl's exit code (``CrawlCommand.run``)


def register(sub: argparse._SubParsersAction) -> None:
    # every word after ``crawl`` is Scrapy's (``-a``, ``-s``, ``-o``/``-O``, ``-L``, ``-h``, ...):
    # no prefix character, so argparse reads no option here
    p = sub.add_parser("crawl", prefix_chars="\0", add_help=False,
                       help="the focused crawl (`scrapy crawl focused` with focuscrawl's settings) from any "
                            "folder: -a seeds=... -a mode=... -s NAME=VALUE -O FEED, JOBDIR; -h for all options")
    p.add_argument("scrapy_args", nargs=argparse.REMAINDER, metavar="SCRAPY_CRAWL_OPTION")
    p.set_defaults(func=cmd_crawl, scrapy_logging=True)
