"""Numpy columns in raw files and their external sort, in a fixed memory budget.

The machinery under ``focuscrawl.lm.external`` (modified Kneser-Ney estimation on disk):
a ``Column`` is a 1-D array in a file, appended in pieces and read back in blocks;
``external_sort`` sorts blocks of named columns by one of them as sorted runs on disk,
k-way merged block by block (``merge_runs``); ``whole_groups`` regroups the merged blocks
so that no group of equal keys spans two of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

#: the smallest block a merge reads from each run
_MIN_ROWS = 16


# -- files of one dtype ---------------------------------------------------------------
class Column:
    """A 1-D array in a raw file: appended in pieces, read back in blocks.

    Reads use ``np.fromfile`` (not ``memmap``), so a file read once does not stay in the
    process's resident memory.
    """

    def __init__(self, path: Path, dtype) -> None:
        self.path, self.dtype = Path(path), np.dtype(dtype)
        self._fh = None
        self.length = self.path.stat().st_size // self.dtype.itemsize if self.path.exists() else 0

    def append(self, values: np.ndarray) -> "Column":
        if self._fh is None:
            self._fh = open(self.path, "ab")
        np.ascontiguousarray(values, dtype=self.dtype).tofile(self._fh)
        self.length += len(values)
        return self

    def close(self) -> "Column":
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        return self

    def __len__(self) -> int:
        return self.length

    def read(self, start: int, stop: int) -> np.ndarray:
        start, stop = max(0, start), min(stop, self.length)
        if stop <= start:
            return np.empty(0, self.dtype)
        return np.fromfile(self.path, self.dtype, stop - start, offset=start * self.dtype.itemsize)

    def blocks(self, size: int) -> Iterator[np.ndarray]:
        for lo in range(0, self.length, size):
            yield self.read(lo, lo + size)

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


class Gather:
    """``values[idx]`` for non-decreasing ``idx`` over a stream of value blocks."""

    def __init__(self, blocks: Iterable[np.ndarray]) -> None:
        self._blocks = iter(blocks)
        self._buf: np.ndarray | None = None
        self._start = 0  # index of self._buf[0]

    def take(self, idx: np.ndarray) -> np.ndarray:
        if not len(idx):
            return np.empty(0, self._buf.dtype if self._buf is not None else np.float64)
        lo, hi = int(idx[0]), int(idx[-1])
        if self._buf is None:
            self._buf = next(self._blocks)
        # drop blocks entirely before lo
        while self._start + len(self._buf) <= lo:
            self._start += len(self._buf)
            self._buf = next(self._blocks)
        if lo > self._start:
            self._buf = self._buf[lo - self._start:]
            self._start = lo
        parts = [self._buf]
        end = self._start + len(self._buf)
        while end <= hi:
            nxt = next(self._blocks)
            parts.append(nxt)
            end += len(nxt)
        if len(parts) > 1:
            self._buf = np.concatenate(parts)
        return self._buf[idx - self._start]


# -- sorted runs and their merge ------------------------------------------------------
@dataclass
class Run:
    """Columns of equal length sorted by ``key`` (written by one chunk)."""

    columns: dict[str, Column]

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def remove(self) -> None:
        for c in self.columns.values():
            c.remove()


def write_run(prefix: Path, arrays: dict[str, np.ndarray]) -> Run:
    cols = {}
    for name, values in arrays.items():
        cols[name] = Column(Path(f"{prefix}.{name}"), values.dtype).append(values).close()
    return Run(cols)


def merge_runs(runs: Sequence[Run], key: str, block: int) -> Iterator[tuple[dict[str, np.ndarray], np.ndarray]]:
    """k-way merge of sorted runs: yields rounds of (columns sorted by ``key``, source run
    of each row). All rows of one key come in one round and in run order (stable): a
    round takes every buffered row below the smallest last key among the buffers of
    runs that have rows after their buffer (no such row can be smaller).
    """
    block = max(block, _MIN_ROWS)
    pos = [0] * len(runs)  # next unread row of each run
    bufs: list[dict[str, np.ndarray] | None] = [None] * len(runs)

    def more(j: int) -> bool:
        return pos[j] < len(runs[j])

    def read(j: int) -> None:
        """Append the run's next block to its buffer."""
        new = {name: c.read(pos[j], pos[j] + block) for name, c in runs[j].columns.items()}
        pos[j] += len(new[key])
        old = bufs[j]
        bufs[j] = new if old is None else {name: np.concatenate([old[name], new[name]]) for name in new}

    for j in range(len(runs)):
        if more(j):
            read(j)
    while True:
        active = [j for j in range(len(runs)) if bufs[j] is not None]
        if not active:
            return
        for j in active:  # a buffer of one key could not give a row below the limit
            while more(j) and bufs[j][key][0] == bufs[j][key][-1]:
                read(j)
        lasts = [bufs[j][key][-1] for j in active if more(j)]
        limit = min(lasts) if lasts else None
        parts, sources = [], []
        for j in active:
            b = bufs[j]
            cut = len(b[key]) if limit is None else int(np.searchsorted(b[key], limit, side="left"))
            if cut == 0:
                continue
            parts.append({name: v[:cut] for name, v in b.items()})
            sources.append(np.full(cut, j, np.int32))
            bufs[j] = {name: v[cut:] for name, v in b.items()} if cut < len(b[key]) else None
            if bufs[j] is None and more(j):
                read(j)
        merged = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        source = np.concatenate(sources)
        if len(parts) > 1:
            order = np.argsort(merged[key], kind="stable")
            merged = {name: v[order] for name, v in merged.items()}
            source = source[order]
        yield merged, source


def sort_to_runs(blocks: Iterable[dict[str, np.ndarray]], key: str, chunk: int, prefix: Path,
                 reduce: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None) -> list[Run]:
    """Cut a stream of column blocks into chunks of ``chunk`` rows, sort each by ``key``
    (stable; ``reduce`` may then combine rows) and spill it as a run."""
    runs: list[Run] = []
    pending: list[dict[str, np.ndarray]] = []
    size = 0

    def spill() -> None:
        nonlocal pending, size
        if not pending:
            return
        arrays = {name: np.concatenate([p[name] for p in pending]) for name in pending[0]}
        order = np.argsort(arrays[key], kind="stable")
        arrays = {name: v[order] for name, v in arrays.items()}
        if reduce is not None:
            arrays = reduce(arrays)
        runs.append(write_run(Path(f"{prefix}.{len(runs)}"), arrays))
        pending, size = [], 0

    for b in blocks:
        n = len(b[key])
        lo = 0
        while lo < n:
            take = min(n - lo, chunk - size)
            pending.append({name: v[lo:lo + take] for name, v in b.items()})
            size += take
            lo += take
            if size >= chunk:
                spill()
    spill()
    return runs


def external_sort(blocks: Iterable[dict[str, np.ndarray]], key: str, chunk: int, prefix: Path,
                  ) -> Iterator[dict[str, np.ndarray]]:
    """The rows of ``blocks`` sorted by ``key`` (stable), as a stream of blocks."""
    runs = sort_to_runs(blocks, key, chunk, prefix)
    try:
        for merged, _ in merge_runs(runs, key, chunk // max(1, len(runs))):
            yield merged
    finally:
        for r in runs:
            r.remove()


def whole_groups(rounds: Iterable[dict[str, np.ndarray]], key: str) -> Iterator[dict[str, np.ndarray]]:
    """Re-cut a key-sorted stream so that no key's rows are split between two blocks."""
    carry: dict[str, np.ndarray] | None = None
    for b in rounds:
        if carry is not None:
            b = {name: np.concatenate([carry[name], v]) for name, v in b.items()}
        k = b[key]
        if not len(k):
            continue
        cut = int(np.searchsorted(k, k[-1], side="left"))
        carry = {name: v[cut:] for name, v in b.items()}
        if cut:
            yield {name: v[:cut] for name, v in b.items()}
    if carry is not None and len(carry[key]):
        yield carry


def _starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Boolean mask of the first row of each run of equal keys."""
    new = np.ones(len(sorted_keys), bool)
    if len(sorted_keys) > 1:
        np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new[1:])
    return new
