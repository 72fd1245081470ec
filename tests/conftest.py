"""Shared fixtures: small hand-written models and keyword lists, no shared/ data."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.crawl import install_reactor
from tests.support.toymodel import write_arpa

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: two test workers per core, at most 8. About half of a test's time is
    waiting (for a crawl process to reach its kill point, for a server, for a politeness
    delay), which a second worker per core fills."""
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "slow(seconds): a test of 10 s or more (about that long on 2 cores); started first (pytest_collection_modifyitems)")
    # the reactor of in-process crawls, installed before anything imports Twisted's default
    install_reactor()


def pytest_collection_modifyitems(config, items) -> None:
    """xdist's worksteal gives each worker an equal, contiguous share of the collection, and
    a worker takes tests from another only once it has run out: a slow test at the end of a
    share ends the run alone. Each share starts with slow tests (``slow(seconds)``), longest
    first, each to the share with the fewest seconds so far."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    slow = sorted((item for item in items if item.get_closest_marker("slow")),
                  key=lambda item: -item.get_closest_marker("slow").args[0])
    if workers < 2 or not slow:
        return
    heads: list[list] = [[] for _ in range(workers)]
    seconds = [0.0] * workers
    for item in slow:
        share = seconds.index(min(seconds))
        heads[share].append(item)
        seconds[share] += item.get_closest_marker("slow").args[0]
    rest = iter([item for item in items if not item.get_closest_marker("slow")])
    ordered, left = [], len(items)
    for share in range(workers):  # the sizes xdist gives: what is left, divided by the workers left
        size = left // (workers - share)
        ordered += heads[share] + [next(rest) for _ in range(size - len(heads[share]))]
        left -= size
    items[:] = ordered


@pytest.fixture
def toy_arpa(tmp_path: Path) -> Path:
    """The tests' toy model (tests/support/toymodel.py) as a file."""
    return write_arpa(tmp_path)


@pytest.fixture
def thesis_keywords_path() -> Path:
    return FIXTURES / "thesis_cat_keywords.txt"


@pytest.fixture(scope="session")
def cats_scorer():
    """The bundled cats demo model and keywords (shipped in the package, not shared/ data)."""
    from focuscrawl.lm.scorer import TopicScorer
    from focuscrawl.topic.model import default_keywords_path, default_model_path

    return TopicScorer.from_files(default_model_path(), default_keywords_path())


@pytest.fixture
def redis_server(tmp_path):
    from tests.support.redisserver import RedisServer
    server = RedisServer(tmp_path)
    yield server
    server.stop()
