import random
import re
import unicodedata

from focuscrawl.text.normalize import (document_sentences, document_tokens, normalize, split_sentences,
                                       text_sentences, text_tokens)


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


# -- the fast implementation against the rules written as regexes ------------------------
_REF_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_REF_SENTENCE_END = re.compile(r"(?<=[.!?\u2026\u3002\uff01\uff1f\u0964])\s+|\s*[\r\n\u2028\u2029]+\s*")


def ref_normalize(text: str) -> str:
    text = _REF_NUMBER.sub(" ", text.lower())
    text = "".join(" " if unicodedata.category(ch)[0] in "PSC" and ch not in "\t\n\r " else ch for ch in text)
    return re.sub(r"\s+", " ", text).strip()


def ref_split(text: str) -> list[str]:
    return [s.strip() for s in _REF_SENTENCE_END.split(text) if s and s.strip()]


def ref_document_sentences(text: str, min_tokens: int = 5) -> list[str]:
    return [n for n in map(ref_normalize, ref_split(text)) if n and n.count(" ") + 1 >= min_tokens]


TRICKY = (list("aAbZ ΣσςΟΔ.!?…。！？।\t\n\r\u2028\u2029\xa0\x0b\x0c\x1c\x1d\x1e\x1f\x85\x01\x7f 12,3:4/5-'’\"()"
               "İßK€©→😀\u200b\u0301\u3000x\u0660\uff10\u00ad")
          + ["ΟΔΟΣ", "Mr. ", "3.5", "e.g. ", "ΟΔΟΣ. ", "?! ", ".) ", "1,000.5 ", " cat ", "Kitten"])


def test_fast_normalisation_equals_the_regex_rules():
    rng = random.Random(11)
    for _ in range(4000):
        text = "".join(rng.choice(TRICKY) for _ in range(rng.randint(0, 40)))
        assert normalize(text) == ref_normalize(text), repr(text)
        assert split_sentences(text) == ref_split(text), repr(text)
        assert document_sentences(text) == ref_document_sentences(text), repr(text)
        assert document_sentences(text, 2) == ref_document_sentences(text, 2), repr(text)
        assert text_sentences(text) == ref_document_sentences(text, 1), repr(text)
        assert [" ".join(t) for t in text_tokens(text)] == text_sentences(text)
        assert [" ".join(t) for t in document_tokens(text, 3)] == document_sentences(text, 3)


def test_boundaries_that_the_fast_path_must_respect():
    # a terminal mark followed by a dropped character is no sentence end
    assert split_sentences("It ended.) Then more") == ["It ended.) Then more"]
    assert text_sentences("It ended.) Then more") == ["it ended then more"]
    # a control character after a terminal mark is dropped, not white space
    assert text_sentences("one.\x02two") == ["one two"]
    # white space other than a blank after a terminal mark ends the sentence
    assert text_sentences("one.\xa0two!\ttwo? three\u2028four") == ["one", "two", "two", "three", "four"]
    # Greek final sigma is lowercased by context, also at a sentence end
    assert text_sentences("ΟΔΟΣ. ΟΔΟΣ ΕΝΑ") == ["οδος", "οδος ενα"]
    # numbers with separators vanish whole; digits of any script are numbers
    assert normalize("1,000.5 cats and ٣ dogs in 2024/25") == "cats and dogs in"
