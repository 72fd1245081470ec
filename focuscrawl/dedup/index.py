"""Block-permutation index for Hamming-distance search over 64-bit fingerprints.

Manku, Jain and Das Sarma (2007), as described in seed 004: split the f = 64 bits
into B blocks. Two fingerprints within Hamming distance k differ in at most k blocks,
so they agree on at least B − k of them. For each of the C(B, B−k) choices of B − k
blocks there is one table keyed by the concatenation of those blocks; a query looks
up its own key in every table and verifies the candidates by the full Hamming
distance. Every fingerprint within distance k shares at least one table key with
the query, so there are no false negatives.

All tables live in one sorted ``uint64`` array: the key of table t is
``t << keybits | concatenated blocks``, with the full fingerprint and the id beside
each key (contiguous candidates, no random gathers). A directory of bucket offsets
over the top ~log2(entries) key bits turns each table lookup into two reads, for
one query or a vectorised batch. New fingerprints go to a small unsorted tail
that queries scan by brute force; the tail is merged into the sorted array when it
reaches ``max(merge_threshold, n / 64)``, which balances the copy of a merge against
the tail scan of a query as the index grows.
Ids are insertion positions 0, 1, 2, ...; callers keep their own payloads (URLs).
"""
from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

from focuscrawl import settings as defaults

BITS = 64
_U64 = np.uint64
_distance_then_id = operator.itemgetter(1, 0)


def _query_tables(fp: np.uint64, k: int, shift: int, layout: np.ndarray, directory: np.ndarray,
                  table_fps: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Matches of one query in the sorted tables, as ``distance << 32 | id`` sorted ascending.

    Compiled (numba) so that verifying the ~70 candidates of a query costs a few ns
    each instead of ~60 ns in the interpreter. ``layout`` row t is the table's key
    prefix followed by (start bit, mask, offset) for each of its blocks (mask 0 pads).
    A match is reported from the first table whose bucket holds it: a later table
    skips it if its own bucket in an earlier table is the query's, which needs no
    set of seen ids.
    """
    tables = layout.shape[0]
    parts = (layout.shape[1] - 1) // 3
    sh = np.uint64(shift)
    buckets = np.empty(tables, dtype=np.int64)
    for t in range(tables):
        key = layout[t, 0]
        for p in range(parts):
            key |= ((fp >> layout[t, 1 + 3 * p]) & layout[t, 2 + 3 * p]) << layout[t, 3 + 3 * p]
        buckets[t] = np.int64(key >> sh)
    out = np.empty(16, dtype=np.int64)
    found = 0
    m1 = np.uint64(0x5555555555555555)
    m2 = np.uint64(0x3333333333333333)
    m4 = np.uint64(0x0F0F0F0F0F0F0F0F)
    h01 = np.uint64(0x0101010101010101)
    for t in range(tables):
        b = buckets[t]
        for pos in range(directory[b], directory[b + 1]):
            stored = table_fps[pos]
            x = stored ^ fp
            x = x - ((x >> np.uint64(1)) & m1)
            x = (x & m2) + ((x >> np.uint64(2)) & m2)
            x = (x + (x >> np.uint64(4))) & m4
            d = np.int64((x * h01) >> np.uint64(56))
            if d > k:
                continue
            seen = False
            for u in range(t):  # already reported by an earlier table whose bucket holds it?
                key = layout[u, 0]
                for p in range(parts):
                    key |= ((stored >> layout[u, 1 + 3 * p]) & layout[u, 2 + 3 * p]) << layout[u, 3 + 3 * p]
                if np.int64(key >> sh) == buckets[u]:
                    seen = True
                    break
            if seen:
                continue
            if found == len(out):
                grown = np.empty(2 * len(out), dtype=np.int64)
                grown[:found] = out
                out = grown
            out[found] = (d << 32) | np.int64(ids[pos])
            found += 1
    return np.sort(out[:found])


@functools.cache
def compiled_query_tables() -> Callable[..., np.ndarray]:
    """``_query_tables`` compiled by numba: loaded with the first sorted tables (the first
    merge, or an index restored with them), so a crawl or command whose index stays a tail
    never imports numba (~0.6 s of CPU with the load: ~0.3 s from numba's cache, ~3.5 s
    compiling)."""
    from focuscrawl.compiled import jit

    return jit(_query_tables)


def hamming_distances(fingerprints: np.ndarray, query: int) -> np.ndarray:
    """Hamming distance of one fingerprint to each of an array (brute force: XOR + popcount)."""
    return np.bitwise_count(np.asarray(fingerprints, dtype=_U64) ^ _U64(query))


class Matches(NamedTuple):
    """Verified matches of a batch of queries, sorted by (query, distance, id)."""

    query: np.ndarray  # index of the query in the batch
    ids: np.ndarray  # id of the matching fingerprint
    distances: np.ndarray  # Hamming distance, <= max_distance
    candidates: int  # fingerprints compared: table hits (with repeats across tables) + unsorted tail
    key_matches: int = 0  # table hits with exactly the query's key (if asked): the seed's candidates


class SimHashIndex:
    """Fingerprints searchable by Hamming distance ≤ ``max_distance`` (k) with B blocks."""

    def __init__(self, max_distance: int = defaults.FOCUSCRAWL_NEARDUP_MAX_DISTANCE,
                 blocks: int = defaults.FOCUSCRAWL_NEARDUP_BLOCKS, *, merge_threshold: int = 2048) -> None:
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
        self._totalbits = self._keybits + (math.ceil(math.log2(len(self._parts))) if len(self._parts) > 1 else 0)
        if self._totalbits > BITS:
            raise ValueError(f"blocks={blocks}, k={max_distance}: table keys do not fit in 64 bits")
        # For the compiled single query: row t = key prefix, then (start, mask, offset) per block.
        width = max(len(parts) for parts in self._parts)
        self._layout = np.zeros((len(self._parts), 1 + 3 * width), dtype=_U64)
        for t, parts in enumerate(self._parts):
            self._layout[t, 0] = t << self._keybits if len(self._parts) > 1 else 0
            for p, (start, size, offset) in enumerate(parts):
                self._layout[t, 1 + 3 * p: 4 + 3 * p] = (start, (1 << size) - 1, offset)
        # Directory over the top bits of the keys: bucket b spans _dir[b]:_dir[b + 1].
        self._shift = 0
        self._dir = np.zeros(2, dtype=np.int64)
        self._fps = np.empty(1024, dtype=_U64)
        self._n = 0
        self._n_sorted = 0
        self._keys = np.empty(0, dtype=_U64)
        self._ids = np.empty(0, dtype=np.int32)
        self._table_fps = np.empty(0, dtype=_U64)  # the full fingerprint beside each key

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
        return (self._fps.nbytes + self._keys.nbytes + self._ids.nbytes + self._table_fps.nbytes
                + self._dir.nbytes)

    @classmethod
    def from_fingerprints(cls, fingerprints: Iterable[int] | np.ndarray, max_distance: int = defaults.FOCUSCRAWL_NEARDUP_MAX_DISTANCE,
                          blocks: int = defaults.FOCUSCRAWL_NEARDUP_BLOCKS, **kwargs) -> SimHashIndex:
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
        # the tail may grow with the index (n/64): a merge copies all tables, a query scans the tail
        if self._n - self._n_sorted >= max(self.merge_threshold, self._n_sorted >> 6):
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
        fps = self._fps[ids]
        if len(self._keys):
            # 'right' keeps ids ascending among equal keys (older entries first).
            pos = np.searchsorted(self._keys, keys, side="right")
            self._keys = np.insert(self._keys, pos, keys)
            self._ids = np.insert(self._ids, pos, ids)
            self._table_fps = np.insert(self._table_fps, pos, fps)
        else:
            self._keys, self._ids, self._table_fps = keys, ids, fps
        self._n_sorted = self._n
        self._build_directory()
        # numba loads the compiled query at its first call: now, with the merge's copy, not
        # at the next page's query
        self._sorted_matches(_U64(0), 0)

    def _sorted_matches(self, fp: np.uint64, k: int) -> np.ndarray:
        """``_query_tables`` (compiled) on the sorted tables: ``distance << 32 | id``, ascending."""
        return compiled_query_tables()(fp, k, self._shift, self._layout, self._dir, self._table_fps, self._ids)

    def _build_directory(self) -> None:
        """Bucket offsets over the top D key bits, D ≈ log2(entries): a lookup is two reads.

        A bucket may hold keys that differ below the top D bits; they are verified
        like every candidate, so the directory can only add candidates, never lose one.
        D covers at least the table prefix, so that a bucket never spans two tables: the
        compiled query skips a match already reported by an earlier table's bucket, and
        a bucket holding two tables' entries of one fingerprint reported it twice.
        """
        table_bits = self._totalbits - self._keybits
        d = min(self._totalbits, max(1, table_bits, math.ceil(math.log2(max(len(self._keys), 2))) - 1))
        self._shift = self._totalbits - d
        counts = np.bincount((self._keys >> _U64(self._shift)).astype(np.int64), minlength=1 << d)
        self._dir = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def query_many(self, fingerprints: Iterable[int] | np.ndarray, max_distance: int | None = None,
                   count_key_matches: bool = False) -> Matches:
        """All stored fingerprints within ``max_distance`` (default k, at most k) of each query.

        ``candidates`` counts what was compared, directory-bucket neighbours included;
        with ``count_key_matches`` the hits whose table key equals the query's (the
        same B − k blocks) are counted too.
        """
        k = self.max_distance if max_distance is None else int(max_distance)
        if not 0 <= k <= self.max_distance:
            raise ValueError(f"max_distance must be between 0 and the index's k={self.max_distance}")
        fps = np.asarray(fingerprints if isinstance(fingerprints, np.ndarray) else list(fingerprints), dtype=_U64)
        q = len(fps)
        qs: list[np.ndarray] = []
        cs: list[np.ndarray] = []
        ds: list[np.ndarray] = []
        candidates = key_matches = 0
        if self._n_sorted and q:
            keys = self.table_keys(fps).ravel()
            buckets = (keys >> _U64(self._shift)).astype(np.int64)
            lo, hi = self._dir[buckets], self._dir[buckets + 1]
            counts = hi - lo
            total = int(counts.sum())
            candidates += total
            if total:
                qrep = np.repeat(np.tile(np.arange(q), len(self._parts)), counts)
                pos = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)
                if count_key_matches:
                    key_matches = int(np.count_nonzero(self._keys[pos] == np.repeat(keys, counts)))
                dist = np.bitwise_count(self._table_fps[pos] ^ fps[qrep])
                ok = np.nonzero(dist <= k)[0]
                qs.append(qrep[ok])
                cs.append(self._ids[pos[ok]].astype(np.int64))
                ds.append(dist[ok].astype(np.int64))
        if self._n > self._n_sorted and q:
            tail = self._fps[self._n_sorted:self._n]
            candidates += q * len(tail)
            for start in range(0, q, 1024):
                dist = np.bitwise_count(fps[start:start + 1024, None] ^ tail[None, :])
                qi, ti = np.nonzero(dist <= k)
                qs.append(qi.astype(np.int64) + start)
                cs.append(ti.astype(np.int64) + self._n_sorted)
                ds.append(dist[qi, ti].astype(np.int64))
        if not qs:
            empty = np.empty(0, dtype=np.int64)
            return Matches(empty, empty, empty, candidates, key_matches)
        qrep, cand, dist = np.concatenate(qs), np.concatenate(cs), np.concatenate(ds)
        # a pair found in several tables is reported once
        _, first = np.unique(qrep * np.int64(self._n) + cand, return_index=True)
        qrep, cand, dist = qrep[first], cand[first], dist[first]
        order = np.lexsort((cand, dist, qrep))
        return Matches(qrep[order], cand[order], dist[order], candidates, key_matches)

    def nearest(self, fingerprint: int, exclude: int = -1, before: int | None = None) -> tuple[int, int] | None:
        """``query``'s first ``(id, distance)`` (nearest, then oldest) other than id ``exclude``
        and below id ``before`` (if given), or ``None``, without building the list of every
        match: a site of near-identical pages matches all the earlier ones, and a list per page
        grows with them."""
        k = self.max_distance
        fp = _U64(fingerprint)
        end = self._n if before is None else max(0, min(int(before), self._n))
        best = None
        if self._n_sorted:
            packed = self._sorted_matches(fp, k)
            if end < self._n:
                packed = packed[(packed & 0xFFFFFFFF) < end]
            for c in packed[:2].tolist():  # sorted: the first, or the second if the first is excluded
                if c & 0xFFFFFFFF != exclude:
                    best = c
                    break
        if end > self._n_sorted:
            dist = np.bitwise_count(self._fps[self._n_sorted:end] ^ fp).astype(np.int64)
            if 0 <= exclude - self._n_sorted < len(dist):
                dist[exclude - self._n_sorted] = k + 1
            i = int(np.argmin(dist))  # the first of the smallest: the oldest
            if dist[i] <= k and (best is None or (int(dist[i]) << 32 | i + self._n_sorted) < best):
                best = int(dist[i]) << 32 | i + self._n_sorted
        return None if best is None else (best & 0xFFFFFFFF, best >> 32)

    def query(self, fingerprint: int, max_distance: int | None = None) -> list[tuple[int, int]]:
        """``(id, distance)`` of stored fingerprints within the distance, nearest (then oldest) first.

        The same result as ``query_many`` for one fingerprint, on a path with one call
        into compiled code for the sorted tables (``_query_tables``): at ~70 candidates
        per query both numpy calls (~0.5-1 µs each) and interpreter loops (~60 ns per
        candidate) cost more than the search itself. Only the unsorted tail, which can
        hold thousands of fingerprints, is scanned with numpy.
        """
        k = self.max_distance if max_distance is None else int(max_distance)
        if not 0 <= k <= self.max_distance:
            raise ValueError(f"max_distance must be between 0 and the index's k={self.max_distance}")
        fp = _U64(fingerprint)
        found = []
        if self._n_sorted:
            packed = self._sorted_matches(fp, k)
            found = [(c & 0xFFFFFFFF, c >> 32) for c in packed.tolist()]
        if self._n > self._n_sorted:
            dist = np.bitwise_count(self._fps[self._n_sorted:self._n] ^ fp)
            tail = np.nonzero(dist <= k)[0]
            if len(tail):
                found += zip((tail + self._n_sorted).tolist(), dist[tail].tolist())
                found.sort(key=_distance_then_id)
        return found
