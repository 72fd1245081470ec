from focuscrawl.dedup.collapse import collapse_near_duplicates

CONTEXT = ("A tabby cat sleeps on a sunny window sill in the afternoon while the children play "
           "in the garden below and the dog watches the birds")


def test_collapses_same_picture_keeping_the_best_score():
    rows = [
        {"id": "a", "final_score": "500", "image_phash": "f0f0f0f0f0f0f0f0", "context_text": "one"},
        {"id": "b", "final_score": 120.0, "image_phash": "f0f0f0f0f0f0f0f1", "context_text": "two"},
        {"id": "c", "final_score": 300.0, "image_phash": "0f0f0f0f0f0f0f0f", "context_text": "three"},
    ]
    kept, collapsed = collapse_near_duplicates(rows)
    assert [r["id"] for r in kept] == ["b", "c"]
    assert collapsed == 1


def test_collapses_near_identical_context_text():
    rows = [
        {"id": "a", "final_score": 90.0, "image_phash": "", "context_text": CONTEXT},
        {"id": "b", "final_score": 40.0, "image_phash": "1234", "context_text": CONTEXT + "."},
        {"id": "c", "final_score": 60.0, "image_phash": None,
         "context_text": "Kenlm answers language model queries from a binary file very quickly indeed"},
    ]
    kept, collapsed = collapse_near_duplicates(rows)
    assert [r["id"] for r in kept] == ["b", "c"] and collapsed == 1
    kept, collapsed = collapse_near_duplicates(rows, text=None)
    assert [r["id"] for r in kept] == ["b", "c", "a"] and collapsed == 0


def test_missing_scores_rank_last_and_ties_keep_input_order():
    rows = [
        {"id": "x", "final_score": "", "image_phash": "aaaa", "context_text": ""},
        {"id": "y", "final_score": 10, "image_phash": "aaab", "context_text": ""},
        {"id": "z", "final_score": 10, "image_phash": "5555", "context_text": ""},
    ]
    kept, collapsed = collapse_near_duplicates(rows)
    assert [r["id"] for r in kept] == ["y", "z"] and collapsed == 1
    assert collapse_near_duplicates([]) == ([], 0)


def test_objects_and_custom_accessors():
    from types import SimpleNamespace as NS
    rows = [NS(s=3.0, h=0xFFFF, t="a"), NS(s=1.0, h=0xFFFE, t="b"), NS(s=2.0, h=0, t="c")]
    kept, collapsed = collapse_near_duplicates(rows, score=lambda r: r.s, image_hash=lambda r: r.h,
                                               text=lambda r: r.t, image_max_distance=1)
    assert [r.s for r in kept] == [1.0, 2.0] and collapsed == 1
    kept, collapsed = collapse_near_duplicates(rows, score=lambda r: r.s, image_hash=lambda r: r.h,
                                               text=None, image_max_distance=0)
    assert collapsed == 0
