from collections import Counter

import numpy as np
import pytest

from focuscrawl.dedup.simhash import (feature_hashes, hamming, ngram_features, parse_ngrams, simhash,
                                      simhash_of_features, text_simhash)

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


def test_ngram_features_counts_and_union():
    tokens = "a rose is a rose is a rose".split()
    tri = ngram_features(tokens, (3,))
    assert tri == Counter({"a rose is": 2, "rose is a": 2, "is a rose": 2})
    both = ngram_features(tokens, (3, 5))
    assert both["a rose is a rose"] == 2 and both["a rose is"] == 2
    assert len(both) == 3 + 3  # 5-grams: 'a rose is a rose', 'rose is a rose is', 'is a rose is a'
    assert ngram_features(["two", "words"], (3,)) == Counter({"two words": 1})
    assert ngram_features([], (3,)) == Counter()


def test_simhash_bits_are_weighted_signs():
    # Recompute bit by bit in pure Python: bit i = sign of sum of +-tf.
    weights = Counter({"alpha beta gamma": 3, "beta gamma delta": 1, "x y z": 2})
    hashes = [int(h) for h in feature_hashes(weights)]
    expected = 0
    for i in range(64):
        s = sum(w if (h >> i) & 1 else -w for h, w in zip(hashes, weights.values()))
        if s > 0:
            expected |= 1 << i
    assert simhash_of_features(weights) == expected


def test_feature_hash_is_stable_blake2b():
    import hashlib
    h = int(feature_hashes(["cat"])[0])
    assert h == int.from_bytes(hashlib.blake2b(b"cat", digest_size=8).digest(), "little")


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


def test_simhash_is_deterministic_numpy_uint64():
    fps = np.array([text_simhash(TEXT, "3")] * 2, dtype=np.uint64)
    assert fps[0] == fps[1]
