"""Language of page and image texts (issue #30): identification, the wanted languages, the
filter in a real crawl of a local web (off-language pages crawled through, their images
dropped), the language columns in pages.tsv, images.tsv and the rank exports."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from scrapy.settings import Settings

from tests.support.crawl import crawl
from tests.support.imagesite import image_bytes
from tests.support.localweb import LocalWeb, Page
from tests.support.runfiles import read_tsv

from focuscrawl.analysis import AnalysisConfig, analyse_page, parse_tree
from focuscrawl.crawl_scorer import language_filter
from focuscrawl.images.extract import image_items
from focuscrawl.lm.scorer import TopicScorer
from focuscrawl.resources import default_topic_path, project_settings
from focuscrawl.text.language import OTHER_LANGUAGE, UNKNOWN, LanguageFilter, corpus_language, identify, parse_languages
from focuscrawl.topic.model import bundle_language

EN = ("The cat slept on the warm windowsill all afternoon while the rain fell outside. "
      "Later it woke up, stretched and asked loudly for its dinner.")
FR = ("Le chat a dormi tout l'après-midi sur le rebord de la fenêtre pendant qu'il pleuvait dehors. "
      "Plus tard il s'est réveillé, s'est étiré et a réclamé son dîner.")
DE = ("Die Katze schlief den ganzen Nachmittag auf der warmen Fensterbank, während es draußen regnete. "
      "Später wachte sie auf und verlangte laut nach ihrem Abendessen.")
JPEG = image_bytes("JPEG")


def test_identify_and_unknown_texts():
    assert (identify(EN), identify(FR), identify(DE)) == ("en", "fr", "de")
    assert identify("a tabby cat asleep on a red sofa") == "en"
    assert identify("un chat tigré qui dort sur le canapé rouge") == "fr"
    # no letters, or too little to be sure: unknown, never filtered
    assert identify("2024-01-05 12:30") == UNKNOWN and identify("") == UNKNOWN
    assert identify(EN, min_confidence=1.01) == UNKNOWN
    assert not LanguageFilter(frozenset({"en"})).unwanted(UNKNOWN)
    assert LanguageFilter(frozenset({"en"})).unwanted("fr") and not LanguageFilter().unwanted("fr")


def test_wanted_languages_setting_and_bundle_language(tmp_path):
    assert parse_languages("") is None
    assert parse_languages("any") == frozenset()
    assert parse_languages(" en, DE ") == frozenset({"en", "de"})
    with pytest.raises(ValueError, match="unknown language code.*xx"):
        parse_languages("en,xx")
    # the bundled cats bundle records its language; the default filter is the bundle's
    assert bundle_language(default_topic_path()) == "en"
    assert language_filter(project_settings()).wanted == frozenset({"en"})
    assert language_filter(project_settings({"FOCUSCRAWL_LANGUAGES": "any"})).wanted == frozenset()
    # a bundle built before issue #30 has no language: no filter (it loads as before)
    old = tmp_path / "old"
    old.mkdir()
    manifest = json.loads((default_topic_path() / "bundle.json").read_text())
    del manifest["language"]
    (old / "bundle.json").write_text(json.dumps(manifest))
    assert bundle_language(old) == UNKNOWN
    settings = project_settings({"FOCUSCRAWL_TOPIC": str(old)})
    assert language_filter(settings).wanted == frozenset()
    # a custom model without a bundle: no filter
    assert language_filter(Settings({"FOCUSCRAWL_MODEL": "x.arpa", "FOCUSCRAWL_TOPIC": "",
                                    "FOCUSCRAWL_LANGUAGES": "",
                                    "FOCUSCRAWL_LANGUAGE_MIN_CONFIDENCE": 0.5,
                                    "FOCUSCRAWL_LANGUAGE_TEXT_CHARS": 300})).wanted == frozenset()
    assert corpus_language([EN, FR, EN.lower(), "12 34"]) == "en"


def _scorer(tmp_path) -> TopicScorer:
    from tests.support.toymodel import write_model

    model, keywords = write_model(tmp_path)
    return TopicScorer.from_files(model, keywords)


def test_images_in_another_language_are_dropped_with_a_reason(tmp_path):
    html = f"""<html><body><div><p>{EN}</p>
      <img src="/en.jpg" alt="a tabby cat asleep on a red sofa" width="600" height="400">
      <img src="/fr.jpg" alt="un chat tigré qui dort sur le canapé rouge" width="600" height="400">
      <figure><img src="/name.jpg" alt="Jane Smith" width="600" height="400"><figcaption>{FR}</figcaption></figure>
      <section><a href="/x"><img src="/name2.jpg" alt="Jane Smith" width="600" height="400"></a>
      <span>12.05.2024</span></section>
      </div></body></html>"""
    root = parse_tree(html, "http://x.test/")
    scorer = _scorer(tmp_path)
    decisions = image_items(root, "http://x.test/", scorer, page_item={"language": "de"},
                            language=LanguageFilter(frozenset({"en"})))
    assert [(d.src, d.reason) for d in decisions] == [
        ("http://x.test/en.jpg", None), ("http://x.test/fr.jpg", OTHER_LANGUAGE),
        # a name says nothing: the element around it (a figure with a French caption) decides,
        # else (a date around it) the page's language
        ("http://x.test/name.jpg", OTHER_LANGUAGE), ("http://x.test/name2.jpg", OTHER_LANGUAGE)]
    assert decisions[0].item["language"] == "en"
    # the language is decided before the LM: an image dropped for it is not scored
    assert [d.item is None for d in decisions] == [False, True, True, True]
    shown = image_items(root, "http://x.test/", scorer, page_item={"language": "de"},
                        language=LanguageFilter(frozenset({"en"})), score_dropped=True)  # the shell's view
    assert [(d.reason, d.item["language"]) for d in shown] == [
        (None, "en"), (OTHER_LANGUAGE, "fr"), (OTHER_LANGUAGE, "fr"), (OTHER_LANGUAGE, "de")]
    # without wanted languages every image is kept, with its language
    kept = image_items(root, "http://x.test/", scorer, page_item={"language": "en"}, language=LanguageFilter())
    assert [(d.reason, d.item["language"]) for d in kept] == [(None, "en"), (None, "fr"), (None, "fr"), (None, "en")]


def test_an_image_in_another_language_costs_no_lm_query(tmp_path):
    html = f"""<html><body><div><p>{EN}</p>
      <figure><img src="/fr.jpg" alt="un chat tigré qui dort sur le canapé rouge" width="600" height="400">
      <figcaption>{FR}</figcaption></figure></div></body></html>"""
    root = parse_tree(html, "http://x.test/")
    scorer = _scorer(tmp_path)
    dropped = image_items(root, "http://x.test/", scorer, page_item={"language": "en"},
                          language=LanguageFilter(frozenset({"en"})))
    assert [d.reason for d in dropped] == [OTHER_LANGUAGE] and scorer.queries == 0
    kept = image_items(root, "http://x.test/", scorer, page_item={"language": "en"}, language=LanguageFilter())
    assert [d.reason for d in kept] == [None] and scorer.queries > 0


def test_identification_is_remembered_per_text_and_bounded():
    from focuscrawl.text import language

    language._classify.cache_clear()
    assert identify(FR) == "fr" and identify(FR) == "fr" and identify(FR[:50]) == "fr"
    info = language._classify.cache_info()
    assert (info.hits, info.misses, info.maxsize) == (1, 2, language.MEMO_TEXTS)
    # a text longer than MEMO_CHARS is identified, not remembered
    assert identify(EN * 10, max_chars=0) == "en" and language._classify.cache_info().currsize == 2


def test_the_model_loads_from_its_cached_uncompressed_copy(tmp_path):
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from focuscrawl.text.language import load_identifier

    texts = [EN, FR, DE, "a tabby cat asleep on a red sofa", "Jane Smith", "日本語のテキストです", "12 34"]
    wheel = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    first = load_identifier(tmp_path / "cache")  # writes the copy
    (copy,) = (tmp_path / "cache").iterdir()
    assert sorted(p.name for p in copy.iterdir()) == [
        "classes.npy", "nextmove.npy", "nextmove_row.npy", "out_feat.npy", "pc.npy", "ptc.npy"]
    cached = load_identifier(tmp_path / "cache")  # reads it
    assert [first.classify(t) for t in texts] == [cached.classify(t) for t in texts] == [wheel.classify(t) for t in texts]
    # the copy's table is the wheel's float16 widened to float32 (no conversion per text):
    # the same probabilities, to the bit
    assert (cached.nb_ptc.dtype.name, wheel.nb_ptc.dtype.name) == ("float32", "float16")
    assert [cached._decide(t).tobytes() for t in texts] == [wheel._decide(t).tobytes() for t in texts]
    # a damaged copy is written again; an unwritable cache is skipped
    (copy / "ptc.npy").write_bytes(b"not an array")
    assert load_identifier(tmp_path / "cache").classify(FR) == wheel.classify(FR)
    assert (copy / "ptc.npy").stat().st_size > 1_000_000 and list((tmp_path / "cache").iterdir()) == [copy]
    (tmp_path / "file").write_text("")
    assert load_identifier(tmp_path / "file" / "cache").classify(DE) == wheel.classify(DE)


def test_the_cache_keeps_one_copy_per_model_version_and_removes_old_ones(tmp_path):
    """Each install made a copy of its own, named by the model file's time, and none was removed
    (4 copies, 370 MB on one machine). The copy is named by py3langid's version; writing it
    removes the others; README's size is the copy's."""
    import re
    from importlib.metadata import version

    from focuscrawl.text.language import load_identifier

    cache = tmp_path / "cache"
    old = cache / "4586720-1795847200423699790-f32"  # an earlier install's copy
    old.mkdir(parents=True)
    (old / "ptc.npy").write_bytes(b"x" * 1000)
    load_identifier(cache)
    (copy,) = cache.iterdir()
    assert copy.name.startswith(f"{version('py3langid')}-") and not old.exists()
    written = (copy / "ptc.npy").stat().st_mtime_ns
    load_identifier(cache)  # another install of the same version: the same copy, not written again
    assert list(cache.iterdir()) == [copy] and (copy / "ptc.npy").stat().st_mtime_ns == written
    size_mb = sum(p.stat().st_size for p in copy.iterdir()) / 1e6
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    stated = float(re.search(r"py3langid's language model\s+\(~(\d+) MB", readme).group(1))
    assert abs(stated - size_mb) <= 0.1 * size_mb, (stated, size_mb)


def test_a_page_in_another_language_is_not_scored_but_keeps_links_and_sentences(tmp_path):
    html = f'<html><body><main><p>{FR}</p><p><a href="/suite">la suite</a></p></main></body></html>'
    scorer = _scorer(tmp_path)
    wanted = AnalysisConfig(extractor="fulltext", language=LanguageFilter(frozenset({"en"})))
    page = analyse_page(html, "http://x.test/", "http://x.test/", 0, wanted, scorer)
    assert (page.language, page.language_wanted) == ("fr", False)
    assert page.score.perplexity is None and page.topic_logit is None
    assert page.sentences and list(page.links) == ["http://x.test/suite"]
    anything = AnalysisConfig(extractor="fulltext", language=LanguageFilter())
    page = analyse_page(html, "http://x.test/", "http://x.test/", 0, anything, scorer)
    assert (page.language, page.language_wanted) == ("fr", True) and page.score.perplexity is not None


def _web() -> dict:
    def page(text: str, links: str, images: str = "") -> Page:
        return Page(f"<html><body><main><p>{text}</p>{images}<p>{links}</p></main></body></html>")

    img = '<img src="/img/{0}.jpg" alt="{1}" width="600" height="400">'
    return {
        ("w.test", "/"): page(EN, '<a href="/fr">French</a>',
                              img.format("en", "a tabby cat asleep on a red sofa")
                              + img.format("fr", "un chat tigré qui dort sur le canapé rouge")),
        ("w.test", "/fr"): page(FR, '<a href="/after">suite</a>',
                                img.format("fr2", "le chat tigré de ma grand-mère dans le jardin")),
        ("w.test", "/after"): page(EN, ""),
        ("w.test", "/img/en.jpg"): Page(JPEG, "image/jpeg"),
        ("w.test", "/img/fr.jpg"): Page(JPEG, "image/jpeg"),
        ("w.test", "/img/fr2.jpg"): Page(JPEG, "image/jpeg"),
    }


def test_crawl_follows_other_language_pages_drops_their_images_and_logs_languages(tmp_path, capsys):
    with LocalWeb(_web()) as web:
        stats, proc = crawl(web, tmp_path, "http://w.test/", settings={"FOCUSCRAWL_LANGUAGES": "en"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    pages = {r["url"]: r for r in read_tsv(out / "pages.tsv")}
    # the French page is crawled through: its link to /after was followed
    assert set(pages) == {"http://w.test/", "http://w.test/fr", "http://w.test/after"}
    assert [pages[u]["language"] for u in ("http://w.test/", "http://w.test/fr", "http://w.test/after")] == [
        "en", "fr", "en"]
    assert pages["http://w.test/fr"]["perplexity"] == "" and pages["http://w.test/"]["perplexity"] != ""
    assert pages["http://w.test/fr"]["sentences"] != "0"
    assert stats["focuscrawl/pages/other_language"] == 1
    assert stats["focuscrawl/language/pages/en"] == 2 and stats["focuscrawl/language/pages/fr"] == 1
    assert "focuscrawl/pages/without_text" not in stats
    # images whose texts are French are dropped with their reason, never downloaded
    assert stats[f"focuscrawl/images/dropped/{OTHER_LANGUAGE}"] == 2
    assert "w.test/img/fr.jpg" not in web.requests and "w.test/img/fr2.jpg" not in web.requests
    images = read_tsv(out / "images.tsv")
    assert [(r["image_url"], r["language"]) for r in images] == [("http://w.test/img/en.jpg", "en")]
    record = json.loads((out / images[0]["record_path"]).read_text())
    assert record["sightings"][0]["language"] == "en"
    assert stats["focuscrawl/language/images/en"] == 1

    # the rank exports carry the column
    from focuscrawl.cli import main

    for fmt in ("tsv", "jsonl"):
        target = tmp_path / f"ranked.{fmt}"
        assert main(["rank", str(out), "--scoring", "thesis", "--min", "0", "--max", "1e12",
                     "--format", fmt, "-o", str(target)]) == 0
    assert [r["language"] for r in read_tsv(tmp_path / "ranked.tsv")] == ["en"]
    assert json.loads((tmp_path / "ranked.jsonl").read_text().splitlines()[0])["language"] == "en"


def test_without_a_filter_other_language_pages_are_scored(tmp_path):
    with LocalWeb(_web()) as web:
        stats, proc = crawl(web, tmp_path, "http://w.test/", settings={"FOCUSCRAWL_LANGUAGES": "any"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = {r["url"]: r for r in read_tsv(tmp_path / "out" / "pages.tsv")}
    assert pages["http://w.test/fr"]["language"] == "fr" and pages["http://w.test/fr"]["perplexity"] != ""
    assert "focuscrawl/pages/other_language" not in stats
    assert f"focuscrawl/images/dropped/{OTHER_LANGUAGE}" not in stats
    assert {r["language"] for r in read_tsv(tmp_path / "out" / "images.tsv")} == {"en", "fr"}
