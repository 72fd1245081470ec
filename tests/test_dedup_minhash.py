import random

import pytest

from focuscrawl.dedup.minhash import (SuperShingleIndex, matching_super_shingles, shingles, super_shingles)

WORDS = ("cat dog mouse house garden tree river stone bread milk coffee train city night music "
         "paper window light water green blue small large quick slow").split()


def doc(seed: int, n: int = 400) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(WORDS) for _ in range(n)]


def test_shingles_are_a_set_of_8_word_windows():
    tokens = "a b c d e f g h a b c d e f g h".split()
    sh = shingles(tokens)
    assert "a b c d e f g h" in sh and len(sh) == 8  # 9 windows, one repeated
    assert shingles(["short", "text"]) == {"short text"}
    assert shingles([]) == set()


def test_super_shingles_identical_near_and_different():
    a = doc(1)
    near = list(a)
    near[200] = "zebra"  # one word changed: 8 of ~393 shingles differ
    sa, sn, sb = super_shingles(a), super_shingles(near), super_shingles(doc(2))
    assert len(sa) == 6 and all(0 <= v < 2**64 for v in sa)
    assert super_shingles(list(a)) == sa
    assert matching_super_shingles(sa, sn) >= 2
    assert matching_super_shingles(sa, sb) == 0
    assert super_shingles([]) is None
    with pytest.raises(ValueError):
        super_shingles(a, num_perm=80)


def test_super_shingle_index_needs_two_matches():
    index = SuperShingleIndex()
    i0 = index.add((1, 2, 3, 4, 5, 6))
    i1 = index.add((1, 9, 9, 9, 9, 9))
    i2 = index.add((1, 2, 3, 0, 0, 0))
    hits, candidates = index.query((1, 2, 7, 7, 7, 7))
    assert hits == [(i0, 2), (i2, 2)]
    assert candidates == 3
    assert index.query((1, 2, 3, 4, 5, 6))[0][0] == (i0, 6)
    assert i1 not in [i for i, _ in index.query((1, 0, 0, 0, 0, 0))[0]]
