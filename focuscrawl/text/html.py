"""HTML bytes -> Unicode -> text, robust against bad charsets and broken markup."""
from __future__ import annotations

from typing import Iterable

from lxml import etree
from w3lib.encoding import html_to_unicode

# Elements whose text is never page text.
SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title", "meta", "link", "svg", "iframe", "object"})
# Elements that end a line: their text becomes its own block (sentence boundary).
BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
    "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "option", "p", "pre", "section",
    "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul", "body", "html",
})

_PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True, recover=True, encoding="utf-8")
_DROP_CHARS = {0: None, 0xFFFD: None}


def decode_html(body: bytes, content_type: str | None = None) -> str:
    """Decode a response body: BOM, then HTTP header, then ``<meta>``, then UTF-8.

    Undecodable bytes and NULs are dropped (SPEC §2: non-UTF-8 characters go).
    """
    _, text = html_to_unicode(content_type, body)
    return text.translate(_DROP_CHARS)


def parse_html(html: str | bytes) -> etree._Element | None:
    """Parse HTML leniently; ``None`` when nothing parseable is there."""
    data = html.encode("utf-8", "replace") if isinstance(html, str) else html
    if not data.strip():
        return None
    try:
        return etree.fromstring(data, _PARSER)
    except (etree.ParserError, ValueError):
        return None


def _iter_text(el: etree._Element) -> Iterable[str]:
    """Text under ``el`` in document order, with newlines around block elements."""
    stack: list[tuple[etree._Element, bool]] = [(el, False)]
    while stack:
        node, closing = stack.pop()
        tag = node.tag if isinstance(node.tag, str) else None
        if closing:
            if tag in BLOCK_TAGS:
                yield "\n"
            if node is not el and node.tail:
                yield node.tail
            continue
        if tag is None:  # comment or processing instruction left by a lenient parse
            if node.tail and node is not el:
                yield node.tail
            continue
        stack.append((node, True))
        if tag.lower() in SKIP_TAGS:
            continue
        if tag in BLOCK_TAGS:
            yield "\n"
        if node.text:
            yield node.text
        stack.extend((child, False) for child in reversed(node))


def element_text(el: etree._Element) -> str:
    """All text below ``el`` (scripts, styles etc. left out), blocks on own lines."""
    return "".join(_iter_text(el)).translate(_DROP_CHARS)


def full_text_from_tree(root: etree._Element | None) -> str:
    """Full text of a parsed page: everything under ``<body>`` (or the root)."""
    if root is None:
        return ""
    body = root.find(".//body")
    return element_text(body if body is not None else root)


def full_text(html: str | bytes) -> str:
    """Full-text extractor: all text under ``<body>``."""
    return full_text_from_tree(parse_html(html))
