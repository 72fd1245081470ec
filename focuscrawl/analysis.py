"""A page's pure CPU work in one function, run in the crawl process or in a worker pool.

``analyse_page`` parses the HTML (up to the markup budget) and returns everything the
crawl derives from it: the page text (extracted within ``FOCUSCRAWL_TEXT_TIME_LIMIT``,
deep pages read flat) with notes on how it was obtained, its sentences and document scores, the calibrated
page score of a topic bundle (calibrated crawl), the out-links with anchor texts, the
image decisions (rules, contexts, scores) and the page's SimHash. It is a pure function
of the decoded HTML (already clipped to ``FOCUSCRAWL_TEXT_MAX_BYTES`` and re-decoded on
a charset fallback by the spider), the page's URL, base URL and depth, an
``AnalysisConfig``, a ``TopicScorer`` and a ``TopicModel``, so its result does not
depend on where it runs: ``PageAnalyser`` calls it in the crawl process
(``FOCUSCRAWL_ANALYSIS_WORKERS = 0``) or in worker processes that load the models once,
each with a pipe the reactor itself reads and writes (no thread of the crawl process
hands pages over), and hands the result back as a Deferred so the reactor keeps
downloading meanwhile (the second core). Workers return notes and counts; the crawl
process puts them in its stats.

Scoring changes plug in here: whatever a page needs computed from its HTML and the
models belongs in ``analyse_page``; the spider and middlewares only read the result.
"""
from __future__ import annotations

import atexit
import itertools
import logging
import multiprocessing
import os
import pickle
import re
import select
import struct
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from lxml import etree
from scrapy.linkextractors import IGNORED_EXTENSIONS
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.interfaces import IReadWriteDescriptor
from zope.interface import implementer

from focuscrawl import settings as defaults
from focuscrawl.images.extract import ContextSettings, ImageDecision, image_items
from focuscrawl.images.rules import ImageRules
from focuscrawl.lm.scorer import ScorerFiles, TextScore, TopicScorer
from focuscrawl.processes import signals_held, worker_process
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
        from focuscrawl.rights.policy import robots_tokens

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
    rights = page_rights(markup, base_url, config.robots_agents)
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


# -- worker processes -------------------------------------------------------------------
_worker: tuple[AnalysisConfig, TopicScorer, object] | None = None


def _init_worker(config: AnalysisConfig, topic, parent: int) -> None:
    """Load the models and the text extractor once per worker process (``topic``, a
    ``TopicModel``, arrives pickled as its folder and loads here). The worker ignores the
    group's Ctrl-C and SIGTERM (the crawl stops cleanly and still needs it for the pages in
    flight) and dies with the crawl process (``focuscrawl.processes``)."""
    global _worker
    worker_process(parent)
    _worker = (config, config.scorer.load(), topic)
    if config.extractor != "fulltext":  # its imports and lazy models now, not on the first page
        extract_page(get_extractor(config.extractor), _WARM_UP_HTML)
    config.language.identify(_WARM_UP_HTML)  # the language model too


#: a page the extractor reads at a worker's start (no LM query: the counters stay the crawl's)
_WARM_UP_HTML = "<html><body><main><p>" + "A short paragraph of plain text. " * 8 + "</p></main></body></html>"


def _analyse_in_worker(html: str, url: str, base_url: str, depth: int) -> tuple[PageAnalysis, int, int]:
    """The page's analysis and the worker's LM counters so far (queries, cache hits)."""
    config, scorer, topic = _worker
    result = analyse_page(html, url, base_url, depth, config, scorer, topic)
    return result, scorer.queries, scorer.cache_hits


def _worker_main(conn, config: AnalysisConfig, topic, parent: int) -> None:
    """A worker process: load the models, then answer the pages its pipe brings, in order, one
    message each (``(True, result)`` or ``(False, exception)``), until the crawl closes the pipe."""
    _init_worker(config, topic, parent)
    while True:
        try:
            page = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):  # the crawl is done with this worker
            return
        try:
            answer = pickle.dumps((True, _analyse_in_worker(*page)), pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # the page's error goes to its Deferred, as in the crawl process
            try:
                answer = pickle.dumps((False, exc), pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that does not pickle: its text
                answer = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")), pickle.HIGHEST_PROTOCOL)
        try:
            conn.send_bytes(answer)
        except OSError:  # the crawl closed the pipe without waiting for this page (it is exiting)
            return


class AnalysisFailed(Exception):
    """A page's analysis broke its worker twice (the worker died on it: out of memory, a crash)."""


#: the framing of ``multiprocessing.connection.Connection`` (what the worker reads and writes):
#: a 4-byte big-endian length, or -1 then an 8-byte length for messages of 2 GiB and more
_LENGTH = struct.Struct("!i")
_LONG_LENGTH = struct.Struct("!Q")
_READ_SIZE = 64 * 1024  # below malloc's mmap threshold: no page faults per read


def _frame(data: bytes) -> list[bytes]:
    n = len(data)
    return [_LENGTH.pack(n) if n <= 0x7FFFFFFF else _LENGTH.pack(-1) + _LONG_LENGTH.pack(n), data]


@dataclass
class _Page:
    """A page sent to a worker: its arguments, its Deferred and whether it is a second try."""

    args: tuple
    deferred: object
    retried: bool = False


@implementer(IReadWriteDescriptor)
class _Worker:
    """One worker process and the crawl's end of its pipe, which the reactor reads and writes:
    no thread of the crawl process waits on it. Writes that do not fit in the pipe wait in a
    buffer (a big page for a busy worker never blocks the reactor); answers come back in the
    order the pages went, each the answer to the oldest page held."""

    def __init__(self, analyser: "PageAnalyser", process, conn) -> None:
        self.analyser = analyser
        self.process = process
        self.conn = conn
        self.fd = conn.fileno()
        os.set_blocking(self.fd, False)
        self.pages: deque[_Page] = deque()  # sent, not answered yet, oldest first
        self._out: deque[memoryview] = deque()  # bytes not written yet
        self._in = bytearray()
        self._reactor = None
        self._writing = False  # registered with the reactor as a writer
        self.alive = True

    def send(self, page: _Page) -> None:
        """Hand ``page`` to the worker; written now as far as the pipe takes it, the rest as the
        worker reads."""
        if self._reactor is None:
            from twisted.internet import reactor

            self._reactor = reactor
            reactor.addReader(self)
        self.pages.append(page)
        waiting = bool(self._out)
        self._out.extend(map(memoryview, _frame(pickle.dumps(page.args, pickle.HIGHEST_PROTOCOL))))
        if not waiting:
            why = self.doWrite()
            if why is not None:
                self._lost(why)
            elif self._out:
                self._writing = True
                self._reactor.addWriter(self)

    # IReadWriteDescriptor
    def fileno(self) -> int:
        return self.fd if self.alive else -1

    def logPrefix(self) -> str:
        return "analysis-worker"

    def doWrite(self):
        while self._out:
            try:
                written = os.writev(self.fd, list(itertools.islice(self._out, 64)))
            except BlockingIOError:
                return None
            except OSError:  # the worker is gone
                return ConnectionLost()
            while written:
                head = self._out[0]
                if written < len(head):
                    self._out[0] = head[written:]
                    break
                written -= len(head)
                self._out.popleft()
        if self._writing:
            self._writing = False
            self._reactor.removeWriter(self)
        return None

    def doRead(self):
        try:
            data = os.read(self.fd, _READ_SIZE)
        except BlockingIOError:
            return None
        except OSError:
            return ConnectionLost()
        if not data:
            return ConnectionDone()
        self._in += data
        self._answers()
        return None

    def _answers(self) -> None:
        """Hand each whole message read to the oldest page held."""
        buffer, start, answers = self._in, 0, []
        with memoryview(buffer) as view:
            while len(buffer) - start >= _LENGTH.size:
                (size,), head = _LENGTH.unpack_from(buffer, start), _LENGTH.size
                if size == -1:
                    if len(buffer) - start < head + _LONG_LENGTH.size:
                        break
                    (size,), head = _LONG_LENGTH.unpack_from(buffer, start + head), head + _LONG_LENGTH.size
                if len(buffer) - start < head + size:
                    break
                answers.append(pickle.loads(view[start + head:start + head + size]))
                start += head + size
        del buffer[:start]
        # each answer's page taken first: a callback may send a page, or find the worker dead
        for page, answer in [(self.pages.popleft(), answer) for answer in answers]:
            self.analyser._answered(self, page, *answer)

    def connectionLost(self, reason) -> None:
        self._lost(reason)

    def _lost(self, reason) -> None:
        if self.alive:
            self.end()
            self.analyser._died(self)

    def end(self) -> None:
        """Close the pipe (the worker ends at its end of file) and reap the process."""
        if not self.alive:
            return
        self.alive = False
        if self._reactor is not None:
            self._reactor.removeReader(self)
            self._reactor.removeWriter(self)
        self.conn.close()
        self.process.join(_JOIN_SECONDS)
        if self.process.exitcode is None:  # stuck on a page: it has no pipe to answer on
            self.process.kill()
            self.process.join()
        self.process.close()

    def drain(self) -> None:
        """Block until every page held is answered (``close``: the reactor does not run)."""
        while self.pages and self.alive:
            readable, writable, _ = select.select([self.fd], [self.fd] if self._out else [], [])
            why = self.doWrite() if writable else None
            if why is None and readable:
                why = self.doRead()
            if why is not None:
                self._lost(why)


#: seconds a worker has to end after its pipe closed (it finishes the page it is on)
_JOIN_SECONDS = 30


class PageAnalyser:
    """Runs ``analyse_page`` in the crawl process (``workers=0``) or in worker processes.

    ``analyse`` returns the ``PageAnalysis`` directly in-process, or a Deferred that fires
    on the reactor thread with a worker's result. Each worker is a spawned interpreter
    (``multiprocessing``'s spawn start: the crawl's ``sys.path`` and main module, the config
    and topic pickled to it) with a pipe the reactor reads and writes itself; a page goes
    to the worker with the fewest pages in flight. The LM counters of the workers are summed
    into ``worker_counters()``. A worker that dies (killed, out of memory) is replaced (one
    warning) and the pages it held are analysed again; a page that kills its second worker
    too fails with ``AnalysisFailed``.
    """

    def __init__(self, config: AnalysisConfig, scorer: TopicScorer, workers: int = 0, topic=None) -> None:
        self.config = config
        self.scorer = scorer
        self.topic = topic
        self.workers = workers
        self.restarts = 0
        #: one slot per worker; ``None``: died, started again when a page comes for it
        self._workers: list[_Worker | None] = []
        #: each worker's LM counters (queries, cache hits), cumulative; a dead worker's stay
        self._worker_counters: dict[_Worker, tuple[int, int]] = {}
        self._closing = False
        if workers > 0:
            # start the workers now: they load while the crawl sets up and fetches its seeds
            self._workers = [self._start_worker() for _ in range(workers)]
            atexit.register(self._end)

    def _start_worker(self) -> _Worker:
        # spawn: a fresh interpreter per worker, no copy of the reactor's threads and sockets
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(target=_worker_main, args=(theirs, self.config, self.topic, os.getpid()),
                                  name="focuscrawl-analysis")
        with signals_held():
            process.start()
        theirs.close()  # the worker's end is the worker's alone: its death is our end of file
        return _Worker(self, process, ours)

    def analyse(self, html: str, url: str, base_url: str, depth: int):
        if not self._workers:
            return analyse_page(html, url, base_url, depth, self.config, self.scorer, self.topic)
        from twisted.internet.defer import Deferred

        page = _Page((html, url, base_url, depth), Deferred())
        self._send(page)
        return page.deferred

    def _send(self, page: _Page) -> None:
        slots = self._workers
        slot = min(range(len(slots)), key=lambda i: len(slots[i].pages) if slots[i] is not None else 0)
        if slots[slot] is None:
            slots[slot] = self._start_worker()
        slots[slot].send(page)

    def _answered(self, worker: _Worker, page: _Page, ok: bool, answer) -> None:
        if not ok:
            page.deferred.errback(answer)
            return
        result, queries, hits = answer
        self._worker_counters[worker] = (queries, hits)
        page.deferred.callback(result)

    def _died(self, worker: _Worker) -> None:
        """A worker died: its slot starts a new one for the next page, the pages it held go
        again (once)."""
        held, worker.pages = list(worker.pages), deque()
        if worker in self._workers:
            self._workers[self._workers.index(worker)] = None
        if self._closing:
            for page in held:
                page.deferred.errback(AnalysisFailed(f"its analysis worker died on {page.args[1]}"))
            return
        self.restarts += 1
        logger.warning("an analysis worker died (killed or out of memory); a new worker analyses again the "
                       "%d page(s) it held", len(held))
        for page in held:
            if page.retried:
                page.deferred.errback(AnalysisFailed(f"its analysis worker died twice on {page.args[1]}"))
            else:
                page.retried = True
                self._send(page)

    def worker_counters(self) -> dict[str, int]:
        """LM queries and cache hits of the workers (the crawl process's scorer counts its own)
        and the workers that replaced a dead one."""
        queries = sum(q for q, _ in self._worker_counters.values())
        hits = sum(h for _, h in self._worker_counters.values())
        return {"focuscrawl/lm/queries": queries, "focuscrawl/lm/cache_hits": hits,
                "focuscrawl/lm/cache_misses": queries - hits, "focuscrawl/analysis/pool_restarts": self.restarts}

    def close(self) -> None:
        """Wait for the pages in flight, then end the workers."""
        self._closing = True
        for worker in self._workers:
            if worker is not None:
                worker.drain()
        self._end()

    def _end(self) -> None:
        """End the workers at once (``close``, or the interpreter's exit: before
        ``multiprocessing``'s own exit joins them, which would wait for ever on a worker
        whose pipe is still open)."""
        workers, self._workers = self._workers, []
        for worker in workers:
            if worker is not None:
                worker.end()
        atexit.unregister(self._end)
