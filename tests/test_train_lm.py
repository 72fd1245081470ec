"""Modified Kneser–Ney training (``focuscrawl.lm.train``) against hand-computed values,
invariants checked through KenLM, and lmplz's own output.

The lmplz fixtures (``tests/fixtures/lmplz_corpus.txt``, ``lmplz_tiny.arpa``,
``lmplz_tiny.binary``) were made by ``tests/fixtures/make_lmplz_fixtures.py`` with
KenLM 0.3.0: ``lmplz -o 3 < lmplz_corpus.txt > lmplz_tiny.arpa`` and
``build_binary lmplz_tiny.arpa lmplz_tiny.binary``; the pruned ones
(``lmplz_prune_o{N}_{T}.arpa``) by ``head -n 150 lmplz_corpus.txt | lmplz -o N --prune T...``.
"""
from __future__ import annotations

import gzip
import logging
import math
from pathlib import Path

import kenlm
import numpy as np
import pytest

from focuscrawl.cli import main
from focuscrawl.lm.binary import find_build_binary, write_binary
from focuscrawl.lm.external import _Progress, budget_warning, estimate_to_arpa, parse_memory, train_lm
from focuscrawl.lm.external_sort import merge_runs, write_run
from focuscrawl.lm.scorer import TopicScorer, load_kenlm
from focuscrawl.lm.train import (DISCOUNT_FALLBACK, compute_discounts, estimate, file_sentences,
                                 prune_thresholds, write_arpa)
from focuscrawl.text.normalize import document_sentences

FIXTURES = Path(__file__).parent / "fixtures"
L = math.log10


def read_arpa(path: Path) -> dict[str, tuple[float, float | None]]:
    """``{ngram: (log10 p, log10 backoff or None)}`` of an ARPA file."""
    entries, in_grams = {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("\\") and line.endswith("-grams:"):
            in_grams = True
            continue
        if not in_grams or not line.strip() or line.startswith("\\"):
            continue
        parts = line.split("\t")
        entries[parts[1]] = (float(parts[0]), float(parts[2]) if len(parts) > 2 else None)
    return entries


def train_to(tmp_path: Path, sentences: list[str], order: int, name: str = "m.arpa"):
    model = estimate(sentences, order)
    path = tmp_path / name
    write_arpa(model, path)
    return model, path


# -- hand-computed ----------------------------------------------------------------
TOY = ["a b", "b a", "a a b"]


def test_bigram_toy_corpus_hand_computed(tmp_path, caplog):
    # Padded: <s> a b </s> | <s> b a </s> | <s> a a b </s>.
    # Bigram (top order, raw) counts: <s>a 2, ab 2, b</s> 2, <s>b 1, ba 1, a</s> 1, aa 1:
    # no bigram seen 3 times -> fallback discounts D1=.5 D2=1 D3+=1.5 (and for unigrams,
    # whose adjusted counts a:3 (<s>,b,a to its left), b:2, </s>:2 have no singleton).
    with caplog.at_level(logging.WARNING, logger="focuscrawl.lm.train"):
        model, path = train_to(tmp_path, TOY, 2)
    assert model.discounts == [DISCOUNT_FALLBACK, DISCOUNT_FALLBACK]
    assert model.fallback_orders == [1, 2]
    assert "fallback discounts" in caplog.text
    assert model.counts() == [5, 7]  # <unk> <s> </s> a b; 7 distinct bigrams

    # Unigrams: denominator 3+2+2 = 7; γ = (1.5+1+1)/7 = .5; uniform over |V|-1 = 4 words.
    p = {"a": (3 - 1.5) / 7 + .5 / 4, "b": (2 - 1) / 7 + .5 / 4, "</s>": (2 - 1) / 7 + .5 / 4, "<unk>": .5 / 4}
    assert sum(p.values()) == pytest.approx(1.0)
    # Bigrams: context <s> (2,1 -> D 1,.5; denominator 3; γ = 1.5/3), a (2,1,1 -> 4; γ = 2/4),
    # b (2,1 -> 3; γ = 1.5/3): every γ is .5.
    p2 = {
        ("<s>", "a"): (2 - 1) / 3 + .5 * p["a"], ("<s>", "b"): .5 / 3 + .5 * p["b"],
        ("a", "b"): (2 - 1) / 4 + .5 * p["b"], ("a", "</s>"): .5 / 4 + .5 * p["</s>"],
        ("a", "a"): .5 / 4 + .5 * p["a"],
        ("b", "</s>"): (2 - 1) / 3 + .5 * p["</s>"], ("b", "a"): .5 / 3 + .5 * p["a"],
    }
    arpa = read_arpa(path)
    for w, pw in p.items():
        assert arpa[w][0] == pytest.approx(L(pw), abs=1e-6)
    assert arpa["<s>"] == (0.0, pytest.approx(L(.5), abs=1e-6))  # log10 p(<s>) = 0 like lmplz
    assert arpa["a"][1] == arpa["b"][1] == pytest.approx(L(.5), abs=1e-6)
    assert arpa["</s>"][1] == arpa["<unk>"][1] == 0.0  # not contexts
    for (h, w), pw in p2.items():
        assert arpa[f"{h} {w}"] == (pytest.approx(L(pw), abs=1e-6), None)

    lm = kenlm.Model(str(path))
    assert lm.score("a b") == pytest.approx(L(p2["<s>", "a"] * p2["a", "b"] * p2["b", "</s>"]), abs=1e-5)
    # unseen bigram b b: backoff γ(b) * p(b)
    assert lm.score("b b") == pytest.approx(L(p2["<s>", "b"] * .5 * p["b"] * p2["b", "</s>"]), abs=1e-5)
    # unknown word: γ(<s>) p(<unk>), then γ(<unk>) = 1 and p(</s>)
    assert lm.score("zebra") == pytest.approx(L(.5 * p["<unk>"] * p["</s>"]), abs=1e-5)


def test_trigram_adjusted_counts_and_bos_ngrams(tmp_path):
    # Trigram model of  <s> <s> x y </s> | <s> <s> z y </s> | <s> <s> x y </s>.
    model, path = train_to(tmp_path, ["x y", "z y", "x y"], 3)
    arpa = read_arpa(path)
    # Bigrams that start with <s> keep raw counts (<s> x: 2, <s> z: 1); "x y" and "z y"
    # get adjusted counts = distinct left words (<s> for both: 1 each); "y </s>": 2 (x, z).
    # So the trigram level has "<s> x y" 2, "<s> z y" 1, "x y </s>" 2, "z y </s>" 1
    # and no n-gram with <s> after its first word.
    assert set(arpa) == {"<unk>", "<s>", "</s>", "x", "y", "z",
                         "<s> x", "<s> z", "x y", "z y", "y </s>",
                         "<s> x y", "<s> z y", "x y </s>", "z y </s>"}
    t2 = model.orders[1]
    counts2 = {f"{model.vocab[f]} {w}": int(c) for f, w, c in
               zip(t2.first, model.vocab[model.orders[0].first[t2.suffix]], t2.count)}
    assert counts2 == {"<s> x": 2, "<s> z": 1, "x y": 1, "z y": 1, "y </s>": 2}
    # unigram adjusted counts: x:1 (<s>), z:1, y:2 (x, z), </s>:1 (y)
    assert dict(zip(model.vocab, model.orders[0].count.tolist())) == {
        "<unk>": 0, "<s>": 0, "</s>": 1, "x": 1, "y": 2, "z": 1}


def test_discounts_from_count_of_counts():
    # n1=4 n2=2 n3=1 n4=1: y = 4/(4+2*2) = .5; D1 = 1 - 2*.5*2/4; D2 = 2 - 3*.5*1/2; D3+ = 3 - 4*.5*1/1
    counts = np.array([1, 1, 1, 1, 2, 2, 3, 4, 9])
    (d1, d2, d3), fell_back = compute_discounts(counts, 3)
    assert not fell_back
    assert (d1, d2, d3) == (pytest.approx(.5), pytest.approx(1.25), pytest.approx(1.0))


def test_discount_out_of_range_falls_back(caplog):
    # n1=n2=n3=1, n4=10: D3+ = 3 - 4*(1/3)*10 < 0
    counts = np.array([1, 2, 3] + [4] * 10)
    with caplog.at_level(logging.WARNING, logger="focuscrawl.lm.train"):
        d, fell_back = compute_discounts(counts, 4)
    assert fell_back and d == DISCOUNT_FALLBACK
    assert "out of range" in caplog.text


# -- invariants through KenLM ----------------------------------------------------------
def context_distribution_sum(lm: kenlm.Model, vocab, context: list[str], bos: bool) -> float:
    state, out = kenlm.State(), kenlm.State()
    (lm.BeginSentenceWrite if bos else lm.NullContextWrite)(state)
    for w in context:
        lm.BaseScore(state, w, out)
        state, out = out, state
    return sum(10 ** lm.BaseScore(state, w, out) for w in vocab if w != "<s>")


@pytest.mark.parametrize("order", [2, 3, 5])
def test_every_context_distribution_sums_to_one(tmp_path, order):
    sentences = (FIXTURES / "lmplz_corpus.txt").read_text().splitlines()[:150]
    model, path = train_to(tmp_path, sentences, order)
    assert not model.fallback_orders
    lm = kenlm.Model(str(path))
    contexts = [([], False), ([], True)]  # null context (unigrams) and <s>
    for s in sentences[:12]:
        words = s.split()
        contexts += [(words[:i], True) for i in range(1, len(words) + 1)]
        contexts.append((words[-2:], False))
    contexts += [(["kitten", "zebra"], True), (["nothing", "seen", "here"], False)]
    for context, bos in contexts:
        assert context_distribution_sum(lm, model.vocab, context, bos) == pytest.approx(1.0, abs=2e-4), context


def test_tiny_corpus_falls_back_and_loads(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="focuscrawl.lm.train"):
        model, path = train_to(tmp_path, ["the cat sat"], 5)
    assert model.fallback_orders == [1, 2, 3, 4, 5]
    assert caplog.text.count("fallback discounts") == 5
    lm = kenlm.Model(str(path))
    assert lm.order == 5
    assert context_distribution_sum(lm, model.vocab, ["the"], True) == pytest.approx(1.0, abs=1e-4)
    assert math.isfinite(lm.score("the cat sat")) and lm.score("the cat sat") > lm.score("sat cat the")


def test_no_sentences_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no training sentences"):
        estimate([], 3)
    with pytest.raises(ValueError, match="order"):
        estimate(["a b"], 1)


def test_reserved_words_are_whitespace(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="focuscrawl.lm.train"):
        model = estimate(["a <s> b </s>", "b <unk> a"], 2)
    assert "treated as white space" in caplog.text
    assert model.vocab.tolist() == ["<unk>", "<s>", "</s>", "a", "b"]
    assert model.tokens == 4


# -- agreement with lmplz (committed fixtures) -----------------------------------------
def test_matches_lmplz_arpa_entry_by_entry(tmp_path):
    sentences = (FIXTURES / "lmplz_corpus.txt").read_text().splitlines()
    model, path = train_to(tmp_path, sentences, 3)
    # lmplz's own order (suffix order) is kept too, so the files can be diffed.
    assert_same_entries(path, FIXTURES / "lmplz_tiny.arpa", tolerance=2e-6)


@pytest.mark.parametrize("name", ["lmplz_tiny.arpa", "lmplz_tiny.binary"])
def test_topic_scorer_loads_lmplz_models_unchanged(tmp_path, name):
    scorer = TopicScorer(load_kenlm(FIXTURES / name))
    sentences = (FIXTURES / "lmplz_corpus.txt").read_text().splitlines()
    _, ours_path = train_to(tmp_path, sentences, 3)
    ours = TopicScorer(load_kenlm(ours_path))
    text = "The cat sat on the mat. Her kittens play with a small ball!"
    pp = scorer.perplexity(text)
    assert pp is not None and 1 < pp < 300
    assert pp == pytest.approx(ours.perplexity(text), rel=1e-4)
    # seen text scores better than the same words scrambled
    assert scorer.perplexity("the cat sat on mat") < scorer.perplexity("mat on sat cat the")


# -- inputs and the CLI ----------------------------------------------------------------
HTML = b"""<!doctype html><html><head><title>x</title><style>p{}</style></head><body>
<p>The cat sat on the mat all day long.</p><p>Too short.</p>
<p>Her 3 kittens play with a small red ball!</p><script>var cat = 1;</script></body></html>"""


def test_file_sentences_html_gz_and_normalized(tmp_path):
    (tmp_path / "page.html").write_bytes(HTML)
    (tmp_path / "notes.txt.gz").write_bytes(gzip.compress("Cats purr when they are happy. Yes.\n".encode()))
    (tmp_path / "norm.txt").write_text("already normal text\n\nshort one\n")
    assert file_sentences(tmp_path / "page.html") == [
        "the cat sat on the mat all day long", "her kittens play with a small red ball"]
    assert file_sentences(tmp_path / "notes.txt.gz") == ["cats purr when they are happy"]
    assert file_sentences(tmp_path / "norm.txt", normalized=True) == ["already normal text", "short one"]


def test_normalized_input_skips_binary_lines_with_a_count(tmp_path, caplog):
    """``--normalized`` took random bytes and NUL bytes as words (issue #44): such lines are
    skipped now, and one warning per file says how many."""
    import random

    rnd = random.Random(3)
    noise = bytes(rnd.randrange(256) for _ in range(4000)).replace(b"\n", b"")
    (tmp_path / "mixed.txt").write_bytes(b"the cat sleeps\n" + noise + b"\nnul\x00byte here\nthe kitten plays\n")
    with caplog.at_level(logging.WARNING, "focuscrawl.lm.train"):
        assert file_sentences(tmp_path / "mixed.txt", normalized=True) == ["the cat sleeps", "the kitten plays"]
    assert "mixed.txt: " in caplog.text and " lines skipped as not text" in caplog.text


def test_normalized_over_long_line_is_cut_at_white_space(tmp_path, caplog):
    """One line of 50 MB was one sentence, split into tokens at once (1.29 GB RSS in issue #44,
    1.19 GB with ``-S 200M``); it is read and cut into sentences of ``max_chars`` at most (260 MB
    with ``-S 200M``), every token kept whole."""
    from focuscrawl.lm.train import normalized_lines

    words = [f"word{i % 97}" for i in range(5000)]
    (tmp_path / "one.txt").write_text(" ".join(words) + "\nshort line\n")
    with caplog.at_level(logging.WARNING, "focuscrawl.lm.train"):
        lines = list(normalized_lines(tmp_path / "one.txt", max_chars=1000))
    assert lines[-1] == "short line" and all(len(line) <= 2000 for line in lines)
    assert [w for line in lines[:-1] for w in line.split()] == words
    assert "cuts of lines over 1000 characters" in caplog.text


def test_train_lm_cli(tmp_path, capsys):
    (tmp_path / "page.html").write_bytes(HTML)
    (tmp_path / "notes.txt.gz").write_bytes(gzip.compress(b"Cats purr when they are happy and warm.\n"))
    out = tmp_path / "out.arpa"
    assert main(["train-lm", "--order", "3", "-o", str(out), str(tmp_path / "page.html"),
                 str(tmp_path / "notes.txt.gz")]) == 0
    assert "3 sentences" in capsys.readouterr().err
    expected = tmp_path / "expected.arpa"
    write_arpa(estimate(document_sentences("The cat sat on the mat all day long.\nHer kittens play with a "
                                           "small red ball!\nCats purr when they are happy and warm."), 3),
               expected)
    assert out.read_text() == expected.read_text()
    assert load_kenlm(out).order == 3
    assert not (tmp_path / "out.arpa.part").exists()


def test_train_lm_cli_errors(tmp_path, capsys):
    (tmp_path / "empty.txt").write_text("\n\n")
    assert main(["train-lm", "--normalized", "-o", str(tmp_path / "x.arpa"), str(tmp_path / "empty.txt")]) == 2
    assert "no training sentences" in capsys.readouterr().err
    assert main(["train-lm", "-o", str(tmp_path / "x.arpa"), str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt" in capsys.readouterr().err
    assert not (tmp_path / "x.arpa").exists()


def test_train_lm_function_writes_normalized_input(tmp_path):
    src = tmp_path / "s.txt"
    src.write_text("a b c\nb c a\n")
    model = train_lm([src], tmp_path / "m.arpa", order=2, normalized=True)
    assert model.sentences == 2 and model.tokens == 6
    assert kenlm.Model(str(tmp_path / "m.arpa")).order == 2


# Made with KenLM 0.3.0: printf '%s\n' "w2 w2 w0 w5" "w2" "w0 w2 w1 w0 w0 w2 w1 w5" | lmplz -o 2 --discount_fallback
QUIRK_LMPLZ_ARPA = """\\data\\
ngram 1=7
ngram 2=12

\\1-grams:
-1.1169698\t<unk>\t0
0\t<s>\t-0.30103
-0.7966346\t</s>\t0
-0.69596446\tw2\t-0.30103
-0.54557866\tw0\t-0.30103
-0.7966346\tw5\t-0.30103
-0.92791355\tw1\t-0.30103

\\2-grams:
-0.7450627\tw2 </s>
-0.23667604\tw5 </s>
-0.36248246\t<s> w2
-0.69746464\tw2 w2
-0.45507112\tw0 w2
-0.5100025\t<s> w0
-0.6155371\tw2 w0
-0.5729018\tw0 w0
-0.40631405\tw1 w0
-0.68854046\tw0 w5
-0.4816689\tw1 w5
-0.5866537\tw2 w1

\\end\\
"""


def test_lmplz_count_of_counts_quirk(tmp_path):
    # Adjusted unigram counts: w1 1 (w2 left of it), w5 2, </s> 2, w2 3, w0 4: n1..n4 all
    # non-zero, so the closed form would give D1 = 1 - 2*(1/5)*2/1 = 0.2. But lmplz counts
    # the suffixes of the last bigram in suffix order ("w2 w1": w1 has the highest id) with
    # raw counts: w1 occurs twice, n1 becomes 0 and lmplz falls back to 0.5/1/1.5.
    sentences = ["w2 w2 w0 w5", "w2", "w0 w2 w1 w0 w0 w2 w1 w5"]
    model, path = train_to(tmp_path, sentences, 2)
    assert dict(zip(model.vocab.tolist(), model.orders[0].count.tolist()))["w1"] == 1
    assert model.discounts[0] == DISCOUNT_FALLBACK
    (tmp_path / "ref.arpa").write_text(QUIRK_LMPLZ_ARPA)
    assert_same_entries(path, tmp_path / "ref.arpa", tolerance=2e-6)


# -- bounded memory (focuscrawl.lm.external) -------------------------------------------
def spilled(tmp_path: Path, sentences: list[str], order: int, memory: str, jobs: int, name: str):
    path = tmp_path / name
    model = estimate_to_arpa(sentences, path, order, memory=memory, jobs=jobs)
    return model, path


@pytest.mark.parametrize("order", [2, 3, 5])
def test_spilling_gives_the_in_memory_arpa_byte_for_byte(tmp_path, order):
    sentences = (FIXTURES / "lmplz_corpus.txt").read_text().splitlines()
    _, ref = train_to(tmp_path, sentences, order, "ref.arpa")
    one, one_path = spilled(tmp_path, sentences, order, "1G", 1, "one.arpa")
    assert one.runs == order  # everything fitted: one sorted run per order
    # 3 KB: counting chunks of 16 rows, merge buffers of a few entries, in two processes
    many, many_path = spilled(tmp_path, sentences, order, "3K", 2, "many.arpa")
    assert many.runs > 100 * (order - 1)
    assert one_path.read_bytes() == ref.read_bytes()
    assert many_path.read_bytes() == ref.read_bytes()
    assert many.counts() == one.counts() and many.discounts == one.discounts


def test_spilled_model_matches_lmplz_entry_by_entry(tmp_path):
    sentences = (FIXTURES / "lmplz_corpus.txt").read_text().splitlines()
    _, path = spilled(tmp_path, sentences, 3, "3K", 2, "m.arpa")
    assert_same_entries(path, FIXTURES / "lmplz_tiny.arpa", tolerance=2e-6)


def test_spilled_model_keeps_lmplz_count_of_counts_quirk(tmp_path):
    sentences = ["w2 w2 w0 w5", "w2", "w0 w2 w1 w0 w0 w2 w1 w5"]
    model, path = spilled(tmp_path, sentences, 2, "1K", 2, "q.arpa")
    assert model.discounts[0] == DISCOUNT_FALLBACK
    (tmp_path / "ref.arpa").write_text(QUIRK_LMPLZ_ARPA)
    ours, ref = read_arpa(path), read_arpa(tmp_path / "ref.arpa")
    assert list(ours) == list(ref)
    assert all(ours[g][0] == pytest.approx(ref[g][0], abs=2e-6) for g in ref)


def test_spilling_with_reserved_words_empty_orders_and_short_sentences(tmp_path, caplog):
    # Sentences shorter than the order leave the 4- and 5-gram levels nearly empty;
    # reserved words are white space (a sentence of only "<s>" becomes empty).
    sentences = ["a", "b a", "<s>", "a <unk> b", "c"]
    _, ref = train_to(tmp_path, [s for s in sentences], 5, "ref.arpa")
    with caplog.at_level(logging.WARNING, logger="focuscrawl.lm.external"):
        model, path = spilled(tmp_path, sentences, 5, "1K", 2, "m.arpa")
    assert "treated as white space" in caplog.text
    assert path.read_bytes() == ref.read_bytes()
    assert model.tokens == 6 and model.sentences == 5
    assert kenlm.Model(str(path)).order == 5


def test_merge_runs_equals_a_stable_sort(tmp_path):
    rng = np.random.default_rng(3)
    runs, rows = [], []
    for j in range(7):
        keys = np.sort(rng.integers(0, 50, rng.integers(0, 40)))
        runs.append(write_run(tmp_path / f"r{j}", {"key": keys, "val": np.arange(len(keys)) + 100 * j}))
        rows += [(k, 100 * j + i) for i, k in enumerate(keys.tolist())]
    out_keys, out_vals, rounds = [], [], []
    for merged, source in merge_runs(runs, "key", 4):
        out_keys += merged["key"].tolist()
        out_vals += merged["val"].tolist()
        assert ((merged["val"] // 100) == source).all()
        rounds.append(set(merged["key"].tolist()))
    assert list(zip(out_keys, out_vals)) == sorted(rows, key=lambda r: r[0])  # stable: run order on ties
    for a, b in zip(rounds, rounds[1:]):
        assert max(a) < min(b)  # a key never spans two rounds


@pytest.mark.parametrize("text,expected", [("2G", 2 * 1024 ** 3), ("512M", 512 * 1024 ** 2), ("64k", 65536),
                                           ("1000", 1000), ("1.5G", int(1.5 * 1024 ** 3))])
def test_parse_memory(text, expected):
    assert parse_memory(text) == expected
    assert 0 < parse_memory("10%") < parse_memory("20%")


def test_train_lm_cli_memory_option(tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO, logger="focuscrawl.lm.external")
    src = tmp_path / "s.txt"
    src.write_text("\n".join((FIXTURES / "lmplz_corpus.txt").read_text().splitlines()) + "\n")
    out = tmp_path / "out.arpa"
    assert main(["train-lm", "--order", "3", "--normalized", "--memory", "4K", "--jobs", "2",
                 "-T", str(tmp_path), "-o", str(out), str(src)]) == 0
    err = capsys.readouterr().err
    assert "400 sentences" in err
    assert "train-lm: memory budget 4.0K is far too small for 2,792 rows" in caplog.text  # and what it costs
    # progress: every phase, with the sorted runs of a spilling count and tokens/s
    for phase in ("train-lm read", "train-lm count: order 3", "sorted run(s)", "train-lm adjust",
                  "train-lm interpolate", "train-lm write", "tokens/s"):
        assert phase in caplog.text
    assert out.read_bytes() == train_to(tmp_path, src.read_text().splitlines(), 3, "ref.arpa")[1].read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("train-lm-")] == []  # runs cleaned up
    assert main(["train-lm", "--memory", "lots", "-o", str(out), str(src)]) == 2
    assert "memory budget 'lots'" in capsys.readouterr().err


def test_binary_output_scores_like_the_arpa(tmp_path, monkeypatch, capsys):
    src = tmp_path / "s.txt"
    src.write_text((FIXTURES / "lmplz_corpus.txt").read_text())
    arpa, binary = tmp_path / "m.arpa", tmp_path / "m.binary"
    if find_build_binary() is None:  # install.sh could not compile it (no g++/zlib)
        assert main(["train-lm", "--normalized", "--order", "3", "--binary", str(binary), "-o", str(arpa),
                     str(src)]) == 2
        assert "build_binary not found" in capsys.readouterr().err
        return
    assert main(["train-lm", "--normalized", "--order", "3", "--binary", str(binary), "-o", str(arpa),
                 str(src)]) == 0
    a, b = kenlm.Model(str(arpa)), kenlm.Model(str(binary))
    assert binary.read_bytes()[:20] != arpa.read_bytes()[:20]  # really a binary
    for s in ["the cat sat on the mat", "mat the on sat cat", "zebra"]:
        assert b.score(s) == pytest.approx(a.score(s), abs=1e-4)
    assert not (tmp_path / "m.binary.part").exists()
    monkeypatch.setenv("KENLM_BUILD_BINARY", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError):
        write_binary(arpa, tmp_path / "x.binary")


def test_spilling_equals_in_memory_on_random_corpora(tmp_path):
    # Random small corpora (like benchmarks/lm_vs_lmplz.py --fuzz): every order 2-5, many
    # with fallback discounts and empty high orders; a 1 KB budget spills tiny runs.
    import random
    rng = random.Random(7)
    logging.disable(logging.WARNING)
    try:
        for trial in range(16):
            n_words, order = rng.randint(2, 30), 2 + trial % 4
            words, weights = [f"w{i}" for i in range(n_words)], [1 / (i + 1) for i in range(n_words)]
            sentences = [" ".join(rng.choices(words, weights, k=rng.randint(1, 8)))
                         for _ in range(rng.randint(1, 60))]
            _, ref = train_to(tmp_path, sentences, order, "ref.arpa")
            _, path = spilled(tmp_path, sentences, order, "2K", 1, "m.arpa")
            assert path.read_bytes() == ref.read_bytes(), (trial, order, sentences[:3])
    finally:
        logging.disable(logging.NOTSET)


# -- pruning (lmplz --prune) ------------------------------------------------------------
PRUNED = [(3, [0, 1, 1]), (3, [0, 0, 1]), (5, [0, 1, 1]), (5, [0, 1, 2, 3])]


def lmplz_pruned(order: int, prune: list[int]) -> Path:
    return FIXTURES / f"lmplz_prune_o{order}_{''.join(map(str, prune))}.arpa"


def arpa_header(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.startswith("ngram ")]


def assert_same_entries(path: Path, ref_path: Path, tolerance: float = 1e-5) -> None:
    """The ARPA at ``path`` has ``ref_path``'s header and n-grams in its order, each with the
    same log10 probability and back-off (or none) within ``tolerance``."""
    ours, ref = read_arpa(path), read_arpa(ref_path)
    assert arpa_header(path) == arpa_header(ref_path)
    assert list(ours) == list(ref)  # the same n-grams kept, in lmplz's order
    for gram, (p, b) in ref.items():
        assert ours[gram][0] == pytest.approx(p, abs=tolerance), gram
        assert (ours[gram][1] is None) == (b is None), gram
        if b is not None:
            assert ours[gram][1] == pytest.approx(b, abs=tolerance), gram


@pytest.mark.parametrize("order,prune", PRUNED)
def test_pruned_model_matches_lmplz_entry_by_entry(tmp_path, order, prune):
    sentences = (FIXTURES / "lmplz_corpus.txt").read_text().splitlines()[:150]
    model = estimate(sentences, order, prune=prune)
    write_arpa(model, tmp_path / "mem.arpa")
    assert_same_entries(tmp_path / "mem.arpa", lmplz_pruned(order, prune))
    # pruning removes n-grams but leaves the discounts (count-of-counts of all n-grams)
    assert model.discounts == estimate(sentences, order).discounts
    # the bounded estimator, everything in memory and spilled in 3 KB over 2 processes
    one, one_path = spilled_pruned(tmp_path, sentences, order, prune, "1G", 1, "one.arpa")
    many, many_path = spilled_pruned(tmp_path, sentences, order, prune, "3K", 2, "many.arpa")
    assert many.runs > 10 * (order - 1)
    assert one_path.read_bytes() == many_path.read_bytes() == (tmp_path / "mem.arpa").read_bytes()
    assert many.counts() == model.counts()


def spilled_pruned(tmp_path, sentences, order, prune, memory, jobs, name):
    path = tmp_path / name
    return estimate_to_arpa(sentences, path, order, memory=memory, jobs=jobs, prune=prune), path


@pytest.mark.parametrize("order,prune", [(3, [0, 1]), (5, [0, 0, 2])])
def test_pruned_distributions_sum_to_one(tmp_path, order, prune):
    # a pruned n-gram's whole count goes to its context's backoff, so every
    # distribution the model defines still sums to one
    sentences = (FIXTURES / "lmplz_corpus.txt").read_text().splitlines()[:150]
    model = estimate(sentences, order, prune=prune)
    write_arpa(model, tmp_path / "m.arpa")
    assert model.counts()[1:] < estimate(sentences, order).counts()[1:]
    lm = kenlm.Model(str(tmp_path / "m.arpa"))
    contexts = [([], False), ([], True)]
    for s in sentences[:8]:
        words = s.split()
        contexts += [(words[:i], True) for i in range(1, len(words) + 1)]
        contexts.append((words[-2:], False))
    for context, bos in contexts:
        assert context_distribution_sum(lm, model.vocab, context, bos) == pytest.approx(1.0, abs=2e-4), context


def test_prune_thresholds_like_lmplz():
    assert prune_thresholds(None, 3) == [0, 0, 0]
    assert prune_thresholds([0], 4) == [0, 0, 0, 0]
    assert prune_thresholds([0, 1], 5) == [0, 1, 1, 1, 1]  # the last value is repeated
    assert prune_thresholds([0, 0, 1], 3) == [0, 0, 1]
    with pytest.raises(ValueError, match="non-decreasing"):
        prune_thresholds([0, 2, 1], 3)
    with pytest.raises(ValueError, match="order 3"):
        prune_thresholds([0, 1, 1, 1], 3)
    with pytest.raises(ValueError, match="unigrams"):
        prune_thresholds([1, 1], 3)
    with pytest.raises(ValueError, match="non-negative"):
        prune_thresholds([0, -1], 3)


def test_train_lm_cli_prune(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join((FIXTURES / "lmplz_corpus.txt").read_text().splitlines()[:150]) + "\n")
    out = tmp_path / "out.arpa"
    assert main(["train-lm", "--normalized", "--order", "3", "--prune", "0", "1", "-S", "4K", "--jobs", "2",
                 "-o", str(out), str(corpus)]) == 0
    assert "n-grams 168 119 78" in capsys.readouterr().err
    assert_same_entries(out, lmplz_pruned(3, [0, 1, 1]))
    for bad, message in [(["0", "2", "1"], "non-decreasing"), (["1"], "unigrams cannot be pruned"),
                         (["0", "1", "1", "1"], "4 thresholds given but the model has order 3")]:
        assert main(["train-lm", "--normalized", "--order", "3", "--prune", *bad,
                     "-o", str(tmp_path / "bad.arpa"), str(corpus)]) == 2
        err = capsys.readouterr().err
        assert "error: --prune" in err and message in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exc:  # not a number: argparse's own one-line usage error
        main(["train-lm", "--normalized", "--prune", "0", "x", "-o", str(tmp_path / "bad.arpa"), str(corpus)])
    assert exc.value.code == 2
    assert "--prune: invalid int value: 'x'" in capsys.readouterr().err
    assert not (tmp_path / "bad.arpa").exists()


def test_a_budget_far_too_small_for_the_corpus_is_warned_with_its_cost():
    """``train-lm --memory 5M`` on 4.6M tokens took 5:36 (200M: 0:09) without a word: the
    sorts on disk split into hundreds of runs. The warning names the cost and a budget
    that is enough, and that budget draws no warning."""
    import re

    rows = 4_800_000  # 4.6M tokens and their sentence ends, on 2 cores
    assert budget_warning(rows, parse_memory("200M"), 2, 5) is None
    message = budget_warning(rows, parse_memory("5M"), 2, 5)
    assert message.startswith(f"memory budget 5.0M is far too small for {rows:,} rows: each of the 8 sorts on disk "
                              "splits into ~")
    assert "small reads in all" in message
    enough = re.search(r"with --memory (\S+)\)", message).group(1)
    assert budget_warning(rows, parse_memory(enough), 2, 5) is None
    assert parse_memory(enough) < parse_memory("1G")


def test_a_long_phase_says_where_it_is_while_it_runs(caplog):
    """The interpolate step ran 250 s without a line: a long phase logs a line at least every
    ``every`` seconds, with its step."""
    import time

    caplog.set_level(logging.INFO, logger="focuscrawl.lm.external")
    progress = _Progress(every=0.05)
    with progress.phase("interpolate", "sorting the 4 orders by context (on disk)"):
        progress.step("interpolating order 3 of 5")
        time.sleep(0.5)
    assert "train-lm interpolate: interpolating order 3 of 5 (" in caplog.text
    lines = len(caplog.records)
    time.sleep(0.2)
    assert len(caplog.records) == lines  # stopped
