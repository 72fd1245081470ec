"""Interpolated modified Kneser–Ney n-gram estimation, written as ARPA (SPEC §3).

A numpy re-implementation of KenLM's ``lmplz`` (default settings and ``--prune``), so
that a topic model can be trained without compiling KenLM and gives the same
probabilities as one built with ``lmplz``:

* every sentence is padded with ``order - 1`` ``<s>`` on the left and one ``</s>``;
  word ids follow first appearance (``<unk>`` = 0, ``<s>`` = 1, ``</s>`` = 2);
* the highest order keeps raw counts; a lower-order n-gram gets its *adjusted*
  (continuation) count, the number of distinct words seen to its left, except an
  n-gram starting with ``<s>``, which keeps its raw count (it cannot be extended);
  n-grams with ``<s>`` after their first word do not exist;
* discounts D1, D2, D3+ per order come from that order's count-of-counts n1..n4
  (Chen & Goodman eq. 26); when one of n1..n3 is zero or a discount falls outside
  [0, j], the fixed fallback (0.5, 1, 1.5) is used and a warning logged;
* ``p(w|h) = (c(hw) - D(c)) / Σc(h·) + γ(h) · p(w|h')`` with
  ``γ(h) = (D1·N1(h·) + D2·N2(h·) + D3+·N3+(h·)) / Σc(h·)``, recursing down to the
  uniform distribution ``1/(|V| - 1)`` over the vocabulary without ``<s>``;
  ``<unk>`` gets only its interpolated share; ``<s>`` has log10 p = 0;
* the ARPA backoff of a context is ``log10 γ``; n-grams that are no context
  (those ending in ``</s>``) have backoff 0.

Even lmplz's count-of-counts quirk is reproduced: the n-grams still open when its
adjust-counts loop ends are counted with their raw count instead of the adjusted one.

``estimate`` holds the whole corpus in memory and is the reference; ``train_lm`` (the
CLI, in ``focuscrawl.lm.external``) computes the same file in a memory budget.
"""
from __future__ import annotations

import gzip
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from focuscrawl.text.normalize import document_sentences
from focuscrawl.text.sources import bytes_to_text, read_bytes

logger = logging.getLogger(__name__)

UNK, BOS, EOS = "<unk>", "<s>", "</s>"
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2
SPECIAL_WORDS = (UNK, BOS, EOS)
#: lmplz's ``--discount_fallback`` default: D1, D2, D3+.
DISCOUNT_FALLBACK = (0.5, 1.0, 1.5)
DEFAULT_ORDER = 5


# -- input ---------------------------------------------------------------------------
def file_sentences(path: str | Path, normalized: bool = False, extractor: str = "fulltext") -> list[str]:
    """Training sentences of one text/HTML file (``.gz`` ok).

    ``normalized``: every non-empty line is one sentence of whitespace tokens, used as
    is. Otherwise the file's text is split and normalised like a crawled page
    (``document_sentences``: the same rules that scoring applies).
    """
    if normalized:
        return list(normalized_lines(path))
    return document_sentences(bytes_to_text(read_bytes(path), extractor))


#: a line of a normalised corpus longer than this (characters) is cut at white space into
#: sentences of at most about this length: a corpus of one 50 MB line is read piece by piece
MAX_SENTENCE_CHARS = 1 << 16
#: a character no text holds: NUL, other control characters, bytes that were not UTF-8 (U+FFFD)
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")


def normalized_lines(path: str | Path, max_chars: int = MAX_SENTENCE_CHARS) -> Iterator[str]:
    """The non-empty lines of a file of normalised sentences, streamed (``.gz`` ok). A line
    that is not text (NUL, control characters, bytes that are not UTF-8) is skipped; a line
    over ``max_chars`` is cut at white space into several; both counted in one warning per file."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    skipped = cut = 0
    carry = ""
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        while piece := fh.readline(max_chars):
            text = carry + piece
            carry = ""
            if not text.endswith("\n") and len(piece) == max_chars:  # the line goes on: cut at its last space
                space = max(text.rfind(" "), text.rfind("\t"))
                if space > 0:
                    text, carry = text[:space], text[space + 1:]
                cut += 1
            text = text.rstrip("\r\n")
            if not text.strip():
                continue
            if _NOT_TEXT.search(text):
                skipped += 1
                continue
            yield text
    if carry.strip():
        if _NOT_TEXT.search(carry):
            skipped += 1
        else:
            yield carry
    if skipped or cut:
        logger.warning("train-lm: %s: %d lines skipped as not text (NUL, control characters or bytes that are "
                       "not UTF-8); %d cuts of lines over %d characters", path, skipped, cut, max_chars)


def corpus_sentences(paths: Iterable[str | Path], normalized: bool = False,
                     extractor: str = "fulltext") -> Iterator[str]:
    """Sentences of every input in turn (files of normalised lines are streamed)."""
    for path in paths:
        if normalized:
            yield from normalized_lines(path)
        else:
            yield from file_sentences(path, normalized, extractor)


# -- estimation ---------------------------------------------------------------------
@dataclass
class OrderTable:
    """The n-grams of one order, in lmplz's (suffix) order, with their parameters."""

    first: np.ndarray  # first word id of each n-gram
    suffix: np.ndarray  # id of the n-gram without its first word (order - 1); -1 for unigrams
    count: np.ndarray  # adjusted (or raw) count used for estimation
    log10_prob: np.ndarray | None = None
    log10_backoff: np.ndarray | None = None  # None for the highest order

    def __len__(self) -> int:
        return len(self.first)


@dataclass
class KneserNeyModel:
    """An estimated model: vocabulary, one ``OrderTable`` per order, the discounts."""

    vocab: np.ndarray  # object array, id -> word
    orders: list[OrderTable]
    discounts: list[tuple[float, float, float]]
    fallback_orders: list[int] = field(default_factory=list)
    tokens: int = 0
    sentences: int = 0

    @property
    def order(self) -> int:
        return len(self.orders)

    def counts(self) -> list[int]:
        return [len(t) for t in self.orders]


def _vocabulary(sentences: Iterable[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word ids (first appearance, after the three special words), sentence lengths, vocab."""
    tokens: list[str] = []
    lengths: list[int] = []
    for s in sentences:
        toks = s.split()
        tokens.extend(toks)
        lengths.append(len(toks))
    lengths_arr = np.asarray(lengths, dtype=np.int64)
    if not lengths:
        raise ValueError("no training sentences")
    codes, uniques = pd.factorize(np.asarray(tokens, dtype=object), sort=False)
    uniques = np.asarray(uniques, dtype=object)
    special = np.isin(uniques, SPECIAL_WORDS)
    if special.any():
        # lmplz --skip_symbols: the reserved words count as white space.
        logger.warning("the input contains %s; they are treated as white space",
                       ", ".join(sorted(uniques[special])))
        keep = ~special[codes]
        sentence_of = np.repeat(np.arange(len(lengths_arr)), lengths_arr)
        lengths_arr = np.bincount(sentence_of[keep], minlength=len(lengths_arr)).astype(np.int64)
        codes, uniques = pd.factorize(np.asarray(tokens, dtype=object)[keep], sort=False)
        uniques = np.asarray(uniques, dtype=object)
    vocab = np.concatenate([np.asarray(SPECIAL_WORDS, dtype=object), uniques])
    return codes.astype(np.int64) + 3, lengths_arr, vocab


def _padded_stream(word_ids: np.ndarray, lengths: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """The padded id stream (``<s>``×(order-1) w1..wn ``</s>`` per sentence) and the
    positions of its predicted words (everything but ``<s>``)."""
    n_sent = len(lengths)
    per_sentence = lengths + order  # (order-1) pads + words + </s>
    total = int(per_sentence.sum())
    starts = np.concatenate([[0], np.cumsum(per_sentence)[:-1]])
    seq = np.full(total, BOS_ID, dtype=np.int64)
    is_word = np.ones(total, dtype=bool)
    pads = (np.repeat(starts, order - 1) + np.tile(np.arange(order - 1), n_sent)) if order > 1 else np.empty(0, np.int64)
    is_word[pads] = False
    words = np.empty(len(word_ids) + n_sent, dtype=np.int64)
    eos_at = np.cumsum(lengths + 1) - 1
    word_mask = np.ones(len(words), dtype=bool)
    word_mask[eos_at] = False
    words[word_mask] = word_ids
    words[eos_at] = EOS_ID
    positions = np.flatnonzero(is_word)
    seq[positions] = words
    return seq, positions


def count_of_counts(counts: np.ndarray) -> np.ndarray:
    """n0..n5+: how many n-grams have (adjusted) count 0, 1, .., 4 and 5 or more."""
    return np.bincount(np.minimum(counts, 5), minlength=6)


def compute_discounts(counts: np.ndarray, order: int,
                      fallback: Sequence[float] = DISCOUNT_FALLBACK) -> tuple[tuple[float, float, float], bool]:
    """D1, D2, D3+ from the counts of one order (see ``discounts_from_count_of_counts``)."""
    return discounts_from_count_of_counts(count_of_counts(counts), order, fallback)


def discounts_from_count_of_counts(coc: np.ndarray, order: int, fallback: Sequence[float] = DISCOUNT_FALLBACK,
                                   ) -> tuple[tuple[float, float, float], bool]:
    """D1, D2, D3+ from the count-of-counts n1..n4 of one order (float32 like lmplz).

    Returns the discounts and whether the fallback had to be used.
    """
    n = np.asarray(coc[:5]).astype(np.float32)
    if not (n[1] and n[2] and n[3]):
        logger.warning("order %d: no %d-grams with adjusted count %s; substituting fallback discounts "
                       "D1=%g D2=%g D3+=%g (small or artificial data?)", order, order,
                       " or ".join(str(j) for j in (1, 2, 3) if not n[j]), *fallback)
        return tuple(float(x) for x in fallback), True
    y = np.float32(n[1] / np.float32(float(n[1]) + 2.0 * float(n[2])))
    d = [float(np.float32(j) - np.float32(j + 1) * y * n[j + 1] / n[j]) for j in (1, 2, 3)]
    if any(not (0.0 <= dj <= j) for j, dj in zip((1, 2, 3), d)):
        logger.warning("order %d: discounts %s out of range; substituting fallback discounts "
                       "D1=%g D2=%g D3+=%g", order, d, *fallback)
        return tuple(float(x) for x in fallback), True
    return (d[0], d[1], d[2]), False


def prune_thresholds(values: Sequence[int] | None, order: int) -> list[int]:
    """lmplz's ``--prune`` thresholds, one per order (1..order), validated like lmplz.

    An n-gram of order k ≥ 2 whose raw count is at most ``thresholds[k-1]`` is pruned.
    The last value applies to the remaining orders; the values must not decrease (so a
    kept n-gram's context and suffix, which occur at least as often, are kept too);
    unigrams are not pruned (the first value must be 0; lmplz 0.3.0 accepts other
    values and drops unigrams too, which is not reproduced).
    """
    if not values:
        return [0] * order
    values = [int(v) for v in values]
    if len(values) > order:
        raise ValueError(f"--prune: {len(values)} thresholds given but the model has order {order}")
    if any(v < 0 for v in values):
        raise ValueError("--prune: thresholds must be non-negative counts")
    if values[0] != 0:
        raise ValueError("--prune: unigrams cannot be pruned; the first threshold must be 0 (e.g. --prune 0 1 1)")
    if any(b < a for a, b in zip(values, values[1:])):
        raise ValueError("--prune: thresholds must be non-decreasing (otherwise substrings of kept n-grams "
                         "would be removed)")
    return values + [values[-1]] * (order - len(values))


def estimate(sentences: Iterable[str], order: int = DEFAULT_ORDER,
             discount_fallback: Sequence[float] = DISCOUNT_FALLBACK,
             prune: Sequence[int] | None = None) -> KneserNeyModel:
    """Estimate an interpolated modified Kneser–Ney model from normalised sentences.

    ``prune``: lmplz's ``--prune`` thresholds (see ``prune_thresholds``). Pruning does
    not change the discounts; a pruned n-gram's whole count goes to its context's γ
    (its backoff), and the n-gram is left out of the model.
    """
    if order < 2:
        raise ValueError("order must be at least 2 (KenLM cannot load unigram-only models)")
    thresholds = prune_thresholds(prune, order)
    word_ids, lengths, vocab = _vocabulary(sentences)
    V = len(vocab)
    seq, pos = _padded_stream(word_ids, lengths, order)
    R = len(pos)
    if V * (R + V) >= 2 ** 62:
        raise ValueError("corpus too large for 64-bit n-gram keys")

    # Ids of the k-gram ending at each position ("row"), built right to left so that
    # sorting (suffix id, first word) yields lmplz's suffix order.
    tables: list[OrderTable] = [OrderTable(np.arange(V, dtype=np.int64), np.full(V, -1, np.int64),
                                           np.zeros(V, np.int64))]
    row_ids = [seq[pos]]  # order 1: the word itself
    rows = [np.arange(R)]  # rows where the k-gram exists
    raw_counts = [np.bincount(row_ids[0], minlength=V)]
    contexts: list[np.ndarray] = [np.empty(0, np.int64)]
    starts_bos: list[np.ndarray] = [np.zeros(V, bool)]
    for k in range(2, order + 1):
        r = rows[-1]
        if k > 2:  # a (k-1)-gram starting with <s> has no left extension
            r = r[seq[pos[r] - (k - 2)] != BOS_ID]
        prev_full = np.full(R, -1, np.int64)
        prev_full[rows[-1]] = row_ids[-1]
        first = seq[pos[r] - (k - 1)]
        key = prev_full[r] * V + first
        uniq, inv = np.unique(key, return_inverse=True)
        n_k = len(uniq)
        table = OrderTable(uniq % V, uniq // V, np.bincount(inv, minlength=n_k))
        # Context = the (k-1)-gram ending one position earlier (the <s> unigram for "<s> w").
        if k == 2:
            ctx_rows = np.where(seq[pos[r] - 1] == BOS_ID, BOS_ID, prev_full[np.maximum(r - 1, 0)])
        else:
            ctx_rows = prev_full[r - 1]
        ctx = np.empty(n_k, np.int64)
        ctx[inv] = ctx_rows
        tables.append(table)
        contexts.append(ctx)
        raw_counts.append(table.count.copy())
        starts_bos.append(table.first == BOS_ID)
        row_ids.append(inv)
        rows.append(r)

    # Adjusted counts: distinct left extensions; raw counts for n-grams starting with <s>.
    for k in range(1, order):
        lower = tables[k - 1]
        adjusted = np.bincount(tables[k].suffix, minlength=len(lower))
        lower.count = np.where(starts_bos[k - 1], raw_counts[k - 1], adjusted)

    # lmplz counts the n-grams left open at the end of its adjust loop (suffixes of the
    # last full n-gram in suffix order) with their raw counts in the count-of-counts.
    stat_counts = [t.count.copy() for t in tables]
    # Ids are in suffix order, so that n-gram is found by narrowing the rows order by order.
    cand = np.arange(R)
    for k in range(1, order):
        ids = np.full(R, -1, np.int64)
        ids[rows[k - 1]] = row_ids[k - 1]
        best = ids[cand].max()
        cand = cand[ids[cand] == best]
        stat_counts[k - 1][best] = raw_counts[k - 1][best]
        if starts_bos[k - 1][best]:
            break

    discounts, fallback_orders = [], []
    for k in range(1, order + 1):
        c = stat_counts[k - 1] if k < order else tables[k - 1].count
        if k == 1:
            c = c[c > 0]  # <unk> and <s> have count 0 and do not enter n1..n4 anyway
        d, fell_back = compute_discounts(c, k, discount_fallback)
        discounts.append(d)
        if fell_back:
            fallback_orders.append(k)

    # Probabilities, interpolated order by order.
    def discount_of(counts: np.ndarray, d: tuple[float, float, float]) -> np.ndarray:
        table = np.array([0.0, d[0], d[1], d[2]])
        return table[np.minimum(counts, 3)]

    uni = tables[0]
    c1 = uni.count.astype(np.float64)
    d1 = discount_of(uni.count, discounts[0])
    denom = c1.sum()
    gamma1 = d1.sum() / denom
    prob = (c1 - d1) / denom + gamma1 / (V - 1)
    prob[BOS_ID] = 1.0
    probs = [prob]
    gammas: list[np.ndarray] = []
    for k in range(2, order + 1):
        t = tables[k - 1]
        ctx = contexts[k - 1]
        n_lower = len(tables[k - 2])
        c = t.count.astype(np.float64)
        dk = discount_of(t.count, discounts[k - 1])
        denom = np.bincount(ctx, weights=c, minlength=n_lower)
        # a pruned n-gram leaves its whole count to the backoff (lmplz's AddRight)
        mass = np.bincount(ctx, weights=np.where(raw_counts[k - 1] <= thresholds[k - 1], c, dk),
                           minlength=n_lower)
        with np.errstate(divide="ignore", invalid="ignore"):
            gamma = np.where(denom > 0, mass / denom, 1.0)
        gammas.append(gamma)
        probs.append((c - dk) / denom[ctx] + gamma[ctx] * probs[-1][t.suffix])

    for k, t in enumerate(tables, start=1):
        with np.errstate(divide="ignore"):
            t.log10_prob = np.minimum(0.0, np.log10(probs[k - 1]))
        if k < order:
            t.log10_backoff = np.log10(gammas[k - 1]) + 0.0  # non-contexts: γ = 1 -> 0
    if any(thresholds):
        _drop_pruned(tables, raw_counts, thresholds)
    return KneserNeyModel(vocab, tables, discounts, fallback_orders,
                          tokens=len(word_ids), sentences=len(lengths))


def _drop_pruned(tables: list[OrderTable], raw_counts: list[np.ndarray], thresholds: Sequence[int]) -> None:
    """Remove the n-grams (orders ≥ 2) whose raw count is at most their order's threshold,
    renumbering the suffix ids of the order above."""
    new_ids = None
    for k in range(2, len(tables) + 1):
        t = tables[k - 1]
        keep = raw_counts[k - 1] > thresholds[k - 1]
        if new_ids is not None:
            t.suffix = new_ids[t.suffix]
            assert (t.suffix[keep] >= 0).all(), "a kept n-gram lost its suffix"
        new_ids = np.where(keep, np.cumsum(keep) - 1, -1)
        for name in ("first", "suffix", "count", "log10_prob", "log10_backoff"):
            values = getattr(t, name)
            if values is not None:
                setattr(t, name, values[keep])


# -- ARPA ------------------------------------------------------------------------------
_CHUNK = 1 << 17  # lines formatted at a time: bounds the memory of writing


def format_log10(values: np.ndarray) -> list[str]:
    """``%.7g`` of each value (log10 values: float32 precision, as KenLM stores them).

    Repeated values (backoffs of contexts with the same count pattern, zeros) are
    formatted once.
    """
    uniq, inverse = np.unique(values, return_inverse=True)
    if len(uniq) * 2 > len(values):
        return ["%.7g" % v for v in values.tolist()]
    texts = np.array(["%.7g" % v for v in uniq.tolist()], dtype=object)
    return texts[inverse].tolist()


def ngram_texts(model: KneserNeyModel) -> Iterator[np.ndarray]:
    """The words of every n-gram, space separated, order by order (object arrays)."""
    texts = model.vocab
    yield texts
    for t in model.orders[1:]:
        texts = model.vocab[t.first] + " " + texts[t.suffix]
        yield texts


def write_arpa(model: KneserNeyModel, path: str | Path) -> None:
    """Write the model in ARPA format (lmplz's layout: suffix order, backoff 0 printed).

    Written to a temporary name and renamed, so a failed run leaves no half file.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write("\\data\\\n")
            for k, n in enumerate(model.counts(), start=1):
                fh.write(f"ngram {k}={n}\n")
            for k, (t, texts) in enumerate(zip(model.orders, ngram_texts(model)), start=1):
                fh.write(f"\n\\{k}-grams:\n")
                for lo in range(0, len(t), _CHUNK):
                    hi = lo + _CHUNK
                    probs, words = format_log10(t.log10_prob[lo:hi]), texts[lo:hi].tolist()
                    if t.log10_backoff is None:
                        lines = [p + "\t" + w for p, w in zip(probs, words)]
                    else:
                        bos = format_log10(t.log10_backoff[lo:hi])
                        lines = [p + "\t" + w + "\t" + b for p, w, b in zip(probs, words, bos)]
                    fh.write("\n".join(lines))
                    fh.write("\n")
            fh.write("\n\\end\\\n")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
