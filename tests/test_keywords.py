import math

import pytest

from focuscrawl.lm.keywords import KeywordList, binary_idf, learn_keywords, weighted_perplexity, write_keywords
from focuscrawl.text.normalize import normalize


def test_thesis_keyword_scores(thesis_keywords_path):
    kws = KeywordList.load(thesis_keywords_path)
    assert len(kws.weights) == 50
    assert kws.total_weight == pytest.approx(3799.8, abs=0.2)  # SPEC rounds 3799.995
    athena = normalize("Athena the cat pounces on string from FroliCat FLIK automatic cat teaser")
    assert kws.score(athena) == pytest.approx(0.534421481289966, rel=1e-12)
    assert kws.score(normalize("Is the kitten healthy?")) == pytest.approx(0.0103, abs=5e-5)


def test_weighted_perplexity_thesis_listing_5_1():
    # ALT with keyword score 0.534 -> 1 - 3*0.534 < 0 -> clamped to 1 (thesis Listing 5.1)
    assert weighted_perplexity(578.4404971047898, 0.534421481289966) == 1.0
    assert weighted_perplexity(15076.108324361443, 0.0) == 15076.108324361443
    assert weighted_perplexity(100.0, 0.1) == pytest.approx(70.0)
    assert weighted_perplexity(None, 0.5) is None


def test_learn_keywords_formula_by_hand():
    pos = [["cat", "cat", "the", "purr"], ["cat", "the", "meow"]]
    neu = [["the", "car"], ["the", "purr", "road"], ["vote"]]
    got = dict(learn_keywords(pos, neu, top_n=None))
    absent = math.log10(1 + 3 / 0.1)
    # cat: tf 3, df_pos 2/2 -> idf_pos 0, absent from neutral
    assert got["cat"] == pytest.approx(3 * absent)
    # meow: tf 1, idf_pos log10(2/1), absent from neutral
    assert got["meow"] == pytest.approx(absent - math.log10(2))
    # purr: tf 1, idf_neu log10(3/1), idf_pos log10(2)
    assert got["purr"] == pytest.approx(math.log10(3) - math.log10(2))
    # the: idf_neu log10(3/2) > 0 = idf_pos; tf 2
    assert got["the"] == pytest.approx(2 * math.log10(1.5))
    assert "car" not in got  # only positive-corpus tokens
    assert list(got) == sorted(got, key=lambda t: -got[t])


def test_negative_scores_are_cut_and_top_n():
    pos = [["a", "x"], ["b", "x"], ["c"]]
    neu = [["x", "y"], ["x"]]
    got = learn_keywords(pos, neu, top_n=None)
    assert "x" not in dict(got)  # idf_neu 0 - idf_pos > 0 -> negative, cut
    assert len(learn_keywords(pos, neu, top_n=2)) == 2


def test_binary_idf_counts_documents_not_occurrences():
    assert binary_idf([["a", "a", "a"], ["b"]]) == {"a": math.log10(2), "b": math.log10(2)}


def test_file_roundtrip_and_bad_line(tmp_path):
    path = tmp_path / "kw.txt"
    write_keywords(path, [("cat", 10.5), ("kitten", 2.25)])
    assert path.read_text() == "cat;10.5\nkitten;2.25\n"
    assert KeywordList.load(path).weights == {"cat": 10.5, "kitten": 2.25}
    path.write_text("cat;10\nbroken line\n")
    with pytest.raises(ValueError, match=r"kw.txt:2: expected 'token;score'"):
        KeywordList.load(path)


def test_learning_needs_both_sides():
    with pytest.raises(ValueError):
        learn_keywords([["a"]], [])


def test_a_binary_keyword_file_is_refused_naming_the_file(tmp_path):
    """Before: ``'utf-8' codec can't decode byte 0xb4 in position 0``, no file named."""
    path = tmp_path / "keywords.txt"
    path.write_bytes(b"cat;1\n" + bytes(range(128, 256)) * 40)
    with pytest.raises(ValueError, match=r"keywords.txt: not UTF-8 text .*not a keyword file"):
        KeywordList.load(path)
