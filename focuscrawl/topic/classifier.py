"""A linear topic classifier over hashed word n-grams (scikit-learn), stored portably.

Features: ``HashingVectorizer`` of the normalised text (word 1- and 2-grams, 2^18
buckets, l2 norm): stateless, so only the weights need storing. The model is a
class-balanced logistic regression, positive vs neutral. The bundle keeps the non-zero
weights as two ``.npy`` arrays (indices, values) and the intercept in ``bundle.json``,
not a pickle: it loads with any scikit-learn/numpy version and in any process.
"""
from __future__ import annotations

import math
from collections import Counter
from functools import reduce
from operator import add
from pathlib import Path
from typing import Sequence

import mmh3
import numpy as np

N_FEATURES = 2 ** 18
NGRAM_RANGE = (1, 2)
REGULARISATION_C = 1.0
#: from this many words a text's n-grams are counted and summed in numpy (faster for a page's
#: thousands; a Python ``Counter`` is faster for an ALT text or an anchor)
VECTORISED_TOKENS = 64


def vectorizer():
    from sklearn.feature_extraction.text import HashingVectorizer

    # the texts are already normalised (focuscrawl.text.normalize): whitespace tokens
    return HashingVectorizer(n_features=N_FEATURES, ngram_range=NGRAM_RANGE, alternate_sign=False,
                             norm="l2", lowercase=False, token_pattern=None, tokenizer=str.split)


def _ngrams(tokens: list[str]) -> list[str]:
    """The word n-grams in ``HashingVectorizer``'s order: all unigrams, then all bigrams."""
    return tokens + list(map(" ".join, zip(tokens, tokens[1:])))


class HashedNgramClassifier:
    """``decision(text)`` = w·x + b on the hashed n-grams of a normalised text (> 0: on topic)."""

    def __init__(self, weights: np.ndarray, intercept: float) -> None:
        self.weights = weights.astype(np.float64)
        self.intercept = float(intercept)

    @classmethod
    def train(cls, positive: Sequence[str], neutral: Sequence[str], c: float = REGULARISATION_C
              ) -> "HashedNgramClassifier":
        from sklearn.linear_model import LogisticRegression

        if not positive or not neutral:
            raise ValueError("the classifier needs positive and neutral texts")
        x = vectorizer().transform(list(positive) + list(neutral))
        y = np.r_[np.ones(len(positive)), np.zeros(len(neutral))]
        model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000)
        model.fit(x, y)
        return cls(model.coef_[0], model.intercept_[0])

    def decision(self, normalized_text: str) -> float:
        """w·x + b with x = ``vectorizer().transform([text])`` (``decision_tokens`` of its words)."""
        return self.decision_tokens(normalized_text.split())

    def decision_tokens(self, tokens: list[str]) -> float:
        """``decision(" ".join(tokens))``, computed without scikit-learn's per-call overhead
        (3.3 ms -> 0.18 ms a text): the same murmurhash3 buckets (``mmh3.hash`` is scikit-learn's
        signed ``murmurhash3_32`` of the UTF-8 bytes, seed 0, without importing scikit-learn:
        0.8 s of CPU in every analysis worker that scores pages with a bundle), counts and l2
        norm, and the same float, bit for bit, as a loop over the n-grams: the products of the
        distinct buckets summed one by one in the order of their first occurrence."""
        if len(tokens) < VECTORISED_TOKENS:
            counts = Counter([abs(h) % N_FEATURES for h in map(mmh3.hash, _ngrams(tokens))])
            if not counts:
                return self.intercept
            norm = math.sqrt(sum(c * c for c in counts.values()))
            n = len(counts)
            products = self.weights[np.fromiter(counts, np.intp, n)] * np.fromiter(counts.values(), np.float64, n)
            return reduce(add, products.tolist(), 0) / norm + self.intercept
        # a page's thousands of n-grams in numpy: sorted by bucket, then position, each bucket's
        # run starts at its first occurrence; its product goes there, and the sequential sum
        # (``np.add.accumulate``, not numpy's pairwise ``sum``) adds them in that order (the
        # zeros between them change nothing)
        ngrams = _ngrams(tokens)
        n = len(ngrams)
        buckets = np.abs(np.fromiter(map(mmh3.hash, ngrams), np.int64, n)) % N_FEATURES
        keyed = np.sort((buckets << 32) | np.arange(n, dtype=np.int64))
        keys = keyed >> 32
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        counts = np.diff(starts, append=n)
        in_order = np.zeros(n)
        in_order[keyed[starts] & 0xFFFFFFFF] = self.weights[keys[starts]] * counts
        return float(np.add.accumulate(in_order)[-1]) / math.sqrt(int(np.dot(counts, counts))) + self.intercept

    def save(self, folder: Path, stem: str = "classifier") -> dict:
        nz = np.flatnonzero(self.weights)
        np.save(folder / f"{stem}.indices.npy", nz.astype(np.int32))
        np.save(folder / f"{stem}.weights.npy", self.weights[nz].astype(np.float32))
        return {"indices": f"{stem}.indices.npy", "weights": f"{stem}.weights.npy", "intercept": self.intercept,
                "n_features": N_FEATURES, "ngram_range": list(NGRAM_RANGE), "features": "hashed word n-grams, l2"}

    @classmethod
    def load(cls, folder: Path, meta: dict) -> "HashedNgramClassifier":
        """The classifier of a bundle folder, checked: integer feature indices in range, one finite
        weight each, a finite intercept (a bundle may come from anyone)."""
        if meta.get("n_features") != N_FEATURES or tuple(meta.get("ngram_range", ())) != NGRAM_RANGE:
            raise ValueError(f"{folder}: classifier features {meta.get('n_features')}/{meta.get('ngram_range')} "
                             f"differ from this version's {N_FEATURES}/{list(NGRAM_RANGE)}; rebuild the bundle")
        try:
            indices, values = np.load(folder / meta["indices"]), np.load(folder / meta["weights"])
        except (OSError, ValueError, EOFError) as exc:
            raise ValueError(f"{folder}: the classifier's arrays cannot be read ({type(exc).__name__}); "
                             "rebuild the bundle") from None
        intercept = meta.get("intercept")
        if (indices.ndim != 1 or values.shape != indices.shape or indices.dtype.kind not in "iu"
                or values.dtype.kind != "f" or (indices.size and not 0 <= indices.min() <= indices.max() < N_FEATURES)
                or not np.isfinite(values).all() or isinstance(intercept, bool)
                or not isinstance(intercept, (int, float)) or not np.isfinite(intercept)):
            raise ValueError(f"{folder}: not a valid classifier (indices in [0, {N_FEATURES}), one finite "
                             "weight each and a finite intercept); rebuild the bundle")
        weights = np.zeros(N_FEATURES)
        weights[indices] = values
        return cls(weights, float(intercept))
