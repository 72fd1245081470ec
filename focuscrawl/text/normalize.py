"""Normalisation and sentence splitting shared by LM training and scoring (SPEC §2).

Language-independent on purpose: no stemming, stopwords or language rules; only
Unicode character classes. The same functions serve training and scoring so that
the model sees the tokens it is queried with.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Iterator

from focuscrawl import settings as defaults

MIN_SENTENCE_TOKENS = defaults.FOCUSCRAWL_MIN_SENTENCE_TOKENS

# The rules, as the original regex formulation (kept as the reference in the tests):
#   sentence end = terminal punctuation followed by white space (\s+), or a line break;
#   normalise    = lowercase; numbers \d+(?:[.,:/]\d+)* -> space; P*, S*, C* characters
#                  (except tab, CR, LF, space) -> space; white-space runs -> one space.
# The implementation below does all of it with one ``str.translate`` (C, with a fast
# path for ASCII) plus ``str.replace``/``str.split``, which the tests check to give the
# same result on random and real text.
_TERMINAL_MARKS = ".!?\u2026\u3002\uff01\uff1f\u0964"
_LINE_BREAKS = "\r\n\u2028\u2029"
# Placeholders that str.split() treats as white space but no input character becomes:
_TERMINAL = "\x1c"  # a terminal mark (a sentence end if white space follows)
_DROPPED = "\x1d"  # a dropped character that is not white space (so no sentence end)
_TERMINAL_RAW = re.compile("([" + _TERMINAL_MARKS + r"])\s+")
_LINE_BREAK_RUNS = re.compile("[" + _LINE_BREAKS + "]+")


def _is_dropped_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    # P* punctuation, S* symbols, C* control/format/private/unassigned.
    return cat[0] in "PSC" and ch not in "\t\n\r "


class _CharMap(dict):
    """``str.translate`` table, filled lazily per code point.

    Line breaks -> LF; terminal marks -> ``_TERMINAL``; other white space -> space;
    digits (``\\d``: numbers are digits and the separators ``.,:/``, which are dropped
    anyway) and other dropped characters -> ``_DROPPED``; anything else stays.
    """

    def __missing__(self, cp: int):
        ch = chr(cp)
        if ch in _LINE_BREAKS:
            value = "\n"
        elif ch in _TERMINAL_MARKS:
            value = _TERMINAL
        elif ch.isspace():
            value = " "
        elif ch.isdecimal() or _is_dropped_char(ch):
            value = _DROPPED
        else:
            value = cp
        self[cp] = value
        return value


_CHAR_MAP = _CharMap()
# The same map for ASCII as a bytes table: bytes.translate has no per-call set-up,
# which str.translate's ASCII path has (it dominates for short texts such as ALTs).
_ASCII_TABLE = bytes((lambda v: ord(v) if isinstance(v, str) else v)(_CHAR_MAP[i]) for i in range(128)) \
    + bytes(range(128, 256))


def _translate_ascii(text: str) -> str:
    return text.encode("ascii").translate(_ASCII_TABLE).decode("ascii")


def _translated(text: str) -> str:
    """``text.translate(_CHAR_MAP)``, faster: str.translate is slow for non-ASCII text
    (~60 ns a character), so a non-ASCII text is translated line by line and its
    ASCII lines (most, in practice) take the bytes path."""
    if text.isascii():
        return _translate_ascii(text)
    if "\n" not in text:
        return text.translate(_CHAR_MAP)
    return "\n".join([_translate_ascii(line) if line.isascii() else line.translate(_CHAR_MAP)
                      for line in text.split("\n")])


def _mapped(text: str) -> str:
    """Lowercased and translated, with every sentence end turned into LF."""
    text = _translated(text.lower())
    # a terminal mark before white space ends a sentence; before LF it already does
    # (the placeholder itself is white space to str.split)
    return text.replace(_TERMINAL + " ", "\n") if _TERMINAL in text else text


def normalize(text: str) -> str:
    """Normalise text for the language model.

    Lowercase; numbers become one symbol and are then removed; punctuation and
    symbols removed; all white space runs become one space.

    >>> normalize("This funny & cute cat has more than 99 lives :) – THIS is awesome!")
    'this funny cute cat has more than lives this is awesome'
    """
    return " ".join(_translated(text.lower()).split())


def split_sentences(text: str) -> list[str]:
    """Split running text into sentences (raw, not normalised); empty ones dropped."""
    marked = _TERMINAL_RAW.sub("\\1\n", text)
    return [s.strip() for s in _LINE_BREAK_RUNS.split(marked) if s and not s.isspace()]


def document_tokens(text: str, min_tokens: int = MIN_SENTENCE_TOKENS) -> list[list[str]]:
    """The tokens of each sentence of ``document_sentences``."""
    return list(iter_document_tokens(text, min_tokens))


def iter_document_tokens(text: str, min_tokens: int = MIN_SENTENCE_TOKENS) -> Iterator[list[str]]:
    """:func:`document_tokens` one sentence at a time (what the scorer reads): a long
    page's tokens are never all alive (2 MB of text are ~400,000 token strings, ~30 MB)."""
    min_tokens = max(min_tokens, 1)
    return (toks for toks in map(str.split, _mapped(text).split("\n")) if len(toks) >= min_tokens)


def text_tokens(text: str) -> list[list[str]]:
    """The tokens of each sentence of ``text_sentences``."""
    return [toks for toks in map(str.split, _mapped(text).split("\n")) if toks]


def document_sentences(text: str, min_tokens: int = MIN_SENTENCE_TOKENS) -> list[str]:
    """Normalised sentences of a document that have at least ``min_tokens`` tokens.

    This is what a page contributes to its perplexity and to the sentence log.
    """
    return list(map(" ".join, document_tokens(text, min_tokens)))


def text_sentences(text: str) -> list[str]:
    """Normalised sentences of a short text (ALT, anchor, context): no length filter."""
    return list(map(" ".join, text_tokens(text)))
