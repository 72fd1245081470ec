import math

import pytest

from focuscrawl.lm.keywords import KeywordList
from focuscrawl.lm.scorer import TopicScorer, load_kenlm, perplexity_from_log10


def test_perplexity_hand_computed(toy_arpa):
    scorer = TopicScorer(load_kenlm(toy_arpa))
    # <s> cat </s>: no bigrams, no back-off weights: p(cat) = -0.5, p(</s>) = -0.5
    assert scorer.perplexity("Cat!") == pytest.approx(10 ** (1.0 / 2))
    # two sentences scored together; dog: p(dog) = -1.0, p(</s>) = -0.5
    assert scorer.perplexity("Cat. Dog.") == pytest.approx(10 ** (2.5 / 4))
    # unknown word uses <unk>: -5.0, then -0.5
    assert scorer.perplexity("zebra") == pytest.approx(10 ** (5.5 / 2))
    # bigram hit: -0.5, p(dog|cat) = -0.4, -0.5
    assert scorer.perplexity("cat dog") == pytest.approx(10 ** (1.4 / 3))


def test_empty_text_has_no_perplexity(toy_arpa):
    scorer = TopicScorer(load_kenlm(toy_arpa))
    assert scorer.perplexity("") is None
    assert scorer.perplexity("!!! 123") is None
    missing = scorer.score("")
    assert missing.perplexity is None and missing.weighted is None and missing.tokens == 0


def test_cache_counters(toy_arpa):
    scorer = TopicScorer(load_kenlm(toy_arpa))
    scorer.perplexity("cat dog")
    scorer.perplexity("cat dog")
    scorer.perplexity("Cat, dog!")
    assert scorer.queries == 3 and scorer.cache_hits == 2
    assert scorer.counters() == {"focuscrawl/lm/queries": 3, "focuscrawl/lm/cache_hits": 2, "focuscrawl/lm/cache_misses": 1}


def test_score_combines_keywords(toy_arpa):
    scorer = TopicScorer(load_kenlm(toy_arpa), KeywordList({"cat": 1.0, "dog": 3.0}))
    s = scorer.score("cat cat")
    pp = 10 ** (1.1 / 3)  # -0.5, p(cat|cat) = -0.1, -0.5
    assert s.perplexity == pytest.approx(pp)
    assert s.keyword_score == pytest.approx(0.5)
    assert s.weighted == 1.0  # 1 - 3*0.5 < 0
    s = scorer.score("the cat")
    assert s.keyword_score == pytest.approx(0.25)
    assert s.weighted == pytest.approx(s.perplexity * 0.25)


def test_score_document_applies_five_token_rule(toy_arpa):
    scorer = TopicScorer(load_kenlm(toy_arpa))
    score, sentences = scorer.score_document("Cat dog. Cat cat dog dog cat here.")
    assert sentences == ["cat cat dog dog cat here"]
    assert score.tokens == 6


def test_bad_model_paths(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_kenlm(tmp_path / "missing.arpa")
    bad = tmp_path / "bad.arpa"
    bad.write_text("this is not an arpa file\n")
    with pytest.raises(ValueError, match="cannot load language model"):
        load_kenlm(bad)


def test_perplexity_from_log10():
    assert perplexity_from_log10(-2.0, 2) == pytest.approx(10.0)
    assert perplexity_from_log10(0.0, 0) is None
    assert math.isclose(perplexity_from_log10(-1.0, 1) ** 1, 10.0)


def test_scores_equal_the_definition_over_sentences(toy_arpa):
    # score / score_document take a shortcut (tokens from the normaliser, one-sentence
    # path, fast TextScore construction); they must equal score_sentences' definition.
    import dataclasses

    from focuscrawl.text.normalize import document_sentences, text_sentences
    scorer = TopicScorer(load_kenlm(toy_arpa), KeywordList({"cat": 1.0, "dog": 3.0}))
    for text in ["Cat dog cat.", "Cat dog. Dog dog cat cat dog! Zebra cat dog dog cat.", "", "42"]:
        assert scorer.score(text) == scorer.score_sentences(text_sentences(text))
        score, sentences = scorer.score_document(text, 3)
        assert sentences == document_sentences(text, 3)
        assert score == scorer.score_sentences(sentences)
        assert dataclasses.asdict(score) == dataclasses.asdict(scorer.score_sentences(sentences))
    s = scorer.score("Cat dog cat.")
    assert (s.tokens, s.keyword_score) == (3, (1.0 + 3.0 + 1.0) / 4.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.tokens = 4


def test_models_load_quietly(capfd):
    """KenLM writes to file descriptor 2 from C++ (a "build a binary file" hint and a
    progress bar for every ARPA load): every command loading a model printed them."""
    from focuscrawl.topic.model import default_model_path

    model = load_kenlm(default_model_path())
    assert model.order == 5
    out, err = capfd.readouterr()
    assert out == "" and err == ""
