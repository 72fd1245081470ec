"""Untrusted topic bundles and bad `topic build` / `train-lm` inputs (issue #31): a bundle is
shared like a model, so every file name and value in it is checked when it is loaded; a build
that cannot work is refused with one line and leaves nothing behind. Inputs are generated here."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from focuscrawl.cli import main
from tests.support.crawl import ROOT
from tests.support.hostile import BUNDLE_DAMAGE, SECRET, damaged_bundles, file_size_limit, full_disk
from tests.support.toymodel import build_topic_bundle, write_topic_corpora
from tests.support import warmfork


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> tuple[Path, Path]:
    return write_topic_corpora(tmp_path_factory.mktemp("corpora"))


@pytest.fixture(scope="module")
def built(corpora, tmp_path_factory) -> Path:
    return build_topic_bundle(corpora, tmp_path_factory.mktemp("bundle") / "cats")


@pytest.fixture(scope="module")
def damaged(built, tmp_path_factory) -> dict[str, tuple[Path, str]]:
    return damaged_bundles(built, tmp_path_factory.mktemp("damaged"))


def test_the_good_bundle_loads(built, capsys):
    assert main(["topic", "show", str(built)]) == 0


@pytest.mark.parametrize("case", list(BUNDLE_DAMAGE))
def test_a_damaged_bundle_is_one_line_of_error(damaged, capsys, case):
    """File names leaving the folder (absolute, ``..``, symlinks), calibrations of the wrong shape
    or types, NaN, missing; classifier arrays out of range: one line, exit 2, nothing of another
    file shown (before: 8 tracebacks in 76 runs, /etc/passwd's first line in an error, NaN made
    every P = 1, a missing or empty calibration was used as raw scores)."""
    folder, expected = damaged[case]
    for argv in (["topic", "show", str(folder)], ["score", "--topic", str(folder), "a cat on the sofa"]):
        code = main(argv)  # a traceback would fail the test here
        err = capsys.readouterr().err
        assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, (argv, err)
        assert SECRET not in err and "root:" not in err


def test_a_crawl_with_a_bad_bundle_stops_with_one_line(damaged, tmp_path):
    bundle = damaged["a a string"][0]
    proc = warmfork.run([sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "seeds=http://127.0.0.1:9/",
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
    return warmfork.run([sys.executable, "-m", "focuscrawl.cli", "train-lm", *args], cwd=ROOT,
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
