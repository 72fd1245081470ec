from focuscrawl.text.normalize import document_sentences, normalize, split_sentences, text_sentences


def test_spec_example():
    assert normalize("This funny & cute cat has more than 99 lives :) – THIS is awesome!") == \
        "this funny cute cat has more than lives this is awesome"


def test_numbers_and_whitespace_runs():
    assert normalize("In 2015,\tthe\n\n cat   weighed 4.5 kg") == "in the cat weighed kg"


def test_non_latin_letters_kept_symbols_dropped():
    assert normalize("Die Katze © frißt Mäuse → schnell") == "die katze frißt mäuse schnell"


def test_split_sentences_on_terminal_punctuation_and_lines():
    assert split_sentences("One two. Three four!\nFive six? seven") == ["One two.", "Three four!", "Five six?", "seven"]


def test_five_token_rule():
    text = "A cat sat. The cat sat on the mat. Cats: 1, 2, 3 and 4 of them sleep."
    assert document_sentences(text) == ["the cat sat on the mat", "cats and of them sleep"]
    assert document_sentences(text, min_tokens=3) == ["a cat sat", "the cat sat on the mat", "cats and of them sleep"]


def test_text_sentences_keeps_short_texts():
    assert text_sentences("Maine Coon!") == ["maine coon"]
    assert text_sentences(" ... 42 ") == []
