"""64-bit SimHash of word n-grams weighted by term frequency (Charikar 2002; SPEC §10).

Each feature (an n-gram of normalised tokens) is hashed to 64 bits with BLAKE2b, which
is stable across processes and platforms (Python's ``hash`` is salted). Bit i of the
fingerprint is the sign of Σ ±tf over the features, + where the feature's hash has bit i
set. Fingerprints are Python ints in [0, 2**64); bit i is ``(fp >> i) & 1``.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from focuscrawl.text.normalize import normalize

BITS = 64
#: The n-gram settings of the seed: 3-grams, 5-grams, or the union of both in one vector.
NGRAM_MODES = {"3": (3,), "5": (5,), "3+5": (3, 5)}


def parse_ngrams(mode: str | int | Sequence[int]) -> tuple[int, ...]:
    """``"3"``, ``"5"``, ``"3+5"`` (or 3, or (3, 5)) as a tuple of n-gram lengths."""
    if isinstance(mode, int):
        sizes: tuple[int, ...] = (mode,)
    elif isinstance(mode, str):
        try:
            sizes = tuple(int(p) for p in mode.replace(",", "+").split("+"))
        except ValueError:
            raise ValueError(f"n-gram mode must look like '3', '5' or '3+5', not {mode!r}") from None
    else:
        sizes = tuple(int(n) for n in mode)
    if not sizes or any(n < 1 for n in sizes):
        raise ValueError(f"n-gram lengths must be positive integers, not {mode!r}")
    return tuple(sorted(set(sizes)))


def ngram_features(tokens: Sequence[str], sizes: Sequence[int]) -> Counter[str]:
    """Term frequencies of the word n-grams of ``tokens`` for each length in ``sizes``.

    A text shorter than n contributes itself as one n-gram, so that short texts
    (captions, ALT texts) still get a fingerprint; no tokens gives no features.
    """
    counts: Counter[str] = Counter()
    for n in sizes:
        if len(tokens) < n:
            if tokens:
                counts[" ".join(tokens)] += 1
            continue
        counts.update(" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
    return counts


def feature_hashes(features: Iterable[str]) -> np.ndarray:
    """Stable 64-bit hashes (BLAKE2b, 8-byte digest, little-endian) as a uint64 array."""
    raw = b"".join(hashlib.blake2b(f.encode("utf-8"), digest_size=8).digest() for f in features)
    return np.frombuffer(raw, dtype="<u8")


def simhash_of_features(weights: Counter[str] | dict[str, float]) -> int | None:
    """SimHash of weighted features; None when there are none."""
    if not weights:
        return None
    hashes = feature_hashes(weights.keys())
    w = np.fromiter(weights.values(), dtype=np.float64, count=len(weights))
    # bits[j, i] = bit i of hash j (little-endian bytes, little bit order within a byte).
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    sums = w @ (bits.astype(np.float64) * 2.0 - 1.0)
    fp = np.packbits(sums > 0, bitorder="little").view("<u8")[0]
    return int(fp)


def simhash(tokens: Sequence[str], ngrams: str | Sequence[int] = "3") -> int | None:
    """SimHash of already normalised tokens; None for an empty token list."""
    return simhash_of_features(ngram_features(tokens, parse_ngrams(ngrams)))


def text_simhash(text: str, ngrams: str | Sequence[int] = "3") -> int | None:
    """SimHash of raw text, tokenised with ``focuscrawl.text.normalize``; None if no tokens."""
    return simhash(normalize(text).split(), ngrams)


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two fingerprints."""
    return (a ^ b).bit_count()
