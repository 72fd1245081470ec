"""HTML bytes -> Unicode -> text, robust against bad charsets and broken markup."""
from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from html.parser import HTMLParser

import lxml.html
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
# The extractors' parser: lxml.html elements (trafilatura takes such a tree as it is) and
# huge_tree, which lifts libxml2's nesting limit from 256 to 2048 elements; deeper pages
# stop the parse (the rest of the page is lost) and are read by flat_text instead.
_PAGE_PARSER = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, recover=True, encoding="utf-8",
                                    huge_tree=True, collect_ids=False, default_doctype=False)
_DROP_CHARS = {0: None, 0xFFFD: None}
_BLANK_LINES = re.compile(r"\n\s*\n")


def drop_nul_and_replacement(text: str) -> str:
    """``text`` without NULs and U+FFFD: ``str.translate`` only where one occurs (it maps every
    character through a dict; ``in`` is a fast scan, and most texts hold neither)."""
    return text.translate(_DROP_CHARS) if "\x00" in text or "\ufffd" in text else text


@dataclass(frozen=True)
class DecodedPage:
    """A decoded page: its text, the codec used and whether the declared one was abandoned."""

    text: str
    encoding: str
    fallback: bool = False


_REPLACEMENT = "\ufffd"
_UTF8_REPLACEMENT = "\ufffd".encode("utf-8")


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return name


def fallback_encoding(body: bytes, encoding: str, text: str) -> str | None:
    """The codec to decode ``body`` with instead of ``encoding``, which gave ``text`` with
    replacement characters; None when ``encoding`` is the best there is.

    A page declared UTF-8 (or with no declaration) whose bytes are not UTF-8 is almost
    always Latin-1/cp1252 (an old server default), and a page declared as something else
    that fails may be plain UTF-8. A UTF-8 page with a few stray bytes keeps UTF-8: the
    fallback to cp1252 is taken only when the bad sequences outnumber the good non-ASCII
    characters, so one broken byte does not turn a page's other accents into mojibake.
    """
    codec = _codec(encoding)
    bad = text.count(_REPLACEMENT)
    if codec in ("utf-8", "utf-8-sig"):
        bad -= body.count(_UTF8_REPLACEMENT)  # real U+FFFD characters in the page
    if bad <= 0:
        return None
    for candidate in ("utf-8", "cp1252"):
        if candidate == codec:
            continue
        if candidate == "cp1252" and codec in ("utf-8", "utf-8-sig"):
            good = sum(1 for ch in text if ord(ch) > 127) - text.count(_REPLACEMENT)
            if bad <= good:
                return None
        try:
            body.decode(candidate)
        except UnicodeDecodeError:
            continue
        return candidate
    return None


def decode_page(body: bytes, content_type: str | None = None) -> DecodedPage:
    """Decode a response body as w3lib (and Scrapy) do: BOM, HTTP header, ``<meta>``,
    else UTF-8; when that charset does not fit the bytes (Latin-1 bytes under
    ``charset=utf-8``), fall back per document (``fallback=True``, counted by callers).

    Undecodable bytes that remain and NULs are dropped (SPEC §2: non-UTF-8 characters go).
    """
    encoding, text = html_to_unicode(content_type, body)
    codec = _codec(encoding)
    fallback = fallback_encoding(body, codec, text) if _REPLACEMENT in text else None
    if fallback is not None:
        text, codec = body.decode(fallback), fallback
        if text.startswith("\ufeff"):
            text = text[1:]
    text = drop_nul_and_replacement(text)  # no copy when nothing is dropped: the text may be the size cap
    return DecodedPage(text, codec, fallback is not None)


def clip_html(body: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """The first ``max_bytes`` of a page (0: all), cut before a tag where one is near, so
    no character or tag is split; and whether anything was cut."""
    if max_bytes <= 0 or len(body) <= max_bytes:
        return body, False
    cut = body.rfind(b"<", max_bytes // 2, max_bytes)
    return body[: cut if cut > 0 else max_bytes], True


#: Bytes of the size cap per start tag of the markup budget: a parsed tree costs ~300-600
#: bytes of memory per element in libxml2 and trafilatura holds three copies of it, so the
#: cap alone bounds dense markup at ~150x its bytes (docs/extraction.md "Size").
BYTES_PER_TAG = 256
_START_TAG = re.compile(r"<[A-Za-z]")


def markup_budget(max_bytes: int) -> int:
    """The start tags parsed of a page read up to ``max_bytes`` (0: no cap, no budget)."""
    return max(max_bytes // BYTES_PER_TAG, 1) if max_bytes > 0 else 0


def clip_markup(html: str, max_tags: int) -> tuple[str, bool]:
    """``html`` up to its ``max_tags``-th start tag (0: all), cut before the next one; and
    whether anything was cut. Bounds the trees the extractors build on dense markup."""
    if max_tags <= 0 or len(html) < 3 * max_tags or html.count("<") <= max_tags:  # (a C scan: the common case)
        return html, False
    for n, match in enumerate(_START_TAG.finditer(html), 1):
        if n > max_tags:
            return html[: match.start()], True
    return html, False


def decode_html(body: bytes, content_type: str | None = None) -> str:
    """The text of :func:`decode_page`."""
    return decode_page(body, content_type).text


def parse_html(html: str | bytes) -> etree._Element | None:
    """Parse HTML leniently; ``None`` when nothing parseable is there."""
    data = html.encode("utf-8", "replace") if isinstance(html, str) else html
    if not data.strip():
        return None
    try:
        return etree.fromstring(data, _PARSER)
    except (etree.ParserError, ValueError):
        return None


@dataclass(frozen=True)
class ParsedPage:
    """An ``lxml.html`` tree of a page; ``too_deep`` when libxml2 stopped at its nesting limit."""

    root: lxml.html.HtmlElement | None
    too_deep: bool = False


def parse_page(html: str) -> ParsedPage:
    """Parse a page for the extractors (one parse that several of them can share)."""
    data = html.encode("utf-8", "replace")
    if not data.strip():
        return ParsedPage(None)
    try:
        root = etree.fromstring(data, _PAGE_PARSER)
    except (etree.ParserError, ValueError):
        root = None
    too_deep = any(e.type_name == "ERR_RESOURCE_LIMIT" and "depth" in e.message for e in _PAGE_PARSER.error_log)
    return ParsedPage(root, too_deep)


class _FlatTextParser(HTMLParser):
    """Text of a page without building a tree (any nesting depth): the stdlib tokenizer."""

    _CONTAINERS = SKIP_TAGS - {"meta", "link"}  # skipped tags that have content

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in self._CONTAINERS:
            self.skipping += 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._CONTAINERS:
            self.skipping = max(self.skipping - 1, 0)
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def flat_text(html: str) -> str:
    """All text of a page, blocks on their own lines, read tag by tag (no tree, no depth limit).

    The recovery for pages nested deeper than libxml2 parses: the structure that
    boilerplate removal needs is what such a page lacks, so all of its text is kept.
    """
    parser = _FlatTextParser()
    parser.feed(html)
    parser.close()
    return _BLANK_LINES.sub("\n", drop_nul_and_replacement("".join(parser.parts))).strip()


def _iter_text(el: etree._Element, known: dict | None = None) -> list[str]:
    """Text under ``el`` in document order, with newlines around block elements; a descendant
    in ``known`` (``element_text``) is its text there.

    Read with lxml's ``iterwalk`` (the walk in C, ~40% less than a Python stack of nodes):
    a skipped or known element's subtree is not entered, its ``end`` event still comes
    (its tail); comments and processing instructions give their tails only."""
    if not isinstance(el.tag, str):  # a comment or processing instruction
        return []
    parts: list[str] = []
    append = parts.append
    walker = etree.iterwalk(el, events=("start", "end", "comment", "pi"))
    for event, node in walker:
        if event == "start":
            if known and node is not el:
                text = known.get(node)
                if text is not None:
                    append(text)
                    walker.skip_subtree()
                    continue
            tag = node.tag
            if tag.lower() in SKIP_TAGS:
                walker.skip_subtree()
                continue
            if tag in BLOCK_TAGS:
                append("\n")
            if node.text:
                append(node.text)
        elif node is el:  # its end: the tail is not its text
            if node.tag in BLOCK_TAGS:
                append("\n")
        else:
            if event == "end" and node.tag in BLOCK_TAGS and not (known and node in known):
                append("\n")
            if node.tail:
                append(node.tail)
    return parts


def element_text(el: etree._Element, known: dict | None = None) -> str:
    """All text below ``el`` (scripts, styles etc. left out), blocks on own lines.

    ``known`` (element -> its text, one dict per tree) remembers the texts read, of ``el`` and
    of its children: a text asked for later takes the texts of its descendants from there
    instead of walking them again (the image contexts of a page read nested elements: the
    body, its main part, a gallery, a caption's figure)."""
    if known is None:
        return drop_nul_and_replacement("".join(_iter_text(el)))
    text = known.get(el)
    if text is not None:
        return text
    tag = el.tag if isinstance(el.tag, str) else None
    if tag is None or tag.lower() in SKIP_TAGS:  # as _iter_text reads them
        text = "".join(_iter_text(el))
    else:
        block = "\n" if tag in BLOCK_TAGS else ""
        parts = [block, el.text or ""]
        for child in el:
            if isinstance(child.tag, str):
                child_text = known.get(child)
                if child_text is None:
                    child_text = known[child] = drop_nul_and_replacement("".join(_iter_text(child, known)))
                parts.append(child_text)
            parts.append(child.tail or "")
        parts.append(block)
        text = "".join(parts)
    text = known[el] = drop_nul_and_replacement(text)
    return text


def full_text_from_tree(root: etree._Element | None) -> str:
    """Full text of a parsed page: everything under ``<body>`` (or the root)."""
    if root is None:
        return ""
    body = root.find(".//body")
    return element_text(body if body is not None else root)


def full_text(html: str | bytes) -> str:
    """Full-text extractor: all text under ``<body>``."""
    return full_text_from_tree(parse_html(html))
