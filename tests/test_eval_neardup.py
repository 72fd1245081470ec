"""``focuscrawl eval neardup`` on a small hand-made versions directory."""
import json
import random

from focuscrawl import cli
from focuscrawl.eval.neardup import Evaluation, load_versions

WORDS = [a + b + c for a in "bdfgklmnprst" for b in "aeiou" for c in "kmnrst"]  # 360 letter-only words


def words(seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(WORDS) for _ in range(n)]


def versions_dir(tmp_path):
    root = tmp_path / "versions"
    a = words(1)
    a_small_edit = a[:-1] + ["changed"]  # 1 of 296 shingles differs: Jaccard ~0.99
    a_rewrite = a[:150] + words(3, 150)  # half rewritten: Jaccard ~0.33
    b = words(2)
    for art, versions in {"Alpha": [a, a_small_edit, a_rewrite], "Beta": [b, b]}.items():
        (root / art).mkdir(parents=True)
        for n, toks in enumerate(versions):
            (root / art / f"{n}.txt").write_text(" ".join(toks).capitalize() + ".")
    return root


def test_ground_truth_and_protocols(tmp_path):
    docs = load_versions(versions_dir(tmp_path))
    assert [(d.article, d.version) for d in docs] == [("Alpha", 0), ("Alpha", 1), ("Alpha", 2), ("Beta", 0), ("Beta", 1)]
    ev = Evaluation(docs, negatives=6)
    assert ev.relevant == {(0, 1), (3, 4)}
    assert ev.same_article[(0, 2)] < 0.5
    assert ev.newest_pairs == {(0, 2), (1, 2), (3, 4)}
    assert len(ev.negative_sample) == 6 and ev.negative_sample.max() < 0.9


def test_cli_table_and_json(tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert cli.main(["eval", "neardup", str(versions_dir(tmp_path)), "--max-k", "3", "--negatives", "6",
                     "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "5 versions of 2 articles; 4 same-article pairs, 2 with 5-shingle Jaccard >= 0.9" in text
    assert "| SimHash 3+5 | 3 |" in text and "MinHash" in text
    # the "seed P / R" column is explained under each table (published numbers, not this run's)
    legends = [line for line in text.splitlines() if line.startswith("seed P / R: ")]
    assert len(legends) == 2 and "seed 004" in legends[0] and "not measured in this run" in legends[0]
    rows = json.loads(out.read_text())
    assert len(rows) == 2 * (3 * 3 + 1)
    for r in rows:
        # the identical pair (Beta 0, Beta 1) is found by every method; the rewrite never
        assert r["true_positives"] >= 1
        assert r["precision"] == 1.0
    newest = [r for r in rows if r["protocol"] == "newest vs older"]
    assert all(r["relevant"] == 1 and r["recall"] == 1.0 for r in newest)


def test_missing_directory_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["eval", "neardup", str(tmp_path / "nope")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_progress_lines_on_stderr(tmp_path, capsys, monkeypatch):
    """A run of minutes on the real data set says what it does on stderr (the table stays on stdout)."""
    from focuscrawl.eval import progress

    monkeypatch.setattr(progress, "EVERY", 0.0)  # every loop step is "long" here
    assert cli.main(["eval", "neardup", str(versions_dir(tmp_path)), "--max-k", "2", "--negatives", "6",
                     "--ngrams", "3"]) == 0
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("eval neardup: ")]
    assert [line.split(" (")[0] for line in lines] == [
        f"eval neardup: reading the versions in {tmp_path / 'versions'} ...",
        "eval neardup: 5 versions: ground truth", "eval neardup: SimHash 3-grams, k = 1..2 ...",
        "eval neardup: 0/2 values of k", "eval neardup: 1/2 values of k", "eval neardup: MinHash baseline ..."]
    assert "eval neardup" not in captured.out


def test_directory_is_required(capsys):
    """No default path: the versions data set lives outside the package."""
    import pytest

    with pytest.raises(SystemExit) as exc:
        cli.main(["eval", "neardup"])
    assert exc.value.code == 2
    assert "the following arguments are required: directory" in capsys.readouterr().err
