"""Sphinx configuration of focuscrawl's documentation (``sphinx-build -W -b html docs OUT``)."""
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))  # the checkout's focuscrawl, not another installed one

project = "focuscrawl"
author = "the focuscrawl developers"
copyright = "2026, the focuscrawl developers"
release = "0.1.0"

extensions = ["myst_parser", "focuscrawl_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]
myst_heading_anchors = 4
myst_enable_extensions = ["deflist"]
html_theme = "alabaster"
html_title = "focuscrawl"
