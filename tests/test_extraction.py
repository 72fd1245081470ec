"""Page-text extractors, ``focuscrawl extract`` and the CLEANEVAL-style scorer."""
import gzip
import json
import sys

import pytest

from focuscrawl import cli
from focuscrawl import settings as default_settings
from focuscrawl.eval import extraction as ev
from focuscrawl.resources import project_settings
from focuscrawl.text import extractors
from focuscrawl.text.cli import output_stem, read_html_bytes, url_stem
from tests.support.localweb import LocalWeb, Page

ARTICLE = """<html><head><title>t</title><script>var x = 1;</script></head><body>
<div class="nav"><a href="/">Home</a> | <a href="/a">About</a> | <a href="/c">Contact</a></div>
<h1>The domestic cat</h1>
<p>The cat is a small domesticated carnivorous mammal. It is the only domesticated species in the
family Felidae and is commonly referred to as the domestic cat or house cat to distinguish it from
the wild members of the family, which live on every continent except Antarctica.</p>
<p>Cats are valued by humans for companionship and their ability to kill vermin. Their retractable
claws are adapted to killing small prey like mice and rats, and they have a strong flexible body,
quick reflexes, sharp teeth and a skeleton that lets them fall from heights without harm.</p>
<p>A cat has excellent night vision and a keen sense of smell, and it communicates by meowing,
purring, trilling, hissing, growling and grunting as well as with its body language, which
owners learn to read: a raised tail is a greeting, flattened ears are a warning to keep away.</p>
<div class="footer"><a href="/imprint">Imprint</a> <a href="/privacy">Privacy</a> (c) 2020</div>
</body></html>"""


@pytest.mark.parametrize("name", sorted(extractors.EXTRACTORS))
def test_every_extractor_keeps_the_article_and_drops_scripts(name):
    text = extractors.get_extractor(name)(ARTICLE)
    assert "retractable" in text and "night vision" in text
    assert "var x" not in text


@pytest.mark.parametrize("name", ["trafilatura", "justext"])
def test_boilerplate_removers_drop_navigation(name):
    text = extractors.get_extractor(name)(ARTICLE)
    assert "Contact" not in text and "Privacy" not in text


def test_fulltext_keeps_navigation():
    assert "Contact" in extractors.get_extractor("fulltext")(ARTICLE)


@pytest.mark.parametrize("name", sorted(extractors.EXTRACTORS))
def test_empty_and_broken_input_give_text_or_a_clear_error(name):
    extract = extractors.get_extractor(name)
    for blank in ("", "   "):
        try:
            assert not extract(blank).strip()
        except extractors.ExtractionError:
            pass
    for broken in ("<html><body><p>unclosed <b>bold <i>cat", "\x00\x01<<<>>>", "<" * 1000):
        try:
            assert isinstance(extract(broken), str)
        except extractors.ExtractionError:
            pass


def test_missing_optional_package_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "justext", None)  # makes ``import justext`` fail
    with pytest.raises(extractors.ExtractorUnavailable, match="pip install justext"):
        extractors.get_extractor("justext")  # at selection time, before any page
    with pytest.raises(extractors.ExtractorUnavailable, match="pip install justext"):
        extractors.justext_text("<p>hello</p>")
    assert extractors.get_extractor("fulltext")("<p>hello</p>").strip() == "hello"


def test_unknown_extractor_lists_the_valid_names():
    with pytest.raises(ValueError, match="trafilatura"):
        extractors.get_extractor("nope")


def test_crawl_default_is_a_known_extractor_that_keeps_the_article():
    extract = extractors.get_extractor(default_settings.FOCUSCRAWL_TEXT_EXTRACTOR)
    article = "The cat is a small domesticated carnivorous mammal with soft fur and sharp claws. "
    html = ("<html><body><nav><a href='/'>Home</a> | <a href='/x'>About us</a></nav><div>"
            + f"<p>{article * 3}</p>" * 4 + "</div></body></html>")
    text = extract(html)
    assert "domesticated carnivorous mammal" in text
    assert "About us" not in text


# --- focuscrawl extract ---------------------------------------------------------------

def test_output_stem():
    assert output_stem("a/b/page.html.gz") == "page"
    assert output_stem("x.HTM") == "x"
    assert output_stem("123") == "123"


def test_extract_writes_one_text_per_input(tmp_path, capsys):
    (tmp_path / "a.html").write_text(ARTICLE)
    (tmp_path / "b.html.gz").write_bytes(gzip.compress(ARTICLE.replace("cat", "dog").encode()))
    out = tmp_path / "out"
    assert cli.main(["extract", "--extractor", "justext", str(tmp_path / "a.html"),
                     str(tmp_path / "b.html.gz"), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "b.txt"]
    assert "night vision" in (out / "a.txt").read_text()
    assert "domestic dog" in (out / "b.txt").read_text()
    assert "Contact" not in (out / "a.txt").read_text()


def test_extract_gzip_output_and_default_extractor(tmp_path):
    (tmp_path / "a.html").write_text(ARTICLE)
    assert cli.main(["extract", "--gzip", str(tmp_path / "a.html"), "-o", str(tmp_path / "o")]) == 0
    text = gzip.decompress((tmp_path / "o" / "a.txt.gz").read_bytes()).decode()
    assert text == extractors.get_extractor(default_settings.FOCUSCRAWL_TEXT_EXTRACTOR)(ARTICLE)


def test_extract_skips_bad_inputs_and_keeps_going(tmp_path, capsys):
    (tmp_path / "good.html").write_text(ARTICLE)
    (tmp_path / "bad.html.gz").write_bytes(b"not gzip at all")
    out = tmp_path / "o"
    rc = cli.main(["extract", str(tmp_path / "bad.html.gz"), str(tmp_path / "good.html"), "-o", str(out)])
    assert rc == 1
    assert [p.name for p in out.iterdir()] == ["good.txt"]  # no half-written files
    err = capsys.readouterr().err
    assert "skipped" in err and "bad.html.gz" in err


def test_extract_keeps_the_readable_part_of_a_truncated_gzip_or_one_with_trailing_garbage(tmp_path, capsys):
    """A ``.gz`` cut short or followed by bytes that are no gzip gives the text of what it
    holds, said in one line ("cut ...: a damaged gzip") and counted; a gzip of two members
    reads whole. Before, both damaged ones were skipped whole (exit 1, nothing written)."""
    import gzip

    whole = gzip.compress(ARTICLE.encode())
    (tmp_path / "cut.html.gz").write_bytes(whole[:len(whole) * 2 // 3])
    (tmp_path / "tail.html.gz").write_bytes(whole + b"GARBAGE" * 20)
    half = len(ARTICLE.encode()) // 2
    (tmp_path / "two.html.gz").write_bytes(gzip.compress(ARTICLE.encode()[:half]) + gzip.compress(ARTICLE.encode()[half:]))
    (tmp_path / "a.html").write_text(ARTICLE)
    out = tmp_path / "o"
    names = ["cut.html.gz", "tail.html.gz", "two.html.gz", "a.html"]
    assert cli.main(["extract", *[str(tmp_path / n) for n in names], "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert sum("a damaged gzip" in line for line in err.splitlines()) == 2 and "damaged gzip 2" in err
    full = (out / "a.txt").read_text()
    assert (out / "tail.txt").read_text() == full and (out / "two.txt").read_text() == full
    assert 0 < len((out / "cut.txt").read_text()) <= len(full)
    assert "Traceback" not in err


def test_extract_checks_its_inputs_before_it_creates_anything(tmp_path, capsys):
    """A mistyped input name is a usage error (exit 2) found before the output folder is
    made (it once left an empty folder and exited 1)."""
    (tmp_path / "good.html").write_text(ARTICLE)
    out = tmp_path / "o"
    rc = cli.main(["extract", str(tmp_path / "good.html"), str(tmp_path / "missing.html"), "-o", str(out)])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such input file" in err and "missing.html" in err
    assert "Traceback" not in err


def test_extract_markdown_and_json_of_files(tmp_path):
    page = ARTICLE.replace("<html><head><title>t</title>", '<html lang="en-US"><head><title>The domestic cat</title>'
                           '<meta name="author" content="Ann Smith"><meta property="article:published_time" '
                           'content="2021-03-04">')
    (tmp_path / "a.html").write_text(page)
    assert cli.main(["extract", "--format", "markdown", str(tmp_path / "a.html"), "-o", str(tmp_path / "md")]) == 0
    md = (tmp_path / "md" / "a.md").read_text()
    assert md.startswith("# The domestic cat\n\n") and "\n\nCats are valued" in md
    assert cli.main(["extract", "--format", "json", "--gzip", str(tmp_path / "a.html"),
                     "-o", str(tmp_path / "js")]) == 0
    doc = json.loads(gzip.decompress((tmp_path / "js" / "a.json.gz").read_bytes()))
    # language as the crawl identifies it (pages.tsv: "en"); the page's own claim beside it
    assert {k: doc[k] for k in (*extractors.METADATA_FIELDS, "stated_language")} == {
        "title": "The domestic cat", "author": "Ann Smith", "date": "2021-03-04", "url": None, "language": "en",
        "stated_language": "en-US"}
    assert doc["extractor"] == default_settings.FOCUSCRAWL_TEXT_EXTRACTOR and "night vision" in doc["text"]


def test_extract_urls_politely_as_json(tmp_path, capsys):
    """URLs are fetched with robots.txt obeyed: the forbidden page is never requested."""
    page = ('<html lang="de"><head><title>Die Hauskatze</title><meta name="author" content="Jo Berg">'
            '<link rel="canonical" href="http://example.org/katze"></head><body>'
            + ARTICLE.split("<body>")[1])
    pages = {"/robots.txt": Page(b"User-agent: *\nDisallow: /private/\n", "text/plain"),
             "/news/katze.html": Page(page), "/private/secret.html": Page(ARTICLE)}
    out = tmp_path / "o"
    with LocalWeb(pages) as web:
        rc = cli.main(["extract", "--format", "json", "--delay", "0", f"{web.base}/news/katze.html",
                       f"{web.base}/private/secret.html", f"{web.base}/gone.html", "-o", str(out)])
        requested, user_agents = web.requests, set(web.user_agents.values())
    assert rc == 1  # one input skipped
    assert user_agents == {project_settings()["USER_AGENT"]}  # robots.txt and pages: the crawl's User-Agent
    assert not any("/private/" in r for r in requested)
    err = capsys.readouterr().err
    assert f"skipped {web.base}/private/secret.html: disallowed by robots.txt\n" in err and "Traceback" not in err
    assert f"skipped {web.base}/gone.html: HTTP 404" in err
    assert [p.name for p in out.iterdir()] == ["katze.json"]
    doc = json.loads((out / "katze.json").read_text())
    assert doc["url"] == f"{web.base}/news/katze.html"
    # the title is trafilatura's choice: the page's only <h1> over its <title>
    assert (doc["title"], doc["author"], doc["stated_language"]) == ("The domestic cat", "Jo Berg", "de")
    assert doc["language"] == "en"  # the text is English, whatever the page says
    assert "night vision" in doc["text"] and "Privacy" not in doc["text"]


def test_extract_url_stem():
    assert url_stem("http://h.test/news/cat.html?page=2") == "cat"
    assert url_stem("https://h.test/") == "h.test"


def test_gzip_bomb_is_read_only_up_to_the_cap(tmp_path):
    path = tmp_path / "bomb.html.gz"
    path.write_bytes(gzip.compress(b"<p>" + b"a" * 2_000_000))
    assert len(read_html_bytes(path, max_bytes=1_000_000)) == 1_000_001  # one more: "longer than the cap"


def test_extract_unknown_extractor_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["extract", "--extractor", "nope", "x.html", "-o", str(tmp_path)]) == 2
    assert "unknown text extractor" in capsys.readouterr().err


# --- scorer -----------------------------------------------------------------------------

def test_strip_cleaneval_gold():
    gold = "URL: http://example.org/\n\n <h> Title here\n<p> First para\n<L> item one\n"
    assert ev.words(ev.strip_cleaneval_gold(gold)) == ["title", "here", "first", "para", "item", "one"]


def test_edit_similarity_counts_word_edits():
    gold = "a b c d".split()
    assert ev.edit_similarity(gold, gold) == 1.0
    assert ev.edit_similarity("a b x d".split(), gold) == pytest.approx(0.75)  # one substitution
    assert ev.edit_similarity("nav a b c d".split(), gold) == pytest.approx(0.8)  # one insertion / 5
    assert ev.edit_similarity([], gold) == 0.0
    assert ev.edit_similarity([], []) == 1.0
    # order matters for the edit score, not for the bag of tokens
    assert ev.edit_similarity("d c b a".split(), gold) < 1.0
    assert ev.bag_prf("d c b a".split(), gold) == (1.0, 1.0, 1.0)


def test_bag_prf_uses_multiset_intersection():
    p, r, f = ev.bag_prf("the cat the cat menu".split(), "the cat sat".split())
    assert (p, r) == (pytest.approx(2 / 5), pytest.approx(2 / 3))
    assert f == pytest.approx(2 * p * r / (p + r))
    assert ev.bag_prf([], ["a"]) == (0.0, 0.0, 0.0)


def _cleaneval_fixture(root):
    (root / "input").mkdir(parents=True)
    (root / "gold").mkdir()
    (root / "input" / "1.html").write_text(ARTICLE)
    (root / "gold" / "1.txt").write_text(
        "URL: http://x/\n<h> The domestic cat\n<p> The cat is a small domesticated carnivorous mammal.\n")
    (root / "input" / "2.html").write_text(ARTICLE)  # no gold: skipped


def test_cleaneval_eval_table(tmp_path, capsys):
    _cleaneval_fixture(tmp_path / "ce")
    assert cli.main(["eval", "extraction", "--dataset", "cleaneval", "--extractors", "fulltext,article",
                     str(tmp_path / "ce")]) == 0
    out = capsys.readouterr().out
    assert "cleaneval: 1 pages" in out
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.splitlines() if line.startswith("| f")
            or line.startswith("| a")}
    assert set(rows) == {"fulltext", "article"}
    assert float(rows["fulltext"][5]) == pytest.approx(1.0)  # recall: fulltext keeps every gold word


def test_eval_extraction_explains_its_columns(tmp_path, capsys):
    _cleaneval_fixture(tmp_path / "ce")
    assert cli.main(["eval", "extraction", "--dataset", "cleaneval", "--extractors", "fulltext",
                     str(tmp_path / "ce")]) == 0
    legend = {line.split(":")[0] for line in capsys.readouterr().out.splitlines() if ": " in line}
    assert {"score", "failed", "LCS-F1", "P / R / F1"} <= legend


def test_readability_pages_gold_is_the_text_of_expected_html(tmp_path):
    page = tmp_path / "rd" / "ars-1"
    page.mkdir(parents=True)
    (page / "source.html").write_text(ARTICLE)
    (page / "expected.html").write_text('<div id="readability-page-1"><h1>The domestic cat</h1>'
                                        "<p>The cat is a small domesticated <b>carnivorous</b> mammal.</p></div>")
    (tmp_path / "rd" / "empty").mkdir()  # no source.html: skipped
    [p] = ev.readability_pages(tmp_path / "rd")
    assert p.page_id == "ars-1"
    assert ev.words(p.gold) == "the domestic cat the cat is a small domesticated carnivorous mammal".split()
    [res] = ev.evaluate([p], ["fulltext"])
    assert res.mean("recall") == pytest.approx(1.0)


def test_trafilatura_extractors_are_the_library_defaults_and_favor_recall():
    import trafilatura
    assert extractors.get_extractor("trafilatura")(ARTICLE) == trafilatura.extract(ARTICLE)
    assert extractors.get_extractor("trafilatura-recall")(ARTICLE) == trafilatura.extract(
        ARTICLE, include_comments=False, favor_recall=True)


def test_aeb_pages(tmp_path):
    root = tmp_path / "aeb"
    (root / "html").mkdir(parents=True)
    (root / "html" / "p1.html.gz").write_bytes(gzip.compress(ARTICLE.encode()))
    (root / "ground-truth.json").write_text(json.dumps({
        "p1": {"articleBody": "The cat is a small domesticated carnivorous mammal.", "url": "http://x/"},
        "p2": {"articleBody": "no html for this one", "url": "http://y/"}}))
    pages = list(ev.aeb_pages(root))
    assert [p.page_id for p in pages] == ["p1"]
    [res] = ev.evaluate(pages, ["trafilatura"])
    assert res.mean("recall") == pytest.approx(1.0) and res.failures == 0


def test_eval_on_wrong_folder_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["eval", "extraction", "--dataset", "aeb", str(tmp_path)]) == 2
    assert "ground-truth.json" in capsys.readouterr().err


def test_strip_cleaneval_wrapper():
    page = b'<text id="http://x/" title="T" encoding="utf8">\n<html><body><p>hi</p></body></html>\n</text>\n'
    assert ev.strip_cleaneval_wrapper(page) == b"\n<html><body><p>hi</p></body></html>\n"


@pytest.mark.parametrize("name", ["article", "keepeverything"])
def test_boilerpy3_reads_pages_without_body_tag(name):
    fragment = ARTICLE.split("<body>")[1].split("</body>")[0]
    assert "night vision" in extractors.get_extractor(name)(fragment)


def test_trafilatura_falls_back_to_full_text_when_it_finds_no_main_text():
    links = "<html><body><ul>" + "".join(f'<li><a href="/{i}">link {i}</a></li>' for i in range(5)) + "</ul></body></html>"
    assert "link 3" in extractors.get_extractor("trafilatura")(links)


def test_eval_extraction_progress_on_stderr(tmp_path, capsys, monkeypatch):
    from focuscrawl.eval import progress

    monkeypatch.setattr(progress, "EVERY", 0.0)
    _cleaneval_fixture(tmp_path / "ce")
    assert cli.main(["eval", "extraction", "--dataset", "cleaneval", "--extractors", "fulltext",
                     str(tmp_path / "ce")]) == 0
    err = [line.split(" (")[0] for line in capsys.readouterr().err.splitlines()
           if line.startswith("eval extraction: ")]
    assert err == [f"eval extraction: reading cleaneval pages from {tmp_path / 'ce'} ...",
                   "eval extraction: 1 pages x 1 extractors ...", "eval extraction: 0/1 pages"]


def test_extract_a_250_character_file_name_does_not_stop_the_batch(tmp_path, capsys):
    """An input whose name is 250 characters (the file system's limit is 255 bytes) is written
    under a cut name with a hash of the whole; the files after it are extracted too (before:
    "File name too long" stopped the whole batch)."""
    long_a, long_b = tmp_path / ("a" * 245 + ".html"), tmp_path / ("a" * 244 + "b.html")
    for path in (long_a, long_b, tmp_path / "after.html"):
        path.write_text(ARTICLE)
    out = tmp_path / "o"
    assert cli.main(["extract", str(long_a), str(long_b), str(tmp_path / "after.html"), "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 3 and "after.txt" in names and all(len(n.encode()) <= 255 for n in names)


def test_extract_names_a_folder_as_a_folder(tmp_path, capsys):
    """Before: "no such input file" for a folder that exists."""
    (tmp_path / "pages").mkdir()
    assert cli.main(["extract", str(tmp_path / "pages"), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "this is a folder, not HTML files" in err and "no such" not in err
    assert not (tmp_path / "o").exists()
