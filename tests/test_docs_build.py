"""The documentation builds with warnings as errors, and its generated references are complete.

CI runs the README's test command only, so the Sphinx build (docs/conf.py) is a test here:
a broken cross-reference, a bad directive or a settings doc comment the reference cannot
render fails the suite."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from focuscrawl import settings
from focuscrawl.cli import COMMANDS
from tests.support import warmfork

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: a calendar date (2026-11-22): measurement logs are dated, user docs have no reason to be
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs-html")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = warmfork.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                         str(DOCS), str(out)], capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def test_docs_build_without_warnings(html):
    for page in ("index", "install", "tutorial", "modes", "faq", "reference/settings", "reference/cli"):
        assert (html / f"{page}.html").is_file(), page


def test_settings_reference_lists_every_setting_with_its_doc(html):
    page = (html / "reference" / "settings.html").read_text(encoding="utf-8")
    names = [name for name in dir(settings) if name.startswith("FOCUSCRAWL_")]
    missing = [name for name in names if f'id="{name.lower().replace("_", "-")}"' not in page]
    assert not missing, missing
    # each entry carries its doc comment: the text of one is on the page
    assert "Only these domains and their subdomains are crawled" in page
    # user-facing settings first, the advanced section after them
    assert page.index('id="focuscrawl-mode"') < page.index('id="advanced-settings"') < page.index(
        'id="focuscrawl-lm-cache-size"')


def test_every_focuscrawl_setting_has_a_doc_comment():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from focuscrawl_reference import read_settings
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    values = {name: getattr(settings, name) for name in dir(settings) if name.isupper()}
    entries = [s for section in read_settings(Path(settings.__file__), values) for s in section.settings]
    assert {s.name for s in entries} >= {name for name in values if name.startswith("FOCUSCRAWL_")}
    assert [s.name for s in entries if s.name.startswith("FOCUSCRAWL_") and not s.doc] == []


def test_cli_reference_shows_every_subcommands_help(html):
    page = (html / "reference" / "cli.html").read_text(encoding="utf-8")
    for command in COMMANDS:
        assert f'id="focuscrawl-{command}"' in page, command
    assert "--embed-images" in page  # an option of `focuscrawl rank`, from its parser


def test_docs_hold_no_dated_measurement_logs():
    """Measurement history lives in benchmarks/results/; the docs quote current figures."""
    dated = [f"{path.relative_to(ROOT)}:{n}" for path in sorted(DOCS.rglob("*.md"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if DATE.search(line)]
    assert not dated, dated
    assert not (DOCS / "eval-results").exists()
