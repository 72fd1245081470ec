"""The thesis's image context: non-empty ancestors ("parents") and element siblings (SPEC §6 step 4).

Walking up from the ``<img>``, ancestors whose text is empty are layout and do not
count, so ``parent-0`` is the first ancestor with text; at most ``max_parents``
parents are collected (``<html>`` is never one: its text is the body's). The
siblings are the element siblings of the image's branch directly below
``parent-0`` (the image itself, or its text-less wrapper such as the ``<a>`` of a
WordPress caption): only those carry text that is not already the image's own
(empty) text. They are ordered by nearness, the following one first on ties.
Every context text ``i`` of a kind gets ``distance = i * distance_weight``.

A pure function over an lxml element: no scoring here (the caller scores each
text), so other context extractors can wrap it.
"""
from __future__ import annotations

from typing import Any

from lxml import etree

from focuscrawl import settings as defaults
from focuscrawl.text.html import element_text


def context_text(el: etree._Element, known: dict | None = None) -> str:
    """An element's text as stored and scored: one line per block, white space collapsed
    (``known``: ``element_text``'s)."""
    return "\n".join(filter(None, map(" ".join, map(str.split, element_text(el, known).splitlines()))))


class PageTexts:
    """The context texts of one page's elements, each read once: the page's images share
    their ancestors and siblings, and an ancestor's text reuses the texts of the descendants
    read before it (a gallery item's, then its gallery's, then the body's)."""

    __slots__ = ("known", "texts")

    def __init__(self) -> None:
        self.known: dict = {}  # element -> element_text
        self.texts: dict = {}  # element -> context_text

    def __call__(self, el: etree._Element) -> str:
        text = self.texts.get(el)
        if text is None:
            text = self.texts[el] = context_text(el, self.known)
        return text


def _is_element(node: Any) -> bool:
    return isinstance(node.tag, str)


def _context(kind: str, level: int, el: etree._Element, text: str, distance_weight: float,
             max_chars: int) -> dict[str, Any]:
    truncated = len(text) > max_chars
    return {
        "kind": kind,
        "level": level,
        "tag": el.tag.lower() if isinstance(el.tag, str) else "",
        "text": text[:max_chars] if truncated else text,
        "length": len(text),
        "truncated": truncated,
        "distance": float(level * distance_weight),
    }


def thesis_context(img: etree._Element, max_parents: int = defaults.FOCUSCRAWL_IMAGE_MAX_PARENTS,
                   max_siblings: int = defaults.FOCUSCRAWL_IMAGE_MAX_SIBLINGS,
                   distance_weight: float = defaults.FOCUSCRAWL_IMAGE_DISTANCE_WEIGHT,
                   max_chars: int = defaults.FOCUSCRAWL_IMAGE_CONTEXT_MAX_CHARS,
                   texts: PageTexts | None = None) -> list[dict[str, Any]]:
    """Parent and sibling contexts of ``img``: dicts with kind, level, tag, text, length,
    truncated, distance.

    ``length`` is the full text length; ``text`` is cut to ``max_chars`` (a parent
    near ``<body>`` is the whole page). ``texts`` (one per page) saves re-reading the
    same ancestors' text for every image of a page.
    """
    context_text_cached = texts if texts is not None else PageTexts()
    contexts: list[dict[str, Any]] = []
    branch = img  # the child of parent-0 on the way up: img or its text-less wrapper
    parent_0 = None
    n_parents = 0
    node = img.getparent()
    while node is not None and n_parents < max_parents:
        if not _is_element(node) or node.tag.lower() == "html":
            break
        text = context_text_cached(node)
        if text:
            if parent_0 is None:
                parent_0 = node
            contexts.append(_context("parent", n_parents, node, text, distance_weight, max_chars))
            n_parents += 1
        elif parent_0 is None:
            branch = node
        node = node.getparent()
    if parent_0 is None or max_siblings <= 0:
        return contexts
    before = [el for el in branch.itersiblings(preceding=True) if _is_element(el)]
    after = [el for el in branch.itersiblings() if _is_element(el)]
    ordered = []
    for i in range(max(len(before), len(after))):
        if i < len(after):
            ordered.append(after[i])
        if i < len(before):
            ordered.append(before[i])
    level = 0
    for el in ordered:
        if level >= max_siblings:
            break
        text = context_text_cached(el)
        if text:
            contexts.append(_context("sibling", level, el, text, distance_weight, max_chars))
            level += 1
    return contexts
