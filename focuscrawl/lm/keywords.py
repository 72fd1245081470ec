"""Keywords learnt from a positive and a neutral corpus (SPEC §4, thesis Listing A.3).

Pure functions: learning takes tokenised documents, scoring takes token lists, so
they are testable without files, models or a crawl.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterable, Sequence

from focuscrawl import settings as defaults

KEYWORD_WEIGHT = defaults.FOCUSCRAWL_KEYWORD_WEIGHT  # γ_kw: weighted PP = PP * (1 - γ_kw * keyword score)
ABSENT_DOC_COUNT = 0.1  # pseudo document count of a token absent from the neutral side
DEFAULT_TOP_N = 50
#: Why ``focuscrawl keywords`` and ``focuscrawl topic build`` give different lists for the same
#: corpora (both commands print it): the same formula over different documents.
KEYWORD_LISTS_DIFFER = ("`focuscrawl keywords` counts one document per source, all of its text; "
                        "`focuscrawl topic build` counts documents of 10 consecutive sentences of its training "
                        "sentences (4 in 5; the 5th is held out for calibration), so their lists differ")


def binary_idf(docs: Sequence[Iterable[str]]) -> dict[str, float]:
    """``log10(N / df)`` per token, with df counting documents (binary tf)."""
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(set(doc))
    n = len(docs)
    return {tok: math.log10(n / d) for tok, d in df.items()}


def learn_keywords(
    positive_docs: Sequence[Sequence[str]],
    neutral_docs: Sequence[Sequence[str]],
    top_n: int | None = DEFAULT_TOP_N,
) -> list[tuple[str, float]]:
    """Amplified TF-IDF difference ``tf_pos * (idf_neutral - idf_pos)`` per token.

    Tokens absent from the neutral corpus get ``idf_neutral = log10(1 + N_neutral/0.1)``.
    Sorted by descending score (ties by token, for reproducible files); scores <= 0
    (the neutral side's words) are cut; the first ``top_n`` kept (all if ``None``).
    """
    if not positive_docs or not neutral_docs:
        raise ValueError("keyword learning needs at least one positive and one neutral document")
    tf_pos: Counter[str] = Counter()
    for doc in positive_docs:
        tf_pos.update(doc)
    idf_pos = binary_idf(positive_docs)
    idf_neu = binary_idf(neutral_docs)
    absent_idf = math.log10(1.0 + len(neutral_docs) / ABSENT_DOC_COUNT)
    scored = []
    for tok, tf in tf_pos.items():
        score = tf * (idf_neu.get(tok, absent_idf) - idf_pos[tok])
        if score > 0:
            scored.append((tok, score))
    scored.sort(key=lambda kv: (-kv[1], kv[0]))
    return scored if top_n is None else scored[:top_n]


@dataclass(frozen=True)
class KeywordList:
    """A weighted keyword list and the keyword score of texts against it."""

    weights: dict[str, float]

    @cached_property
    def total_weight(self) -> float:
        return sum(self.weights.values())

    def score_tokens(self, tokens: Iterable[str]) -> float:
        """Summed weight of keyword occurrences / summed weight of the whole list."""
        total = self.total_weight
        if total <= 0:
            return 0.0
        weights = self.weights
        # only keyword tokens are looked up (same sum: the others would add 0.0)
        return sum(map(weights.__getitem__, filter(weights.__contains__, tokens))) / total

    def score(self, normalized_text: str) -> float:
        """Keyword score of an already normalised text (whitespace tokens)."""
        return self.score_tokens(normalized_text.split())

    @classmethod
    def empty(cls) -> "KeywordList":
        return cls({})

    @classmethod
    def load(cls, path: str | Path) -> "KeywordList":
        """Read the ``token;score`` file format; bad lines give an error naming the line."""
        weights: dict[str, float] = {}
        lineno = 0
        with open(path, encoding="utf-8") as fh:
            try:
                for lineno, line in enumerate(fh, 1):
                    line = line.strip()
                    if not line or line.startswith("#"):
                        continue
                    tok, sep, val = line.rpartition(";")
                    try:
                        if not sep or not tok:
                            raise ValueError
                        weights[tok] = float(val)
                    except ValueError:
                        raise ValueError(f"{path}:{lineno}: expected 'token;score', got {line!r}") from None
            except UnicodeDecodeError as exc:  # a binary file (a model given as the keywords?)
                raise ValueError(f"{path}: not UTF-8 text ({exc.reason} after line {lineno}): not a keyword "
                                 f"file of 'token;score' lines") from None
        return cls(weights)

    def dump(self, path: str | Path) -> None:
        write_keywords(path, sorted(self.weights.items(), key=lambda kv: (-kv[1], kv[0])))


def write_keywords(path: str | Path, pairs: Iterable[tuple[str, float]]) -> None:
    """Write ``token;score`` lines (SPEC §4 file format)."""
    with open(path, "w", encoding="utf-8") as fh:
        for tok, score in pairs:
            fh.write(f"{tok};{score!r}\n")


def weighted_perplexity(perplexity: float | None, keyword_score: float, gamma: float = KEYWORD_WEIGHT) -> float | None:
    """``PP * (1 - γ·kw)``, clamped to 1 when negative; ``None`` stays ``None``."""
    if perplexity is None:
        return None
    value = perplexity * (1.0 - gamma * keyword_score)
    return 1.0 if value < 0 else value
