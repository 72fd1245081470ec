"""MinHash with super-shingles, the baseline of seed 004 (Broder 1997; Fetterly et al. 2003).

A document's 8-word shingles (a set: each once) are min-hashed with 84 hash
functions (datasketch, 64-bit-range permutations); the 84 minima are split into 6
non-overlapping groups of 14 in permutation order and each group is hashed to a
64-bit super-shingle. Two documents are near-duplicates if at least 2 of their 6
super-shingles match (position by position). Storage: 6 × 64 bits per document.
"""
from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np
from datasketch import MinHash

SHINGLE_WORDS = 8
NUM_PERM = 84
SUPER_SHINGLES = 6
MIN_MATCHES = 2
SEED = 1


def shingles(tokens: Sequence[str], width: int = SHINGLE_WORDS) -> set[str]:
    """The set of ``width``-word shingles; a shorter text is one shingle; no tokens, none."""
    if len(tokens) < width:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i:i + width]) for i in range(len(tokens) - width + 1)}


def super_shingles(tokens: Sequence[str], width: int = SHINGLE_WORDS, num_perm: int = NUM_PERM,
                   groups: int = SUPER_SHINGLES) -> tuple[int, ...] | None:
    """The ``groups`` super-shingles of a token sequence; None if it has no tokens."""
    if num_perm % groups:
        raise ValueError(f"num_perm ({num_perm}) must be a multiple of the number of super-shingles ({groups})")
    sh = shingles(tokens, width)
    if not sh:
        return None
    mh = MinHash(num_perm=num_perm, seed=SEED)
    mh.update_batch([s.encode("utf-8") for s in sh])
    values = np.asarray(mh.hashvalues, dtype="<u8").reshape(groups, -1)
    return tuple(int.from_bytes(hashlib.blake2b(row.tobytes(), digest_size=8).digest(), "little")
                 for row in values)


def matching_super_shingles(a: Sequence[int], b: Sequence[int]) -> int:
    """How many positions two super-shingle tuples agree on."""
    return sum(x == y for x, y in zip(a, b))


class SuperShingleIndex:
    """Finds stored documents sharing ≥ ``min_matches`` super-shingles with a query."""

    def __init__(self, min_matches: int = MIN_MATCHES, groups: int = SUPER_SHINGLES) -> None:
        self.min_matches = min_matches
        self.groups = groups
        self._tables: list[defaultdict[int, list[int]]] = [defaultdict(list) for _ in range(groups)]
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, sketch: Sequence[int]) -> int:
        """Store one document's super-shingles; returns its id."""
        ident = self._n
        for table, value in zip(self._tables, sketch):
            table[value].append(ident)
        self._n += 1
        return ident

    def query(self, sketch: Sequence[int]) -> tuple[list[tuple[int, int]], int]:
        """``([(id, matches)], candidates)``: near-duplicates, most matches (then oldest) first."""
        counts: Counter[int] = Counter()
        for table, value in zip(self._tables, sketch):
            counts.update(table.get(value, ()))
        hits = sorted(((i, c) for i, c in counts.items() if c >= self.min_matches), key=lambda x: (-x[1], x[0]))
        return hits, len(counts)
