"""Majority, unanimity and Cohen's kappa against hand-computed examples (thesis Tables 5.3-5.5, A.1)."""
from __future__ import annotations

import math

import pytest

from focuscrawl.annotate import stats as st


def test_agreement_majority_and_unanimity():
    assert st.agreement([0, 0, 0]).unanimous
    a = st.agreement([0, 0, 1])
    assert (a.label, a.count, a.majority, a.unanimous) == (0, 2, True, False)
    assert not st.agreement([1, 2, 4]).majority
    assert not st.agreement([0, 1]).majority  # 1 of 2 is no majority
    assert st.agreement([3, 3]).unanimous
    assert not st.agreement([]).majority


def test_kappa_hand_computed():
    # po = 4/5; marginals A {0:2, 1:2, 2:1}, B {0:1, 1:3, 2:1}: pe = (2+6+1)/25 = 0.36
    assert st.cohen_kappa([0, 0, 1, 1, 2], [0, 1, 1, 1, 2]) == pytest.approx((0.8 - 0.36) / 0.64)
    assert st.cohen_kappa([1, 0], [1, 0]) == pytest.approx(1.0)
    assert math.isnan(st.cohen_kappa([2, 2], [2, 2]))  # chance agreement 1: undefined


# x and y share items 1-5; z shares items 1-4 with both.
X = {1: 0, 2: 0, 3: 1, 4: 1, 5: 2}
Y = {1: 0, 2: 1, 3: 1, 4: 1, 5: 4}
Z = {1: 0, 2: 0, 3: 1, 4: 0}
ANSWERS = [(i, name, label, 0) for name, labels in (("x", X), ("y", Y), ("z", Z)) for i, label in labels.items()]


def test_pairwise_kappa_mean_by_hand():
    result = st.pairwise_kappa(ANSWERS, 2)
    kxy = (0.6 - 8 / 25) / (1 - 8 / 25)  # po 3/5, pe (2*1 + 2*3)/25
    kxz = (0.75 - 0.5) / 0.5  # po 3/4, pe (2*3 + 2*1)/16
    kyz = (0.5 - 6 / 16) / (1 - 6 / 16)  # po 2/4, pe (1*3 + 3*1)/16
    assert result["by_pair"][("x", "y")] == pytest.approx(kxy)
    assert result["by_pair"][("x", "z")] == pytest.approx(kxz)
    assert result["by_pair"][("y", "z")] == pytest.approx(kyz)
    assert result["mean"] == pytest.approx((kxy + kxz + kyz) / 3)
    assert (result["annotators"], result["pairs"], result["undefined_pairs"]) == (3, 3, 0)


def test_pairwise_kappa_merged_categories():
    # image reduced 2 (topic, pet, rest): x's "animal" (2) and y's "other" (4) agree on item 5
    merged = st.pairwise_kappa(ANSWERS, 2, st.IMAGE_REDUCED_2)
    assert merged["by_pair"][("x", "y")] == pytest.approx((0.8 - 0.36) / 0.64)
    table = st.kappa_table(ANSWERS)
    assert set(table) == {"image", "image_reduced_1", "image_reduced_2", "text", "text_reduced_1",
                          "text_reduced_2"}
    assert table["image_reduced_2"]["mean"] > table["image"]["mean"]
    # all text answers are 0: every pair undefined, no mean
    assert table["text"]["undefined_pairs"] == 3 and math.isnan(table["text"]["mean"])


def test_pairs_without_shared_items_do_not_count():
    answers = [(1, "a", 0, 0), (2, "a", 1, 1), (1, "b", 0, 0), (2, "b", 1, 2), (3, "c", 0, 0)]
    result = st.pairwise_kappa(answers, 3)
    assert list(result["by_pair"]) == [("a", "b")] and result["annotators"] == 3
    # text merged (describes+fits vs rest): a [0, 0], b [0, 1] -> po 1/2, pe (2*1)/4 = 0.5 -> 0
    assert st.pairwise_kappa(answers, 3, st.TEXT_REDUCED_2)["mean"] == pytest.approx(0.0)


ITEMS = {  # item: [(annotator, image, text)] with 3 answers each
    "A": [("x", 0, 0), ("y", 0, 0), ("z", 0, 0)],
    "B": [("x", 0, 1), ("y", 0, 1), ("z", 1, 0)],
    "C": [("x", 1, 2), ("y", 2, 2), ("z", 4, 3)],
    "D": [("x", 4, 2), ("y", 4, 2), ("z", 2, 2)],
}


def test_category_table_like_thesis_a1():
    table = st.category_table([[r[1] for r in rows] for rows in ITEMS.values()], 5)
    assert table == {"unanimous": [1, 0, 0, 0, 0], "majority_only": [1, 0, 0, 0, 1],
                     "majority": [2, 0, 0, 0, 1], "no_majority": 1, "total": 4}
    text = st.category_table([[r[2] for r in rows] for rows in ITEMS.values()], 4)
    assert text["unanimous"] == [1, 0, 1, 0] and text["majority_only"] == [0, 1, 1, 0]


def test_corpus_candidates_like_thesis_5_5():
    assert st.corpus_candidates(ITEMS) == {"describes": {"unanimous": 1, "majority": 1},
                                           "fits": {"unanimous": 0, "majority": 1}}


def test_group_by_item_keeps_complete_items():
    answers = [(1, "a", 0, 0), (1, "b", 0, 0), (1, "c", 0, 0), (2, "a", 0, 0)]
    assert list(st.group_by_item(answers, 3)) == [1]
    assert st.label_counts(answers) == {"image": [4, 0, 0, 0, 0], "text": [4, 0, 0, 0]}
