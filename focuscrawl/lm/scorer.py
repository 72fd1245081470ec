"""Perplexity and keyword scoring of texts against the topic model (SPEC §3, §4).

One ``TopicScorer`` per crawl: it owns the KenLM model, the keyword list and an LRU
cache of sentence scores (the thesis found the LM to be the crawl's bottleneck).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from functools import lru_cache, partial
from itertools import chain, repeat
from pathlib import Path
from typing import Iterable, Iterator

from focuscrawl import settings as defaults
from focuscrawl.lm.keywords import KEYWORD_WEIGHT, KeywordList, weighted_perplexity
from focuscrawl.text.normalize import MIN_SENTENCE_TOKENS, iter_document_tokens, text_tokens


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
    #: the summed log10 probabilities of its sentences (with ``</s>``) the perplexity is of
    #: (``None``: no sentence; the topic bundle's judge reads it, ``TopicModel.page_logit``)
    log10: float | None = None

    @classmethod
    def missing(cls) -> "TextScore":
        return cls(None, 0.0, None, 0)

    @classmethod
    def _of(cls, perplexity: float | None, keyword_score: float, weighted: float | None,
            tokens: int, log10: float | None = None) -> "TextScore":
        """``cls(...)`` without the frozen ``__init__``'s ``object.__setattr__`` calls: a
        tenth of the cost of scoring a short text."""
        obj = object.__new__(cls)
        obj.__dict__.update(perplexity=perplexity, keyword_score=keyword_score, weighted=weighted, tokens=tokens,
                            log10=log10)
        return obj


#: kenlm.Config.arpa_complain: lm::ngram::Config::ARPALoadComplain NONE (no "build a binary file" line)
_ARPA_COMPLAIN_NONE = 2


def load_kenlm(path: str | Path):
    """Load an ARPA or KenLM binary model quietly (KenLM's C++ side would print a hint to
    build a binary file and a 100-character progress bar to stderr), with a clear error
    for a bad path or file."""
    import kenlm

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"language model not found: {path}")
    config = kenlm.Config()
    config.show_progress = False
    config.arpa_complain = _ARPA_COMPLAIN_NONE
    try:
        return kenlm.Model(str(path), config)
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"cannot load language model {path}: {exc}") from exc


@dataclass(frozen=True)
class ScorerFiles:
    """The files and settings a ``TopicScorer`` is loaded from: plain and picklable, so that
    each analysis worker (``focuscrawl.analysis``) loads the crawl's scorer itself."""

    model: str
    #: the keyword list (``""``: none, keyword score 0)
    keywords: str = ""
    cache_size: int = defaults.FOCUSCRAWL_LM_CACHE_SIZE
    keyword_weight: float = KEYWORD_WEIGHT

    def load(self) -> "TopicScorer":
        return TopicScorer.from_files(self.model, self.keywords or None, cache_size=self.cache_size,
                                      keyword_weight=self.keyword_weight)


class TopicScorer:
    """Scores texts by perplexity and keywords, caching sentence log-probabilities."""

    def __init__(self, model, keywords: KeywordList | None = None, cache_size: int = defaults.FOCUSCRAWL_LM_CACHE_SIZE,
                 keyword_weight: float = KEYWORD_WEIGHT) -> None:
        self.model = model
        self.keywords = keywords or KeywordList.empty()
        self.keyword_weight = keyword_weight
        # log10 p(<s> sentence </s>), cached; partial keeps a Python frame out of each miss.
        self._sentence_log10 = lru_cache(maxsize=cache_size)(partial(model.score, bos=True, eos=True))

    @classmethod
    def from_files(cls, model_path: str | Path, keywords_path: str | Path | None = None,
                   **kwargs) -> "TopicScorer":
        keywords = KeywordList.load(keywords_path) if keywords_path else None
        return cls(load_kenlm(model_path), keywords, **kwargs)

    # -- perplexity -------------------------------------------------------------
    def perplexity_of_sentences(self, sentences: Iterable[str]) -> float | None:
        """PP over normalised sentences together; ``</s>`` counts as a scored token."""
        if not isinstance(sentences, (list, tuple)):
            sentences = list(sentences)
        n = sum(map(str.count, sentences, repeat(" "))) + 2 * len(sentences)
        return perplexity_from_log10(sum(map(self._sentence_log10, sentences)), n)

    def perplexity(self, text: str) -> float | None:
        """PP of a raw short text (ALT, anchor, context); ``None`` when it has no words."""
        return self.perplexity_of_sentences(list(map(" ".join, text_tokens(text))))

    # -- combined scores -------------------------------------------------------
    def _score_tokenized(self, sentences: list[str], tokens: list[list[str]]) -> TextScore:
        """Scores of normalised ``sentences`` whose tokens are ``tokens`` (no re-splitting)."""
        if not sentences:
            return TextScore.missing()
        if len(sentences) == 1:  # the common case of short texts, without the iterator plumbing
            n_tokens = len(tokens[0])
            log10 = self._sentence_log10(sentences[0])
            pp = perplexity_from_log10(log10, n_tokens + 1)
            kw = self.keywords.score_tokens(tokens[0])
        else:
            n_tokens = sum(map(len, tokens))
            log10 = sum(map(self._sentence_log10, sentences))
            pp = perplexity_from_log10(log10, n_tokens + len(sentences))
            kw = self.keywords.score_tokens(chain.from_iterable(tokens))
        return TextScore._of(pp, kw, weighted_perplexity(pp, kw, self.keyword_weight), n_tokens, log10)

    def score_sentences(self, sentences: list[str]) -> TextScore:
        """Scores of already normalised sentences."""
        return self._score_tokenized(sentences, [s.split() for s in sentences])

    def score(self, text: str) -> TextScore:
        """Scores of a short text: no minimum sentence length."""
        tokens = text_tokens(text)
        return self._score_tokenized(list(map(" ".join, tokens)), tokens)

    def score_document(self, text: str, min_tokens: int = MIN_SENTENCE_TOKENS) -> tuple[TextScore, list[str]]:
        """Scores of a page's text over its sentences of ≥ ``min_tokens`` tokens, and those sentences.

        ``score_sentences(sentences)``, read a sentence at a time: the keyword sum runs over
        the tokens as they are made, so a long page's tokens are never all alive (2 MB of
        text: ~30 MB of token strings, 15x the size cap)."""
        sentences: list[str] = []
        n_tokens = 0

        def tokens() -> Iterator[list[str]]:
            nonlocal n_tokens
            for toks in iter_document_tokens(text, min_tokens):
                sentences.append(" ".join(toks))
                n_tokens += len(toks)
                yield toks

        sentence_tokens = tokens()
        kw = self.keywords.score_tokens(chain.from_iterable(sentence_tokens))
        deque(sentence_tokens, maxlen=0)  # without keywords, score_tokens reads none
        if not sentences:
            return TextScore.missing(), sentences
        log10 = sum(map(self._sentence_log10, sentences))
        pp = perplexity_from_log10(log10, n_tokens + len(sentences))
        return TextScore._of(pp, kw, weighted_perplexity(pp, kw, self.keyword_weight), n_tokens, log10), sentences

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
        return {"focuscrawl/lm/queries": self.queries, "focuscrawl/lm/cache_hits": self.cache_hits,
                "focuscrawl/lm/cache_misses": self.queries - self.cache_hits}
