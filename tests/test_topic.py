"""Topic bundles: build, load, calibrated probabilities, scale invariance, ranking with a bundle."""
from __future__ import annotations

import gzip
import json
import pickle
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.runfiles import read_tsv
from tests.support.toymodel import build_topic_bundle, write_topic_corpora
from tests.support import warmfork

CAT_TEXTS = ["A grey cat sleeping on the sofa", "the kitten plays with a ball of yarn", "cat sitting on a laptop"]
OTHER_TEXTS = ["A man riding a surfboard on a wave", "a plate of pasta with tomato sauce",
               "two buses parked in front of the station"]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> tuple[Path, Path]:
    return write_topic_corpora(tmp_path_factory.mktemp("corpora"))


@pytest.fixture(scope="module")
def bundle(corpora, tmp_path_factory) -> Path:
    # ARPA, so that the scale-invariance test can rescale the models' text
    return build_topic_bundle(corpora, tmp_path_factory.mktemp("bundle") / "cats", order=3)


def test_bundle_lms_are_kenlm_binaries_where_build_binary_is_installed(bundle, corpora, tmp_path):
    from focuscrawl.lm.binary import find_build_binary
    from focuscrawl.topic.build import build_bundle
    from focuscrawl.topic.model import TopicModel

    out = tmp_path / "binary"
    manifest = build_bundle([corpora[0]], [corpora[1]], out, order=3, background_order=2,
                            progress=lambda *_: None, background=False)
    suffix = ".binary" if find_build_binary() else ".arpa.gz"
    assert manifest["topic_lm"] == "topic" + suffix and manifest["background_lm"] == "background" + suffix
    assert not list(out.glob("*.arpa"))  # the plain ARPA written on the way is gone
    arpa, binary = TopicModel(bundle), TopicModel(out)
    for text in CAT_TEXTS + OTHER_TEXTS:
        assert binary.raw(text) == pytest.approx(arpa.raw(text), rel=1e-4, abs=1e-5)


def test_bundle_files_manifest_and_calibration(bundle):
    from focuscrawl.topic.model import SCORERS

    manifest = json.loads((bundle / "bundle.json").read_text())
    for key in ("topic_lm", "background_lm", "keywords"):
        assert (bundle / manifest[key]).is_file()
    assert (bundle / manifest["classifier"]["indices"]).is_file()
    assert manifest["sources"] == {"positive": ["pos.txt"], "neutral": ["neu.txt"]}
    assert manifest["language"] == "en"  # the crawl's default FOCUSCRAWL_LANGUAGES (issue #30)
    held = manifest["sentences"]
    assert held["positive_heldout"] > 0 and held["neutral_heldout"] > 0
    cal = json.loads((bundle / "calibration.json").read_text())
    assert set(cal["scorers"]) == set(SCORERS)
    for entry in cal["scorers"].values():
        assert entry["a"] > 0  # higher raw topicality = more likely on topic
    for th in cal["thresholds"].values():
        assert 0 < th["cut"] <= 0.5 and 0 <= th["razor"] <= th["cut"]
    # held-out cat captions are told from other captions far better than chance
    assert cal["scorers"]["combined"]["average_precision"]["sentence"] > 0.8


def test_probabilities_separate_topic_from_other_text(bundle):
    from focuscrawl.topic.model import SCORERS, TopicModel

    model = TopicModel(bundle)
    for scorer in SCORERS:
        cat = [model.probability(t, scorer) for t in CAT_TEXTS]
        other = [model.probability(t, scorer) for t in OTHER_TEXTS]
        assert all(0 < p < 1 for p in cat + other)
        if scorer in ("xent", "classifier", "combined"):
            assert min(cat) > max(other), scorer
    assert model.probability("", "combined") is None and model.probability("!!! 42", "xent") is None
    scores = model.scores(CAT_TEXTS[0])
    assert set(scores) == set(SCORERS)


def test_model_pickles_as_its_folder(bundle):
    from focuscrawl.topic.model import TopicModel

    model = TopicModel(bundle, scorer="xent")
    clone = pickle.loads(pickle.dumps(model))
    assert clone.scorer == "xent" and clone.folder == model.folder
    assert clone.probability(CAT_TEXTS[1]) == model.probability(CAT_TEXTS[1])


def _scaled_arpa(src: Path, dst: Path, factor: float, shift: float) -> None:
    """The same model with every log10 probability ``p`` -> ``factor * p + shift`` and every
    backoff times ``factor``: each token's log10 probability becomes ``factor * l + shift``
    (every token uses exactly one explicit probability), so a perplexity PP becomes
    ``PP**factor * 10**-shift``."""
    out = []
    section = False
    with gzip.open(src, "rt", encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line.startswith("\\") and line.endswith("-grams:"):
                section = True
            elif line.startswith("\\"):
                section = False
            elif section and line:
                cells = line.split("\t")
                cells[0] = repr(float(cells[0]) * factor + shift)
                if len(cells) == 3:
                    cells[2] = repr(float(cells[2]) * factor)
                line = "\t".join(cells)
            out.append(line)
    with gzip.open(dst, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")


def test_scale_invariance_same_decisions_with_a_model_of_10x_perplexity(bundle, corpora, tmp_path):
    """Two bundles of the same topic whose perplexities differ by far more than 10x keep and
    cut the same texts; SPEC's absolute cut [2, 70000] does not."""
    from focuscrawl.lm.keywords import weighted_perplexity
    from focuscrawl.topic.build import calibrate, source_sentences, split_heldout, thresholds
    from focuscrawl.topic.model import TopicModel

    other = tmp_path / "scaled"
    shutil.copytree(bundle, other)
    manifest = json.loads((bundle / "bundle.json").read_text())
    for key in ("topic_lm", "background_lm"):
        _scaled_arpa(bundle / manifest[key], other / manifest[key], 2.0, -1.0)
    held_pos = split_heldout(source_sentences([corpora[0]]))[1]
    held_neu = split_heldout(source_sentences([corpora[1]]))[1]
    scaled = TopicModel(other)
    (other / "calibration.json").write_text(json.dumps(calibrate(scaled, held_pos, held_neu)))
    a, b = TopicModel(bundle), TopicModel(other)
    texts = CAT_TEXTS + OTHER_TEXTS + held_pos[:40] + held_neu[:80]
    pp = [(10 ** -a.raw(t)["perplexity"], 10 ** -b.raw(t)["perplexity"]) for t in texts]
    assert min(pb / pa for pa, pb in pp) >= 10
    for scorer in ("combined", "xent", "perplexity"):
        cut_a, cut_b = thresholds(a.calibration, scorer)["cut"], thresholds(b.calibration, scorer)["cut"]
        assert cut_a == pytest.approx(cut_b, abs=1e-3)
        keep_a = [a.probability(t, scorer) >= cut_a for t in texts]
        keep_b = [b.probability(t, scorer) >= cut_b for t in texts]
        assert keep_a == keep_b, scorer
        assert any(keep_a) and not all(keep_a)
    # SPEC's absolute perplexity cut changes its decisions with the model's scale
    spec = [[2 <= (weighted_perplexity(pa, 0.0) or 0) <= 70000, 2 <= (weighted_perplexity(pb, 0.0) or 0) <= 70000]
            for pa, pb in pp]
    assert any(x != y for x, y in spec)


def test_cli_build_show_and_errors(corpora, tmp_path, capsys):
    from focuscrawl.cli import main

    out = tmp_path / "b"
    assert main(["topic", "build", "--positive", str(corpora[0]), "--neutral", str(corpora[1]),
                 "--order", "2", "--background-order", "2", "-o", str(out)]) == 0
    assert main(["topic", "show", str(out)]) == 0
    text = capsys.readouterr().out
    assert "average precision" in text and "<- default" in text and "ranking cut" in text
    assert main(["topic", "show", str(tmp_path)]) == 2
    assert "not a topic bundle" in capsys.readouterr().err
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("a cat on a mat\n")
    assert main(["topic", "build", "--positive", str(tiny), "--neutral", str(corpora[1]), "-o",
                 str(tmp_path / "c")]) == 2
    assert "too little text" in capsys.readouterr().err


def test_bundled_cats_bundle_loads_and_ranks_cats_first():
    from focuscrawl.resources import default_topic_path
    from focuscrawl.topic.model import default_keywords_path, default_model_path
    from focuscrawl.topic.model import TopicModel

    model = TopicModel(default_topic_path())
    assert default_model_path().is_file() and default_keywords_path().is_file()
    cat = [model.probability(t) for t in CAT_TEXTS]
    other = [model.probability(t) for t in OTHER_TEXTS]
    assert min(cat) > 0.5 > max(other)


# -- ranking with a bundle -------------------------------------------------------------
RANK_ROWS = [  # thesis scores chosen so that SPEC's cut removes the best cat texts (weighted PP floored to 1)
    {"url": "http://a.org/cat1.jpg", "score": 1.0, "alt": "a grey cat sleeping on a sofa", "context": "my cat"},
    {"url": "http://a.org/bus.jpg", "score": 40.0, "alt": "a red bus parked at the station",
     "context": "buses and trains"},
    {"url": "http://a.org/cat2.jpg", "score": 1.0, "alt": "kitten playing with yarn", "context": "kittens"},
    {"url": "http://a.org/pasta.jpg", "score": 300.0, "alt": "a plate of pasta with tomato sauce",
     "context": "dinner recipes"},
]


@pytest.fixture
def rank_run(tmp_path):
    from tests.support.runfixture import make_run_dir

    return make_run_dir(tmp_path / "run", RANK_ROWS)


def _ranked(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    url = lines[0].split("\t").index("url")
    return [line.split("\t")[url] for line in lines[1:]]


def test_annotation_app_loads_the_bundle_ranking_not_specs_cut(rank_run, tmp_path, monkeypatch):
    """``annotate serve`` shows annotators what ``rank`` exports: with a bundle the cat images
    SPEC's cut would drop (weighted PP floored to 1) are loaded, the bus and the pasta are cut."""
    from focuscrawl.annotate.cli import load_ranked_images
    from focuscrawl.annotate.db import AnnotationDB
    from focuscrawl.cli import build_parser
    from focuscrawl.resources import default_topic_path

    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    db = AnnotationDB(tmp_path / "a.sqlite3")

    def load(*options):
        args = build_parser().parse_args(["annotate", "serve", str(rank_run), "--db", str(db.path), *options])
        return load_ranked_images(db, args)

    assert load("--topic", str(default_topic_path())) == 2
    assert {i.image_url for i in db.items_by_id().values()} == {"http://a.org/cat1.jpg", "http://a.org/cat2.jpg"}
    spec = AnnotationDB(tmp_path / "spec.sqlite3")
    args = build_parser().parse_args(["annotate", "serve", str(rank_run), "--db", str(spec.path),
                                      "--scoring", "thesis"])
    load_ranked_images(spec, args)
    assert {i.image_url for i in spec.items_by_id().values()} == {"http://a.org/bus.jpg", "http://a.org/pasta.jpg"}


def test_rank_with_the_cats_bundle_keeps_the_cats_first(rank_run, tmp_path, capsys, monkeypatch):
    from focuscrawl.cli import main
    from focuscrawl.resources import default_topic_path

    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    out = tmp_path / "r.tsv"
    assert main(["rank", "--json", str(rank_run), "--topic", str(default_topic_path()), "-o", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scoring"] == "combined" and 0 < summary["score_range"][0] <= 0.5
    ranked = _ranked(out)
    assert set(ranked[:2]) == {"http://a.org/cat1.jpg", "http://a.org/cat2.jpg"}
    assert "http://a.org/pasta.jpg" not in ranked  # cut: far below the calibrated probability
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0][:3] == ["rank", "p_on_topic", "final_score"]
    scores = [float(r[1]) for r in rows[1:]]
    assert scores == sorted(scores, reverse=True) and all(summary["score_range"][0] <= s <= 1 for s in scores)
    # one name, one meaning: final_score is images.tsv's weighted perplexity, not the probability
    tsv_scores = {r["image_url"]: r["final_score"] for r in read_tsv(rank_run / "images.tsv")}
    assert [r[2] for r in rows[1:]] == [tsv_scores[r[3]] for r in rows[1:]]
    assert not [c for c in rows[0] if c in ("score:thesis_final", "score:topic_combined")]  # no second name

    # FOCUSCRAWL_SCORING=thesis: SPEC's ranking exactly (ascending weighted PP, cut [2, 70000])
    monkeypatch.setenv("FOCUSCRAWL_SCORING", "thesis")
    assert main(["rank", "--json", str(rank_run), "--topic", str(default_topic_path()), "-o", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scoring"] == "thesis" and summary["score_range"] == [2.0, 70000.0]
    assert _ranked(out) == ["http://a.org/bus.jpg", "http://a.org/pasta.jpg"]
    assert all(line.split("\t")[1] == "" for line in out.read_text().splitlines()[1:])  # no p_on_topic


def test_rank_without_a_bundle_says_it_uses_spec(rank_run, tmp_path, capsys, monkeypatch):
    from focuscrawl.cli import main

    monkeypatch.delenv("FOCUSCRAWL_SCORING", raising=False)
    assert main(["rank", "--json", str(rank_run), "-o", str(tmp_path / "r.tsv")]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["scoring"] == "thesis" and "no topic bundle" in captured.err
    stats = rank_run / "stats.json"  # a crawl with -a topic=DIR records its bundle
    from focuscrawl.resources import default_topic_path
    stats.write_text(json.dumps({"focuscrawl/topic/bundle": str(default_topic_path())}))
    assert main(["rank", "--json", str(rank_run), "-o", str(tmp_path / "r.tsv")]) == 0
    assert json.loads(capsys.readouterr().out)["topic"] == str(default_topic_path())


def test_average_precision_and_ablation_metrics():
    from focuscrawl.eval.ranking_ablation import average_precision, ranking_metrics

    assert average_precision([True, False, True], [0, 1, 2]) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision([False, False], [0, 1]) is None
    m = ranking_metrics([True, False, True, True], [0.9, 0.8, None, 0.2], lambda p: p >= 0.5, True)
    assert m["average_precision"] == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)
    assert m["kept"] == 2 and m["kept_on_topic_share"] == pytest.approx(1 / 3)
    assert m["top_n_share"] == pytest.approx(1 / 2)  # N = 3 on topic, 2 kept, 1 of them on topic
    assert m["p@100"] is None and m["p@500"] is None  # 2 kept images have no precision at 100 or 500
    many = ranking_metrics([i % 2 == 0 for i in range(120)], [1 - i / 200 for i in range(120)], lambda p: True, True)
    assert many["p@100"] == pytest.approx(0.5) and many["p@500"] is None


# -- the calibrated crawl ----------------------------------------------------------------
def test_calibrated_link_rule_and_odds_priorities():
    from focuscrawl.focus.links import (ODDS_FLOOR, bucket_priority, calibrated_link_logit, odds_against,
                                        probability_to_odds)

    assert calibrated_link_logit(2.0, 4.0) == pytest.approx(0.7 * 2 + 0.3 * 4)
    assert calibrated_link_logit(2.0, -5.0) == 2.0 and calibrated_link_logit(2.0, None) == 2.0
    assert odds_against(0.0) == pytest.approx(1.0) and probability_to_odds(0.9) == pytest.approx(1 / 9)
    buckets = [probability_to_odds(p) for p in (0.9, 0.5, 0.1)]
    # more topical = higher priority, also inside a bucket (odds below 1 keep distinct steps)
    priorities = [bucket_priority(odds_against(x), buckets, 10, ODDS_FLOOR) for x in (8.0, 5.0, 3.0, 1.0, -1.0)]
    assert priorities == sorted(priorities, reverse=True) and len(set(priorities)) == 5


def test_link_ranker_calibrated_uses_page_and_anchor_log_odds():
    from scrapy.utils.project import get_project_settings

    from focuscrawl.focus.ranker import LinkRanker
    from focuscrawl.resources import default_topic_path
    from focuscrawl.topic.model import TopicModel

    s = get_project_settings().copy()
    model = TopicModel(default_topic_path())
    ranker = LinkRanker.from_settings(s, None, model, anchors=True)  # the keywords mode's rule
    page = model.logit("the cat sleeps on the sofa\nkittens play with the cat")
    cat = ranker.decide(page, "more cat and kitten photos")
    other = ranker.decide(page, "bus timetable")
    assert cat.followed and cat.anchor_perplexity > page  # the anchor's log-odds, shown in that column
    assert cat.score < other.score and cat.priority > other.priority
    off_page = ranker.decide(model.logit("the parliament passed the budget law"), "bus timetable")
    assert off_page.score > other.score
    assert ranker.decide(None, "", inherited=cat.score).score == pytest.approx(cat.score)


def test_score_command_with_a_bundle_prints_every_probability(capsys):
    from focuscrawl.cli import main
    from focuscrawl.resources import default_topic_path

    assert main(["score", "--topic", str(default_topic_path()), "--json", "a kitten asleep in a basket"]) == 0
    cat = json.loads(capsys.readouterr().out)
    assert main(["score", "--topic", str(default_topic_path()), "--json",
                 "A man sitting down on a bench beside a water bottle"]) == 0
    bench = json.loads(capsys.readouterr().out)
    # the example: caption-like text of another topic has a low perplexity, yet is no cat
    assert bench["perplexity"] < cat["perplexity"]
    assert cat["p_on_topic_combined"] > 0.5 > bench["p_on_topic_combined"]
    # the text output has the same names as --json
    assert main(["score", "--topic", str(default_topic_path()), "a kitten asleep in a basket"]) == 0
    rows = dict(line.split("\t") for line in capsys.readouterr().out.splitlines())
    assert set(rows) == set(cat) and rows["topic"] == str(default_topic_path())


def test_classifier_decision_equals_the_hashing_vectorizer(bundle):
    from focuscrawl.topic.classifier import vectorizer
    from focuscrawl.topic.model import TopicModel

    clf = TopicModel(bundle).classifier
    texts = ["a grey cat sleeping on the sofa", "cat cat cat", "x", "", "two buses parked at the station",
             "le chat gris dort été", "猫 が 寝て いる", "ğüş çay"]  # UTF-8 bytes are hashed
    expected = vectorizer().transform(texts) @ clf.weights + clf.intercept
    assert [clf.decision(t) for t in texts] == pytest.approx(list(expected), abs=1e-12)


def test_a_loaded_topic_model_scores_without_importing_scikit_learn(bundle):
    """Every analysis worker of a crawl with a bundle loads one: scikit-learn's import alone
    costs ~0.6-0.8 s of CPU (mode ``learning``'s judge, issue #26). (numba's first compiled call
    imports ``scipy.linalg`` for its BLAS check, ~0.13 s; not ``scipy.sparse``, which scikit-learn's
    vectorizer would need.)"""
    code = ("import sys; from focuscrawl.topic.model import TopicModel; "
            f"m = TopicModel({str(bundle)!r}); assert m.logit('a grey cat sleeping on the sofa') is not None; "
            "print(sorted(n for n in sys.modules if n.split('.')[0] == 'sklearn' or n.startswith('scipy.sparse')))")
    out = warmfork.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _dense_classifier(seed: int = 0):
    """A classifier with a weight in every bucket: a wrong bucket, count or sum order shows."""
    import numpy as np

    from focuscrawl.topic.classifier import N_FEATURES, HashedNgramClassifier

    return HashedNgramClassifier(np.random.default_rng(seed).standard_normal(N_FEATURES), 0.37)


def _first_seen_decision(clf, texts: list[str]) -> list[float]:
    """The definition, computed plainly: scikit-learn's n-grams of each text (its analyzer, in its
    order) and their buckets (``abs(murmurhash3_32) % 2^18``), checked against the counts of
    ``HashingVectorizer.transform``; the products ``weight * count`` of the distinct buckets summed
    one by one in the order of each bucket's first n-gram, over the l2 norm, plus the intercept."""
    import math

    from sklearn.utils import murmurhash3_32

    from focuscrawl.topic.classifier import N_FEATURES, vectorizer

    analyzer = vectorizer().build_analyzer()
    transformed = vectorizer().set_params(norm=None).transform(texts)
    values = []
    for i, text in enumerate(texts):
        counts: dict[int, int] = {}
        for gram in analyzer(text):
            h = murmurhash3_32(gram, 0)
            bucket = 0 if h == -2 ** 31 else abs(h) % N_FEATURES  # (as HashingVectorizer, without int32 abs)
            counts[bucket] = counts.get(bucket, 0) + 1
        row = transformed[i]
        assert sorted(counts.items()) == sorted(zip(row.indices.tolist(), row.data.tolist()))
        total = 0.0
        for bucket, count in counts.items():
            total += clf.weights[bucket] * count
        norm = math.sqrt(sum(c * c for c in counts.values()))
        values.append(total / norm + clf.intercept if counts else clf.intercept)
    return values


#: a word whose MurmurHash3 is -2^31 (found by inverting the hash): ``abs`` of it overflows an int32
INT32_MIN_WORD = "aaaiTBFZ"
#: two words in the same bucket (28986)
COLLIDING_WORDS = ("w647", "w733")


def test_classifier_decision_is_bit_for_bit_the_first_seen_sum_of_scikit_learns_ngrams():
    """``decision`` (one numba-compiled kernel, issue #26: mode ``learning``'s judge scores every
    page) gives the float of the definition, to the bit, for every text: empty, one word, ALT-sized,
    pages of thousands of words, repeated n-grams, colliding buckets, multi-byte UTF-8 of every
    tail length (accents, CJK, emoji), the word whose hash is -2^31."""
    import random

    import mmh3
    from sklearn.utils import murmurhash3_32

    from focuscrawl.topic.classifier import N_FEATURES, vectorizer

    assert mmh3.hash(INT32_MIN_WORD) == murmurhash3_32(INT32_MIN_WORD, 0) == -2 ** 31
    assert vectorizer().transform([INT32_MIN_WORD]).indices.tolist() == [0]
    a, b = (abs(mmh3.hash(w)) % N_FEATURES for w in COLLIDING_WORDS)
    assert a == b
    clf = _dense_classifier()
    rnd = random.Random(5)
    words = ["a", "é", "猫", "😀", "ab", "abc", "abcd", "abcde", "été", "chat", "ñandú", "猫が", "😀😀x", "kitten",
             "mélangées", "寝ている猫", "ğüş", "çay", "x" * 13, "日本語のテキスト", INT32_MIN_WORD, *COLLIDING_WORDS]
    vocabulary = words + [f"w{i}" for i in range(3000)]
    texts = ["", "cat", "a grey cat", INT32_MIN_WORD, " ".join(COLLIDING_WORDS * 3),
             "cat cat cat cat", "the cat the cat the cat sat", " ".join(words), " ".join(reversed(words))]
    texts += [" ".join(rnd.choice(words) for _ in range(rnd.randint(1, 40))) for _ in range(150)]
    texts += [" ".join(rnd.choice(vocabulary) for _ in range(n)) for n in (3, 3, 299, 300, 301, 2000, 5000)]
    expected = _first_seen_decision(clf, texts)
    assert [clf.decision(t) for t in texts] == expected
    assert [clf.decision_tokens(t.split()) for t in texts] == expected
    definition = vectorizer().transform(texts) @ clf.weights + clf.intercept
    assert expected == pytest.approx(list(definition), rel=1e-12, abs=1e-12)


def test_classifier_sums_in_the_order_of_first_occurrence_and_buckets_by_abs():
    """Rounding makes the sum's order visible: with weights 1e16, -1e16 and 1 the sum is 1 when the
    1 comes last, 0 when it comes first; the bigrams weigh 0. And the bucket of a negative hash is
    that of its absolute value (``-2^31``'s is 0), not of the unsigned hash."""
    import math

    import mmh3
    import numpy as np

    from focuscrawl.topic.classifier import N_FEATURES, HashedNgramClassifier

    def bucket(word: str) -> int:
        return abs(mmh3.hash(word)) % N_FEATURES

    weights = np.zeros(N_FEATURES)
    weights[[bucket("big"), bucket("minus"), bucket("one")]] = 1e16, -1e16, 1.0
    clf = HashedNgramClassifier(weights, 0.5)
    assert clf.decision("big minus one") == 1 / math.sqrt(5) + 0.5
    assert clf.decision("one big minus") == 0.5
    assert clf.decision("big one minus") == 0.5
    assert clf.decision("minus big one one") == 2 / math.sqrt(1 + 1 + 4 + 1 + 1 + 1) + 0.5
    negative = next(w for w in (f"n{i}" for i in range(100)) if mmh3.hash(w) < 0)
    weights = np.zeros(N_FEATURES)
    weights[[bucket(negative), 0]] = 2.0, 3.0
    weights[(mmh3.hash(negative) % 2 ** 32) % N_FEATURES] = 5.0
    clf = HashedNgramClassifier(weights, 0.0)
    assert clf.decision(negative) == 2.0
    assert clf.decision(INT32_MIN_WORD) == 3.0
    assert clf.decision("") == clf.decision_tokens([]) == 0.0


def test_the_classifiers_kernel_is_loaded_with_the_bundle_not_at_the_first_text(bundle):
    """numba loads a compiled function at its first call (~0.3 s from its cache, ~1 s compiling):
    the crawl process and each analysis worker (whose ``TopicModel`` arrives pickled as its folder
    and loads at its start) have it loaded with the bundle, so no page waits for it."""
    code = ("import pickle\n"
            "from focuscrawl.topic.classifier import _decision\n"
            "from focuscrawl.topic.model import TopicModel\n"
            "before = len(_decision.signatures)\n"
            f"pickle.loads(pickle.dumps(TopicModel({str(bundle)!r})))\n"
            "print(before, len(_decision.signatures))\n")
    out = warmfork.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       check=True).stdout.split()
    assert out == ["0", "1"]


def test_a_pages_logit_from_its_sentences_is_that_of_its_text(bundle):
    """``page_logit(sentences)`` (the page analysis: the judge of mode ``learning``) reads the
    page's normalised sentences as they are; normalising them again (``logit`` of their text)
    gives the same tokens for every code point, so the same log-odds, to the bit."""
    import random

    from focuscrawl.text.normalize import document_sentences, text_tokens
    from focuscrawl.topic.model import TopicModel

    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    tokens = text_tokens(every)
    assert text_tokens("\n".join(map(" ".join, tokens))) == tokens
    rnd = random.Random(3)
    words = ["The", "cat", "sleeps", "ON", "a", "sofa.", "Kittens", "purr!", "İstanbul", "ΣΟΦΑ", "straße",
             "été", "猫", "x", "42", "bus", "station", "\n"]
    pages = [" ".join(rnd.choice(words) for _ in range(rnd.randint(1, 400))) for _ in range(20)]
    by_sentences, by_text = TopicModel(bundle), TopicModel(bundle)  # no answer from the other's cache
    for page in pages:
        sentences = document_sentences(page, 2)
        if sentences:
            for scorer in ("combined", "wpp", "classifier", "xent"):
                assert by_sentences.page_logit(sentences, scorer) == by_text.logit("\n".join(sentences), scorer)
    assert by_sentences.page_logit([]) is None



def test_the_judge_takes_the_lm_sum_and_keyword_score_from_a_scorer_of_the_bundles_files(bundle, tmp_path):
    """A crawl that scores pages with the bundle's own topic LM and keywords (the default) has
    already summed the page's sentence log-probabilities and its keyword score
    (``score_document``): ``page_logit`` takes them from that ``TextScore`` and gives the
    log-odds it computes itself, to the bit, for every scorer; another model or keyword list
    is not the bundle's, and what it is given is what it uses."""
    import dataclasses
    import random

    from focuscrawl.analysis import analyse_page
    from focuscrawl.focus.modes import focus_from_settings
    from focuscrawl.lm.scorer import ScorerFiles
    from focuscrawl.resources import project_settings
    from focuscrawl.topic.model import TopicModel

    topic = TopicModel(bundle)
    files = ScorerFiles(str(topic.topic_model_path), str(topic.keywords_path))
    assert topic.uses_files(files.model, files.keywords)
    other_keywords = tmp_path / "kw.txt"
    other_keywords.write_text(topic.keywords_path.read_text(encoding="utf-8"), encoding="utf-8")
    assert not topic.uses_files(files.model, other_keywords) and not topic.uses_files(files.model, "")
    assert not topic.uses_files(topic.folder / topic.manifest["background_lm"], files.keywords)
    scorer = files.load()
    rnd = random.Random(7)
    words = "the cat sleeps on a sofa kittens purr and the bus stops at the station in town".split()
    pages = [". ".join(" ".join(rnd.choice(words) for _ in range(rnd.randint(3, 14)))
                       for _ in range(rnd.randint(1, 30))) for _ in range(30)]
    for page in pages:
        score, sentences = scorer.score_document(page, 2)
        for name in ("combined", "wpp", "keywords", "xent", "classifier"):
            reading, computing = TopicModel(bundle, name), TopicModel(bundle, name)  # no shared memo
            assert reading.page_logit(sentences, known=score) == computing.page_logit(sentences)
        shifted = dataclasses.replace(score, log10=score.log10 - 5.0)
        assert TopicModel(bundle).page_logit(sentences, known=shifted) != computing.page_logit(sentences)
    # the crawl asks for it only when its scorer is the bundle's (the analysis uses it then)
    focus = focus_from_settings(project_settings({"FOCUSCRAWL_MODE": "learning", "FOCUSCRAWL_TOPIC": str(bundle)}))
    assert focus.analysis.topic_reuses_score
    html = "<html><body><article>" + "".join(f"<p>{p}.</p>" for p in pages[:8]) + "</article></body></html>"
    page = analyse_page(html, "http://x.test/", "http://x.test/", 0, focus.analysis, focus.scorer, focus.page_topic)
    alone = dataclasses.replace(focus.analysis, topic_reuses_score=False)
    assert page.topic_logit == analyse_page(html, "http://x.test/", "http://x.test/", 0, alone, focus.scorer,
                                            TopicModel(bundle)).topic_logit is not None
    own_model = focus_from_settings(project_settings({"FOCUSCRAWL_MODE": "learning", "FOCUSCRAWL_TOPIC": str(bundle),
                                                      "FOCUSCRAWL_KEYWORDS": str(other_keywords)}))
    assert own_model.page_topic is not None and not own_model.analysis.topic_reuses_score


def test_text_memo_is_bounded_and_holds_no_long_text():
    from focuscrawl.topic.model import TextMemo

    calls = []

    def length(text):
        calls.append(text)
        return len(text)

    memo = TextMemo(length, size=3)
    page = "a long page " * 1000
    assert memo(page) == len(page) and memo(page) == len(page) and calls == [page]  # remembered
    assert memo("cat") == 3 and memo("cat") == 3 and len(calls) == 2
    assert all(len(key) <= TextMemo.KEY_CHARS for key in memo.results)  # a digest, not the page
    memo("dog")
    memo(page)  # used again: now the most recent, "cat" the least
    memo("cow")
    assert len(memo.results) == 3 and "cat" not in memo.results  # bounded: the least recently used went
    for i in range(5):
        memo(f"text {i}")
    memo(page)
    assert calls.count(page) == 2
