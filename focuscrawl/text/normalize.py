"""Normalisation and sentence splitting shared by LM training and scoring (SPEC §2).

Language-independent on purpose: no stemming, stopwords or language rules; only
Unicode character classes. The same functions serve training and scoring so that
the model sees the tokens it is queried with.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

MIN_SENTENCE_TOKENS = 5

# A number: digits with optional inner separators ("1,000.5", "2015", "3rd" keeps "rd").
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
# Sentence ends: terminal punctuation (several scripts) followed by white space, or a
# line break (extractors put block elements on their own lines).
_SENTENCE_END = re.compile(r"(?<=[.!?\u2026\u3002\uff01\uff1f\u0964])\s+|\s*[\r\n\u2028\u2029]+\s*")
_WHITESPACE = re.compile(r"\s+")


@lru_cache(maxsize=4096)
def _is_dropped_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    # P* punctuation, S* symbols, C* control/format/private/unassigned.
    return cat[0] in "PSC" and ch not in "\t\n\r "


def _drop_punct_symbols(text: str) -> str:
    if text.isascii():
        return text.translate(_ASCII_TABLE)
    return "".join(" " if _is_dropped_char(ch) else ch for ch in text)


_ASCII_TABLE = {i: " " for i in range(128) if _is_dropped_char(chr(i))}


def normalize(text: str) -> str:
    """Normalise text for the language model.

    Lowercase; numbers become one symbol and are then removed; punctuation and
    symbols removed; all white space runs become one space.

    >>> normalize("This funny & cute cat has more than 99 lives :) – THIS is awesome!")
    'this funny cute cat has more than lives this is awesome'
    """
    text = _NUMBER.sub(" ", text.lower())
    text = _drop_punct_symbols(text)
    return _WHITESPACE.sub(" ", text).strip()


def split_sentences(text: str) -> list[str]:
    """Split running text into sentences (raw, not normalised); empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def document_sentences(text: str, min_tokens: int = MIN_SENTENCE_TOKENS) -> list[str]:
    """Normalised sentences of a document that have at least ``min_tokens`` tokens.

    This is what a page contributes to its perplexity and to the sentence log.
    """
    out = []
    for raw in split_sentences(text):
        norm = normalize(raw)
        if norm and norm.count(" ") + 1 >= min_tokens:
            out.append(norm)
    return out


def text_sentences(text: str) -> list[str]:
    """Normalised sentences of a short text (ALT, anchor, context): no length filter."""
    return [n for n in (normalize(s) for s in split_sentences(text)) if n]
