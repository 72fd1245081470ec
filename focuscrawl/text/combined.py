"""The ``auto`` page-text extractor: trafilatura and jusText on one parse, chosen per page.

trafilatura finds the article of a modern page (it wins on the article benchmark);
jusText keeps the running text of older, plainer pages (it wins on CLEANEVAL), where
trafilatura drops whole sections. ``auto`` runs both on one lxml parse of the page and
returns either trafilatura's text or the *union*: jusText's paragraphs in page order,
each kept when jusText calls it good or trafilatura kept it. A small random forest
(``focuscrawl/models/text_chooser.json``, trained by ``benchmarks/train_text_chooser.py``
on CLEANEVAL dev and the article benchmark, never on CLEANEVAL final) picks one of the two
from word counts: how much of the page each extractor keeps and how much the union adds.

Cost: trafilatura runs without its fallback extractors (``fast=True``: the union is the
fallback), and the page is parsed once, so ``auto`` costs about what trafilatura with
its fallbacks costs alone (docs/extraction.md has the measurements).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from lxml import etree

from focuscrawl.resources import bundled_path
from focuscrawl.text.html import BLOCK_TAGS, SKIP_TAGS

CHOOSER_FILE = "text_chooser.json"
#: The chooser's inputs, in order (word counts are lowercased ``\\w+`` runs).
FEATURES = ("log_words_trafilatura", "log_words_page", "log_words_justext", "trafilatura_share",
            "justext_share", "union_over_trafilatura", "union_share")
TRAFILATURA, UNION = 0, 1


@dataclass(frozen=True)
class Candidates:
    """The two texts ``auto`` chooses from and the features it chooses by."""

    trafilatura: str
    union: str
    features: tuple[float, ...]


_WORD = re.compile(r"\S+")


def _word_count(text: str) -> int:
    """``len(text.split())`` without the list (400k word objects on a 2 MB page)."""
    return sum(1 for _ in _WORD.finditer(text))


# --- jusText's paragraph classification on the shared tree --------------------------------
# jusText (Pomikálek 2011) in its language-independent mode (no stoplist, as SPEC §1 wants):
# blocks are classified by length and link density, then short and near-good blocks by
# their neighbours. The justext package implements exactly this, but its paragraph maker
# (SAX events, whitespace regexes on every access) costs twice what trafilatura costs on a
# page (profiled on CLEANEVAL dev), which the 1.5× budget does not allow; these ~60 lines
# do the same on the tree the page was already parsed into. Constants are jusText's
# defaults.
LENGTH_LOW, LENGTH_HIGH, MAX_LINK_DENSITY, MAX_HEADING_DISTANCE = 70, 200, 0.2, 200
_BLOCK_TAGS = BLOCK_TAGS | {"center", "legend", "col", "colgroup", "option"}
_DROPPED_TAGS = SKIP_TAGS | {"button", "input", "select", "textarea", "embed", "applet", "param"}
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_WS = re.compile(r"\s+")


@dataclass
class Block:
    """A run of text between block-level tags (jusText's "paragraph")."""

    text: str
    link_chars: int
    heading: bool
    cf_class: str = ""
    class_type: str = ""


def page_blocks(root: etree._Element) -> list[Block]:
    """The text blocks of a page in document order, with the characters inside links."""
    blocks: list[Block] = []
    parts: list[str] = []
    state = {"link": 0, "heading": 0, "link_chars": 0, "is_heading": False}

    def flush() -> None:
        text = _WS.sub(" ", "".join(parts)).strip()
        if text:
            blocks.append(Block(text, state["link_chars"], state["is_heading"]))
        parts.clear()
        state["link_chars"], state["is_heading"] = 0, bool(state["heading"])

    def add(text: str | None) -> None:
        if text:
            parts.append(text)
            if state["link"]:
                state["link_chars"] += len(text.strip())
            state["is_heading"] = state["is_heading"] or bool(state["heading"])

    body = root.find(".//body")
    stack: list[tuple[etree._Element, bool]] = [(body if body is not None else root, False)]
    top = stack[0][0]
    while stack:
        node, closing = stack.pop()
        tag = node.tag.lower() if isinstance(node.tag, str) else ""
        if closing:
            if tag == "a":
                state["link"] -= 1
            elif tag in _HEADINGS:
                state["heading"] -= 1
            if tag in _BLOCK_TAGS:
                flush()
            if node is not top:
                add(node.tail)
            continue
        if not tag or tag in _DROPPED_TAGS:
            if node is not top:
                add(node.tail)
            continue
        if tag in _BLOCK_TAGS:
            flush()
        if tag == "a":
            state["link"] += 1
        elif tag in _HEADINGS:
            state["heading"] += 1
            state["is_heading"] = True
        stack.append((node, True))
        add(node.text)
        stack.extend((child, False) for child in reversed(node))
    flush()
    return blocks


def _neighbours(blocks: list[Block], stops: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """For each block, the class of the nearest block before and after it whose class is
    one of ``stops`` ("bad" past the ends): jusText's neighbour search, in linear time
    (searching from each block is quadratic on a page of many short blocks)."""
    before, after = [], [""] * len(blocks)
    last = "bad"
    for b in blocks:
        before.append(last)
        if b.class_type in stops:
            last = b.class_type
    last = "bad"
    for i in range(len(blocks) - 1, -1, -1):
        after[i] = last
        if blocks[i].class_type in stops:
            last = blocks[i].class_type
    return before, after


def _near_good_heading(blocks: list[Block], i: int) -> bool:
    distance, j = 0, i + 1
    while j < len(blocks) and distance <= MAX_HEADING_DISTANCE:
        if blocks[j].class_type == "good":
            return True
        distance += len(blocks[j].text)
        j += 1
    return False


def classify_blocks(blocks: list[Block]) -> list[Block]:
    """jusText's context-free classification, then its context-sensitive revision."""
    for b in blocks:
        length = len(b.text)
        if b.link_chars / length > MAX_LINK_DENSITY or "\xa9" in b.text or "&copy" in b.text:
            b.cf_class = "bad"
        elif length < LENGTH_LOW:
            b.cf_class = "bad" if b.link_chars else "short"
        else:
            b.cf_class = "good" if length > LENGTH_HIGH else "neargood"
        b.class_type = b.cf_class
    for i, b in enumerate(blocks):
        if b.heading and b.class_type == "short" and _near_good_heading(blocks, i):
            b.class_type = "neargood"
    prev, nxt = _neighbours(blocks, ("good", "bad"))
    prev_near, nxt_near = _neighbours(blocks, ("good", "bad", "neargood"))
    revised = {}
    for i, b in enumerate(blocks):
        if b.class_type != "short":
            continue
        if prev[i] == nxt[i]:
            revised[i] = prev[i]
        elif (prev[i] == "bad" and prev_near[i] == "neargood") or (nxt[i] == "bad" and nxt_near[i] == "neargood"):
            revised[i] = "good"
        else:
            revised[i] = "bad"
    for i, c in revised.items():
        blocks[i].class_type = c
    _, nxt = _neighbours(blocks, ("good", "bad"))
    last = "bad"  # revised in place, left to right, as jusText does
    for i, b in enumerate(blocks):
        if b.class_type == "neargood":
            b.class_type = "bad" if last == nxt[i] == "bad" else "good"
        if b.class_type in ("good", "bad"):
            last = b.class_type
    for i, b in enumerate(blocks):
        if b.heading and b.class_type == "bad" and b.cf_class != "bad" and _near_good_heading(blocks, i):
            b.class_type = "good"
    return blocks


def candidates(root: etree._Element) -> Candidates:
    """Run trafilatura and the jusText classification on ``root`` (left unchanged)."""
    import trafilatura
    traf = trafilatura.extract(root, include_comments=False, include_tables=True, favor_recall=True,
                               deduplicate=False, with_metadata=False, fast=True) or ""
    blocks = classify_blocks(page_blocks(root))
    padded = f"\n{traf}\n"
    union = "\n".join(b.text for b in blocks if b.class_type == "good" or b.text in padded)
    n_traf, n_union = _word_count(traf), _word_count(union)
    n_page = max(sum(_word_count(b.text) for b in blocks), 1)
    n_justext = sum(_word_count(b.text) for b in blocks if b.class_type == "good")
    features = (math.log1p(n_traf), math.log1p(n_page), math.log1p(n_justext), n_traf / n_page,
                n_justext / n_page, n_union / max(n_traf, 1), n_union / n_page)
    return Candidates(traf, union, features)


@dataclass(frozen=True)
class Forest:
    """A random forest of decision trees in plain lists (read from JSON; no scikit-learn at run time)."""

    trees: list[dict]

    def predict(self, x: Sequence[float]) -> int:
        """The class with the highest mean probability over the trees."""
        totals = [0.0, 0.0]
        for tree in self.trees:
            node = 0
            while tree["left"][node] >= 0:
                node = tree["left"][node] if x[tree["feature"][node]] <= tree["threshold"][node] \
                    else tree["right"][node]
            for k, p in enumerate(tree["value"][node]):
                totals[k] += p
        return max(range(len(totals)), key=totals.__getitem__)


@lru_cache(maxsize=1)
def chooser() -> Forest:
    data = json.loads(bundled_path(CHOOSER_FILE).read_text(encoding="utf-8"))
    if tuple(data["features"]) != FEATURES:
        raise ValueError(f"{CHOOSER_FILE}: features {data['features']} do not match {FEATURES}")
    return Forest(data["trees"])


def choose(c: Candidates) -> str:
    """The text ``auto`` returns for these candidates."""
    if not c.trafilatura.strip():
        return c.union
    if not c.union.strip():
        return c.trafilatura
    return c.union if chooser().predict(c.features) == UNION else c.trafilatura
