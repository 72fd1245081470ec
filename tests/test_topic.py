"""Topic bundles: build, load, calibrated probabilities, scale invariance, ranking with a bundle."""
from __future__ import annotations

import gzip
import json
import pickle
import shutil
from pathlib import Path

import pytest

from focuscrawl.testweb.textpool import TextPool

CAT_TEXTS = ["A grey cat sleeping on the sofa", "the kitten plays with a ball of yarn", "cat sitting on a laptop"]
OTHER_TEXTS = ["A man riding a surfboard on a wave", "a plate of pasta with tomato sauce",
               "two buses parked in front of the station"]


def _write_corpora(folder: Path) -> tuple[Path, Path]:
    """Cat captions (positive) and other captions (neutral) of the demo pool shipped in the package."""
    from focuscrawl.lm.demo_corpus import topic_pattern

    pool = TextPool.from_bundle()
    cat = topic_pattern("cat")
    positive = [c for p in pool.topic_photos("cat") for c in p.captions if cat.search(c)]
    neutral = [c for p in pool.other_photos("cat", "dog") for c in p.captions][:1500]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pos.txt").write_text("\n".join(positive) + "\n")
    (folder / "neu.txt").write_text("\n".join(neutral) + "\n")
    return folder / "pos.txt", folder / "neu.txt"


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> tuple[Path, Path]:
    return _write_corpora(tmp_path_factory.mktemp("corpora"))


@pytest.fixture(scope="module")
def bundle(corpora, tmp_path_factory) -> Path:
    from focuscrawl.topic.build import build_bundle

    out = tmp_path_factory.mktemp("bundle") / "cats"
    build_bundle([corpora[0]], [corpora[1]], out, order=3, background_order=2, progress=lambda *_: None)
    return out


def test_bundle_files_manifest_and_calibration(bundle):
    from focuscrawl.topic.model import SCORERS

    manifest = json.loads((bundle / "bundle.json").read_text())
    for key in ("topic_lm", "background_lm", "keywords"):
        assert (bundle / manifest[key]).is_file()
    assert (bundle / manifest["classifier"]["indices"]).is_file()
    assert manifest["sources"] == {"positive": ["pos.txt"], "neutral": ["neu.txt"]}
    held = manifest["sentences"]
    assert held["positive_heldout"] > 0 and held["neutral_heldout"] > 0
    cal = json.loads((bundle / "calibration.json").read_text())
    assert set(cal["scorers"]) == set(SCORERS)
    for entry in cal["scorers"].values():
        assert entry["a"] > 0  # higher raw topicality = more likely on topic
    assert 0 < cal["thresholds"]["cut"] <= 0.5
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
    from focuscrawl.resources import default_keywords_path, default_model_path, default_topic_path
    from focuscrawl.topic.model import TopicModel

    model = TopicModel(default_topic_path())
    assert default_model_path().is_file() and default_keywords_path().is_file()
    cat = [model.probability(t) for t in CAT_TEXTS]
    other = [model.probability(t) for t in OTHER_TEXTS]
    assert min(cat) > 0.5 > max(other)
