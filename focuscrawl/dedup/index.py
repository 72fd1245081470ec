"""Block-permutation index for Hamming-distance search over 64-bit fingerprints.

Manku, Jain and Das Sarma (2007), as described in seed 004: split the f = 64 bits
into B blocks. Two fingerprints within Hamming distance k differ in at most k blocks,
so they agree on at least B − k of them. For each of the C(B, B−k) choices of B − k
blocks there is one table keyed by the concatenation of those blocks; a query looks
up its own key in every table and verifies the candidates by the full Hamming
distance. Every fingerprint within distance k shares at least one table key with
the query, so there are no false negatives.

All tables live in one sorted ``uint64`` array: the key of table t is
``t << keybits | concatenated blocks``, so one ``searchsorted`` finds the ranges of
all tables for a batch of queries. New fingerprints go to a small unsorted tail
that queries scan by brute force; the tail is merged into the sorted array when it
reaches ``merge_threshold`` (amortised O(log n) appends keep crawl-time adds cheap).
Ids are insertion positions 0, 1, 2, ...; callers keep their own payloads (URLs).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

BITS = 64
_U64 = np.uint64


def hamming_distances(fingerprints: np.ndarray, query: int) -> np.ndarray:
    """Hamming distance of one fingerprint to each of an array (brute force: XOR + popcount)."""
    return np.bitwise_count(np.asarray(fingerprints, dtype=_U64) ^ _U64(query))


class Matches(NamedTuple):
    """Verified matches of a batch of queries, sorted by (query, distance, id)."""

    query: np.ndarray  # index of the query in the batch
    ids: np.ndarray  # id of the matching fingerprint
    distances: np.ndarray  # Hamming distance, <= max_distance
    candidates: int  # distinct (query, id) candidates looked at before verification


class SimHashIndex:
    """Fingerprints searchable by Hamming distance ≤ ``max_distance`` (k) with B blocks."""

    def __init__(self, max_distance: int = 3, blocks: int = 4, *, merge_threshold: int = 2048) -> None:
        if not 1 <= blocks <= 16:
            raise ValueError(f"blocks must be between 1 and 16, not {blocks!r}")
        if not 0 <= max_distance < blocks:
            raise ValueError(f"max_distance (k) must be >= 0 and < blocks ({blocks}), not {max_distance!r}")
        self.max_distance = int(max_distance)
        self.blocks = int(blocks)
        self.merge_threshold = max(1, int(merge_threshold))
        sizes = [BITS // blocks + (1 if i < BITS % blocks else 0) for i in range(blocks)]
        starts = [sum(sizes[:i]) for i in range(blocks)]
        #: For each table the (start bit, size, offset in the key) of its blocks.
        self._parts: list[list[tuple[int, int, int]]] = []
        for combo in itertools.combinations(range(blocks), blocks - max_distance):
            offset, parts = 0, []
            for b in combo:
                parts.append((starts[b], sizes[b], offset))
                offset += sizes[b]
            self._parts.append(parts)
        self._keybits = max(sum(p[1] for p in parts) for parts in self._parts)
        if len(self._parts) > 1 and self._keybits + math.ceil(math.log2(len(self._parts))) > BITS:
            raise ValueError(f"blocks={blocks}, k={max_distance}: table keys do not fit in 64 bits")
        self._fps = np.empty(1024, dtype=_U64)
        self._n = 0
        self._n_sorted = 0
        self._keys = np.empty(0, dtype=_U64)
        self._ids = np.empty(0, dtype=np.int32)

    @property
    def tables(self) -> int:
        """Number of tables, C(B, B − k)."""
        return len(self._parts)

    def __len__(self) -> int:
        return self._n

    @property
    def fingerprints(self) -> np.ndarray:
        """All fingerprints by id (a view; do not modify)."""
        return self._fps[: self._n]

    @property
    def nbytes(self) -> int:
        """Memory held by the index arrays."""
        return self._fps.nbytes + self._keys.nbytes + self._ids.nbytes

    @classmethod
    def from_fingerprints(cls, fingerprints: Iterable[int] | np.ndarray, max_distance: int = 3,
                          blocks: int = 4, **kwargs) -> SimHashIndex:
        index = cls(max_distance, blocks, **kwargs)
        index.add_many(fingerprints)
        index.merge()
        return index

    def table_keys(self, fingerprints: np.ndarray) -> np.ndarray:
        """Keys of ``fingerprints`` in every table, shape (tables, n)."""
        fps = np.asarray(fingerprints, dtype=_U64)
        out = np.empty((len(self._parts), len(fps)), dtype=_U64)
        for t, parts in enumerate(self._parts):
            key = np.full(len(fps), _U64(t) << _U64(self._keybits) if len(self._parts) > 1 else 0, dtype=_U64)
            for start, size, offset in parts:
                mask = _U64((1 << size) - 1)
                key |= ((fps >> _U64(start)) & mask) << _U64(offset)
            out[t] = key
        return out

    def add(self, fingerprint: int) -> int:
        """Add one fingerprint; returns its id."""
        return self.add_many(np.array([fingerprint], dtype=_U64))

    def add_many(self, fingerprints: Iterable[int] | np.ndarray) -> int:
        """Add fingerprints; returns the id of the first (the others follow in order)."""
        fps = np.asarray(fingerprints if isinstance(fingerprints, np.ndarray) else list(fingerprints), dtype=_U64)
        first = self._n
        need = self._n + len(fps)
        if need > len(self._fps):
            grown = np.empty(max(need, 2 * len(self._fps)), dtype=_U64)
            grown[: self._n] = self._fps[: self._n]
            self._fps = grown
        self._fps[self._n:need] = fps
        self._n = need
        if self._n - self._n_sorted >= self.merge_threshold:
            self.merge()
        return first

    def merge(self) -> None:
        """Move the unsorted tail into the sorted tables."""
        if self._n == self._n_sorted:
            return
        new_ids = np.arange(self._n_sorted, self._n, dtype=np.int32)
        keys = self.table_keys(self._fps[self._n_sorted:self._n]).ravel()
        ids = np.tile(new_ids, len(self._parts))
        order = np.argsort(keys, kind="stable")
        keys, ids = keys[order], ids[order]
        if len(self._keys):
            # 'right' keeps ids ascending among equal keys (older entries first).
            pos = np.searchsorted(self._keys, keys, side="right")
            self._keys = np.insert(self._keys, pos, keys)
            self._ids = np.insert(self._ids, pos, ids)
        else:
            self._keys, self._ids = keys, ids
        self._n_sorted = self._n

    def query_many(self, fingerprints: Iterable[int] | np.ndarray, max_distance: int | None = None) -> Matches:
        """All stored fingerprints within ``max_distance`` (default k, at most k) of each query."""
        k = self.max_distance if max_distance is None else int(max_distance)
        if not 0 <= k <= self.max_distance:
            raise ValueError(f"max_distance must be between 0 and the index's k={self.max_distance}")
        fps = np.asarray(fingerprints if isinstance(fingerprints, np.ndarray) else list(fingerprints), dtype=_U64)
        q = len(fps)
        qs, cs = [], []
        if self._n_sorted and q:
            keys = self.table_keys(fps).ravel()
            lo = np.searchsorted(self._keys, keys, side="left")
            hi = np.searchsorted(self._keys, keys, side="right")
            counts = hi - lo
            total = int(counts.sum())
            if total:
                qrep = np.repeat(np.tile(np.arange(q), len(self._parts)), counts)
                pos = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)
                qs.append(qrep)
                cs.append(self._ids[pos].astype(np.int64))
        if self._n > self._n_sorted and q:
            tail_ids = np.arange(self._n_sorted, self._n, dtype=np.int64)
            qs.append(np.repeat(np.arange(q), len(tail_ids)))
            cs.append(np.tile(tail_ids, q))
        if not qs:
            empty = np.empty(0, dtype=np.int64)
            return Matches(empty, empty, empty, 0)
        qrep, cand = np.concatenate(qs), np.concatenate(cs)
        pair = np.unique(qrep * np.int64(max(self._n, 1)) + cand)
        qrep, cand = pair // max(self._n, 1), pair % max(self._n, 1)
        dist = np.bitwise_count(self._fps[cand] ^ fps[qrep]).astype(np.int64)
        ok = dist <= k
        qrep, cand, dist = qrep[ok], cand[ok], dist[ok]
        order = np.lexsort((cand, dist, qrep))
        return Matches(qrep[order], cand[order], dist[order], len(pair))

    def query(self, fingerprint: int, max_distance: int | None = None) -> list[tuple[int, int]]:
        """``(id, distance)`` of stored fingerprints within the distance, nearest (then oldest) first."""
        m = self.query_many(np.array([fingerprint], dtype=_U64), max_distance)
        return list(zip(m.ids.tolist(), m.distances.tolist()))
