import pytest

from focuscrawl.text.extractors import ExtractionError, get_extractor
from focuscrawl.text.html import decode_html, full_text


PAGE = """<html><head><title>T</title><style>p{}</style><script>var x = "cat";</script></head>
<body><nav>Home</nav><!-- a comment --><p>The cat sleeps.</p><noscript>enable js</noscript>
<div>Second <b>block</b> text<template>hidden</template></div>tail words</body></html>"""


def test_full_text_keeps_body_text_only():
    text = full_text(PAGE)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    assert lines == ["Home", "The cat sleeps.", "Second block text", "tail words"]
    for hidden in ("var x", "a comment", "enable js", "hidden", "p{}"):
        assert hidden not in text


@pytest.mark.parametrize("body, ctype, expected", [
    ("<p>Katze grüßt</p>".encode("latin-1"), "text/html; charset=iso-8859-1", "Katze grüßt"),
    (b'<meta charset="windows-1252"><p>caf\xe9 \x93cat\x94</p>', None, "café “cat”"),
    ("<p>日本の猫</p>".encode("shift_jis"), "text/html; charset=shift_jis", "日本の猫"),
    # a stray byte in a UTF-8 page is dropped; the page's other accents stay UTF-8
    (b"<p>gr\xc3\xbc\xc3\x9fe \xff utf8 \x00 here</p>", "text/html; charset=utf-8", "grüße  utf8  here"),
    # Latin-1 bytes declared UTF-8 (header or <meta>): decoded as cp1252 (w3lib's Latin-1)
    ("<p>Café naïve</p>".encode("latin-1"), "text/html; charset=utf-8", "Café naïve"),
    ("<meta charset='utf-8'><p>Café naïve</p>".encode("latin-1"), None, "Café naïve"),
])
def test_decode_any_charset(body, ctype, expected):
    assert full_text(decode_html(body, ctype)).strip() == expected


def test_wrong_declared_charset_is_overridden_by_the_bom():
    body = "<p>Straße</p>".encode("utf-16")  # with a byte-order mark
    assert full_text(decode_html(body, "text/html; charset=ascii")).strip() == "Straße"


@pytest.mark.parametrize("html, expected", [
    ("", ""), ("   ", ""), ("<<<>>>", "<<<>>>"),
    ("<html><body><p>unclosed <b>tags", "unclosed tags"),
    ("\x00\x01", "\x01"),  # NUL dropped by the parser, other control characters kept
    ("<?xml version='1.0' encoding='utf-8'?><html><body>x</body></html>", "x"),  # a str with an encoding declaration
])
def test_full_text_of_broken_markup(html, expected):
    assert full_text(html).strip() == expected


def test_boilerpy3_extractors_by_name():
    html = "<html><body><div>" + "<p>The cat is a small domesticated carnivorous mammal. It is the only domesticated species in the family.</p>" * 5 + "</div><div><a href='/'>Home</a> | <a href='/x'>About</a></div></body></html>"
    article = get_extractor("article")(html)
    assert "domesticated carnivorous mammal" in article
    assert "About" not in article
    assert "About" in get_extractor("keepeverything")(html)


def test_unknown_extractor_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown text extractor 'nope'.*fulltext"):
        get_extractor("nope")


def test_boilerpy3_failure_is_extraction_error():
    with pytest.raises(ExtractionError):
        get_extractor("article")("")


KNOWN_PAGE = """<html><head><style>p {}</style></head><body><header><a href="/"><img src="l.jpg" alt="logo"></a></header>
<nav><ul><li>One</li><li>Two<!-- c -->tail</li></ul></nav><main><h1>Title\x00</h1><p>Some <b>bold</b> text.</p>
<div class="photo"><img src="g.jpg" alt="cat"><span>A caption</span></div>tail text<script>x()</script>
<div class="photo"><figure><img src="h.jpg"><figcaption>Another �one</figcaption></figure></div></main></body></html>"""


@pytest.mark.parametrize("order", ["document", "reversed", "leaves first"])
def test_element_text_with_known_texts_is_the_same_text_in_any_order(order):
    """``known`` keeps the texts read (the element's and its children's) and an ancestor's text
    takes its descendants' from there: the texts are the same as each read alone, whatever is
    asked first, and a text asked for again is not read again."""
    from lxml import html as lhtml

    from focuscrawl.text.html import element_text

    root = lhtml.fromstring(KNOWN_PAGE)
    elements = list(root.iter())
    if order == "reversed":
        elements.reverse()
    elif order == "leaves first":
        elements.sort(key=lambda el: -len(list(el.iterancestors())))
    known: dict = {}
    for el in elements:
        assert element_text(el, known) == element_text(el), el.tag
    body = root.find("body")
    fresh: dict = {}
    element_text(body, fresh)
    assert set(fresh) == {body, *body}  # the body and its children, not every descendant
    fresh[body.find("main")] = "(known)"
    del fresh[body]
    assert "(known)" in element_text(body, fresh)


def test_element_text_keeps_the_tails_of_comments_and_skipped_elements():
    """Comments, processing instructions and skipped elements (scripts, styles) give their
    tails; blocks their own lines; ``known`` texts replace a subtree, its tail follows."""
    from lxml import html as lhtml

    from focuscrawl.text.html import element_text

    root = lhtml.fromstring("<div><p>a<!-- c -->b<?pi x?>c<script>s()</script>d<br>e<style>p{}</style>f</p>"
                            "<SCRIPT>t()</SCRIPT>g<section><p>h</p>i</section>j</div>")
    assert element_text(root) == "\n\nabcd\n\nef\ng\n\nh\ni\nj\n"
    section = root.find("section")
    assert element_text(root, {section: "(known)"}) == "\n\nabcd\n\nef\ng(known)j\n"
    assert element_text(root.find("script")) == "" and element_text(root.find("p")) == "\nabcd\n\nef\n"
