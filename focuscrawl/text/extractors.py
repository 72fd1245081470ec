"""Page-text extractors selectable by name (the crawl's ``FOCUSCRAWL_TEXT_EXTRACTOR``).

``fulltext`` keeps all body text (thesis: JSoup); the boilerpy3 extractors remove
boilerplate (thesis: boilerpipe, ArticleExtractor by default).
"""
from __future__ import annotations

from typing import Callable

from focuscrawl.text.html import full_text

Extractor = Callable[[str], str]


class ExtractionError(ValueError):
    """An extractor could not process a page (malformed input)."""


def _boilerpy3(class_name: str) -> Extractor:
    def extract(html: str) -> str:
        from boilerpy3 import extractors as bp

        try:
            return getattr(bp, class_name)(raise_on_failure=True).get_content(html)
        except Exception as exc:  # boilerpy3 raises bare Exceptions on broken markup
            raise ExtractionError(f"{class_name} failed: {exc}") from exc

    extract.__name__ = f"boilerpy3_{class_name}"
    extract.__doc__ = f"boilerpy3 {class_name}"
    return extract


EXTRACTORS: dict[str, Extractor] = {
    "fulltext": full_text,
    "article": _boilerpy3("ArticleExtractor"),
    "default": _boilerpy3("DefaultExtractor"),
    "keepeverything": _boilerpy3("KeepEverythingExtractor"),
    "largestcontent": _boilerpy3("LargestContentExtractor"),
    "canola": _boilerpy3("CanolaExtractor"),
    "articlesentences": _boilerpy3("ArticleSentencesExtractor"),
    "numwordsrules": _boilerpy3("NumWordsRulesExtractor"),
}


def get_extractor(name: str) -> Extractor:
    """The extractor called ``name``; a clear error listing the valid names otherwise."""
    try:
        return EXTRACTORS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown text extractor {name!r}; choose one of {sorted(EXTRACTORS)}") from None
