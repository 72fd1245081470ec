import hashlib
import importlib
import os
import sys

import numpy as np
import pytest

from focuscrawl.dedup.simhash import (_BLOCK, hamming, ngram_hashes, parse_ngrams, sentences_simhash, simhash,
                                      simhash_of_hashes, text_simhash, token_hashes)
from tests.support import warmfork

TEXT = ("The domestic cat is a small carnivorous mammal. It is the only domesticated species in "
        "the family Felidae and is often referred to as the house cat to distinguish it from the wild "
        "members of the family. A cat can either be a house cat, a farm cat or a feral cat; the latter "
        "ranges freely and avoids human contact. Domestic cats are valued by humans for companionship "
        "and their ability to kill rodents. About sixty cat breeds are recognised by various registries.")


def test_parse_ngrams():
    assert parse_ngrams("3") == (3,)
    assert parse_ngrams("3+5") == (3, 5)
    assert parse_ngrams(5) == (5,)
    assert parse_ngrams((5, 3)) == (3, 5)
    for bad in ("", "three", "0", "3+-1"):
        with pytest.raises(ValueError):
            parse_ngrams(bad)


def test_ngram_hashes_count_each_distinct_ngram_once_with_its_tf():
    tokens = "a rose is a rose is a rose".split()
    hashes, tf = ngram_hashes(tokens, (3,))
    assert len(hashes) == 3 and tf.tolist() == [2, 2, 2]  # 'a rose is', 'rose is a', 'is a rose'
    both, tf35 = ngram_hashes(tokens, (3, 5))
    # 5-grams: 'a rose is a rose' twice, 'rose is a rose is', 'is a rose is a'
    assert len(both) == 6 and sorted(tf35.tolist()) == [1, 1, 2, 2, 2, 2]
    assert set(hashes.tolist()) < set(both.tolist())
    # order matters; a short text is one feature; no tokens, no features
    assert ngram_hashes("a b c".split(), (3,))[0][0] != ngram_hashes("c b a".split(), (3,))[0][0]
    assert len(ngram_hashes(["two", "words"], (3,))[0]) == 1
    assert len(ngram_hashes([], (3,))[0]) == 0


def test_token_hash_is_stable_blake2b():
    h = int(token_hashes(["cat", "dog", "cat"])[2])
    assert h == int.from_bytes(hashlib.blake2b(b"cat", digest_size=8).digest(), "little")


def test_token_hashes_are_remembered_across_texts_within_a_bound(monkeypatch):
    module = importlib.import_module("focuscrawl.dedup.simhash")  # the package exports simhash(), the function

    def blake(tokens):
        return [int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in tokens]

    monkeypatch.setattr(module, "TOKEN_MEMO", 4)
    module._TOKEN_HASHES.clear()
    first = ["cat", "dog", "cat", "naïve"]
    assert [int(h) for h in token_hashes(iter(first))] == blake(first)
    assert set(module._TOKEN_HASHES) == {"cat", "dog", "naïve"}
    second = ["dog", "mouse", "owl", "bird", "fish", "dog"]  # overflows the memo: it starts again
    assert [int(h) for h in token_hashes(second)] == blake(second)
    assert len(module._TOKEN_HASHES) <= 4 and token_hashes([]).size == 0


def test_simhash_bits_are_weighted_signs():
    # Recompute bit by bit in pure Python: bit i = sign of sum of +-tf.
    tokens = "the cat sat on the mat and the cat sat again".split()
    hashes, tf = ngram_hashes(tokens, (3,))
    expected = 0
    for i in range(64):
        s = sum(w if (int(h) >> i) & 1 else -w for h, w in zip(hashes, tf.tolist()))
        if s > 0:
            expected |= 1 << i
    assert simhash_of_hashes(hashes, tf) == expected == simhash(tokens)
    assert simhash_of_hashes(np.empty(0, dtype=np.uint64), np.empty(0)) is None


def test_a_long_text_is_hashed_in_blocks_with_the_same_bits():
    """More distinct n-grams than one block (a long page): the bit sums are the whole
    matrix's, and a page's sentences give the fingerprint of their joined tokens."""
    rng = np.random.default_rng(16)
    hashes = rng.integers(0, 2 ** 64, size=3 * _BLOCK + 5, dtype=np.uint64)
    tf = rng.integers(1, 9, size=len(hashes))
    bits = np.unpackbits(hashes.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    sums = (tf[:, None] * (bits.astype(np.int64) * 2 - 1)).sum(axis=0)  # exact integers
    expected = sum(1 << i for i in range(64) if sums[i] > 0)
    assert simhash_of_hashes(hashes, tf) == expected
    sentences = [f"the cat number {i} sat on mat {i % 7}" for i in range(20_000)]
    assert sentences_simhash(sentences) == simhash(" ".join(sentences).split())
    assert sentences_simhash([]) is None


@pytest.mark.parametrize("mode", ["3", "5", "3+5"])
def test_similar_texts_are_close_and_different_texts_far(mode):
    base = text_simhash(TEXT, mode)
    edited = text_simhash(TEXT.replace("sixty", "seventy").replace("rodents", "mice"), mode)
    other = text_simhash("Kenlm builds language models with modified Kneser Ney smoothing from large "
                         "corpora and answers queries quickly from a binary file on disk.", mode)
    assert 0 <= base < 2**64
    assert hamming(base, edited) <= 12
    assert hamming(base, other) >= 16
    assert text_simhash(TEXT.upper() + " !!!", mode) == base  # normalisation: case, punctuation
    assert text_simhash("   ...  ", mode) is None


def test_simhash_of_tokens_matches_text():
    assert simhash("the cat sat on the mat".split(), "3") == text_simhash("The cat sat on the mat.", "3")


def test_simhash_is_the_same_in_another_process_with_another_hash_seed():
    # Python's str hash is salted per process; the fingerprint must not be (it is stored
    # in JOBDIR and compared across resumed crawls and Redis workers).
    code = ("from focuscrawl.dedup.simhash import text_simhash; import sys; "
            "print(text_simhash(sys.stdin.read(), '3'))")
    here = text_simhash(TEXT, "3")
    for seed in ("1", "2"):
        out = warmfork.run([sys.executable, "-c", code], input=TEXT, capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}, check=True).stdout
        assert int(out) == here
    assert np.uint64(here) == here  # fits the index's uint64 tables
