"""trafilatura's whitespace ``trim`` without its memory peak on long texts.

trafilatura normalises whitespace with ``" ".join(text.split())`` memoised by
``lru_cache(1024)``. On a page of 2 MB of running text, readability's link density and
the fallback comparison trim the whole body text, and ``split`` builds a list of its
~400,000 words: ~34 MB of word objects for 2 MB of text, most of trafilatura's peak
(26x the 2 MiB size cap above a small page, ``benchmarks/text_limits.py``). The cache
also keeps up to 1,024 such texts (and their results) alive across the pages of a
crawl worker.

:func:`trim` returns the same string: a long text is normalised in 64 KiB pieces cut at
whitespace, so no word spans two pieces, and only short strings are memoised.
:func:`install` puts it in place of trafilatura's in every trafilatura module.
"""
from __future__ import annotations

import re
import sys
from functools import lru_cache

#: Strings up to this length are trimmed in one piece and memoised, as trafilatura does.
SHORT = 4096
_PIECE = 1 << 16
# re's \s and str.split() both split on Py_UNICODE_ISSPACE (tests/test_lean_trim.py)
_SPACE = re.compile(r"\s")


@lru_cache(maxsize=1024)
def _trim_short(string: str) -> str:
    return " ".join(string.split())


def _trim_long(string: str) -> str:
    pieces = []
    start, n = 0, len(string)
    while start < n:
        end = start + _PIECE
        if end < n:
            space = _SPACE.search(string, end)
            end = space.start() if space else n
        piece = " ".join(string[start:end].split())
        if piece:
            pieces.append(piece)
        start = end
    return " ".join(pieces)


def trim(string: str) -> str:
    """``" ".join(string.split())`` ("" for a non-string), as ``trafilatura.utils.trim``."""
    if not isinstance(string, str):
        return ""
    return _trim_short(string) if len(string) <= SHORT else _trim_long(string)


def install() -> None:
    """Replace ``trafilatura.utils.trim`` and the copies trafilatura's modules imported
    (``from .utils import trim``); modules imported later take it from ``utils``."""
    import trafilatura.utils

    original = trafilatura.utils.trim
    if original is trim:
        return
    for name, module in list(sys.modules.items()):
        if (name == "trafilatura" or name.startswith("trafilatura.")) and getattr(module, "trim", None) is original:
            module.trim = trim
