"""Image-context extractors (SPEC §9, seed 003): the text that belongs to an ``<img>``.

Interface: ``CONTEXT_EXTRACTORS[name](root)`` binds an extractor to a parsed page (an
lxml tree, e.g. ``focuscrawl.text.html.parse_html`` or ``response.selector.root``) and
returns a function ``img element -> text``. Page-wide work (the content sequence, the
article grouping, the clustering) is done once per page, then each image is cheap.
``image_context(name, root, img)`` is the one-shot form.

Extractors (seed 003 chapter 3, 6, 7; docs/context.md has the details and choices):

``full``        the whole page text (the baseline);
``nt10``/``nt20`` N terms around the image in source order (N/2 before, N/2 after);
``nt10-20``     10 terms before and 20 after (Sclaroff et al.);
``ant``         adaptive N-terms (Pan): up to 32 terms each way, stopping at
                ``br hr p table tbody td th tr``;
``par``         Paragraph extractor: climb to the first ancestor with text, take its text;
``mon``         Monash extractor: semi-listed / listed / unlisted by text-count changes;
``art``         articles by content type (headline 1-6, short, abstract, long), nearest
                article in source order, one-to-one, ties to the longer article;
``art2d``       ART with table cells as 2-D grid coordinates (Manhattan distance);
``clus``        1-D clustering on the DOM distance, cut where the gap exceeds its
                Gaussian-weighted local mean (σ² = 1.25);
``figure``      the caption when it is marked up (``<figcaption>``, WordPress
                ``wp-caption-text`` and other caption classes), else ``par``;
``thesis-parent0``/``thesis-parent1``/``thesis-sibling0`` the thesis's parent-0 /
                parent-1 / nearest sibling text (``focuscrawl.context.thesis``;
                parent-1 falls back to parent-0 as the final score does).
"""
from __future__ import annotations

import math
import re
from typing import Callable

from lxml import etree

from focuscrawl.context.thesis import thesis_context
from focuscrawl.context.contents import PageContents, Token, norm_space, page_contents, tag_name
from focuscrawl.text.html import SKIP_TAGS, element_text, full_text_from_tree

ImageContext = Callable[[etree._Element], str]
PageExtractor = Callable[[etree._Element], ImageContext]

# --- FULL ---------------------------------------------------------------------------


def full(root: etree._Element) -> ImageContext:
    text = norm_space(full_text_from_tree(root))
    return lambda img: text


# --- N-terms windows (Algorithm 1) and adaptive window (Algorithm 2) -----------------


def window_terms(tokens: list[Token], i: int, before: int, after: int) -> list[str]:
    """Terms among ``tokens[i-before : i+after]`` (images take places too, Algorithm 1).

    When the window runs over an end of the sequence it is shifted inwards so that it keeps
    its size (seed 003: "the iteration index has to be adapted").
    """
    seq = [t for t in tokens if t.kind != "tag"]
    pos = next(k for k, t in enumerate(seq) if t is tokens[i])
    lo, hi = pos - before, pos + after
    if lo < 0:
        lo, hi = 0, hi - lo
    if hi > len(seq) - 1:
        lo, hi = max(0, lo - (hi - (len(seq) - 1))), len(seq) - 1
    return [t.value for t in seq[lo: hi + 1] if t.kind == "term"]


def n_terms(before: int, after: int) -> PageExtractor:
    def bind(root: etree._Element) -> ImageContext:
        page = page_contents(root)

        def context(img: etree._Element) -> str:
            i = page.token_index(img)
            return "" if i is None else " ".join(window_terms(page.tokens, i, before, after))
        return context
    bind.__name__ = f"nt_{before}_{after}"
    return bind


ANT_SEPARATORS = frozenset({"br", "hr", "p", "table", "tbody", "td", "th", "tr"})
ANT_MAX_TERMS = 32


def adaptive_terms(tokens: list[Token], i: int, limit: int = ANT_MAX_TERMS,
                   separators: frozenset[str] = ANT_SEPARATORS) -> list[str]:
    """Up to ``limit`` terms before and after ``tokens[i]``, each side stopping at a separator tag."""
    def collect(step: int) -> list[str]:
        out, k = [], i + step
        while 0 <= k < len(tokens) and len(out) < limit:
            tok = tokens[k]
            if tok.kind == "term":
                out.append(tok.value)
            elif tok.kind == "tag" and tok.value in separators:
                break
            k += step
        return out
    return collect(-1)[::-1] + collect(1)


def ant(root: etree._Element) -> ImageContext:
    page = page_contents(root)

    def context(img: etree._Element) -> str:
        i = page.token_index(img)
        return "" if i is None else " ".join(adaptive_terms(page.tokens, i))
    return context


# --- DOM wrappers: Paragraph (Algorithm 3) and Monash --------------------------------


def text_nodes(el: etree._Element) -> list[str]:
    """The non-blank text nodes below ``el`` (scripts, styles… left out), in document order."""
    out: list[str] = []
    stack: list[tuple[etree._Element, bool]] = [(el, False)]
    while stack:
        node, done = stack.pop()
        if done:  # after the subtree: the node's tail (not for ``el`` itself)
            if node is not el and node.tail and node.tail.strip():
                out.append(node.tail)
            continue
        stack.append((node, True))
        tag = tag_name(node)
        if tag is None or tag in SKIP_TAGS:
            continue
        if node.text and node.text.strip():
            out.append(node.text)
        stack.extend((child, False) for child in reversed(node))
    return out


def first_text_ancestor(img: etree._Element) -> etree._Element | None:
    """The first ancestor of ``img`` with text nodes below it (Algorithm 3's climb)."""
    node = img.getparent()
    while node is not None and not text_nodes(node):
        node = node.getparent()
    return node


def paragraph_context(img: etree._Element) -> str:
    node = first_text_ancestor(img)
    return "" if node is None else norm_space(element_text(node))


def par(root: etree._Element) -> ImageContext:
    return paragraph_context


def _signature(el: etree._Element) -> tuple:
    """Tag structure of a subtree, two levels deep: what 'similar structure' compares."""
    return (tag_name(el), tuple((tag_name(c), tuple(tag_name(g) for g in c)) for c in el
                                if tag_name(c) is not None))


def _contains_img(el: etree._Element) -> bool:
    return tag_name(el) == "img" or el.find(".//img") is not None


def semi_listed_region(node: etree._Element, img: etree._Element) -> str | None:
    """The image's segment when ``node``'s children repeat one pattern per image.

    Semi-listed (Fauzi et al.): several image records share one parent and are separated
    only by a repeating sequence of sibling elements. Children are cut into segments, each
    starting at a child that holds an image; the pattern repeats when every segment has the
    same sequence of tags. Returns the text of the segment holding ``img``.
    """
    children = [c for c in node if tag_name(c) is not None]
    starts = [k for k, c in enumerate(children) if _contains_img(c)]
    if len(starts) < 2:
        return None
    bounds = starts + [len(children)]
    segments = [children[bounds[j]:bounds[j + 1]] for j in range(len(starts))]
    tags = [tuple(tag_name(c) for c in seg) for seg in segments]
    pattern = tags[0]
    # every record repeats the first one's tags; the last may be followed by other elements
    if any(t != pattern for t in tags[1:-1]) or tags[-1][: len(pattern)] != pattern:
        return None
    for seg in segments:
        if any(c is img or img in c.iter() for c in seg):
            parts = []
            for c in seg:
                parts.append(element_text(c) if tag_name(c) not in SKIP_TAGS else "")
                parts.append(c.tail or "")
            return norm_space(" ".join(parts))
    return None


def monash_context(img: etree._Element) -> str:
    """Monash extractor (Fauzi, Hong & Belkhatir 2009, as read in seed 003 §3.1.2).

    Walk up from the image while the number of text nodes below stays the same. At the
    first change (node ``n1``, the Paragraph node) a semi-listed pattern returns the image's
    segment. Otherwise walk on to the second change (``n2``): when the child of ``n2`` on
    the path (``c``) has a sibling of the same structure that also holds an image, the image
    is *listed* and ``c``'s text is returned; else it is *unlisted* and ``n2``'s text is.
    """
    state, changes, previous = 0, 0, img
    node = img.getparent()
    while node is not None:
        count = len(text_nodes(node))
        if count != state:
            changes += 1
            state = count
            if changes == 1:
                region = semi_listed_region(node, img)
                if region is not None:
                    return region
                n1 = node
            else:
                sig = _signature(previous)
                listed = any(s is not previous and _signature(s) == sig and _contains_img(s)
                             for s in node if tag_name(s) is not None)
                return norm_space(element_text(previous if listed else node))
        previous, node = node, node.getparent()
    return norm_space(element_text(n1)) if changes else ""


def mon(root: etree._Element) -> ImageContext:
    return monash_context


# --- Article detection (ART, ART2D; seed 003 chapter 6) -------------------------------

SHORT_TEXT, ABSTRACT, LONG_TEXT = 7, 8, 9


def content_type(text: str, headline: int) -> int:
    """Table 6.1: headline 1-6, short (< 40 chars) 7, abstract (40-99) 8, long (≥ 100) 9."""
    if headline:
        return headline
    n = len(text)
    return SHORT_TEXT if n < 40 else ABSTRACT if n < 100 else LONG_TEXT


def extends_article(last_type: int, new_type: int) -> bool:
    """Definition 10: an article grows while the type increases, or long text follows long text."""
    return last_type < new_type or last_type == new_type == LONG_TEXT


def group_articles(page: PageContents) -> list[list[int]]:
    """Algorithm 5 over the text contents: lists of item indexes, one per article."""
    articles: list[list[int]] = []
    last_type = 0
    for item in page.items:
        if item.is_image:
            continue
        t = content_type(item.text, item.headline)
        if articles and extends_article(last_type, t):
            articles[-1].append(item.index)
        else:
            articles.append([item.index])
        last_type = t
    return articles


def map_images_to_articles(page: PageContents, articles: list[list[int]], two_d: bool) -> dict[int, int]:
    """Image item index -> article index (seed 003 §6.3, §6.4.1).

    Distance of an image to an article = minimum distance to its contents (|Δindex|, or
    Manhattan on the 2-D grid). Rules: images with a unique nearest article are mapped
    first; an image tied between articles takes the longer one (more characters); an
    article serves one image. An image whose nearest articles are all taken takes the next
    nearest free one; when no article is free it shares its nearest (choice: context is
    better than none for the crawl).
    """
    items = page.items

    def dist(img_item, art) -> int:
        if two_d:
            return min(abs(img_item.x - items[k].x) + abs(img_item.y - items[k].y) for k in art)
        return min(abs(img_item.index - k) for k in art)

    length = [sum(len(items[k].text) for k in art) for art in articles]
    images = [it for it in items if it.is_image]
    if not articles:
        return {}
    ranked: dict[int, list[tuple[int, int, int]]] = {}
    for im in images:
        # (distance, -length, article index): nearest first, ties to the longer article
        ranked[im.index] = sorted((dist(im, a), -length[j], j) for j, a in enumerate(articles))

    def unique_nearest(im_index: int) -> bool:
        r = ranked[im_index]
        return len(r) == 1 or r[0][0] < r[1][0]

    order = sorted(images, key=lambda im: (not unique_nearest(im.index), ranked[im.index][0][0], im.index))
    taken: set[int] = set()
    mapping: dict[int, int] = {}
    for im in order:
        free = [j for _, _, j in ranked[im.index] if j not in taken]
        j = free[0] if free else ranked[im.index][0][2]
        mapping[im.index] = j
        taken.add(j)
    return mapping


def article_extractor(two_d: bool) -> PageExtractor:
    def bind(root: etree._Element) -> ImageContext:
        page = page_contents(root)
        articles = group_articles(page)
        mapping = map_images_to_articles(page, articles, two_d)

        def context(img: etree._Element) -> str:
            item = page.item_of(img)
            if item is None or item.index not in mapping:
                return ""
            return " ".join(page.items[k].text for k in articles[mapping[item.index]])
        return context
    bind.__name__ = "art2d" if two_d else "art"
    return bind


# --- Clustering on the DOM distance (CLUS; seed 003 chapter 7) -------------------------

CLUS_SIGMA2 = 1.25


class _Leaf:
    __slots__ = ("text", "image")

    def __init__(self, text: str = "", image: etree._Element | None = None) -> None:
        self.text, self.image = text, image


def _dom_children(el: etree._Element) -> list:
    """Children of ``el`` in the DOM sense: element nodes and non-blank text nodes."""
    out: list = []
    if el.text and el.text.strip():
        out.append(_Leaf(el.text))
    for child in el:
        tag = tag_name(child)
        if tag is not None and tag not in SKIP_TAGS:
            out.append(_Leaf(image=child) if tag == "img" else child)
        if child.tail and child.tail.strip():
            out.append(_Leaf(child.tail))
    return out


def dom_preorder(root: etree._Element) -> list[tuple[object, int, int]]:
    """``(node, level, degree)`` of every node (elements, text leaves, images) in preorder."""
    out: list[tuple[object, int, int]] = []
    stack: list[tuple[object, int]] = [(root, 0)]
    while stack:
        node, level = stack.pop()
        children = [] if isinstance(node, _Leaf) else _dom_children(node)
        out.append((node, level, len(children)))
        stack.extend((c, level + 1) for c in reversed(children))
    return out


def block_weights(levels: list[int], degrees: list[int], c: float = 1.0) -> dict[int, float]:
    """Definition 16: ``w(l) = c`` when the widest node on level l has no children, else
    ``d_l · w(l+1)`` (capped at 1e300 so that pathological depths stay finite)."""
    max_degree: dict[int, int] = {}
    for level, degree in zip(levels, degrees):
        max_degree[level] = max(max_degree.get(level, 0), degree)
    weights: dict[int, float] = {}
    for level in sorted(max_degree, reverse=True):
        d = max_degree[level]
        weights[level] = c if d == 0 else min(1e300, d * weights.get(level + 1, c))
    return weights


def gaussian_thresholds(gaps: list[float], sigma2: float = CLUS_SIGMA2) -> list[float]:
    """``t(k)``: the Gaussian-weighted mean of the gaps around gap k (seed 003 §7.2.4)."""
    n = len(gaps)
    out = []
    for k in range(n):
        lo, hi = max(0, k - 12), min(n, k + 13)  # weights beyond ±12 are < 1e-25
        ws = [math.exp(-((i - k) ** 2) / (2 * sigma2)) for i in range(lo, hi)]
        out.append(sum(w * gaps[i] for w, i in zip(ws, range(lo, hi))) / sum(ws))
    return out


def cluster_by_threshold(gaps: list[float], thresholds: list[float]) -> list[int]:
    """Algorithm 6: cluster id of each of ``len(gaps) + 1`` contents; cut where gap > t."""
    ids = [0]
    for gap, t in zip(gaps, thresholds):
        ids.append(ids[-1] + 1 if gap > t * (1 + 1e-9) else ids[-1])
    return ids


def content_gaps(root: etree._Element) -> tuple[list[_Leaf], list[float]]:
    """Web contents (text leaves, images) in source order and the DOM distance between
    each adjacent pair (Definition 15: the block weights of the preorder nodes after the
    first content up to and including the second)."""
    body = root.find(".//body")
    nodes = dom_preorder(body if body is not None else root)
    weights = block_weights([lv for _, lv, _ in nodes], [d for _, _, d in nodes])
    contents: list[_Leaf] = []
    gaps: list[float] = []
    running = 0.0
    for node, level, _ in nodes:
        running += weights[level]
        if isinstance(node, _Leaf):
            if contents:
                gaps.append(running)
            contents.append(node)
            running = 0.0
    return contents, gaps


def clus_clusters(root: etree._Element, sigma2: float = CLUS_SIGMA2) -> list[tuple[_Leaf, int]]:
    """The web contents of the page with their cluster ids."""
    contents, gaps = content_gaps(root)
    if not contents:
        return []
    ids = cluster_by_threshold(gaps, gaussian_thresholds(gaps, sigma2))
    return list(zip(contents, ids))


def clus(root: etree._Element) -> ImageContext:
    clustered = clus_clusters(root)
    texts: dict[int, list[str]] = {}
    image_cluster: dict[etree._Element, int] = {}
    for leaf, cid in clustered:
        if leaf.image is not None:
            image_cluster[leaf.image] = cid
        else:
            texts.setdefault(cid, []).append(leaf.text)

    def context(img: etree._Element) -> str:
        cid = image_cluster.get(img)
        return "" if cid is None else norm_space(" ".join(texts.get(cid, [])))
    return context


# --- Figure-aware -----------------------------------------------------------------------

#: Class names of caption elements used by common CMSs (WordPress, MediaWiki, Drupal…).
CAPTION_CLASS_RE = re.compile(
    r"(?:^|[\s_-])(?:wp-caption-text|caption|figcaption|thumbcaption|image-caption|img-caption|"
    r"photo-caption|media-caption|credit-caption|gallery-caption|legend)(?:$|[\s_-])", re.IGNORECASE)
#: Container classes whose caption child belongs to the image inside.
CAPTION_CONTAINER_RE = re.compile(r"(?:^|\s)(?:wp-caption|thumb|thumbinner|figure|image|media|photo)",
                                  re.IGNORECASE)
FIGURE_MAX_CLIMB = 4


def marked_up_caption(img: etree._Element) -> str | None:
    """The caption that markup ties to ``img``: the ``<figcaption>`` of its ``<figure>``, or a
    caption-class element inside a caption container (up to 4 ancestors up); else ``None``."""
    node = img.getparent()
    for _ in range(FIGURE_MAX_CLIMB):
        if node is None:
            return None
        tag = tag_name(node)
        if tag == "figure":
            caps = [c for c in node.iter("figcaption")]
            if caps:
                return norm_space(" ".join(element_text(c) for c in caps))
        cls = node.get("class") or ""
        if tag == "figure" or CAPTION_CONTAINER_RE.search(cls):
            for el in node.iter():
                if el is not img and tag_name(el) and CAPTION_CLASS_RE.search(el.get("class") or ""):
                    if len(node.findall(".//img")) == 1 or img in node.iter():
                        text = norm_space(element_text(el))
                        if text:
                            return text
        if len(node.findall(".//img")) > 1:
            return None  # climbed into a region with other images: no caption of ours
        node = node.getparent()
    return None


def figure(root: etree._Element) -> ImageContext:
    def context(img: etree._Element) -> str:
        caption = marked_up_caption(img)
        return caption if caption is not None else paragraph_context(img)
    return context


# --- The thesis's parents (wrapped, not reimplemented) -----------------------------------


def thesis_parent(level: int) -> PageExtractor:
    """The thesis's parent-``level`` text, else the nearest lower parent (final-score fallback)."""
    def context(img: etree._Element) -> str:
        parents = [c for c in thesis_context(img, max_parents=level + 1, max_siblings=0, max_chars=10 ** 9)
                   if c["kind"] == "parent"]
        return norm_space(parents[min(level, len(parents) - 1)]["text"]) if parents else ""

    def bind(root: etree._Element) -> ImageContext:
        return context
    bind.__name__ = f"thesis_parent{level}"
    return bind


def thesis_sibling0(root: etree._Element) -> ImageContext:
    """The thesis's nearest sibling with text (sibling-0)."""
    def context(img: etree._Element) -> str:
        siblings = [c for c in thesis_context(img, max_parents=1, max_siblings=1, max_chars=10 ** 9)
                    if c["kind"] == "sibling"]
        return norm_space(siblings[0]["text"]) if siblings else ""
    return context


CONTEXT_EXTRACTORS: dict[str, PageExtractor] = {
    "full": full,
    "nt10": n_terms(5, 5),
    "nt20": n_terms(10, 10),
    "nt10-20": n_terms(10, 20),
    "ant": ant,
    "par": par,
    "mon": mon,
    "art": article_extractor(two_d=False),
    "art2d": article_extractor(two_d=True),
    "clus": clus,
    "figure": figure,
    "thesis-parent0": thesis_parent(0),
    "thesis-parent1": thesis_parent(1),
    "thesis-sibling0": thesis_sibling0,
}


def get_context_extractor(name: str) -> PageExtractor:
    try:
        return CONTEXT_EXTRACTORS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown context extractor {name!r}; choose one of {sorted(CONTEXT_EXTRACTORS)}") from None


def image_context(name: str, root: etree._Element, img: etree._Element) -> str:
    """One-shot: the context of ``img`` on the page ``root`` by extractor ``name``."""
    return get_context_extractor(name)(root)(img)
