"""Untrusted topic bundles and bad `topic build` / `train-lm` inputs (issue #31): a bundle is
shared like a model, so every file name and value in it is checked when it is loaded; a build
that cannot work is refused with one line and leaves nothing behind. Inputs are generated here."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from focuscrawl.cli import main
from tests.support.crawl import ROOT
from tests.support.hostile import file_size_limit, full_disk
from tests.support.toymodel import write_topic_corpora

SECRET = "root:x:0:0:the-secret-first-line"


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> tuple[Path, Path]:
    return write_topic_corpora(tmp_path_factory.mktemp("corpora"))


@pytest.fixture(scope="module")
def built(corpora, tmp_path_factory) -> Path:
    from focuscrawl.topic.build import build_bundle

    out = tmp_path_factory.mktemp("bundle") / "cats"
    build_bundle([corpora[0]], [corpora[1]], out, order=2, background_order=2, progress=lambda *_: None,
                 binary=False)
    return out


@pytest.fixture
def bundle(built, tmp_path) -> Path:
    """A fresh copy of the good bundle, next to a file holding a secret line."""
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    return Path(shutil.copytree(built, tmp_path / "b"))


def show(folder: Path, capsys) -> tuple[int, str]:
    code = main(["topic", "show", str(folder)])  # a traceback would fail the test here
    captured = capsys.readouterr()
    return code, captured.err


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    data = change(data)
    path.write_text(json.dumps(data))


def test_the_good_bundle_loads(bundle, capsys):
    assert show(bundle, capsys)[0] == 0


@pytest.mark.parametrize("key, name", [("keywords", "/etc/passwd"), ("keywords", "../secret.txt"),
                                       ("topic_lm", "/etc/passwd"), ("classifier.indices", "../secret.txt"),
                                       ("keywords", 7), ("background_lm", "")])
def test_file_names_leaving_the_bundle_are_refused(bundle, capsys, key, name):
    def change(manifest):
        if key.startswith("classifier."):
            manifest["classifier"][key.split(".")[1]] = name
        else:
            manifest[key] = name
        return manifest

    edit_json(bundle / "bundle.json", change)
    code, err = show(bundle, capsys)
    assert code == 2 and "not a valid topic bundle" in err
    assert "root:" not in err and "secret" not in err.replace("secret.txt", "")  # no line of the file
    assert len(err.splitlines()) == 1


def test_a_symlink_out_of_the_bundle_is_refused(bundle, capsys):
    (bundle / "keywords.txt").unlink()
    os.symlink(bundle.parent / "secret.txt", bundle / "keywords.txt")
    code, err = show(bundle, capsys)
    assert code == 2 and "outside the bundle" in err and SECRET not in err
    (bundle / "keywords.txt").unlink()
    shutil.copy(bundle.parent / "secret.txt", bundle / "keywords.txt")
    (bundle / "calibration.json").unlink()  # the calibration too
    os.symlink(bundle.parent / "secret.txt", bundle / "calibration.json")
    code, err = show(bundle, capsys)
    assert code == 2 and "outside the bundle" in err and SECRET not in err


def _set(path: list, value):
    def change(cal):
        target = cal
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return cal
    return change


BAD_CALIBRATIONS = {
    "a list": lambda cal: [cal],
    "empty": lambda cal: {},
    "scorers a string": _set(["scorers"], "combined"),
    "a is a string": _set(["scorers", "combined", "a"], "1.5"),
    "b is null": _set(["scorers", "xent", "b"], None),
    "a scorer missing": lambda cal: {**cal, "scorers": {k: v for k, v in cal["scorers"].items() if k != "classifier"}},
    "cut above 1": _set(["thresholds", "combined", "cut"], 7),
    "razor negative": _set(["thresholds", "combined", "razor"], -0.5),
    "quantiles too short": _set(["scorers", "combined", "quantiles", "positive", "alt"], [0.1]),
    "quantile a string": _set(["scorers", "combined", "quantiles", "neutral", "sentence", 0], "x"),
    "levels a dict": _set(["quantile_levels"], {"0.5": 1}),
    "average precision true": _set(["scorers", "combined", "average_precision", "alt"], True),
}


@pytest.mark.parametrize("case", list(BAD_CALIBRATIONS))
def test_a_calibration_of_the_wrong_shape_is_one_clear_error(bundle, capsys, case):
    edit_json(bundle / "calibration.json", BAD_CALIBRATIONS[case])
    code, err = show(bundle, capsys)
    assert code == 2 and "not a valid calibration" in err, err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("text", ['{"scorers": NaN}', "", "[1, 2", "\udcff"])
def test_nan_and_unparsable_calibrations_are_refused(bundle, capsys, text):
    path = bundle / "calibration.json"
    raw = path.read_text().replace('"a": ', '"a": NaN, "x": ', 1) if text == '{"scorers": NaN}' else text
    path.write_bytes(raw.encode("utf-8", "surrogateescape"))
    code, err = show(bundle, capsys)
    assert code == 2 and "not a valid calibration" in err, err


def test_a_missing_calibration_is_refused(bundle, capsys):
    (bundle / "calibration.json").unlink()
    code, err = show(bundle, capsys)
    assert code == 2 and "has no calibration.json" in err


@pytest.mark.parametrize("case", ["out of range", "negative", "float indices", "nan weight", "shape",
                                  "intercept string", "not an array"])
def test_a_bad_classifier_is_refused(bundle, capsys, case):
    from focuscrawl.topic.classifier import N_FEATURES

    manifest = json.loads((bundle / "bundle.json").read_text())
    meta = manifest["classifier"]
    indices, weights = bundle / meta["indices"], bundle / meta["weights"]
    if case == "out of range":
        np.save(indices, np.array([1, N_FEATURES + 5], np.int32))
        np.save(weights, np.array([0.5, 0.5], np.float32))
    elif case == "negative":
        np.save(indices, np.array([-3], np.int32))
        np.save(weights, np.array([0.5], np.float32))
    elif case == "float indices":
        np.save(indices, np.array([1.5], np.float64))
        np.save(weights, np.array([0.5], np.float32))
    elif case == "nan weight":
        np.save(weights, np.full(np.load(indices).shape, np.nan, np.float32))
    elif case == "shape":
        np.save(weights, np.zeros(3, np.float32))
    elif case == "intercept string":
        edit_json(bundle / "bundle.json", lambda m: {**m, "classifier": {**m["classifier"], "intercept": "1"}})
    else:
        indices.write_bytes(b"not numpy")
    code, err = show(bundle, capsys)
    assert code == 2 and "classifier" in err and len(err.splitlines()) == 1, err


def test_a_crawl_with_a_bad_bundle_stops_with_one_line(bundle, tmp_path):
    edit_json(bundle / "calibration.json", _set(["scorers", "combined", "a"], "x"))
    proc = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "seeds=http://127.0.0.1:9/",
                           "-a", "mode=learning", "-a", f"output={tmp_path / 'run'}", "-s", f"FOCUSCRAWL_TOPIC={bundle}",
                           "-s", "LOG_LEVEL=ERROR"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "not a valid calibration" in proc.stderr


# -- topic build ------------------------------------------------------------------------
def build(capsys, *args: str) -> tuple[int, str]:
    code = main(["topic", "build", *args])
    return code, capsys.readouterr().err


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_build_refuses_a_neutral_corpus_that_is_the_positive_one(corpora, tmp_path, capsys):
    code, err = build(capsys, "--positive", str(corpora[0]), "--neutral", str(corpora[0]), "--order", "2",
                      "--background-order", "2", "-o", str(tmp_path / "same"))
    assert code == 2 and "cannot tell topic text from neutral text" in err
    assert not (tmp_path / "same").exists() and leftovers(tmp_path) == []


def test_build_refuses_binary_data_and_folders_as_corpora(corpora, tmp_path, capsys):
    noise = tmp_path / "noise.bin"
    noise.write_bytes(np.random.default_rng(3).integers(0, 256, 200_000, dtype=np.uint8).tobytes())
    code, err = build(capsys, "--positive", str(noise), "--neutral", str(corpora[1]), "-o", str(tmp_path / "n"))
    assert code == 2 and "binary data" in err
    code, err = build(capsys, "--positive", str(corpora[0].parent), "--neutral", str(corpora[1]), "-o",
                      str(tmp_path / "d"))
    assert code == 2 and "is a folder" in err
    assert not (tmp_path / "n").exists() and not (tmp_path / "d").exists() and leftovers(tmp_path) == []


def test_a_failed_build_leaves_no_half_bundle_and_keeps_the_old_one(corpora, built, tmp_path, capsys):
    out = Path(shutil.copytree(built, tmp_path / "cats"))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, err = build(capsys, "--positive", str(corpora[0]), "--neutral", str(corpora[1]), "--order", "9",
                      "--background-order", "2", "-o", str(out))
    assert code != 0 and "Traceback" not in err and err.strip()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the old bundle untouched
    code, _ = build(capsys, "--positive", str(corpora[0]), "--neutral", str(corpora[1]), "--order", "9",
                    "--background-order", "2", "-o", str(tmp_path / "new"))
    assert code != 0 and not (tmp_path / "new").exists()
    assert leftovers(tmp_path) == []
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("mine")
    code, err = build(capsys, "--positive", str(corpora[0]), "--neutral", str(corpora[1]), "-o", str(other))
    assert code == 2 and "not a topic bundle" in err and (other / "todo.txt").read_text() == "mine"


def test_a_full_disk_during_build_is_one_line_and_leaves_nothing(corpora, tmp_path, capsys):
    with full_disk(tmp_path / "small", "96k") as disk:
        code, err = build(capsys, "--positive", str(corpora[0]), "--neutral", str(corpora[1]), "--order", "2",
                          "--background-order", "2", "--arpa", "-o", str(disk / "cats"))
        assert code == 1 and "No space left on device" in err and len(err.strip().splitlines()) == 1, err
        assert list(disk.iterdir()) == []


# -- train-lm -----------------------------------------------------------------------------
def train_lm(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "focuscrawl.cli", "train-lm", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, **kwargs)


def test_train_lm_refuses_a_folder_as_input_or_temp_folder(corpora, tmp_path):
    for args in ([str(corpora[0].parent)], ["--normalized", str(corpora[0].parent)],
                 ["-T", str(corpora[0]), str(corpora[0])]):
        proc = train_lm("--order", "2", "-o", str(tmp_path / "lm.arpa"), *args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert "folder" in proc.stderr.strip().splitlines()[-1]
    assert list(tmp_path.iterdir()) == []


def test_train_lm_on_a_full_disk_is_one_line_and_leaves_no_part_file(corpora, tmp_path):
    with full_disk(tmp_path / "small", "64k") as disk:
        proc = train_lm("--order", "3", "-o", str(disk / "lm.arpa"), str(corpora[0]), str(corpora[1]))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert "No space left on device" in proc.stderr.strip().splitlines()[-1]
        assert list(disk.iterdir()) == []


def test_train_lm_over_a_file_size_limit_is_one_line(corpora, tmp_path):
    """The same without mounting anything: a file-size limit (EFBIG) as a quota would set."""
    proc = train_lm("--order", "3", "-o", str(tmp_path / "lm.arpa"), str(corpora[0]), str(corpora[1]),
                    preexec_fn=file_size_limit(32 * 1024))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].endswith(("File too large", "disk full or file size limit?"))
    assert not list(tmp_path.glob("lm.arpa*"))
