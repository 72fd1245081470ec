"""``focuscrawl eval context``: LCS scoring and gold from marked-up captions."""
import gzip

import pytest

from focuscrawl import cli
from focuscrawl.eval import context as ec
from focuscrawl.text.html import parse_html

PAGE = """<html><body><nav>Home News Sport</nav>
<article><h1>Cats at home</h1><p>Cats sleep up to sixteen hours a day and spend the rest grooming.</p>
<figure><img src="a.jpg"><figcaption>A tabby cat asleep on a sofa</figcaption></figure>
<p>Kittens need more sleep than adult cats.</p>
<figure><img src="b.jpg"><img src="c.jpg"><figcaption>Two images: ambiguous, not gold</figcaption></figure>
<figure><noscript><img src="d.jpg"></noscript><figcaption>Hidden image only</figcaption></figure>
<figure><img src="e.jpg"><figcaption> </figcaption></figure>
</article></body></html>"""


def test_lcs_prf():
    p, r, f = ec.lcs_prf("a x b c".split(), "a b c d e".split())
    assert (p, r) == (pytest.approx(3 / 4), pytest.approx(3 / 5))
    assert f == pytest.approx(2 * p * r / (p + r))
    assert ec.lcs_prf("c b a".split(), "a b c".split())[0] == pytest.approx(1 / 3)  # order matters
    assert ec.lcs_prf([], ["a"]) == (0.0, 0.0, 0.0)


def test_figure_gold_keeps_single_visible_image_with_worded_caption():
    gold = ec.figure_gold(parse_html(PAGE))
    assert [(img.get("src"), cap) for img, cap in gold] == [("a.jpg", "A tabby cat asleep on a sofa")]


def test_readability_gold_requires_the_caption_in_expected(tmp_path):
    for name, expected in (("kept", "<figcaption>A tabby cat asleep on a sofa</figcaption>"),
                           ("dropped", "<p>no figures in the article</p>")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "source.html").write_text(PAGE)
        (tmp_path / name / "expected.html").write_text(f"<div>{expected}</div>")
    assert [p.page_id for p in ec.readability_gold_pages(tmp_path)] == ["kept"]


def test_eval_context_table(tmp_path, capsys):
    (tmp_path / "aeb" / "html").mkdir(parents=True)
    (tmp_path / "aeb" / "html" / "p1.html.gz").write_bytes(gzip.compress(PAGE.encode()))
    assert cli.main(["eval", "context", "--extractors", "par,full,figure", str(tmp_path / "aeb")]) == 0
    out = capsys.readouterr().out
    assert "1 pages, 1 gold images" in out
    rows = {line.split("|")[1].strip().split()[0]: [c.strip() for c in line.split("|")[2:-1]]
            for line in out.splitlines() if line.startswith("| ") and "extractor" not in line}
    assert rows["par"][:3] == ["1.000", "1.000", "1.000"]  # figure holds only the caption text
    assert rows["full"][1] == "1.000" and float(rows["full"][0]) < 0.5


def test_eval_context_without_gold_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "source.html").write_text("<p>no figures</p>")
    assert cli.main(["eval", "context", str(tmp_path)]) == 2
    assert "figcaption" in capsys.readouterr().err
