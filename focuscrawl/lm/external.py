"""Modified Kneser–Ney estimation in a fixed memory budget (external sorting on disk).

The same model as ``focuscrawl.lm.train.estimate`` (and KenLM's ``lmplz``), computed
by passes over files instead of arrays of the whole corpus, so that peak memory
depends on the ``memory`` budget, not on the corpus:

1. **read**: sentences become a stream of word ids (one row per predicted word, ``</s>``
   included) and of each row's offset in its sentence, appended to files chunk by chunk;
   only the vocabulary stays in memory.
2. **count** order k = 2..N: a chunk of rows gives each k-gram the key
   ``id(suffix) * V + first word`` (ids are ranks in lmplz's suffix order, so key order
   *is* suffix order); each chunk's unique keys and counts are sorted in a process pool
   and spilled as a run; the runs are k-way merged block by block (a key never spans two
   merge rounds), which yields the order's table and every row's k-gram id (its rank),
   needed for order k+1.
3. **adjust**: the adjusted count of a (k-1)-gram is the number of k-grams with it as
   suffix: a run-length count over the sorted keys of order k.
4. **discount** from the count-of-counts (with lmplz's count-of-counts quirk).
5. **probabilities** order by order: the k-grams are sorted by context on disk; each
   context's group (kept whole across merge rounds) gives its denominator and γ (the
   context's ARPA backoff), each k-gram its uninterpolated probability; sorted back to
   suffix order on disk, they are interpolated with the lower order's probabilities,
   read as a stream because suffixes are sorted.
6. **write** ARPA: the words of an n-gram are its first word and its suffix's words,
   built block by block (a pool formats blocks in parallel, the writer keeps the order).

Every sum is taken over whole groups in the same order as the in-memory estimate, so the
result does not depend on the budget: a tiny budget (many runs) writes the same file.

The columns on disk and their external sort are ``focuscrawl.lm.external_sort``; the steps
above stay in one module (longer than most) because each reads the files the one before it
wrote, in this order.
"""
from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from focuscrawl.lm.external_sort import Column, Gather, Run, _starts, external_sort, merge_runs, whole_groups, write_run
from focuscrawl.lm.train import (BOS_ID, DEFAULT_ORDER, DISCOUNT_FALLBACK, SPECIAL_WORDS, corpus_sentences,
                                 count_of_counts, discounts_from_count_of_counts, format_log10, prune_thresholds)
from focuscrawl.processes import removed_when_gone, worker_process

logger = logging.getLogger(__name__)

#: Bytes of working memory per row of a counting chunk (ids, keys, sort buffers).
_BYTES_PER_ROW = 128
#: Bytes per token of a batch of sentences being read (Python strings, factorize).
_BYTES_PER_TOKEN = 1024
#: Bytes per entry of a merge buffer or of a sort chunk (a few int64/float64 columns).
_BYTES_PER_ENTRY = 64
_MIN_ROWS = 16
#: With ``jobs=None``, a corpus of fewer tokens is estimated in one process.
_POOL_MIN_ROWS = 1_000_000

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)


def parse_memory(text: str) -> int:
    """Bytes of a size such as ``2G``, ``512M``, ``64K``, ``1000000`` or ``25%`` (of RAM)."""
    text = str(text).strip()
    if text.endswith("%"):
        pct = float(text[:-1])
        if not 0 < pct <= 100:
            raise ValueError(f"memory budget {text!r}: percentage must be in (0, 100]")
        return int(physical_memory() * pct / 100)
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"memory budget {text!r}: expected a size like 2G, 512M or 25%")
    return int(float(m.group(1)) * 1024 ** "_kmgt".index((m.group(2) or "_").lower()))


def physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


#: Default budget: a quarter of the machine's memory (lmplz takes 80%, too greedy for a
#: machine that also crawls).
DEFAULT_MEMORY = "25%"


# -- the estimator ----------------------------------------------------------------------
@dataclass
class OrderFiles:
    """One order on disk, in suffix order: key = suffix id * V + first word."""

    key: Column
    raw: Column  # raw count
    ctx: Column  # id of the context (the n-gram without its last word) in the order below

    def __len__(self) -> int:
        return len(self.key)


@dataclass
class ExternalModel:
    """What the bounded estimator learnt (the n-grams themselves went to the ARPA file)."""

    vocab: np.ndarray
    ngram_counts: list[int]
    discounts: list[tuple[float, float, float]]
    fallback_orders: list[int] = field(default_factory=list)
    tokens: int = 0
    sentences: int = 0
    runs: int = 0  # sorted runs spilled while counting (1 per order = everything fitted)

    @property
    def order(self) -> int:
        return len(self.ngram_counts)

    def counts(self) -> list[int]:
        return list(self.ngram_counts)


#: An on-disk sort of more runs than this merges a few rows of each run at a time: the
#: merge work grows with the square of the runs (``budget_warning``).
_RUNS_SLOW = 64
#: Runs per sort of a budget that is large enough.
_RUNS_ENOUGH = 16


def format_size(n: float) -> str:
    """``2.5M``-style size, as ``--memory`` takes it."""
    for unit in ("", "K", "M", "G"):
        if n < 1024 or unit == "G":
            return f"{n:.0f}" if not unit else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}G"


def budget_warning(rows: int, budget: int, jobs: int, order: int) -> str | None:
    """The warning for a budget far too small for ``rows`` rows (tokens and sentence ends),
    else None. The context and suffix sorts of each order (``_probabilities``) get
    ``block * 2 / (jobs + 1)`` rows a run; past ``_RUNS_SLOW`` runs their merges read a
    few rows of every run a round, ~runs² small reads a sort: the same model, many times
    slower (4.6M tokens: 5:36 at 5M, 0:09 at 200M)."""
    block = max(_MIN_ROWS, budget // 8 // _BYTES_PER_ENTRY)
    share = max(_MIN_ROWS, block * 2 // (jobs + 1))
    runs = -(-rows // share)
    if runs <= _RUNS_SLOW:
        return None
    enough = -(-rows // _RUNS_ENOUGH) * (jobs + 1) // 2 * 8 * _BYTES_PER_ENTRY
    sorts = 2 * (order - 1)
    return (f"memory budget {format_size(budget)} is far too small for {rows:,} rows: each of the {sorts} sorts "
            f"on disk splits into ~{runs:,} runs merged ~{max(1, share // runs)} rows a run at a time, "
            f"~{sorts * runs * runs:,} small reads in all (~{sorts * _RUNS_ENOUGH ** 2:,} with --memory "
            f"{format_size(enough)}): expect it to take many times longer than with that budget (the same model "
            f"either way)")


class _Progress:
    """Phase, elapsed time and tokens/s on the log (stderr from the CLI); while a long
    phase runs (``phase``) a line at least every ``every`` seconds says where it is."""

    def __init__(self, tokens: int = 0, every: float = 10.0) -> None:
        self.t0 = self.last = time.perf_counter()
        self.tokens, self.every = tokens, every
        self.detail = ""

    def __call__(self, phase: str, detail: str = "", periodic: bool = False) -> None:
        now = time.perf_counter()
        if periodic and now - self.last < self.every:
            return
        self.last = now
        dt = now - self.t0
        rate = f", {self.tokens / dt / 1e3:.0f}K tokens/s overall" if self.tokens and dt > 0 else ""
        logger.info("train-lm %s%s (%.1fs%s)", phase, f": {detail}" if detail else "", dt, rate)

    @contextmanager
    def phase(self, name: str, detail: str = "") -> Iterator[None]:
        """A long phase: until it ends, a line whenever ``every`` seconds passed without one
        (the phase, its step, the time in it)."""
        self.detail = detail
        done = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(name, done, time.perf_counter()),
                                name="train-lm-progress", daemon=True)
        beat.start()
        try:
            yield
        finally:
            done.set()
            beat.join()

    def step(self, detail: str) -> None:
        """Where the current phase is (said by its next heartbeat line)."""
        self.detail = detail

    def _heartbeat(self, name: str, done: threading.Event, start: float) -> None:
        while not done.wait(min(1.0, self.every)):
            now = time.perf_counter()
            if now - self.last >= self.every:
                self.last = now
                logger.info("train-lm %s: %s (%.0fs in this phase, %.1fs)", name, self.detail or "working",
                            now - start, now - self.t0)


def _read_corpus(sentences: Iterable[str], work: Path, chunk_tokens: int,
                 progress: _Progress) -> tuple[np.ndarray, int, int]:
    """Word ids (``words``) and sentence offsets (``offsets``, capped at 255) per row."""
    index: dict[str, int] = {w: i for i, w in enumerate(SPECIAL_WORDS)}
    words, offsets = Column(work / "words", np.int32), Column(work / "offsets", np.uint8)
    n_tokens = n_sent = 0
    warned = False
    batch: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal n_tokens, n_sent, warned, batch, size
        if not batch:
            return
        toks = [s.split() for s in batch]
        lengths = np.fromiter((len(t) for t in toks), np.int64, len(toks))
        flat = np.asarray([w for t in toks for w in t], dtype=object)
        codes, uniques = pd.factorize(flat, sort=False)
        uniques = np.asarray(uniques, dtype=object)
        special = np.isin(uniques, SPECIAL_WORDS)
        if special.any():
            if not warned:
                logger.warning("the input contains %s; they are treated as white space",
                               ", ".join(sorted(uniques[special])))
                warned = True
            keep = ~special[codes]
            sentence_of = np.repeat(np.arange(len(lengths)), lengths)
            lengths = np.bincount(sentence_of[keep], minlength=len(lengths)).astype(np.int64)
            codes = codes[keep]
        lut = np.fromiter((index.setdefault(u, len(index)) for u in uniques.tolist()), np.int64, len(uniques))
        ids = lut[codes]
        per = lengths + 1
        total = int(per.sum())
        eos_at = np.cumsum(per) - 1
        row_words = np.full(total, 2, np.int32)  # </s>
        mask = np.ones(total, bool)
        mask[eos_at] = False
        row_words[mask] = ids
        starts = np.concatenate([[0], eos_at[:-1] + 1])
        row_off = np.arange(total) - np.repeat(starts, per)
        words.append(row_words)
        offsets.append(np.minimum(row_off, 255).astype(np.uint8))
        n_tokens += len(ids)
        n_sent += len(batch)
        batch, size = [], 0

    for s in sentences:
        batch.append(s)
        size += s.count(" ") + 2
        if size >= chunk_tokens:
            flush()
            progress("read", f"{n_tokens:,} tokens, {n_tokens / (time.perf_counter() - progress.t0) / 1e3:.0f}K "
                     "tokens/s", periodic=True)
    flush()
    words.close()
    offsets.close()
    if not n_sent:
        raise ValueError("no training sentences")
    vocab = np.empty(len(index), dtype=object)
    vocab[:] = list(index)  # dicts keep insertion order: id order
    return vocab, n_tokens, n_sent


def _count_chunk(work: str, k: int, V: int, lo: int, hi: int, run: int) -> int:
    """Count the k-grams of rows [lo, hi): spill a sorted run (key, raw, ctx) and each
    row's index into it (``-1``: no k-gram ends there). Runs in a pool worker."""
    w = Path(work)
    words = Column(w / "words", np.int32)
    back = min(lo, k - 1)
    wd = words.read(lo - back, hi).astype(np.int64)
    off = Column(w / "offsets", np.uint8).read(lo, hi)
    n = hi - lo
    r = np.arange(n) + back  # row r of the chunk is wd[r]
    if k == 2:
        prev = wd[back:]
        ctx = np.where(off == 0, BOS_ID, wd[r - 1])  # r - 1 = -1 only at a sentence start
        exists = np.ones(n, bool)
    else:
        ids = Column(w / f"ids{k - 1}", np.int64)
        prev_ext = ids.read(lo - 1, hi) if lo else np.r_[-1, ids.read(0, hi)]
        prev, ctx = prev_ext[1:], prev_ext[:-1]
        exists = off >= k - 2
    first = np.full(n, BOS_ID, np.int64)
    has_first = off >= k - 1
    first[has_first] = wd[r[has_first] - (k - 1)]
    key = prev[exists] * V + first[exists]
    uniq, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    ctx_u = np.empty(len(uniq), np.int64)
    ctx_u[inv.ravel()] = ctx[exists]
    write_run(w / f"run{k}.{run}", {"key": uniq, "raw": cnt.astype(np.int64), "ctx": ctx_u})
    local = np.full(n, -1, np.int64)
    local[exists] = inv.ravel()
    local.tofile(w / f"local{k}.{run}")
    return len(uniq)


def _rows_to_ids(work: str, k: int, run: int) -> None:
    """Row ids of order k for one chunk: its local indices mapped to global ranks."""
    w = Path(work)
    local = np.fromfile(w / f"local{k}.{run}", np.int64)
    rank = Column(w / f"rank{k}.{run}", np.int64)
    rank = rank.read(0, len(rank))
    out = np.where(local >= 0, rank[np.maximum(local, 0)] if len(rank) else -1, -1)
    out.tofile(w / f"ids{k}.{run}")
    (w / f"local{k}.{run}").unlink()
    (w / f"rank{k}.{run}").unlink(missing_ok=True)


def _concat_files(parts: Sequence[Path], target: Path) -> None:
    with open(target, "wb") as out:
        for p in parts:
            with open(p, "rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 22)
            p.unlink()


class _Serial(Executor):
    """In-process stand-in for the pool (``jobs=1``)."""

    def submit(self, fn, *args, **kwargs):
        from concurrent.futures import Future
        fut: Future = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller like a pool would
            fut.set_exception(exc)
        return fut


def _count_order(pool: Executor, work: Path, k: int, V: int, rows: int, chunk: int,
                 block: int, last: bool) -> tuple[OrderFiles, int]:
    bounds = [(lo, min(lo + chunk, rows)) for lo in range(0, rows, chunk)]
    futures = [pool.submit(_count_chunk, str(work), k, V, lo, hi, j) for j, (lo, hi) in enumerate(bounds)]
    for f in futures:
        f.result()
    runs = [Run({c: Column(work / f"run{k}.{j}.{c}", np.int64) for c in ("key", "raw", "ctx")})
            for j in range(len(bounds))]
    files = OrderFiles(*(Column(work / f"order{k}.{c}", np.int64) for c in ("key", "raw", "ctx")))
    ranks = [Column(work / f"rank{k}.{j}", np.int64) for j in range(len(bounds))]
    n = 0
    for merged, source in merge_runs(runs, "key", block // max(1, len(runs))):
        new = _starts(merged["key"])
        gid = np.cumsum(new) - 1 + n
        idx = np.flatnonzero(new)
        files.key.append(merged["key"][idx])
        files.raw.append(np.add.reduceat(merged["raw"], idx) if len(idx) else merged["raw"][:0])
        files.ctx.append(merged["ctx"][idx])
        n += len(idx)
        if not last:
            for j in np.unique(source):
                ranks[j].append(gid[source == j])
    for r in runs:
        r.remove()
    for c in (files.key, files.raw, files.ctx, *ranks):
        c.close()
    if last:
        for j in range(len(bounds)):
            (work / f"local{k}.{j}").unlink()
            ranks[j].remove()
    else:
        for f in [pool.submit(_rows_to_ids, str(work), k, j) for j in range(len(bounds))]:
            f.result()
        _concat_files([work / f"ids{k}.{j}" for j in range(len(bounds))], work / f"ids{k}")
    (work / f"ids{k - 1}").unlink(missing_ok=True)
    return files, len(bounds)


def _suffix_counts(upper: OrderFiles, V: int, n_lower: int, block: int) -> Iterator[np.ndarray]:
    """Dense blocks of ``bincount(suffix ids of the upper order, minlength=n_lower)``."""
    done = 0  # lower ids below this are emitted
    carry_id, carry_n = -1, 0
    for kb in upper.key.blocks(block):
        suffix = kb // V
        new = _starts(suffix)
        ids = suffix[new]
        cnt = np.diff(np.r_[np.flatnonzero(new), len(suffix)])
        if carry_id >= 0:
            if ids[0] == carry_id:
                cnt[0] += carry_n
            else:
                ids, cnt = np.r_[carry_id, ids], np.r_[carry_n, cnt]
        carry_id, carry_n = int(ids[-1]), int(cnt[-1])
        ids, cnt = ids[:-1], cnt[:-1]
        if len(ids):
            out = np.zeros(int(ids[-1]) + 1 - done, np.int64)
            out[ids - done] = cnt
            yield out
            done = int(ids[-1]) + 1
    if carry_id >= 0:
        out = np.zeros(carry_id + 1 - done, np.int64)
        out[-1] = carry_n
        yield out
        done = carry_id + 1
    if n_lower > done:
        yield np.zeros(n_lower - done, np.int64)


def _blocks_of(stream: Iterable[np.ndarray], size: int) -> Iterator[np.ndarray]:
    """Re-cut a stream of 1-D arrays into blocks of ``size`` (the last may be shorter)."""
    pending, n = [], 0
    for a in stream:
        pending.append(a)
        n += len(a)
        while n >= size:
            whole = np.concatenate(pending)
            yield whole[:size]
            pending, n = [whole[size:]], n - size
    if n:
        yield np.concatenate(pending)


def _discount_of(counts: np.ndarray, d: tuple[float, float, float]) -> np.ndarray:
    return np.array([0.0, d[0], d[1], d[2]])[np.minimum(counts, 3)]


def estimate_to_arpa(sentences: Iterable[str], output: str | Path, order: int = 5,
                     memory: int | str = DEFAULT_MEMORY, jobs: int | None = None,
                     tmpdir: str | Path | None = None,
                     discount_fallback: Sequence[float] = DISCOUNT_FALLBACK,
                     prune: Sequence[int] | None = None) -> ExternalModel:
    """Estimate a modified Kneser–Ney model from normalised sentences within a memory
    budget and write it as ARPA (the same file as ``write_arpa(estimate(...))``).

    ``memory``: bytes or a size (``2G``, ``25%`` of RAM); ``jobs``: processes for
    counting and formatting (default: the CPUs, one for a corpus under a million tokens); ``tmpdir``: where runs are spilled
    (default: the system temporary folder); ``prune``: lmplz's ``--prune`` thresholds
    (``focuscrawl.lm.train.prune_thresholds``). The ARPA is written to ``OUT.part`` and
    renamed, so a failed run leaves no half file.
    """
    if order < 2:
        raise ValueError("order must be at least 2 (KenLM cannot load unigram-only models)")
    thresholds = prune_thresholds(prune, order)
    budget = parse_memory(memory) if isinstance(memory, str) else int(memory)
    auto_jobs = jobs is None
    jobs = max(1, jobs or os.cpu_count() or 1)
    # Counting: each of `jobs` workers holds one chunk of rows while the parent merges.
    chunk = max(_MIN_ROWS, budget // (jobs + 1) // _BYTES_PER_ROW)
    # Merges and sorts of the parent: buffers of a few columns, copies while sorting, and
    # two sorts alive at once while interpolating.
    block = max(_MIN_ROWS, budget // 8 // _BYTES_PER_ENTRY)
    progress = _Progress()
    output = Path(output)
    _remove_stale_part(output)
    with _work_folder(tmpdir, [output.with_name(output.name + ".part")]) as work:
        vocab, n_tokens, n_sent = _read_corpus(sentences, work, max(_MIN_ROWS, budget // _BYTES_PER_TOKEN),
                                               progress)
        progress.tokens = n_tokens
        V = len(vocab)
        rows = len(Column(work / "words", np.int32))
        if auto_jobs and rows < _POOL_MIN_ROWS:
            jobs = 1  # starting worker processes would cost more than they save
        chunk = min(chunk, max(_MIN_ROWS, -(-rows // jobs)))  # at least one chunk per worker
        if V * (rows + V) >= 2 ** 62:
            raise ValueError("corpus too large for 64-bit n-gram keys")
        warning = budget_warning(rows, budget, jobs, order)
        if warning:
            logger.warning("train-lm: %s", warning)
        progress("read", f"{n_sent:,} sentences, {n_tokens:,} tokens, vocabulary {V:,}")
        pool: Executor = (ProcessPoolExecutor(jobs, initializer=_init_pool_worker, initargs=(vocab, os.getpid()))
                          if jobs > 1 else _Serial())
        _set_vocab(vocab)
        try:
            uni_raw = np.zeros(V, np.int64)
            for b in Column(work / "words", np.int32).blocks(block):
                uni_raw += np.bincount(b, minlength=V)
            tables: list[OrderFiles | None] = [None]  # order 1 is the vocabulary
            n_runs = 1
            for k in range(2, order + 1):
                with progress.phase("count", f"order {k} of {order}"):
                    files, nr = _count_order(pool, work, k, V, rows, chunk, block, last=k == order)
                tables.append(files)
                n_runs += nr
                progress("count", f"order {k}: {len(files):,} n-grams from {nr} sorted run(s)")
            sizes = [V] + [len(t) for t in tables[1:]]
            with progress.phase("adjust"):
                discounts, fallback = _adjust_and_discount(work, tables, uni_raw, V, sizes, block,
                                                           discount_fallback)
            progress("adjust", "discounts " + " ".join("%.3f/%.3f/%.3f" % d for d in discounts))
            with progress.phase("interpolate", f"sorting the {order - 1} orders by context (on disk)"):
                _probabilities(pool, work, tables, discounts, V, sizes, block, jobs, thresholds, progress)
            progress("interpolate")
            with progress.phase("write"):
                kept = [V] + [_kept_count(t, thresholds[k - 1], block) for k, t in enumerate(tables[1:], start=2)]
                _write_arpa(pool, work, output, sizes, kept, thresholds, block, jobs)
            progress("write", f"{output} ({output.stat().st_size / 1e6:.1f} MB)")
        finally:  # stopped (Ctrl-C, SIGTERM, an error): the chunks not started are dropped
            pool.shutdown(wait=True, cancel_futures=True)
    return ExternalModel(vocab, kept, discounts, fallback, n_tokens, n_sent, n_runs)


def train_lm(inputs: Sequence[str | Path], output: str | Path, order: int = DEFAULT_ORDER,
             normalized: bool = False, extractor: str = "fulltext", memory: int | str | None = None,
             jobs: int | None = None, tmpdir: str | Path | None = None, prune: Sequence[int] | None = None):
    """Read ``inputs``, estimate a modified Kneser–Ney model within the ``memory`` budget
    and write it as ARPA."""
    for path in inputs:  # before any work: a folder given as an input, or as the temp folder
        if Path(path).is_dir():
            raise ValueError(f"{path} is a folder: give the text or HTML files in it")
    if tmpdir is not None and not Path(tmpdir).is_dir():
        raise ValueError(f"-T {tmpdir}: not a folder (the sorted runs are written into a folder)")
    model = estimate_to_arpa(corpus_sentences(inputs, normalized, extractor), output, order,
                             memory=memory or DEFAULT_MEMORY, jobs=jobs, tmpdir=tmpdir, prune=prune)
    logger.info("%d sentences, %d tokens, vocabulary %d; n-grams %s; discounts %s",
                model.sentences, model.tokens, len(model.vocab), model.counts(),
                ["%.3f/%.3f/%.3f" % d for d in model.discounts])
    return model


def _kept_count(files: OrderFiles, threshold: int, block: int) -> int:
    """How many n-grams of an order survive pruning (raw count above the threshold)."""
    return sum(int(np.count_nonzero(r > threshold)) for r in files.raw.blocks(block))


def _adjust_and_discount(work: Path, tables: list, uni_raw: np.ndarray, V: int, sizes: list[int],
                         block: int, fallback: Sequence[float]):
    """Counts used for estimation (``count{k}``: adjusted for orders below N, raw for
    n-grams that start with ``<s>`` and for order N) and the discounts of every order."""
    order = len(tables)
    discounts, fallback_orders = [], []
    quirk = True  # lmplz's: the last n-gram (suffix order) of each order enters the
    # count-of-counts with its raw count, until one that starts with <s>.
    for k in range(1, order + 1):
        out = Column(work / f"count{k}", np.int64)
        coc = np.zeros(6, np.int64)
        top = k == order
        adjusted = None if top else _blocks_of(_suffix_counts(tables[k], V, sizes[k - 1], block), block)
        if k == 1:
            c = np.concatenate(list(adjusted)) if V else np.zeros(0, np.int64)
            c[BOS_ID] = uni_raw[BOS_ID]
            stat = c.copy()
            stat[-1] = uni_raw[-1]
            out.append(c)
            coc += count_of_counts(stat)
        else:
            t = tables[k - 1]
            seen = 0
            for kb, rb in zip(t.key.blocks(block), t.raw.blocks(block)):
                seen += len(kb)
                c = rb if top else np.where(kb % V == BOS_ID, rb, next(adjusted))
                out.append(c)
                if not top and quirk and seen == len(t):
                    c = c.copy()
                    c[-1] = rb[-1]
                    quirk = kb[-1] % V != BOS_ID
                coc += count_of_counts(c)
        out.close()
        d, fell = discounts_from_count_of_counts(coc, k, fallback)
        discounts.append(d)
        if fell:
            fallback_orders.append(k)
    return discounts, fallback_orders


def _uninterpolated(work: str, k: int, V: int, n_lower: int, d: tuple[float, float, float], block: int,
                    threshold: int = 0) -> None:
    """Order k's uninterpolated probabilities ``u`` and their contexts' γ (``g``), in
    suffix order, and ``logb{k-1}`` = log10 γ of every (k-1)-gram. Independent of the
    other orders, so the orders run in parallel (pool worker). A k-gram pruned by
    ``threshold`` gives its whole count to its context's γ."""
    w = Path(work)
    ctx, counts = Column(w / f"order{k}.ctx", np.int64), Column(w / f"count{k}", np.int64)
    raw = Column(w / f"order{k}.raw", np.int64)

    def by_context() -> Iterator[dict[str, np.ndarray]]:
        lo = 0
        for cb, c, r in zip(ctx.blocks(block), counts.blocks(block), raw.blocks(block)):
            yield {"ctx": cb, "idx": np.arange(lo, lo + len(cb)), "count": c, "pruned": r <= threshold}
            lo += len(cb)

    logb = Column(w / f"logb{k - 1}", np.float64)
    done = 0  # (k-1)-grams whose backoff is written

    def backoffs(upto: int, ids: np.ndarray | None = None, gam: np.ndarray | None = None) -> None:
        nonlocal done
        dense = np.ones(upto - done)  # not a context: γ = 1, backoff 0
        if ids is not None:
            dense[ids - done] = gam
        with np.errstate(divide="ignore"):
            logb.append(np.log10(dense) + 0.0)
        done = upto

    def by_group() -> Iterator[dict[str, np.ndarray]]:
        for g in whole_groups(external_sort(by_context(), "ctx", block, w / f"byctx{k}"), "ctx"):
            new = _starts(g["ctx"])
            group = np.cumsum(new) - 1
            c = g["count"].astype(np.float64)
            dk = _discount_of(g["count"], d)
            den = np.bincount(group, weights=c)
            mass = np.bincount(group, weights=np.where(g["pruned"], c, dk))
            with np.errstate(divide="ignore", invalid="ignore"):
                gam = np.where(den > 0, mass / den, 1.0)
            ids = g["ctx"][new]
            backoffs(int(ids[-1]) + 1, ids, gam)
            yield {"idx": g["idx"], "u": (c - dk) / den[group], "g": gam[group]}

    u, gcol = Column(w / f"u{k}", np.float64), Column(w / f"g{k}", np.float64)
    for b in external_sort(by_group(), "idx", block, w / f"byidx{k}"):
        u.append(b["u"])
        gcol.append(b["g"])
    u.close()
    gcol.close()
    if n_lower > done:
        backoffs(n_lower)
    logb.close()


def _probabilities(pool: Executor, work: Path, tables: list, discounts: list, V: int, sizes: list[int],
                   block: int, jobs: int, thresholds: Sequence[int], progress: _Progress | None = None) -> None:
    """``logp{k}`` (log10 p) of every order and ``logb{k}`` (log10 γ) below the top."""
    order = len(tables)
    c1 = Column(work / "count1", np.int64).read(0, V)
    d1 = _discount_of(c1, discounts[0])
    c1 = c1.astype(np.float64)
    denom = c1.sum()
    prob = (c1 - d1) / denom + d1.sum() / denom / (V - 1)
    prob[BOS_ID] = 1.0
    Column(work / "prob1", np.float64).append(prob).close()
    _log_column(work / "logp1").append(_log10(prob)).close()
    # the context sorts of all orders, `jobs` at a time, each in a share of the budget
    share = max(_MIN_ROWS, block * 2 // (jobs + 1))
    futures = [pool.submit(_uninterpolated, str(work), k, V, sizes[k - 2], discounts[k - 1], share,
                           thresholds[k - 1])
               for k in range(2, order + 1)]
    for k, f in enumerate(futures, start=2):
        f.result()
        if progress is not None:
            progress.step(f"orders 2-{k} of {order} sorted by context and back")
    for k in range(2, order + 1):
        if progress is not None:
            progress.step(f"interpolating order {k} of {order}")
        t = tables[k - 1]
        lower = Gather(Column(work / f"prob{k - 1}", np.float64).blocks(block))
        probs = Column(work / f"prob{k}", np.float64)
        logp = _log_column(work / f"logp{k}")
        u, g = Column(work / f"u{k}", np.float64), Column(work / f"g{k}", np.float64)
        for kb, ub, gb in zip(t.key.blocks(block), u.blocks(block), g.blocks(block)):
            p = ub + gb * lower.take(kb // V)
            if k < order:
                probs.append(p)
            logp.append(_log10(p))
        probs.close()
        logp.close()
        for c in (u, g, Column(work / f"prob{k - 1}", np.float64)):
            c.remove()


def _log_column(path: Path) -> Column:
    return Column(path, np.float64)


def _log10(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.minimum(0.0, np.log10(p))


# -- ARPA -------------------------------------------------------------------------------
_VOCAB: np.ndarray | None = None


def _set_vocab(vocab: np.ndarray) -> None:
    global _VOCAB
    _VOCAB = vocab


def _init_pool_worker(vocab: np.ndarray, parent: int) -> None:
    """A pool worker leaves Ctrl-C and SIGTERM to the command, which stops the pool (a worker
    killed under a busy pool can hang Python's ``ProcessPoolExecutor`` at shutdown), and dies
    with it."""
    worker_process(parent)
    _set_vocab(vocab)


# -- temporary files of killed runs -----------------------------------------------------
_WORK_PREFIX = "train-lm-"
_LOCK = ".lock"


@contextmanager
def _work_folder(tmpdir: str | Path | None, parts: Sequence[Path] = ()) -> Iterator[Path]:
    """A temporary folder for the sorted runs, removed at the end (also on Ctrl-C and SIGTERM:
    ``focuscrawl.processes.exit_on_sigterm``), and with ``parts`` (the output's ``.part``) when
    the run is killed with SIGKILL (``removed_when_gone``). It is locked while this run lives:
    a folder left anyway (the janitor killed too) is unlocked, and the next run in the same
    ``tmpdir`` removes it."""
    base = Path(tmpdir or tempfile.gettempdir())
    for folder in base.glob(_WORK_PREFIX + "*"):
        try:
            with open(folder / _LOCK, "rb") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(folder, ignore_errors=True)
            logger.info("removed %s, left by a train-lm that was killed", folder)
        except OSError:  # a live run's (locked), or no folder of ours (no lock file)
            continue
    with tempfile.TemporaryDirectory(prefix=_WORK_PREFIX, dir=base, ignore_cleanup_errors=True) as tmp:
        with removed_when_gone(tmp, *parts), open(Path(tmp) / _LOCK, "wb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield Path(tmp)


def _remove_stale_part(output: Path) -> None:
    """``OUT.part`` of a killed run (unlocked: ``_write_arpa`` locks it while it writes)."""
    part = output.with_name(output.name + ".part")
    try:
        with open(part, "rb") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            part.unlink()
        logger.info("removed %s, left by a train-lm that was killed", part)
    except OSError:  # none, or another run is writing it
        pass


def _word_ids(work: Path, k: int, lo: int, hi: int, step: int) -> Iterator[np.ndarray]:
    """Blocks of the word ids (rows of k columns) of n-grams [lo, hi) of order k: the
    first word, then the suffix's words, streamed from the order below."""
    if k == 1:
        for a in range(lo, hi, step):
            yield np.arange(a, min(hi, a + step)).reshape(-1, 1)
        return
    if hi <= lo:
        return
    keys = Column(work / f"order{k}.key", np.int64)
    V = len(_VOCAB)
    s_lo, s_hi = int(keys.read(lo, lo + 1)[0] // V), int(keys.read(hi - 1, hi)[0] // V) + 1
    lower = Gather(_word_ids(work, k - 1, s_lo, s_hi, step))
    for a in range(lo, hi, step):
        key = keys.read(a, min(hi, a + step))
        yield np.column_stack([key % V, lower.take(key // V - s_lo)])


def _format_part(work: str, k: int, lo: int, hi: int, top: bool, step: int, threshold: int = 0) -> str:
    """Write the ARPA lines of n-grams [lo, hi) of order k to a part file (pool worker),
    leaving out those pruned by ``threshold``."""
    w = Path(work)
    part = w / f"arpa{k}.{lo}"
    logp, logb = Column(w / f"logp{k}", np.float64), Column(w / f"logb{k}", np.float64)
    raw = Column(w / f"order{k}.raw", np.int64) if threshold and k > 1 else None
    with open(part, "w", encoding="utf-8", newline="\n") as fh:
        for a, ids in zip(range(lo, hi, step), _word_ids(w, k, lo, hi, step)):
            b = a + len(ids)
            keep = slice(None) if raw is None else raw.read(a, b) > threshold
            ids = ids[keep]
            if not len(ids):
                continue
            words = map(" ".join, zip(*[_VOCAB[ids[:, j]].tolist() for j in range(k)]))
            columns = [format_log10(logp.read(a, b)[keep]), words]
            if not top:
                columns.append(format_log10(logb.read(a, b)[keep]))
            fh.write("\n".join(map("\t".join, zip(*columns))))
            fh.write("\n")
    return str(part)


def _write_arpa(pool: Executor, work: Path, output: Path, sizes: list[int], kept: list[int],
                thresholds: Sequence[int], block: int, jobs: int) -> None:
    """Each order is cut into a few ranges formatted in parallel into part files, which
    are appended in order. ``sizes``: n-grams per order on disk; ``kept``: after pruning."""
    tmp = output.with_name(output.name + ".part")
    step = max(_MIN_ROWS, min(block, 1 << 16))
    try:
        with open(tmp, "wb") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)  # not a killed run's: _remove_stale_part leaves it alone
            fh.write(b"\\data\\\n")
            for k, n in enumerate(kept, start=1):
                fh.write(f"ngram {k}={n}\n".encode())
            for k, n in enumerate(sizes, start=1):
                fh.write(f"\n\\{k}-grams:\n".encode())
                parts = max(1, min(4 * jobs, n // step))
                bounds = [n * i // parts for i in range(parts + 1)]
                futures = [pool.submit(_format_part, str(work), k, lo, hi, k == len(sizes), step,
                                       thresholds[k - 1])
                           for lo, hi in zip(bounds, bounds[1:]) if hi > lo]
                for f in futures:
                    path = Path(f.result())
                    with open(path, "rb") as part:
                        shutil.copyfileobj(part, fh, 1 << 22)
                    path.unlink()
            fh.write(b"\n\\end\\\n")
        tmp.replace(output)
    finally:
        tmp.unlink(missing_ok=True)
