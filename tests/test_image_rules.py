import pytest
from lxml import html as lhtml

from focuscrawl.context.thesis import thesis_context
from focuscrawl.images import rules as R
from focuscrawl.images.extract import ContextSettings, image_items, score_dict
from focuscrawl.images.final import final_score
from focuscrawl.images.rules import ImageRules, html_dimension, src_guess_string


def test_src_guess_string_thesis_example():
    url = "http://pictures-of-cats.org/wp-content/uploads/2015/02/is-the-kitten-healthy-XXX.jpg"
    assert src_guess_string(url) == "pictures of cats org wp content uploads is the kitten healthy xxx"


@pytest.mark.parametrize("url, expected", [
    ("https://www.Example.com/Cat_Photo2.JPEG", "example com cat photo"),
    ("http://example.com/img/kitten.v2/tabby?size=large", "example com img kitten v tabby size large"),
    ("https://ex.org/a/", "ex org a"),
    ("https://ex.org/Kätzchen.png", "ex org kätzchen"),
    ("https://ex.org/K%C3%A4tzchen%20Bild.png?q=zwei%20Katzen", "ex org kätzchen bild q zwei katzen"),
])
def test_src_guess_string_more(url, expected):
    assert src_guess_string(url) == expected


@pytest.mark.parametrize("value, expected", [
    ("600", 600), (" 600px ", 600), ("600.7", 600), ("100%", None), ("auto", None), ("", None), (None, None),
])
def test_html_dimension(value, expected):
    assert html_dimension(value) == expected


def _reason(tag, base="http://site.test/page/a.html", rules=ImageRules()):
    img = lhtml.fragment_fromstring(tag)
    attrs = R.read_attributes(img.attrib, base, rules.lazy_src)
    return R.drop_reason(img.attrib, attrs, rules)


@pytest.mark.parametrize("tag, reason", [
    ('<img src="a.jpg" width="600" height="400">', R.NO_ALT_TITLE),
    ('<img src="a.jpg" alt="  " title="" width="600" height="400">', R.NO_ALT_TITLE),
    ('<img alt="cat" width="600" height="400">', R.NO_SRC),
    ('<img src="data:image/png;base64,AAAA" alt="cat" width="600" height="400">', R.BAD_SRC),
    ('<img src="javascript:void(0)" alt="cat" width="600" height="400">', R.BAD_SRC),
    ('<img src="a.jpg" alt="cat">', R.SIZE_UNSPECIFIED),
    ('<img src="a.jpg" alt="cat" width="600">', R.SIZE_UNSPECIFIED),
    ('<img src="a.jpg" alt="cat" width="100%" height="400">', R.SIZE_UNSPECIFIED),
    ('<img src="a.jpg" alt="cat" width="511" height="400">', R.TOO_SMALL),
    ('<img src="a.jpg" alt="cat" width="600" height="383">', R.TOO_SMALL),
    ('<img src="a.jpg" alt="cat" width="9601" height="400">', R.TOO_LARGE),
    ('<img src="a.jpg" alt="cat" width="600" height="7201">', R.TOO_LARGE),
    ('<img src="a.webp" alt="cat" width="600" height="400">', R.FORMAT),
    ('<img src="/img?id=3" alt="cat" width="600" height="400">', R.FORMAT),
    ('<img src="a.jpg" alt="cat" width="512" height="384">', None),
    ('<img src="a.JPEG" title="cat" width="9600" height="7200">', None),
    ('<img src="a.gif?x=1" alt="cat" width="600px" height="400px">', None),
    ('<img src="//cdn.test/a.png" alt="cat" width="600" height="400">', None),
    # lazy loading: the real URL in data-src when src is missing or a data: placeholder
    ('<img data-src="a.jpg" alt="cat" width="600" height="400">', None),
    ('<img src="data:image/gif;base64,R0lG" data-lazy-src="a.jpg" alt="cat" width="600" height="400">', None),
    ('<img src="data:image/gif;base64,R0lG" data-src=" " alt="cat" width="600" height="400">', R.BAD_SRC),
    ('<img data-src="a.webp" alt="cat" width="600" height="400">', R.FORMAT),
])
def test_rules_reasons(tag, reason):
    assert _reason(tag) == reason


def test_lazy_src_resolves_and_can_be_switched_off():
    img = lhtml.fragment_fromstring('<img src="data:image/gif;base64,R0lG" data-original="/x/a.jpg" alt="c">')
    attrs = R.read_attributes(img.attrib, "http://s.test/p/", ("data-src", "data-original"))
    assert (attrs.src, attrs.lazy) == ("http://s.test/x/a.jpg", True)
    attrs = R.read_attributes(img.attrib, "http://s.test/p/", ())
    assert (attrs.src, attrs.lazy) == (None, False)
    assert _reason('<img data-src="a.jpg" alt="cat" width="600" height="400">',
                   rules=ImageRules(lazy_src=())) == R.NO_SRC


def test_unspecified_size_kept_when_not_kicked():
    rules = ImageRules(kick_unspecified=False)
    assert _reason('<img src="a.jpg" alt="cat">', rules=rules) is None
    assert _reason('<img src="a.jpg" alt="cat" width="10" height="10">', rules=rules) == R.TOO_SMALL


THESIS_PAGE = """<html><body>
<div id="post"><h2>Is the Kitten Healthy?</h2>
 <div id="entry">
  <p>A straightforward infographic which may assist some visitors when checking the health of a cat.</p>
  <div class="wp-caption" id="cap">
   <a href="/big"><img id="i" class="size-full wp-image-81022" style="border: 2px solid slategrey;"
      src="/wp-content/uploads/2015/02/is-the-kitten-healthy-XXX.jpg" alt="Is the kitten healthy?"
      width="840" height="519"></a>
   <p class="wp-caption-text">Is the kitten healthy? Checklist infographic.</p>
  </div>
  <p>Read more about a healthy cat.</p>
 </div>
</div></body></html>"""


def test_thesis_context_parents_and_siblings():
    root = lhtml.fromstring(THESIS_PAGE)
    img = root.get_element_by_id("i")
    ctx = thesis_context(img, max_parents=5, max_siblings=5, distance_weight=500)
    parents = [c for c in ctx if c["kind"] == "parent"]
    siblings = [c for c in ctx if c["kind"] == "sibling"]
    # <a> has no text: parent-0 is the caption div
    assert [p["tag"] for p in parents] == ["div", "div", "div", "body"]
    assert parents[0]["text"] == "Is the kitten healthy? Checklist infographic."
    assert parents[0]["length"] == 45 and parents[0]["distance"] == 0.0
    assert parents[1]["text"].startswith("A straightforward infographic")
    assert parents[1]["distance"] == 500.0 and parents[2]["distance"] == 1000.0
    assert parents[2]["text"].splitlines()[0] == "Is the Kitten Healthy?"
    # siblings of the image's branch (<a>) below parent-0: the caption (as in thesis Listing 3.3)
    assert [(s["level"], s["text"]) for s in siblings] == [(0, "Is the kitten healthy? Checklist infographic.")]


def test_thesis_context_skips_empty_parents_listing_3_1():
    page = """<html><body><div id="parent3">I found this little stray this morning in my backyard.
    <div id="parent2"><div id="parent1"><img id="siblingPic" src="x.jpg"><p id="siblingP"></p></div></div>
    </div></body></html>"""
    img = lhtml.fromstring(page).get_element_by_id("siblingPic")
    ctx = thesis_context(img, max_parents=1)
    assert ctx == [{"kind": "parent", "level": 0, "tag": "div",
                    "text": "I found this little stray this morning in my backyard.",
                    "length": 54, "truncated": False, "distance": 0.0}]


def test_thesis_context_sibling_order_and_limits():
    page = """<html><body><div><p>b2</p><p>b1</p><p></p><img id="i" src="x.jpg"><span>a1</span>
    <!-- c --><p>a2</p><p>a3</p></div></body></html>"""
    img = lhtml.fromstring(page).get_element_by_id("i")
    ctx = thesis_context(img, max_parents=1, max_siblings=4, max_chars=5)
    sib = [(c["level"], c["text"], c["distance"]) for c in ctx if c["kind"] == "sibling"]
    # nearness counts element positions (the empty <p> is at distance 1 before)
    assert sib == [(0, "a1", 0.0), (1, "a2", 500.0), (2, "b1", 1000.0), (3, "a3", 1500.0)]
    parent = ctx[0]
    assert parent["truncated"] and parent["text"] == "b2\nb1" and parent["length"] > 5


def test_thesis_context_no_text_anywhere():
    img = lhtml.fromstring('<html><body><div><img id="i" src="x.jpg"></div></body></html>').get_element_by_id("i")
    assert thesis_context(img) == []


def test_final_score_fallbacks():
    ctx = [{"kind": "parent", "level": 0, "scores": {"weighted": 100.0}},
           {"kind": "parent", "level": 1, "scores": {"weighted": 400.0}},
           {"kind": "sibling", "level": 1, "scores": {"weighted": 2.0}}]
    assert final_score({"weighted": 25.0}, None, ctx) == (pytest.approx(100.0), "alt+parent-1")
    assert final_score({"weighted": 25.0}, None, ctx[:1]) == (pytest.approx(50.0), "alt+parent-0")
    assert final_score({"weighted": 25.0}, {"weighted": 1.0}, []) == (25.0, "alt")
    assert final_score({"weighted": None}, {"weighted": 9.0}, ctx[1:]) == (pytest.approx(60.0), "title+parent-1")
    assert final_score({"weighted": None}, None, ctx) == (400.0, "parent-1")
    assert final_score(None, None, None) == (None, None)


def test_image_items_decisions_and_scores(cats_scorer):
    page = THESIS_PAGE.replace("</body>", """
      <img src="/small.jpg" alt="cat" width="50" height="50">
      <img src="/noalt.jpg" width="600" height="400">
      <base href="http://ignored.test/">
      <img src="/b.png" title="A cat sitting on a laptop" width="600" height="400"></body>""")
    root = lhtml.fromstring(page)
    page_item = {"depth": 2, "perplexity": 123.0}
    out = image_items(root, "http://pictures-of-cats.org/is-the-kitten-healthy.html", cats_scorer,
                      page_item=page_item, context=ContextSettings(max_parents=2))
    assert [(d.src, d.reason) for d in out] == [
        ("http://pictures-of-cats.org/wp-content/uploads/2015/02/is-the-kitten-healthy-XXX.jpg", None),
        ("http://pictures-of-cats.org/small.jpg", R.TOO_SMALL),
        ("http://pictures-of-cats.org/noalt.jpg", R.NO_ALT_TITLE),
        ("http://pictures-of-cats.org/b.png", None),
    ]
    assert out[1].item is None and out[2].item is None
    item = out[0].item
    assert item["src_guess"] == "pictures of cats org wp content uploads is the kitten healthy xxx"
    assert item["alt"] == "Is the kitten healthy?" and item["title"] == ""
    assert (item["html_width"], item["html_height"], item["extension"]) == (840, 519, "jpg")
    assert item["css_class"] == "size-full wp-image-81022" and item["style"] == "border: 2px solid slategrey;"
    assert item["page_depth"] == 2 and item["page_perplexity"] == 123.0
    assert item["alt_scores"] == score_dict(cats_scorer.score("Is the kitten healthy?"))
    assert item["title_scores"]["perplexity"] is None
    assert [(c["kind"], c["level"]) for c in item["contexts"]] == [("parent", 0), ("parent", 1), ("sibling", 0)]
    for c in item["contexts"]:
        assert c["scores"] == score_dict(cats_scorer.score(c["text"]))
    assert out[3].item["title"] == "A cat sitting on a laptop"


def test_image_items_page_limit_and_explain_mode(cats_scorer):
    imgs = "".join(f'<p>cat {i}<img src="/{i}.jpg" alt="cat {i}" width="600" height="400"></p>' for i in range(4))
    root = lhtml.fromstring(f"<html><body>{imgs}<img src='x.jpg' width=1 height=1 alt='tiny'></body></html>")
    out = image_items(root, "http://s.test/", cats_scorer, rules=ImageRules(max_per_page=2), score_dropped=True)
    assert [d.reason for d in out] == [None, None, R.PAGE_LIMIT, R.PAGE_LIMIT, R.TOO_SMALL]
    assert all(d.item is not None for d in out)  # explain mode scores dropped ones too
    assert out[4].item["alt"] == "tiny"


def test_image_items_broken_html_and_bad_chars(cats_scorer):
    raw = b'<html><body><div><p>Kitten \xff\xfe on a mat<img src="k.jpg" alt="Kitten\x00 \xef\xbf\xbd here" ' \
          b'width=600 height=400><table><td>unclosed cell<div>cat</body>'
    root = lhtml.fromstring(raw.decode("utf-8", "replace"))
    out = image_items(root, "http://s.test/", cats_scorer)
    assert [d.reason for d in out] == [None]
    assert out[0].item["alt"] == "Kitten here"
    assert "\ufffd" not in out[0].item["contexts"][0]["text"]
    assert image_items(None, "http://s.test/", cats_scorer) == []


def test_unspecified_size_is_measured_when_asked():
    """FOCUSCRAWL_IMAGE_MEASURE_UNSIZED: no HTML size is no drop; the size limits wait for
    the real size (the download pipeline), HTML sizes are still checked at once."""
    rules = ImageRules(measure_unspecified=True)
    assert _reason('<img src="a.jpg" alt="cat">', rules=rules) is None
    assert _reason('<img src="a.jpg" alt="cat" width="600">', rules=rules) is None
    assert _reason('<img src="a.jpg" alt="cat" width="100" height="80">', rules=rules) == R.TOO_SMALL
    assert _reason('<img src="a.webp" alt="cat">', rules=rules) == R.FORMAT
    assert R.needs_measuring(None, 400, rules) and not R.needs_measuring(600, 400, rules)
    assert not R.needs_measuring(None, None, ImageRules())
    assert R.size_reason(511, 400, rules) == R.TOO_SMALL and R.size_reason(512, 384, rules) is None


BASES = ["http://s.test/a/b/page.html?x=1#top", "http://s.test/a/b/other.html", "http://s.test/a/../b/c", "https://s.test", "http://s.test/a;p/b",
         "http://s.test/dir/", "http://u:p@s.test:8080/a/b", "ftp://s.test/a/b", "not a url", "http://[::1/a"]
SRCS = ["img/a.jpg", "../a.JPG", "./a/../b.png?x=1#f", "//cdn.test/x.gif", "?q=1", "#frag", "/abs/p.jpeg",
        "a;p.jpg", "http://other.test/y.webp", "HTTP://other.test/z", "http:rel.jpg", "data:image/png;base64,xx",
        "javascript:void(0)", "..", "http://[::1", "a b.jpg", "%7Euser/x.jpg"]


def test_resolved_src_is_resolve_src_and_its_extension_for_any_base_and_is_bounded():
    """Image sources are resolved once per (base folder, source) across pages: the same URL
    and extension as resolving each against its own page's URL; the memo has a fixed size."""
    from focuscrawl.images.rules import SRC_MEMO, _resolved_in_folder, resolve_src, resolved_src, url_extension

    _resolved_in_folder.cache_clear()
    for base in BASES:
        for src in SRCS:
            expected = resolve_src(src, base)
            assert resolved_src(src, base) == (expected, url_extension(expected) if expected else ""), (base, src)
    info = _resolved_in_folder.cache_info()
    assert info.hits >= len(SRCS) - 2  # the second page of the folder a/b/: its sources were known
    assert info.maxsize == SRC_MEMO


def test_clean_attribute_collapses_every_white_space_and_drops_nul_and_replacement_characters():
    import re
    import sys

    from focuscrawl.images.rules import clean_attribute

    spaces = "".join(chr(c) for c in range(sys.maxunicode + 1) if re.fullmatch(r"\s", chr(c)))
    assert clean_attribute(f"{spaces}a{spaces}b\x00c\ufffd {spaces}") == "a bc"
    assert clean_attribute("  a\u00a0\u2003 tabby\n\tcat\x1c ") == "a tabby cat"
    assert clean_attribute(None) == clean_attribute("") == clean_attribute(" \x00 ") == ""
