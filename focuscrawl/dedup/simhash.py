"""64-bit SimHash of word n-grams weighted by term frequency (Charikar 2002; SPEC §10).

Each distinct token is hashed once with BLAKE2b (64 bits; stable across processes and
platforms, unlike Python's salted ``hash``); an n-gram's hash chains the hashes of its
n tokens through the SplitMix64 finaliser, vectorised over all positions with numpy.
Bit i of the fingerprint is the sign of Σ ±tf over the distinct n-grams, + where the
n-gram's hash has bit i set. Fingerprints are Python ints in [0, 2**64); bit i is
``(fp >> i) & 1``.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from itertools import chain

import numpy as np

from focuscrawl import settings as defaults
from focuscrawl.text.normalize import normalize

BITS = 64
#: The n-gram settings of the seed: 3-grams, 5-grams, or the union of both in one vector.
NGRAM_MODES = {"3": (3,), "5": (5,), "3+5": (3, 5)}
_U64 = np.uint64


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


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (a bijection of uint64 with full avalanche), element-wise, in
    place: one temporary at a time (a long page has ~500,000 n-grams, 4 MB an array)."""
    z ^= z >> _U64(30)
    z *= _U64(0xBF58476D1CE4E5B9)
    z ^= z >> _U64(27)
    z *= _U64(0x94D049BB133111EB)
    z ^= z >> _U64(31)
    return z


#: distinct tokens whose hashes a process remembers across texts (a site's vocabulary
#: recurs page after page): ~4 MB; the memo starts again when full
TOKEN_MEMO = 1 << 15


class _TokenHashes(dict):
    """token -> its BLAKE2b 64-bit hash (little-endian bytes), computed on first sight."""

    def __missing__(self, token: str) -> bytes:
        if len(self) >= TOKEN_MEMO:
            self.clear()
        digest = self[token] = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        return digest


_TOKEN_HASHES = _TokenHashes()


def token_hashes(tokens: Iterable[str]) -> np.ndarray:
    """BLAKE2b 64-bit hash of each token (little-endian), each distinct token hashed once
    per process (``TOKEN_MEMO``); ``tokens`` may be an iterator (a long text's token strings
    need not all be alive)."""
    out = bytearray(b"".join(map(_TOKEN_HASHES.__getitem__, tokens)))
    hashes = np.frombuffer(out, dtype="<u8")  # a writable view of the buffer, no copy
    return hashes if hashes.dtype.isnative else hashes.astype(_U64)


def _chain(th: np.ndarray, n: int) -> np.ndarray:
    """Hashes of all windows of n consecutive token hashes (order matters, n is mixed in)."""
    count = len(th) - n + 1
    h = _mix(np.full(count, n, dtype=_U64))
    for j in range(n):
        h ^= th[j:j + count]
        _mix(h)
    return h


def ngram_hashes(tokens: Iterable[str], sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct n-gram hashes, their term frequencies)`` for each length in ``sizes``.

    A text shorter than n contributes itself as one n-gram, so that short texts
    (captions, ALT texts) still get a fingerprint; no tokens gives empty arrays.
    """
    th = token_hashes(tokens)
    parts = [_chain(th, n if len(th) >= n else len(th)) for n in sizes if len(th)]
    del th
    if not parts:
        return np.empty(0, dtype=_U64), np.empty(0, dtype=np.int64)
    grams = parts[0] if len(parts) == 1 else np.concatenate(parts)
    del parts
    return np.unique(grams, return_counts=True)


#: Hashes whose ±1 bit matrix is built at once (8 MiB of float64): a 2 MB page has ~400,000
#: distinct n-grams, whose whole matrix would take 200 MB. The weights are term counts, so
#: the sums are exact and the same in blocks.
_BLOCK = 1 << 14


def simhash_of_hashes(hashes: np.ndarray, weights: np.ndarray) -> int | None:
    """SimHash of feature hashes with weights; None when there are none."""
    if not len(hashes):
        return None
    hashes = np.ascontiguousarray(hashes, dtype="<u8")
    weights = np.asarray(weights, dtype=np.float64)
    sums = np.zeros(BITS)
    for start in range(0, len(hashes), _BLOCK):
        # bits[j, i] = bit i of hash j (little-endian bytes, little bit order within a byte).
        bits = np.unpackbits(hashes[start:start + _BLOCK].view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        sums += weights[start:start + _BLOCK] @ (bits.astype(np.float64) * 2.0 - 1.0)
    return int(np.packbits(sums > 0, bitorder="little").view("<u8")[0])


def simhash(tokens: Iterable[str], ngrams: str | Sequence[int] = defaults.FOCUSCRAWL_NEARDUP_NGRAMS) -> int | None:
    """SimHash of already normalised tokens; None for an empty token list."""
    return simhash_of_hashes(*ngram_hashes(tokens, parse_ngrams(ngrams)))


def sentences_simhash(sentences: Iterable[str],
                      ngrams: str | Sequence[int] = defaults.FOCUSCRAWL_NEARDUP_NGRAMS) -> int | None:
    """SimHash of a page's normalised sentences (the tokens of all, in order), read a
    sentence at a time: a long page's token strings are never all alive."""
    return simhash(chain.from_iterable(map(str.split, sentences)), ngrams)


def text_simhash(text: str, ngrams: str | Sequence[int] = defaults.FOCUSCRAWL_NEARDUP_NGRAMS) -> int | None:
    """SimHash of raw text, tokenised with ``focuscrawl.text.normalize``; None if no tokens."""
    return simhash(normalize(text).split(), ngrams)


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two fingerprints."""
    return (a ^ b).bit_count()
