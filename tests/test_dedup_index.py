import random

import numpy as np
import pytest

from focuscrawl.dedup.index import SimHashIndex, hamming_distances
from tests.support import warmfork


def flip(fp: int, bits: list[int]) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


def brute(fps: np.ndarray, q: int, k: int) -> list[tuple[int, int]]:
    d = hamming_distances(fps, q)
    ids = np.nonzero(d <= k)[0]
    return sorted(((int(i), int(d[i])) for i in ids), key=lambda x: (x[1], x[0]))


@pytest.mark.parametrize("k,blocks", [(0, 4), (1, 4), (3, 4), (2, 5), (3, 6), (6, 7), (2, 16)])
def test_no_false_negatives_against_brute_force(k, blocks):
    rng = random.Random(k * 100 + blocks)
    base = [rng.getrandbits(64) for _ in range(300)]
    fps = list(base)
    # planted neighbours at every distance 0..k+2 (beyond k must not be reported)
    for fp in base[:60]:
        for d in range(k + 3):
            fps.append(flip(fp, rng.sample(range(64), d)))
    rng.shuffle(fps)
    index = SimHashIndex(k, blocks, merge_threshold=97)  # several merges plus an unsorted tail
    for fp in fps:
        index.add(fp)
    assert len(index) == len(fps)
    arr = np.array(fps, dtype=np.uint64)
    queries = fps[:80] + [flip(fp, rng.sample(range(64), rng.randint(0, k + 1))) for fp in base[:80]]
    for q in queries:
        assert index.query(q) == brute(arr, q, k)
    # batch path agrees too, and smaller radii are exact as well
    m = index.query_many(queries, max(0, k - 1))
    got = sorted(zip(m.query.tolist(), m.ids.tolist()))
    want = sorted((qi, i) for qi, q in enumerate(queries) for i, _ in brute(arr, q, max(0, k - 1)))
    assert got == want
    assert m.candidates >= len(got)


def test_tables_count_and_bad_parameters():
    assert SimHashIndex(3, 4).tables == 4
    assert SimHashIndex(2, 4).tables == 6
    assert SimHashIndex(3, 6).tables == 20
    for k, b in [(4, 4), (-1, 4), (1, 0), (1, 17)]:
        with pytest.raises(ValueError):
            SimHashIndex(k, b)
    index = SimHashIndex(2, 4)
    with pytest.raises(ValueError):
        index.query_many([1], max_distance=3)


def test_empty_index_and_oldest_first():
    index = SimHashIndex(3, 4)
    assert index.query(12345) == []
    a = index.add(0b1011)
    b = index.add(0b1011)
    c = index.add(0b1010)
    assert (a, b, c) == (0, 1, 2)
    assert index.query(0b1011) == [(0, 0), (1, 0), (2, 1)]
    index.merge()
    assert index.query(0b1011) == [(0, 0), (1, 0), (2, 1)]


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("k,blocks", [(3, 4), (2, 5), (6, 7)])
def test_a_tiny_merged_index_reports_each_match_once(n, k, blocks):
    """With few fingerprints the directory is coarse; a bucket must still hold one table only
    (one fingerprint merged into a (3, 4) index was reported twice)."""
    fps = [0x0123_4567_89AB_CDEF + i for i in range(n)]
    index = SimHashIndex.from_fingerprints(fps, k, blocks)
    for q in fps:
        assert index.query(q) == brute(np.array(fps, dtype=np.uint64), q, k)
        batch = index.query_many([q])
        assert list(zip(batch.ids.tolist(), batch.distances.tolist())) == brute(np.array(fps, dtype=np.uint64), q, k)


def test_extreme_values_and_from_fingerprints():
    fps = [0, 2**64 - 1, 2**63, 1]
    index = SimHashIndex.from_fingerprints(fps, 3, 4)
    assert index.query(2**64 - 1) == [(1, 0)]
    assert index.query(0) == [(0, 0), (2, 1), (3, 1)]


def test_key_matches_count_equal_table_keys():
    index = SimHashIndex.from_fingerprints([0, 1, 2**63, 0xFFFF_FFFF_0000_0000], 3, 4)
    m = index.query_many([0], count_key_matches=True)
    # 0 itself: 4 tables; 1 differs in block 0 and 2**63 in block 3: 3 tables each;
    # the last one differs in blocks 2 and 3: tables of block 0 and block 1
    assert m.key_matches == 4 + 3 + 3 + 2
    assert m.candidates >= m.key_matches
    assert index.query_many([0]).key_matches == 0  # not counted unless asked


def test_growing_tail_and_merges_agree_with_brute_force():
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**64, size=20000, dtype=np.uint64)
    index = SimHashIndex(3, 4, merge_threshold=64)
    for fp in base.tolist():
        index.add(fp)
    assert 0 < len(index) - index._n_sorted < 20000 // 64 + 1  # a tail is pending, merges happened
    queries = [int(base[i]) ^ (1 << int(b)) for i, b in zip(rng.integers(0, 20000, 50), rng.integers(0, 64, 50))]
    for q in queries:
        assert index.query(q) == brute(base, q, 3)


def test_single_query_with_exact_directory_agrees_with_batch_and_brute_force():
    # > 2**16 fingerprints with k=3, B=4: the directory covers all 18 key bits (shift 0),
    # as at 1M, so every bucket is one table key; query() walks the buckets in compiled code
    rng = np.random.default_rng(11)
    fps = rng.integers(0, 2**64, size=70_000, dtype=np.uint64)
    pyrng = random.Random(11)
    queries = [pyrng.getrandbits(64) for _ in range(60)]
    for i, q in enumerate(queries):  # planted neighbours at 0..4 bits, one stored twice
        for d in range(5):
            fps[i * 5 + d] = flip(q, pyrng.sample(range(64), d))
    fps[69_999] = fps[0]
    index = SimHashIndex.from_fingerprints(fps, 3, 4)
    assert index._shift == 0 and len(index) == index._n_sorted
    m = index.query_many(queries)
    for qi, q in enumerate(queries):
        got = index.query(q)
        assert got == brute(fps, q, 3)
        assert len(got) >= 4 and len({i for i, _ in got}) == len(got)  # each id once
        batch = sorted(zip(m.ids[m.query == qi].tolist(), m.distances[m.query == qi].tolist()),
                       key=lambda x: (x[1], x[0]))
        assert got == batch
        assert index.query(q, max_distance=1) == [(i, d) for i, d in got if d <= 1]
    assert index.query(queries[0])[:2] == [(0, 0), (69_999, 0)]


def test_single_query_with_many_matches_in_tables_and_tail():
    # more matches than the compiled search's first result buffer (16), each found in
    # several tables, plus matches in the unsorted tail: every id exactly once, in order
    rng = random.Random(3)
    q = rng.getrandbits(64)
    near = [flip(q, rng.sample(range(64), rng.randint(0, 3))) for _ in range(50)]
    far = [rng.getrandbits(64) for _ in range(500)]
    fps = near[:40] + far + near[40:]
    index = SimHashIndex(3, 4, merge_threshold=10_000)
    index.add_many(fps[:-10])
    index.merge()
    index.add_many(fps[-10:])
    assert index._n_sorted == len(fps) - 10  # the last 10 matches sit in the tail
    got = index.query(q)
    assert got == brute(np.array(fps, dtype=np.uint64), q, 3)
    assert len(got) >= 50 and len({i for i, _ in got}) == len(got)


@pytest.mark.slow(12)
def test_numba_caches_in_the_user_cache_not_in_the_installed_package(tmp_path):
    """numba wrote its cache into the installed package (``focuscrawl/dedup/__pycache__``:
    read-only or shared installs); it goes to ``$XDG_CACHE_HOME/focuscrawl/numba``."""
    import os
    import sys
    from pathlib import Path

    import focuscrawl.dedup.index as module

    package_cache = Path(module.__file__).parent / "__pycache__"
    before = set(package_cache.glob("index.*.nb*")) if package_cache.exists() else set()
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    code = ("from focuscrawl.dedup.index import SimHashIndex\n"
            "index = SimHashIndex(3, 4)\nindex.add(11)\nindex.merge()\nprint(index.query(11)[0])")
    proc = warmfork.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "(0, 0)", proc.stderr[-2000:]
    assert list((tmp_path / "cache" / "focuscrawl" / "numba").rglob("index.*.nbi"))
    after = set(package_cache.glob("index.*.nb*")) if package_cache.exists() else set()
    assert after == before


def test_nearest_is_the_first_match_of_query_without_the_excluded_id():
    rnd = random.Random(11)
    centres = [rnd.getrandbits(64) for _ in range(5)]
    index = SimHashIndex(3, 4, merge_threshold=97)  # merged tables and an unsorted tail
    for _ in range(600):
        index.add(rnd.choice(centres) ^ sum(1 << rnd.randrange(64) for _ in range(rnd.randrange(3))))
    for _ in range(300):
        fp = rnd.choice(centres) ^ (1 << rnd.randrange(64)) if rnd.random() < 0.8 else rnd.getrandbits(64)
        exclude = rnd.randrange(-1, len(index))
        expected = next(((i, d) for i, d in index.query(fp) if i != exclude), None)
        assert index.nearest(fp, exclude=exclude) == expected
        before = rnd.randrange(0, len(index) + 1)  # the ids below it only: sorted tables, tail or both
        expected = next(((i, d) for i, d in index.query(fp) if i != exclude and i < before), None)
        assert index.nearest(fp, exclude=exclude, before=before) == expected
