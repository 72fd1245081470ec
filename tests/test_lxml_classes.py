"""trafilatura's parsers with lxml.html's element classes looked up in C
(focuscrawl.text.lxml_classes): every node gets the class lxml.html's own lookup gives it,
and trafilatura's text is the same."""
import random

import lxml.html
import pytest
from lxml import etree

from focuscrawl.text import lxml_classes
from focuscrawl.text.extractors import get_extractor

trafilatura = pytest.importorskip("trafilatura")
import trafilatura.utils  # noqa: E402

WORDS = ("cat", "whiskers", "the", "garden", "sleeps", "on", "a", "warm", "windowsill", "every", "afternoon",
         "owner", "feeds", "kitten", "tabby", "purrs", "loudly", "neighbour", "dog", "barks")


def page(rng: random.Random) -> str:
    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    paragraphs = "".join(f"<P class='c{i}'>{sentence(rng.randint(8, 30))} <a href='/x{i}'>{sentence(3)}</a>"
                         f" &amp; &copy; {sentence(12)}</P><!-- note {i} -->" for i in range(rng.randint(3, 12)))
    return (f"<!DOCTYPE html><HTML><head><title>{sentence(5)}</title><?php echo 1; ?>"
            "<script>var x = '<p>no</p>';</script><style>p{}</style></head><BODY>"
            f"<nav><ul>{''.join(f'<li><a href=/n{i}>{sentence(2)}</a></li>' for i in range(8))}</ul></nav>"
            f"<article><h1>{sentence(6)}</h1>{paragraphs}"
            f"<figure><img src='c.jpg' alt='{sentence(4)}'><figcaption>{sentence(7)}</figcaption></figure>"
            f"<table><tr><th>{sentence(2)}</th><td>{sentence(9)}</td></tr></table></article>"
            "<FORM action='/s'><LABEL for=q>Search</LABEL><INPUT id=q name=q><SELECT name=o><option>a</option>"
            "</SELECT><TEXTAREA name=t>hello</TEXTAREA><button>go</button></FORM>"
            f"<div id=comments><p>{sentence(15)}</p></div><footer>{sentence(6)}</footer></BODY></HTML>")


def classes(html: str, lookup) -> list[type]:
    parser = lxml.html.HTMLParser(remove_comments=False, remove_pis=False)
    parser.set_element_class_lookup(lookup)
    root = lxml.html.fromstring(html, parser=parser)
    return [type(node) for node in root.getroottree().iter()]


def test_every_node_gets_the_class_lxml_html_gives_it():
    fast = lxml_classes.html_class_lookup()
    assert fast is not None
    for seed in range(5):
        html = page(random.Random(seed))
        expected = classes(html, lxml.html.HtmlElementClassLookup())
        assert classes(html, fast) == expected
        kinds = set(expected)
        assert {lxml.html.FormElement, lxml.html.InputElement, lxml.html.SelectElement, lxml.html.TextareaElement,
                lxml.html.LabelElement, lxml.html.HtmlComment} <= kinds


def test_trafilatura_gives_the_same_text_with_either_lookup():
    extract = get_extractor("trafilatura")  # installs the C lookup
    parsers = (trafilatura.utils.HTML_PARSER, lxml.html.html_parser)
    pages = [page(random.Random(seed)) for seed in range(20)]
    try:
        for parser in parsers:
            parser.set_element_class_lookup(lxml.html.HtmlElementClassLookup())
        with_python_lookup = [extract(html) for html in pages]
    finally:
        for parser in parsers:
            parser.set_element_class_lookup(lxml_classes.html_class_lookup())
    assert [extract(html) for html in pages] == with_python_lookup
    assert all(text.strip() for text in with_python_lookup)


def test_installed_on_trafilaturas_parser():
    get_extractor("trafilatura")("<html><body><p>A cat.</p></body></html>")
    root = lxml.html.fromstring("<div><p>x</p><form></form></div>", parser=trafilatura.utils.HTML_PARSER)
    assert isinstance(root, lxml.html.HtmlElement) and isinstance(root[1], lxml.html.FormElement)
    tree = etree.fromstring(b"<html><body><p>x</p></body></html>", parser=trafilatura.utils.HTML_PARSER)
    assert type(tree) is lxml.html.HtmlElement
