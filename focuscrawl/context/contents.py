"""A page as an ordered sequence of contents (text blocks and images), SPEC §9 / seed 003.

Window (NT), article (ART, ART2D) and caption extractors all read the page in source
order. :func:`page_contents` walks the lxml tree once and returns

* ``items``: text contents and images in source order. A text content is the text of one
  flow block: inline markup (``<b>``, ``<a>``, ``<span>``…) does not break it, block
  elements (``html.BLOCK_TAGS``) and images do (seed 003 §6.2.1, "breaks the flow").
  Each item has a 1-D index and 2-D grid coordinates where table cells of one row sit
  side by side (seed 003 §6.3.2, the 2-DOM model);
* ``tokens``: the page as terms, images and tag boundaries in source order (the ``S`` of
  Algorithms 1 and 2).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from focuscrawl.text.html import BLOCK_TAGS, SKIP_TAGS

HEADLINE_TAGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


def tag_name(el: etree._Element) -> str | None:
    """Lowercased tag of an element; ``None`` for comments and processing instructions."""
    return el.tag.lower() if isinstance(el.tag, str) else None


def norm_space(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Item:
    """A text content (``image is None``) or an image, in source order."""

    index: int
    x: int
    y: int
    text: str = ""
    image: etree._Element | None = None
    headline: int = 0  # 1-6 when the text sits in <h1>…<h6>

    @property
    def is_image(self) -> bool:
        return self.image is not None


@dataclass
class Token:
    """One element of the sequence S: a term, an image, or a tag boundary."""

    kind: str  # "term" | "image" | "tag"
    value: str = ""
    image: etree._Element | None = None


@dataclass
class PageContents:
    items: list[Item] = field(default_factory=list)
    tokens: list[Token] = field(default_factory=list)

    def item_of(self, img: etree._Element) -> Item | None:
        return next((it for it in self.items if it.image is img), None)

    def token_index(self, img: etree._Element) -> int | None:
        return next((i for i, t in enumerate(self.tokens) if t.image is img), None)


class _Walker:
    def __init__(self) -> None:
        self.page = PageContents()
        self.buffer: list[str] = []
        self.buffer_headline = 0
        self.x = 0

    # -- text contents ------------------------------------------------------------
    def text(self, s: str | None, headline: int) -> None:
        if not s:
            return
        for term in s.split():
            self.page.tokens.append(Token("term", term))
        if s.strip():
            if not self.buffer:
                self.buffer_headline = headline
            self.buffer.append(s)

    def flush(self, y: int) -> None:
        text = norm_space("".join(self.buffer))
        self.buffer = []
        if text:
            self._add(Item(len(self.page.items), self.x, y, text=text, headline=self.buffer_headline))

    def _add(self, item: Item) -> None:
        self.page.items.append(item)
        self.x += 1

    # -- tree walk (an explicit stack: parsel parses up to 2,047 levels deep) ----------
    def walk(self, root: etree._Element, y: int, headline: int) -> None:
        stack: list[tuple] = [("el", root, y, headline)]
        rows: list[list[int]] = []  # [start x, end x] of the table rows being laid out
        while stack:
            op, *args = stack.pop()
            if op == "el":
                stack.extend(reversed(self._open(*args)))
            elif op == "text":
                self.text(*args)
            elif op == "tag":
                self.page.tokens.append(Token("tag", args[0]))
            elif op == "flush":
                self.flush(args[0])
            elif op == "row_begin":
                rows.append([self.x, self.x])
            elif op == "cell_begin":
                self.x = rows[-1][0]
            elif op == "cell_end":
                rows[-1][1] = max(rows[-1][1], self.x)
            elif op == "row_end":
                self.x = rows.pop()[1]

    def _open(self, el: etree._Element, y: int, headline: int) -> list[tuple]:
        """The operations that visit ``el``, in order."""
        tag = tag_name(el)
        if tag is None or tag in SKIP_TAGS:
            return []
        if tag in HEADLINE_TAGS:
            headline = HEADLINE_TAGS[tag]
        if tag == "img":
            self.flush(y)
            self.page.tokens.append(Token("image", image=el))
            self._add(Item(len(self.page.items), self.x, y, image=el))
            return []
        block = tag in BLOCK_TAGS
        ops: list[tuple] = [("flush", y), ("tag", tag)] if block else []
        if tag == "table":
            ops += self._table(el, y, headline)
        else:
            ops.append(("text", el.text, headline))
            for child in el:
                ops += [("el", child, y, headline), ("text", child.tail, headline)]
        if block:
            ops += [("flush", y), ("tag", tag)]
        return ops

    def _table(self, table: etree._Element, y: int, headline: int) -> list[tuple]:
        """Rows one below the other; the cells of a row side by side (column -> y)."""
        ops: list[tuple] = [("text", table.text, headline)]
        for child in table:
            ctag = tag_name(child)
            if ctag in ("thead", "tbody", "tfoot"):
                ops.append(("tag", ctag))
                for row in child:
                    ops += self._row(row, y, headline) if tag_name(row) == "tr" else [("el", row, y, headline)]
                ops.append(("tag", ctag))
            elif ctag == "tr":
                ops += self._row(child, y, headline)
            else:
                ops.append(("el", child, y, headline))
        return ops

    def _row(self, row: etree._Element, y: int, headline: int) -> list[tuple]:
        ops: list[tuple] = [("flush", y), ("tag", "tr"), ("row_begin",)]
        column = 0
        for cell in row:
            if tag_name(cell) not in ("td", "th"):
                continue
            ops += [("cell_begin",), ("el", cell, y + column, headline), ("cell_end",)]
            try:
                column += max(1, int(cell.get("colspan", "1")))
            except ValueError:
                column += 1
        ops += [("row_end",), ("tag", "tr")]
        return ops


def page_contents(root: etree._Element | None) -> PageContents:
    """Items and tokens of a parsed page (everything under ``<body>``, or the root)."""
    walker = _Walker()
    if root is None:
        return walker.page
    body = root.find(".//body")
    walker.walk(body if body is not None else root, 0, 0)
    walker.flush(0)
    return walker.page
