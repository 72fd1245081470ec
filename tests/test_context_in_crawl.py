"""Extra context extractors recorded per image, and the final score's choice of context."""
import pytest
from lxml import html as lhtml

from focuscrawl.images.extract import ContextSettings, image_items, score_dict
from focuscrawl.images.final import final_score
from focuscrawl.resources import project_settings

PAGE = """<html><body><p>Menu Home Contact</p><div class="wp-caption">
<p>My cat likes to sleep all day long on the warm sofa in the living room.</p>
<figure><img src="/cat.jpg" alt="A grey cat" width="800" height="600">
<figcaption>The cat asleep on the sofa</figcaption></figure></div></body></html>"""


def test_extra_contexts_are_recorded_and_scored(cats_scorer):
    context = ContextSettings(extra=("figure", "clus"), final="figure")
    [decision] = image_items(lhtml.fromstring(PAGE), "http://s.test/", cats_scorer, context=context)
    extra = decision.item["extra_contexts"]
    assert list(extra) == ["figure", "clus"]
    assert extra["figure"]["text"] == "The cat asleep on the sofa"
    assert extra["figure"]["scores"] == score_dict(cats_scorer.score("The cat asleep on the sofa"))
    assert extra["clus"]["scores"]["tokens"] == cats_scorer.score(extra["clus"]["text"]).tokens


def test_default_records_no_extra_contexts(cats_scorer):
    [decision] = image_items(lhtml.fromstring(PAGE), "http://s.test/", cats_scorer)
    assert decision.item["extra_contexts"] == {}


def test_settings_are_read_and_validated():
    s = project_settings()
    assert ContextSettings.from_settings(s).extra == () and ContextSettings.from_settings(s).final == "thesis"
    s.set("FOCUSCRAWL_IMAGE_EXTRA_CONTEXTS", "clus,figure")
    s.set("FOCUSCRAWL_IMAGE_FINAL_CONTEXT", "clus")
    assert ContextSettings.from_settings(s) == ContextSettings(extra=("clus", "figure"), final="clus")
    s.set("FOCUSCRAWL_IMAGE_FINAL_CONTEXT", "par")
    with pytest.raises(ValueError, match="must be 'thesis' or one of"):
        ContextSettings.from_settings(s)
    with pytest.raises(ValueError, match="unknown context extractor 'vips'"):
        ContextSettings(extra=("vips",))


def test_final_score_uses_the_chosen_context():
    ctx = [{"kind": "parent", "level": 1, "scores": {"weighted": 400.0}}]
    extra = {"figure": {"text": "t", "scores": {"weighted": 4.0}}, "clus": {"text": "", "scores": {"weighted": None}}}
    assert final_score({"weighted": 25.0}, None, ctx, extra, "figure") == (pytest.approx(10.0), "alt+figure")
    # empty chosen context: the thesis parent stands in
    assert final_score({"weighted": 25.0}, None, ctx, extra, "clus") == (pytest.approx(100.0), "alt+parent-1")
    assert final_score({"weighted": 25.0}, None, ctx, extra) == (pytest.approx(100.0), "alt+parent-1")


def test_real_crawl_records_extra_contexts_and_scores_with_the_chosen_one(tmp_path):
    import io

    from PIL import Image

    from tests.support.crawl import crawl, items
    from tests.support.localweb import LocalWeb, Page

    buf = io.BytesIO()
    Image.new("RGB", (800, 600), (120, 120, 120)).save(buf, "PNG")
    page = ("<html><body><p>qqq qqq qqq qqq qqq qqq qqq qqq qqq qqq qqq.</p>"
            '<div><p>spam spam spam spam spam spam.</p><figure><img src="/tabby.png" alt="tabby cat" '
            'width="800" height="600"><figcaption>cat cat cat cat cat</figcaption></figure></div>'
            "</body></html>")
    site = {("cats.test", "/"): Page(page), ("cats.test", "/tabby.png"): Page(buf.getvalue(), "image/png")}
    settings = {"FOCUSCRAWL_IMAGE_EXTRA_CONTEXTS": ["figure", "clus"], "FOCUSCRAWL_IMAGE_FINAL_CONTEXT": "figure"}
    with LocalWeb(site) as web:
        stats, proc = crawl(web, tmp_path, "http://cats.test/", mode="unfocused", settings=settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [image] = [i for i in items(tmp_path) if i.get("image_url") == "http://cats.test/tabby.png"]
    assert image["extra_contexts"]["figure"]["text"] == "cat cat cat cat cat"
    assert set(image["extra_contexts"]) == {"figure", "clus"}
    assert image["final_context"] == "alt+figure"
    alt_w = image["alt_scores"]["weighted"]
    fig_w = image["extra_contexts"]["figure"]["scores"]["weighted"]
    assert image["final_score"] == pytest.approx((alt_w * fig_w) ** 0.5)
    assert stats.get("focuscrawl/images/final_context/alt+figure") == 1
