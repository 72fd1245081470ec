"""Page-text extractors selectable by name (the crawl's ``FOCUSCRAWL_TEXT_EXTRACTOR``).

Every extractor is a function ``html str -> text str`` with blocks on their own lines:

* ``fulltext`` keeps all body text (thesis: JSoup);
* the boilerpy3 extractors remove boilerplate (thesis: boilerpipe, ArticleExtractor);
* ``trafilatura`` and ``justext`` are the strongest maintained alternatives. They are
  optional extras: imported on first use, with a clear :class:`ExtractorUnavailable`
  error naming the package to install when missing.

Measured on CLEANEVAL and the article-extraction benchmark by
``focuscrawl eval extraction`` (docs/extraction.md).
"""
from __future__ import annotations

import importlib
import re
from typing import Callable

from focuscrawl.text.html import full_text

Extractor = Callable[[str], str]


class ExtractionError(ValueError):
    """An extractor could not process a page (malformed input)."""


class ExtractorUnavailable(ValueError):
    """The extractor's optional package is not installed."""


def _require(module: str, package: str, extractor: str):
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ExtractorUnavailable(
            f"text extractor {extractor!r} needs the optional package {package!r} "
            f"(pip install {package}): {exc}") from None


_BODY_RE = re.compile(r"<body[\s>]", re.IGNORECASE)


def _boilerpy3(class_name: str) -> Extractor:
    def extract(html: str) -> str:
        bp = _require("boilerpy3.extractors", "boilerpy3", class_name)
        if html.strip() and not _BODY_RE.search(html):
            # boilerpy3 only reads text inside <body>; fragments and body-less pages (a
            # quarter of CLEANEVAL) would come out empty.
            html = f"<html><body>{html}</body></html>"
        try:
            return getattr(bp, class_name)(raise_on_failure=True).get_content(html)
        except Exception as exc:  # boilerpy3 raises bare Exceptions on broken markup
            raise ExtractionError(f"{class_name} failed: {exc}") from exc

    extract.__name__ = f"boilerpy3_{class_name}"
    extract.__doc__ = f"boilerpy3 {class_name}"
    return extract


def trafilatura_text(html: str) -> str:
    """trafilatura main-text extraction favouring recall (tables kept, comments out).

    When trafilatura finds no main text (1.5% of CLEANEVAL pages: link lists, odd
    layouts) the full text is returned instead, so such a page still gets a perplexity.
    """
    trafilatura = _require("trafilatura", "trafilatura", "trafilatura")
    if not html.strip():
        return ""
    try:
        text = trafilatura.extract(html, include_comments=False, include_tables=True,
                                   favor_recall=True, deduplicate=False, with_metadata=False)
    except Exception as exc:  # lxml/trafilatura internals on pathological markup
        raise ExtractionError(f"trafilatura failed: {exc}") from exc
    return text or full_text(html)


def justext_text(html: str) -> str:
    """jusText paragraphs classified good (language-independent: no stoplist, like SPEC §1)."""
    justext = _require("justext", "justext", "justext")
    if not html.strip():
        return ""
    try:
        # An empty stoplist makes jusText language-independent: it classifies by length
        # and link density only (its documented "no stoplist" mode).
        paragraphs = justext.justext(html.encode("utf-8", "replace"), frozenset(), encoding="utf-8",
                                     stopwords_low=0, stopwords_high=0)
    except Exception as exc:  # jusText raises lxml ParserError and others on broken input
        raise ExtractionError(f"justext failed: {exc}") from exc
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


EXTRACTORS: dict[str, Extractor] = {
    "fulltext": full_text,
    "article": _boilerpy3("ArticleExtractor"),
    "default": _boilerpy3("DefaultExtractor"),
    "keepeverything": _boilerpy3("KeepEverythingExtractor"),
    "largestcontent": _boilerpy3("LargestContentExtractor"),
    "canola": _boilerpy3("CanolaExtractor"),
    "articlesentences": _boilerpy3("ArticleSentencesExtractor"),
    "numwordsrules": _boilerpy3("NumWordsRulesExtractor"),
    "trafilatura": trafilatura_text,
    "justext": justext_text,
}


#: The optional package (import name, pip name) each extractor needs.
REQUIRES: dict[str, tuple[str, str]] = {
    **{name: ("boilerpy3.extractors", "boilerpy3") for name in EXTRACTORS if name != "fulltext"},
    "trafilatura": ("trafilatura", "trafilatura"),
    "justext": ("justext", "justext"),
}


def get_extractor(name: str) -> Extractor:
    """The extractor called ``name``; a clear error listing the valid names otherwise.

    Its optional package is imported now, so a crawl configured with a missing one
    stops at startup with :class:`ExtractorUnavailable` instead of failing every page.
    """
    try:
        extractor = EXTRACTORS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown text extractor {name!r}; choose one of {sorted(EXTRACTORS)}") from None
    if name.lower() in REQUIRES:
        _require(*REQUIRES[name.lower()], name.lower())
    return extractor
