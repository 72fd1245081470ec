"""From a parsed page to scored ``ImageItem`` candidates (SPEC §6 steps 1-4).

``image_items`` is the one pure function the spider middleware and
``focuscrawl.shell.explain`` share: it returns a decision for every ``<img>``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from lxml import etree

from focuscrawl import settings as defaults
from focuscrawl.context.thesis import PageTexts, thesis_context
from focuscrawl.context.extractors import get_context_extractor
from focuscrawl.images.final import FINAL_CONTEXT_THESIS
from focuscrawl.images.rules import PAGE_LIMIT, ImageRules, drop_reason, read_attributes, src_guess_string
from focuscrawl.items import ImageItem
from focuscrawl.lm.scorer import TextScore, TopicScorer
from focuscrawl.text.language import OTHER_LANGUAGE, UNKNOWN, LanguageFilter

ContextFunc = Callable[[etree._Element], list[dict[str, Any]]]


def score_dict(score: TextScore) -> dict[str, Any]:
    """A ``TextScore`` as the dict stored in items and records."""
    return {"perplexity": score.perplexity, "keyword_score": score.keyword_score,
            "weighted": score.weighted, "tokens": score.tokens}


@dataclass(frozen=True)
class ContextSettings:
    max_parents: int = defaults.FOCUSCRAWL_IMAGE_MAX_PARENTS
    max_siblings: int = defaults.FOCUSCRAWL_IMAGE_MAX_SIBLINGS
    distance_weight: float = defaults.FOCUSCRAWL_IMAGE_DISTANCE_WEIGHT
    max_chars: int = defaults.FOCUSCRAWL_IMAGE_CONTEXT_MAX_CHARS
    #: context extractors (focuscrawl.context.extractors) recorded in ``extra_contexts``
    extra: tuple[str, ...] = ()
    #: the context of the final score: "thesis" (parent-1) or one of ``extra``
    final: str = defaults.FOCUSCRAWL_IMAGE_FINAL_CONTEXT

    def __post_init__(self) -> None:
        for name in self.extra:
            get_context_extractor(name)  # unknown names: a clear error at startup
        if self.final != FINAL_CONTEXT_THESIS and self.final not in self.extra:
            raise ValueError(f"FOCUSCRAWL_IMAGE_FINAL_CONTEXT {self.final!r} must be 'thesis' or one of "
                             f"FOCUSCRAWL_IMAGE_EXTRA_CONTEXTS {list(self.extra)}")

    def bind_extra(self, root: etree._Element) -> dict[str, Callable[[etree._Element], str]]:
        """The extra extractors bound to one page (page-wide work done once)."""
        return {name: get_context_extractor(name)(root) for name in self.extra}

    @classmethod
    def from_settings(cls, settings) -> "ContextSettings":
        return cls(
            max_parents=settings.getint("FOCUSCRAWL_IMAGE_MAX_PARENTS"),
            max_siblings=settings.getint("FOCUSCRAWL_IMAGE_MAX_SIBLINGS"),
            distance_weight=settings.getfloat("FOCUSCRAWL_IMAGE_DISTANCE_WEIGHT"),
            max_chars=settings.getint("FOCUSCRAWL_IMAGE_CONTEXT_MAX_CHARS"),
            extra=tuple(settings.getlist("FOCUSCRAWL_IMAGE_EXTRA_CONTEXTS")),
            final=settings.get("FOCUSCRAWL_IMAGE_FINAL_CONTEXT"),
        )

    def extract(self, img: etree._Element, texts: PageTexts | None = None) -> list[dict[str, Any]]:
        return thesis_context(img, self.max_parents, self.max_siblings, self.distance_weight, self.max_chars,
                              texts)


@dataclass
class ImageDecision:
    """One ``<img>`` of a page: kept (``reason is None``) or dropped with a named reason."""

    src: str | None  # absolute URL, or the raw attribute when it did not resolve
    reason: str | None
    item: ImageItem | None  # kept: the scored item; dropped: only when score_dropped
    lazy: bool = False  # the URL came from a lazy-loading attribute (data-src, ...)


def _iter_imgs(root: etree._Element):
    return root.iter("img", "IMG")


def image_items(root: etree._Element | None, page_url: str, scorer: TopicScorer,
                rules: ImageRules = ImageRules(), context: ContextSettings = ContextSettings(),
                page_item: Any = None, base_url: str | None = None,
                score_dropped: bool = False, language: LanguageFilter | None = None) -> list[ImageDecision]:
    """A decision for every ``<img>`` under ``root`` in document order.

    Kept images come with a filled ``ImageItem`` (texts, scores, contexts, the language
    of its texts with ``language``); the page fields (depth, perplexity, near-duplicate
    mark) come from ``page_item``. An image the rules keep whose texts are in a language
    ``language`` does not want is dropped (``other_language``). Relative ``src`` resolve
    against ``base_url`` (the page's ``<base href>``), by default ``page_url``.
    """
    decisions: list[ImageDecision] = []
    if root is None:
        return decisions
    base = base_url or page_url
    extra = context.bind_extra(root) if context.extra else {}
    texts = PageTexts()  # the context texts of the page's elements, shared by its images
    page_scorer = _PageScorer(scorer)  # a page's texts (its body, shared parents) are scored once
    page_language = (page_item or {}).get("language", UNKNOWN)
    kept = 0
    for img in _iter_imgs(root):
        attrs = read_attributes(img.attrib, base, rules.lazy_src)
        reason = drop_reason(img.attrib, attrs, rules)
        if reason is None and kept >= rules.max_per_page:
            reason = PAGE_LIMIT
        item = None
        if reason is None or score_dropped:
            # the language before the LM: an image dropped for it is not scored
            contexts = None
            if language is not None:
                found = known_language(language, attrs.alt, attrs.title)
                if found is None:  # its ALT and title say nothing: the element around it, else the page
                    contexts = context.extract(img, texts)
                    found = known_language(language, parent_context(contexts)) or page_language
                if reason is None and language.unwanted(found):
                    reason = OTHER_LANGUAGE
            if reason is None or score_dropped:
                item = _scored_item(img, attrs, page_url, page_item, page_scorer, context, extra, texts,
                                    contexts)
                if language is not None:
                    item["language"] = found
        if reason is None:
            kept += 1
        decisions.append(ImageDecision(attrs.src or (attrs.raw_src or None), reason, item, attrs.lazy))
    return decisions


#: characters of an image's text its language is identified from: an ALT-length text (the
#: ALT texts of the language benchmark: 18-47 characters median); a context's start
IMAGE_TEXT_CHARS = 200


def known_language(language: LanguageFilter, *texts: str | None) -> str | None:
    """The language of the first of an image's ``texts`` whose language is known, each read
    up to ``IMAGE_TEXT_CHARS``; ``None`` when none is.

    An image's language is that of its ALT text, else its title, else its parent-0 context
    (the element around it: a figure with its caption), else the page's; the contexts are
    extracted only when ALT and title say nothing. The wider contexts are the page's text:
    identifying them again cost ~0.5 ms a page."""
    for text in texts:
        if text and (found := language.identify(text[:IMAGE_TEXT_CHARS])) != UNKNOWN:
            return found
    return None


def parent_context(contexts: list[dict[str, Any]]) -> str | None:
    """The text of the element around an image (its parent-0 context)."""
    return next((c.get("text") for c in contexts if c.get("kind") == "parent" and c.get("level") == 0), None)


class _PageScorer:
    """``score_dict(scorer.score(text))`` memoised per text for one page."""

    def __init__(self, scorer: TopicScorer) -> None:
        self.scorer = scorer
        self.memo: dict[str, dict[str, Any]] = {}

    def __call__(self, text: str) -> dict[str, Any]:
        found = self.memo.get(text)
        if found is None:
            found = self.memo[text] = score_dict(self.scorer.score(text))
        return dict(found)


def _scored_item(img, attrs, page_url, page_item, score, context: ContextSettings,
                 extra: dict[str, Callable[[etree._Element], str]], texts: PageTexts,
                 contexts: list[dict[str, Any]] | None = None) -> ImageItem:
    src_guess = src_guess_string(attrs.src) if attrs.src else ""
    if contexts is None:
        contexts = context.extract(img, texts)
    for c in contexts:
        c["scores"] = score(c["text"])
    extra_contexts = {}
    for name, bound in extra.items():
        text = bound(img)[: context.max_chars]
        extra_contexts[name] = {"text": text, "scores": score(text)}
    page = page_item or {}
    return ImageItem(
        image_url=attrs.src,
        page_url=page_url,
        page_depth=page.get("depth"),
        page_perplexity=page.get("perplexity"),
        alt=attrs.alt,
        title=attrs.title,
        src_guess=src_guess,
        alt_scores=score(attrs.alt),
        title_scores=score(attrs.title),
        src_scores=score(src_guess),
        html_width=attrs.width,
        html_height=attrs.height,
        css_class=attrs.css_class,
        style=attrs.style,
        extension=attrs.extension,
        contexts=contexts,
        extra_contexts=extra_contexts,
        near_duplicate_page=False,
    )
