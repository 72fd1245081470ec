"""Shared fixtures: small hand-written models and keyword lists, no shared/ data."""
from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

# A bigram ARPA (KenLM needs order >= 2) whose scores are easy to compute by hand:
# p(cat|<s>) = -0.3; p(dog|cat) = -0.4; everything else backs off to unigrams.
TOY_ARPA = """\\data\\
ngram 1=5
ngram 2=2

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.3
-0.5\t</s>\t0
-0.5\tcat\t-0.2
-1.0\tdog\t0

\\2-grams:
-0.3\t<s> cat
-0.4\tcat dog

\\end\\
"""


@pytest.fixture
def toy_arpa(tmp_path: Path) -> Path:
    path = tmp_path / "toy.arpa"
    path.write_text(TOY_ARPA)
    return path


@pytest.fixture
def thesis_keywords_path() -> Path:
    return FIXTURES / "thesis_cat_keywords.txt"


@pytest.fixture(scope="session")
def cats_scorer():
    """The bundled cats demo model and keywords (shipped in the package, not shared/ data)."""
    from focuscrawl.lm.scorer import TopicScorer
    from focuscrawl.resources import default_keywords_path, default_model_path

    return TopicScorer.from_files(default_model_path(), default_keywords_path())


@pytest.fixture
def redis_server(tmp_path):
    from tests.support.redisserver import RedisServer
    server = RedisServer(tmp_path)
    yield server
    server.stop()
