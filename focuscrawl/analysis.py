"""A page's pure CPU work in one function, run in the crawl process or in a worker pool.

``analyse_page`` parses the HTML (up to the markup budget) and returns everything the
crawl derives from it: the page text (extracted within ``FOCUSCRAWL_TEXT_TIME_LIMIT``,
deep pages read flat) with notes on how it was obtained, its sentences and document scores, the calibrated
page score of a topic bundle (calibrated crawl), the out-links with anchor texts, the
image decisions (rules, contexts, scores) and the page's SimHash. It is a pure function
of the decoded HTML (already clipped to ``FOCUSCRAWL_TEXT_MAX_BYTES`` and re-decoded on
a charset fallback by the spider), the page's URL, base URL and depth, an
``AnalysisConfig``, a ``TopicScorer`` and a ``TopicModel``, so its result does not
depend on where it runs: ``focuscrawl.analysis_pool.PageAnalyser`` calls it in the crawl
process or in worker processes.

Scoring changes plug in here: whatever a page needs computed from its HTML and the
models belongs in ``analyse_page``; the spider and middlewares only read the result.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from lxml import etree
from scrapy.linkextractors import IGNORED_EXTENSIONS

from focuscrawl import settings as defaults
from focuscrawl.images.extract import ContextSettings, ImageDecision, image_items
from focuscrawl.images.rules import ImageRules
from focuscrawl.lm.scorer import ScorerFiles, TextScore, TopicScorer
from focuscrawl.rights.licenses import PageRights, page_rights
from focuscrawl.rights.policy import OWN_TOKEN
from focuscrawl.text.language import UNKNOWN, LanguageFilter
from focuscrawl.text.extractors import (TRUNCATED, ExtractionError, ExtractionTimeout, PageText, extract_page,
                                        get_extractor)
from focuscrawl.text.html import clip_markup, full_text_from_tree, markup_budget
from focuscrawl.text.normalize import document_sentences

logger = logging.getLogger(__name__)

#: ``response.meta`` key under which the spider leaves the page's ``PageAnalysis`` before it
#: yields anything, for the spider middlewares of the same response (link priority and
#: learner judge, near-duplicates, images); the only page data that travels in meta.
META_KEY = "page_analysis"
_SKIPPED_EXTENSIONS = frozenset(IGNORED_EXTENSIONS)
_NOT_LINKS = ("javascript:", "mailto:", "tel:", "data:", "#")
#: a root-relative href that ``urljoin`` returns as the base's ``scheme://netloc`` + itself:
#: one leading slash, no ``.``/``..`` path segment, no params (``;``), no characters
#: ``urlsplit`` removes (tab, CR, LF), no empty query (``?`` then nothing or ``#``)
_ROOT_RELATIVE = re.compile(r"/(?!/)(?:(?!\.\.?(?:[/?#]|$))[^/;?#\t\r\n]*(?:/|(?=[?#])|$))*"
                            r"(?:\?[^#\t\r\n]+)?(?:#.*)?", re.DOTALL)
#: an absolute http(s) href that ``urljoin`` returns unchanged whatever the base: lower-case
#: scheme, a host, printable ASCII without brackets in the host (``urlsplit`` checks those),
#: no params (``;``) in the path, no empty query
_PLAIN_ABSOLUTE = re.compile(r"https?://[!\"$-.0->@-Z\\^-~]+(?:/[!\"$-:<->@-~]*)?(?:\?[!\"$-~]+)?(?:#.*)?",
                             re.DOTALL)

def _parse_ngrams(value: str) -> tuple[int, ...]:
    from focuscrawl.dedup.simhash import parse_ngrams

    return parse_ngrams(value)


def _demo_scorer() -> ScorerFiles:
    from focuscrawl.topic.model import default_keywords_path, default_model_path

    return ScorerFiles(str(default_model_path()), str(default_keywords_path()))


@dataclass(frozen=True)
class AnalysisConfig:
    """What ``analyse_page`` computes and how (picklable: sent to each worker once)."""

    extractor: str = defaults.FOCUSCRAWL_TEXT_EXTRACTOR
    #: seconds per page for the text extractor (0: no limit; SIGALRM, so in a main thread)
    text_time_limit: float = defaults.FOCUSCRAWL_TEXT_TIME_LIMIT
    #: start tags of a page the text extractor parses (0: all; ``markup_budget`` of the size cap)
    text_max_tags: int = markup_budget(defaults.FOCUSCRAWL_TEXT_MAX_BYTES)
    min_sentence_tokens: int = defaults.FOCUSCRAWL_MIN_SENTENCE_TOKENS
    #: image decisions are only computed when the image middleware runs
    images: bool = True
    rules: ImageRules = field(default_factory=ImageRules)
    context: ContextSettings = field(default_factory=ContextSettings)
    #: SimHash n-gram sizes; ``()`` = no fingerprint (near-duplicate middleware off)
    ngrams: tuple[int, ...] = field(default_factory=lambda: _parse_ngrams(defaults.FOCUSCRAWL_NEARDUP_NGRAMS))
    #: the corpus's languages: identifies page and image texts, filters the unwanted
    language: LanguageFilter = field(default_factory=LanguageFilter)
    #: each link's block and the words around its anchor (``PageAnalysis.link_contexts``):
    #: only the link learner's ``context``, ``siblings`` and ``hubs`` groups read them
    link_contexts: bool = False
    #: where a worker loads the crawl's scorer from (the mode strategy's; by default the
    #: bundled demo model and keywords; ``None``: in-process only)
    scorer: ScorerFiles | None = field(default_factory=lambda: _demo_scorer())
    #: our robots tokens (lower case): ``<meta name=TOKEN>`` addresses us like ``<meta name="robots">``
    robots_agents: frozenset[str] = frozenset({OWN_TOKEN})
    #: the AI-training crawlers' tokens (lower case) whose ``<meta name=TOKEN>`` withholds a
    #: page from a training corpus (empty: ``robots_ai`` not obeyed)
    ai_agents: frozenset[str] = frozenset()
    #: the page's topic model scores with the crawl scorer's LM and keywords (``TopicModel.uses_files``):
    #: its log-odds read the page's LM sum and keyword score from the crawl's ``TextScore``
    topic_reuses_score: bool = False

    @classmethod
    def from_settings(cls, settings, scorer: ScorerFiles | None = None, *, images: bool = True,
                      neardup: bool = True) -> "AnalysisConfig":
        """The analysis with the crawl's ``scorer`` files for the workers; ``images``, ``neardup``:
        the image and near-duplicate middlewares run, which read the image decisions and the
        SimHash (the spider says which run: it knows the middlewares)."""
        from focuscrawl.dedup.simhash import parse_ngrams
        from focuscrawl.crawl_scorer import language_filter
        from focuscrawl.rights.policy import OptOutPolicy, robots_tokens

        neardup = neardup and settings.getbool("FOCUSCRAWL_NEARDUP_ENABLED")
        return cls(
            extractor=settings.get("FOCUSCRAWL_TEXT_EXTRACTOR"),
            text_time_limit=settings.getfloat("FOCUSCRAWL_TEXT_TIME_LIMIT"),
            text_max_tags=markup_budget(settings.getint("FOCUSCRAWL_TEXT_MAX_BYTES")),
            min_sentence_tokens=settings.getint("FOCUSCRAWL_MIN_SENTENCE_TOKENS"),
            images=images,
            rules=ImageRules.from_settings(settings),
            context=ContextSettings.from_settings(settings),
            ngrams=parse_ngrams(str(settings.get("FOCUSCRAWL_NEARDUP_NGRAMS"))) if neardup else (),
            language=language_filter(settings),
            scorer=scorer,
            robots_agents=robots_tokens(settings.get("USER_AGENT") or ""),
            ai_agents=OptOutPolicy.from_settings(settings).ai_tokens,
        )


@dataclass
class PageAnalysis:
    """Everything the crawl derives from one page's HTML."""

    score: TextScore
    sentences: list[str]
    links: dict[str, str]  # absolute URL -> anchor text, in page order
    img_count: int
    images: list[ImageDecision]
    simhash: int | None
    #: the calibrated crawl's page score: the topic bundle's log-odds (``None``: no
    #: bundle in the crawl, or a page without sentences)
    topic_logit: float | None = None
    #: how the text was obtained (``focuscrawl.text.extractors`` notes: ``too_deep``,
    #: ``truncated``: text, links and images past the markup budget were not read)
    notes: tuple[str, ...] = ()
    #: ``None``, or why the page was skipped (``extraction_error``, ``extraction_timeout``)
    #: with ``error_detail``
    error: str | None = None
    error_detail: str = ""
    #: ISO 639-1 code of the page text's language (``""``: unknown)
    language: str = UNKNOWN
    #: ``False``: a language the corpus does not want; the text was not scored (``score``
    #: missing, no ``topic_logit``), its links are followed with the inherited score
    language_wanted: bool = True
    #: ``AnalysisConfig.link_contexts``: absolute URL -> ``LinkContext`` (``None``: not asked for)
    link_contexts: dict[str, "LinkContext"] | None = None
    #: what the markup says of opt-outs and rights (``None``: nothing, or a skipped page)
    rights: PageRights | None = None
    #: set in the crawl process by the near-duplicate middleware at the page's first output
    #: (``focuscrawl.middlewares.neardup``), read by the link middleware for each of its links:
    #: whether the page was checked, and the URL of the earlier page it nearly repeats
    near_duplicate_checked: bool = False
    near_duplicate_of: str | None = None


def page_analysis(response) -> PageAnalysis | None:
    """The analysis the spider left in ``response.meta`` (``None``: not a parsed page)."""
    request = getattr(response, "request", None)
    return request.meta.get(META_KEY) if request is not None else None


#: the parser of ``parse_tree``: parsel's for HTML (``lxml.html.HTMLParser(recover=True,
#: huge_tree=True)``) without lxml.html's element classes, one for the process
_TREE_PARSER = etree.HTMLParser(recover=True, encoding="utf-8", huge_tree=True)


def parse_tree(html: str, url: str):
    """The page's lxml tree, as Scrapy's ``response.selector.root`` builds it (the steps of
    parsel's ``create_root_node``: the same tree), of plain lxml elements: lxml.html's look up
    a Python class for every element the analysis reads (~40 us a page)."""
    body = html.strip().replace("\x00", "").encode("utf-8") or b"<html/>"
    root = etree.fromstring(body, parser=_TREE_PARSER, base_url=url)
    return root if root is not None else etree.fromstring(b"<html/>", parser=_TREE_PARSER, base_url=url)


def budgeted_tree(html: str, url: str, max_tags: int):
    """The tree (:func:`parse_tree`) of ``html`` up to its ``max_tags``-th start tag (0: all),
    and whether it was cut (:func:`~focuscrawl.text.html.clip_markup`)."""
    page, cut = clip_markup(html, max_tags)
    return parse_tree(page, url), cut


#: the elements a link's block is (the nearest enclosing one; a ``div`` only with an ``id``)
BLOCK_TAGS = frozenset(("ul", "ol", "dl", "table", "nav", "p", "section", "article", "aside", "header", "footer",
                        "main", "form"))
#: words on each side of an anchor in its block that make its context
CONTEXT_WORDS = 5


@dataclass(frozen=True)
class LinkContext:
    """Where a link sits on its page: its block (numbered in page order), the words around
    its anchor and the block's kind (its tag, ``#id`` and first ``.class``: ``ul.nav``)."""

    block: int
    words: str
    kind: str = ""


def link_block(el):
    """The nearest enclosing list, table, nav, paragraph, section-like element or ``div`` with
    an ``id`` of ``el`` (else the root): the links of one block share a purpose on the page."""
    parent = el.getparent()
    while parent is not None:
        tag = parent.tag
        if tag in BLOCK_TAGS or (tag == "div" and parent.get("id")):
            return parent
        el, parent = parent, parent.getparent()
    return el


def _block_words(block) -> tuple[list[str], dict]:
    """The words of ``block`` in page order and the span of each ``<a>`` among them."""
    words: list[str] = []
    spans: dict = {}
    stack = [(block, False)]
    while stack:
        el, tail = stack.pop()
        if tail:
            words += (el.tail or "").split()
        elif el.tag == "a":
            start = len(words)
            words += "".join(el.itertext()).split()
            spans[el] = (start, len(words))
        else:
            if isinstance(el.tag, str):  # not a comment or processing instruction
                words += (el.text or "").split()
            for child in reversed(el):
                stack += ((child, True), (child, False))
    return words, spans


def link_context(el, blocks: dict, n_words: int = CONTEXT_WORDS) -> LinkContext:
    """The block of the link ``el``, the heading just before the block and up to ``n_words``
    words before and after its anchor there; ``blocks`` caches each block's number and words for the page's other links."""
    block = link_block(el)
    known = blocks.get(block)
    if known is None:
        known = blocks[block] = (len(blocks), _heading(block), *_block_words(block), _kind(block))
    number, heading, words, spans, kind = known
    start, end = spans.get(el, (0, 0))
    return LinkContext(number, " ".join(heading + words[max(0, start - n_words):start] + words[end:end + n_words]),
                       kind)


def _kind(block) -> str:
    tag = block.tag if isinstance(block.tag, str) else ""
    ident, classes = block.get("id"), (block.get("class") or "").split()
    return tag + (f"#{ident}" if ident else "") + (f".{classes[0]}" if classes else "")


_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))


def _heading(block) -> list[str]:
    """The words of a heading just before ``block`` ("Recent posts" above a list of links)."""
    previous = block.getprevious()
    while previous is not None and not isinstance(previous.tag, str):  # comments
        previous = previous.getprevious()
    return "".join(previous.itertext()).split() if previous is not None and previous.tag in _HEADINGS else []


#: elements ``page_links`` hands to ``page_rights`` (with every ``<a rel>``), in the same walk
RIGHTS_TAGS = frozenset({"meta", "link", "script"})


def page_links(root, base_url: str, contexts: dict | None = None,
               markup: list | None = None) -> tuple[dict[str, str], int]:
    """Out-links of a parsed page (absolute http(s) URL -> anchor text) and its ``<img>`` count.

    Relative links resolve against ``base_url``: the page's ``<base href>`` or its URL
    (``scrapy.utils.response.get_base_url``), as ``response.urljoin`` does.

    Fragments are dropped, links to files with a non-page extension (images,
    archives, media: Scrapy's ``IGNORED_EXTENSIONS``) skipped; a URL linked
    several times keeps its first non-empty anchor text. ``contexts``: a dict to fill with
    each link's ``LinkContext`` (that of the anchor kept). ``markup``: a list to fill with the
    page's ``meta``, ``link``, ``script`` and ``<a rel>`` elements, for ``page_rights``
    (one walk of the tree for both).
    """
    links: dict[str, str] = {}
    blocks: dict = {}
    images = 0
    if root is None:
        return links, 0
    try:  # a page's links are mostly root-relative: joined without urljoin's two parses
        base = urlsplit(base_url)
        origin = f"{base.scheme}://{base.netloc}" if base.scheme in ("http", "https") and base.netloc else None
    except ValueError:
        origin = None
    tags = ("a", "img", *RIGHTS_TAGS) if markup is not None else ("a", "img")
    for el in root.iter(*tags):
        tag = el.tag
        if tag != "a":
            if tag == "img":
                images += 1
            else:
                markup.append(el)
            continue
        if markup is not None and el.get("rel"):
            markup.append(el)
        href = el.get("href")
        if not href:
            continue
        href = href.strip()
        if not href or href.lower().startswith(_NOT_LINKS):
            continue
        if origin is not None and _ROOT_RELATIVE.fullmatch(href):
            url = origin + href.split("#", 1)[0]
        elif _PLAIN_ABSOLUTE.fullmatch(href):
            url = href.split("#", 1)[0]
        else:
            try:
                url = urljoin(base_url, href)
            except ValueError:
                continue
            url = url.split("#", 1)[0]
        if not url.startswith(("http://", "https://")):
            continue
        path = url.split("?", 1)[0]
        slash = path.rfind("/")
        dot = path.rfind(".")
        if dot > slash > path.find("//") + 1 and path[dot + 1:].lower() in _SKIPPED_EXTENSIONS:
            continue
        if not links.get(url):
            links[url] = " ".join("".join(el.itertext()).split())  # white space collapsed, as re's \s+
            if contexts is not None:
                contexts[url] = link_context(el, blocks)
    return links, images


def analyse_page(html: str, url: str, base_url: str, depth: int, config: AnalysisConfig,
                 scorer: TopicScorer, topic=None) -> PageAnalysis:
    """Text, sentences and scores, links, images and SimHash of one decoded HTML page;
    with ``topic`` (a ``TopicModel``) also the page's calibrated log-odds.

    ``base_url`` is the page's ``<base href>`` (or ``url``): links and image sources
    resolve against it.

    Links, images and contexts are read from the page up to its ``config.text_max_tags``-th
    start tag, as the text is (the markup budget: the tree of 2 MiB of dense markup costs
    ~20x its bytes); a cut page is noted ``truncated``. The page's tree is parsed after the
    extractor has freed its own and the text is scored, and freed before the SimHash, so
    one tree is alive at a time (``fulltext`` reads its text from the same tree).
    """
    root = None
    if config.extractor == "fulltext":
        root, cut = budgeted_tree(html, url, config.text_max_tags)
        extracted = PageText(full_text_from_tree(root), (TRUNCATED,) if cut else ())
    else:
        try:
            extracted = extract_page(get_extractor(config.extractor), html, config.text_time_limit,
                                     config.text_max_tags)
        except ExtractionError as exc:
            error = "extraction_timeout" if isinstance(exc, ExtractionTimeout) else "extraction_error"
            return PageAnalysis(TextScore.missing(), [], {}, 0, [], None, error=error, error_detail=str(exc))
    language = config.language.identify(extracted.text)
    wanted = not config.language.unwanted(language)
    if wanted:
        score, sentences = scorer.score_document(extracted.text, config.min_sentence_tokens)
    else:  # its sentences are logged, its text is not scored as on (or off) topic
        score, sentences = TextScore.missing(), document_sentences(extracted.text, config.min_sentence_tokens)
    notes = extracted.notes
    del extracted  # its sentences are what is kept of the text
    topic_logit = topic.page_logit(sentences, known=score if config.topic_reuses_score else None) \
        if topic is not None and sentences and wanted else None
    if root is None:  # after the extractor's trees and the text's tokens are gone
        root, cut = budgeted_tree(html, url, config.text_max_tags)
    if cut and TRUNCATED not in notes:  # a deep page's text is read whole (flat), its links are not
        notes += (TRUNCATED,)
    contexts = {} if config.link_contexts else None
    markup: list = []
    links, img_count = page_links(root, base_url, contexts, markup)
    rights = page_rights(markup, base_url, config.robots_agents, config.ai_agents)
    if not rights.says_anything():  # most pages: nothing to send back from the worker
        rights = None
    images = []
    if config.images:
        page = {"depth": depth, "perplexity": score.perplexity, "language": language}
        images = image_items(root, url, scorer, config.rules, config.context, page_item=page, base_url=base_url,
                             language=config.language)
    del root
    fingerprint = None
    if config.ngrams:
        from focuscrawl.dedup.simhash import sentences_simhash

        fingerprint = sentences_simhash(sentences, config.ngrams)
    return PageAnalysis(score, sentences, links, img_count, images, fingerprint, topic_logit, notes,
                        language=language, language_wanted=wanted, link_contexts=contexts, rights=rights)
