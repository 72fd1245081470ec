"""A linear topic classifier over hashed word n-grams (scikit-learn), stored portably.

Features: ``HashingVectorizer`` of the normalised text (word 1- and 2-grams, 2^18
buckets, l2 norm): stateless, so only the weights need storing. The model is a
class-balanced logistic regression, positive vs neutral. The bundle keeps the non-zero
weights as two ``.npy`` arrays (indices, values) and the intercept in ``bundle.json``,
not a pickle: it loads with any scikit-learn/numpy version and in any process. A text's
decision is one call into a numba-compiled kernel that hashes, counts and sums its n-grams as
``HashingVectorizer`` would, to the same float, without scikit-learn (``decision_tokens``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from focuscrawl.compiled import jit

N_FEATURES = 2 ** 18
NGRAM_RANGE = (1, 2)
REGULARISATION_C = 1.0


def vectorizer():
    from sklearn.feature_extraction.text import HashingVectorizer

    # the texts are already normalised (focuscrawl.text.normalize): whitespace tokens
    return HashingVectorizer(n_features=N_FEATURES, ngram_range=NGRAM_RANGE, alternate_sign=False,
                             norm="l2", lowercase=False, token_pattern=None, tokenizer=str.split)


_M32 = np.uint64(0xFFFFFFFF)
_C1, _C2 = np.uint64(0xCC9E2D51), np.uint64(0x1B873593)
#: bytes after a text's last that ``_decision`` may read (a 4-byte word at its tail; masked off)
PADDING = b"\0\0\0"


# MurmurHash3_x86_32 (seed 0: scikit-learn's ``murmurhash3_32``, ``mmh3.hash``) in three steps, so
# that a bigram goes on from its first word's blocks. The arithmetic is in uint64 masked to 32
# bits (numba widens uint32 products; a product of two values below 2^32 fits in 64 bits).
@jit
def _word(data: np.ndarray, i: int) -> np.uint64:
    """The little-endian 32-bit word at ``data[i]``."""
    return (np.uint64(data[i]) | (np.uint64(data[i + 1]) << np.uint64(8))
            | (np.uint64(data[i + 2]) << np.uint64(16)) | (np.uint64(data[i + 3]) << np.uint64(24)))


@jit
def _mix(k: np.uint64) -> np.uint64:
    k = (k * _C1) & _M32
    return (((k << np.uint64(15)) | (k >> np.uint64(17))) & _M32) * _C2 & _M32


@jit
def _blocks(data: np.ndarray, h: np.uint64, i: int, end: int) -> tuple[np.uint64, int]:
    """The hash state after the whole 4-byte blocks of ``data[i:end]`` from state ``h``, and
    where its tail starts."""
    while i + 4 <= end:
        h ^= _mix(_word(data, i))
        h = ((h << np.uint64(13)) | (h >> np.uint64(19))) & _M32
        h = (h * np.uint64(5) + np.uint64(0xE6546B64)) & _M32
        i += 4
    return h, i


@jit
def _bucket(data: np.ndarray, h: np.uint64, i: int, start: int, end: int) -> np.int64:
    """``abs(mmh3.hash(data[start:end])) % 2^18``, the n-gram's column, from the state ``h`` after
    its blocks (``_blocks``) and its tail ``data[i:end]`` (0-3 bytes, read as a masked word:
    ``data`` has ``PADDING`` after its text, and no branch guesses the tail's length)."""
    h ^= _mix(_word(data, i) & ((np.uint64(1) << (np.uint64(end - i) << np.uint64(3))) - np.uint64(1)))
    h ^= np.uint64(end - start)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & _M32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & _M32
    h ^= h >> np.uint64(16)
    signed = np.int64(h) - np.int64((h >> np.uint64(31)) << np.uint64(32))  # the hash as an int32
    return np.abs(signed) % N_FEATURES  # in int64: abs(-2^31) is 2^31, whose bucket is 0


@jit
def _decision(data: np.ndarray, weights: np.ndarray, intercept: float) -> float:
    """w·x + b of the text whose UTF-8 bytes, followed by ``PADDING``, are ``data``: whitespace-free
    tokens joined by single spaces. Its n-grams in ``HashingVectorizer``'s order (all unigrams,
    then all bigrams: the bytes from a token's start to the next one's end) are counted by bucket
    in a small open-addressing table; the products ``weights[bucket] * count`` of the distinct
    buckets are summed one by one in the order of each bucket's first n-gram, then divided by
    the l2 norm (``sqrt`` of the sum of squared counts)."""
    n = data.shape[0] - len(PADDING)
    if n <= 0:
        return intercept
    tokens = 1
    for i in range(n):
        tokens += data[i] == 32
    starts = np.empty(tokens + 1, np.int64)  # the tokens' starts, then n + 1: token t ends at starts[t + 1] - 1
    starts[0] = 0
    t = 1
    for i in range(n):  # (no branch per byte: starts[t] is rewritten until its space has passed)
        starts[t] = i + 1
        t += data[i] == 32
    starts[tokens] = n + 1
    grams = 2 * tokens - 1
    size = 16
    while size < 2 * grams:
        size *= 2
    keys = np.full(size, -1, np.int64)  # bucket of each slot (-1: empty)
    counts = np.zeros(size, np.int64)
    first = np.empty(grams, np.int64)  # the slots of the distinct buckets, in order of appearance
    distinct = 0
    states = np.empty(tokens, np.uint64)  # each token's state after its blocks: its bigram's start
    tails = np.empty(tokens, np.int64)
    for g in range(grams):
        if g < tokens:
            start, end = starts[g], starts[g + 1] - 1
            h, i = _blocks(data, np.uint64(0), start, end)
            states[g], tails[g] = h, i
        else:
            t = g - tokens
            start, end = starts[t], starts[t + 2] - 1
            h, i = _blocks(data, states[t], tails[t], end)
        b = _bucket(data, h, i, start, end)
        slot = b & (size - 1)
        while keys[slot] != b and keys[slot] != -1:
            slot = (slot + 1) & (size - 1)
        first[distinct] = slot  # kept if the bucket is new (no branch guesses which)
        distinct += keys[slot] == -1
        keys[slot] = b
        counts[slot] += 1
    total = 0.0
    squares = 0
    for j in range(distinct):
        slot = first[j]
        total += weights[keys[slot]] * np.float64(counts[slot])
        squares += counts[slot] * counts[slot]
    return total / np.sqrt(np.float64(squares)) + intercept


def load_compiled_decision() -> None:
    """Have numba load (or compile) the classifier's kernel now rather than at the first text:
    a crawl pays it at start-up with its models, not in the middle of its first pages."""
    HashedNgramClassifier(np.zeros(N_FEATURES), 0.0).decision("a b")


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
        """``decision(" ".join(tokens))`` of whitespace-free tokens (``str.split``'s) in one call
        into a numba-compiled kernel (``_decision``), not scikit-learn (3.3 ms a text, and 0.8 s
        of CPU to import in every analysis worker): the same murmurhash3 buckets of the UTF-8
        bytes, counts and l2 norm, and the same float, bit for bit, as a loop over the n-grams
        (tested against ``HashingVectorizer``). ~12 us for a 240-word page (0.1 ms by a ``Counter``
        or numpy), ~1 us for an ALT text."""
        return _decision(np.frombuffer(" ".join(tokens).encode("utf-8") + PADDING, np.uint8), self.weights,
                         self.intercept)

    def save(self, folder: Path, stem: str = "classifier") -> dict:
        nz = np.flatnonzero(self.weights)
        np.save(folder / f"{stem}.indices.npy", nz.astype(np.int32))
        np.save(folder / f"{stem}.weights.npy", self.weights[nz].astype(np.float32))
        return {"indices": f"{stem}.indices.npy", "weights": f"{stem}.weights.npy", "intercept": self.intercept,
                "n_features": N_FEATURES, "ngram_range": list(NGRAM_RANGE), "features": "hashed word n-grams, l2"}

    @classmethod
    def load(cls, folder: Path, meta: dict) -> "HashedNgramClassifier":
        """The classifier of a bundle folder, checked: integer feature indices in range, one finite
        weight each, a finite intercept (a bundle may come from anyone); its compiled kernel is
        loaded with it (``load_compiled_decision``: in the crawl process and in each analysis
        worker, whose ``TopicModel`` loads at its start)."""
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
        load_compiled_decision()
        return cls(weights, float(intercept))
