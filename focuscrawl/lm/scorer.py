"""Perplexity and keyword scoring of texts against the topic model (SPEC §3, §4).

One ``TopicScorer`` per crawl: it owns the KenLM model, the keyword list and an LRU
cache of sentence scores (the thesis found the LM to be the crawl's bottleneck).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from focuscrawl.lm.keywords import KEYWORD_WEIGHT, KeywordList, weighted_perplexity
from focuscrawl.text.normalize import MIN_SENTENCE_TOKENS, document_sentences, text_sentences


def perplexity_from_log10(total_log10: float, scored_tokens: int) -> float | None:
    """``PP = 10^(-Σlog10 p / N)`` (= ``2^H``); ``None`` for no scored tokens."""
    if scored_tokens <= 0:
        return None
    return math.pow(10.0, -total_log10 / scored_tokens)


@dataclass(frozen=True)
class TextScore:
    """Pure perplexity, keyword score and weighted perplexity of one text."""

    perplexity: float | None
    keyword_score: float
    weighted: float | None
    tokens: int

    @classmethod
    def missing(cls) -> "TextScore":
        return cls(None, 0.0, None, 0)


def load_kenlm(path: str | Path):
    """Load an ARPA or KenLM binary model, with a clear error for a bad path or file."""
    import kenlm

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"language model not found: {path}")
    try:
        return kenlm.Model(str(path))
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"cannot load language model {path}: {exc}") from exc


class TopicScorer:
    """Scores texts by perplexity and keywords, caching sentence log-probabilities."""

    def __init__(self, model, keywords: KeywordList | None = None, cache_size: int = 200_000,
                 keyword_weight: float = KEYWORD_WEIGHT) -> None:
        self.model = model
        self.keywords = keywords or KeywordList.empty()
        self.keyword_weight = keyword_weight
        self._sentence_log10 = lru_cache(maxsize=cache_size)(self._score_sentence)

    @classmethod
    def from_files(cls, model_path: str | Path, keywords_path: str | Path | None = None,
                   **kwargs) -> "TopicScorer":
        keywords = KeywordList.load(keywords_path) if keywords_path else None
        return cls(load_kenlm(model_path), keywords, **kwargs)

    def _score_sentence(self, sentence: str) -> float:
        return self.model.score(sentence, bos=True, eos=True)

    # -- perplexity -------------------------------------------------------------
    def perplexity_of_sentences(self, sentences: Iterable[str]) -> float | None:
        """PP over normalised sentences together; ``</s>`` counts as a scored token."""
        total = 0.0
        n = 0
        score = self._sentence_log10
        for s in sentences:
            total += score(s)
            n += s.count(" ") + 2
        return perplexity_from_log10(total, n)

    def perplexity(self, text: str) -> float | None:
        """PP of a raw short text (ALT, anchor, context); ``None`` when it has no words."""
        return self.perplexity_of_sentences(text_sentences(text))

    # -- combined scores -------------------------------------------------------
    def score_sentences(self, sentences: list[str]) -> TextScore:
        if not sentences:
            return TextScore.missing()
        pp = self.perplexity_of_sentences(sentences)
        tokens = [t for s in sentences for t in s.split()]
        kw = self.keywords.score_tokens(tokens)
        return TextScore(pp, kw, weighted_perplexity(pp, kw, self.keyword_weight), len(tokens))

    def score(self, text: str) -> TextScore:
        """Scores of a short text: no minimum sentence length."""
        return self.score_sentences(text_sentences(text))

    def score_document(self, text: str, min_tokens: int = MIN_SENTENCE_TOKENS) -> tuple[TextScore, list[str]]:
        """Scores of a page's text over its sentences of ≥ ``min_tokens`` tokens, and those sentences."""
        sentences = document_sentences(text, min_tokens)
        return self.score_sentences(sentences), sentences

    # -- counters --------------------------------------------------------------
    @property
    def queries(self) -> int:
        info = self._sentence_log10.cache_info()
        return info.hits + info.misses

    @property
    def cache_hits(self) -> int:
        return self._sentence_log10.cache_info().hits

    def counters(self) -> dict[str, int]:
        """LM counters for Scrapy stats."""
        return {"lm/queries": self.queries, "lm/cache_hits": self.cache_hits,
                "lm/cache_misses": self.queries - self.cache_hits}
