"""Page-text extractors selectable by name (the crawl's ``FOCUSCRAWL_TEXT_EXTRACTOR``).

Every extractor is a function ``html str -> text str`` with blocks on their own lines:

* ``fulltext`` keeps all body text (thesis: JSoup);
* the boilerpy3 extractors remove boilerplate (thesis: boilerpipe, ArticleExtractor);
* ``trafilatura`` (the library's defaults: the crawl's default), ``trafilatura-recall``
  and ``justext`` are the strongest maintained alternatives; ``auto`` chooses between
  trafilatura and its union with jusText per page. They are optional extras: imported on
  first use, with a clear :class:`ExtractorUnavailable` error naming the package to
  install when missing.

Measured on CLEANEVAL, the article-extraction benchmark and Mozilla Readability's test
pages by ``focuscrawl eval extraction``; the default chosen by leave-one-set-out
(``benchmarks/extraction_loso.py``, docs/extraction.md).
"""
from __future__ import annotations

import importlib
import logging
import re
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Callable, Iterator

from focuscrawl.text.html import clip_html, clip_markup, decode_page, flat_text, full_text, markup_budget, parse_page

Extractor = Callable[[str], str]


class ExtractionError(ValueError):
    """An extractor could not process a page (malformed input)."""


class ExtractionTimeout(ExtractionError):
    """An extractor ran past the per-page time limit."""


class ExtractorUnavailable(ValueError):
    """The extractor's optional package is not installed."""


def _require(module: str, package: str, extractor: str):
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ExtractorUnavailable(
            f"text extractor {extractor!r} needs the optional package {package!r} "
            f"(pip install {package}): {exc}") from None


_BODY_RE = re.compile(r"<body[\s>]", re.IGNORECASE)


def _reason(exc: BaseException) -> str:
    """A one-line reason for a library exception; boilerpy3 raises bare ``Exception()``
    around the real error, so an empty message is replaced by the cause's."""
    while not str(exc).strip() and (exc.__cause__ or exc.__context__) is not None:
        exc = exc.__cause__ or exc.__context__
    message = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _boilerpy3(class_name: str) -> Extractor:
    def extract(html: str) -> str:
        bp = _require("boilerpy3.extractors", "boilerpy3", class_name)
        # boilerpy3 logs a traceback (logger.exception) before it raises; the reason is
        # reported once, by whoever catches the ExtractionError.
        logging.getLogger("boilerpy3").setLevel(logging.CRITICAL)
        if html.strip() and not _BODY_RE.search(html):
            # boilerpy3 only reads text inside <body>; fragments and body-less pages (a
            # quarter of CLEANEVAL) would come out empty.
            html = f"<html><body>{html}</body></html>"
        try:
            return getattr(bp, class_name)(raise_on_failure=True).get_content(html)
        except Exception as exc:  # boilerpy3 raises bare Exceptions on broken markup
            raise ExtractionError(f"{class_name} cannot read the page ({_reason(exc)})") from exc

    extract.__name__ = f"boilerpy3_{class_name}"
    extract.__doc__ = f"boilerpy3 {class_name}"
    return extract


@cache
def _trafilatura(extractor: str):
    """The trafilatura package, with :mod:`~focuscrawl.text.lean_trim` (same text, without a
    per-word list of a long text) and :mod:`~focuscrawl.text.lxml_classes` (same trees,
    element classes looked up in C) in place; looked up once per extractor name, not a page."""
    trafilatura = _require("trafilatura", "trafilatura", extractor)
    from focuscrawl.text import lean_trim, lxml_classes
    lean_trim.install()
    lxml_classes.install()
    return trafilatura


def _trafilatura_or_full_text(html: str, extractor: str, **options) -> str:
    """trafilatura's main text with ``options``; the full text when it finds none (link
    lists, odd layouts), so such a page still gets a perplexity in the crawl."""
    trafilatura = _trafilatura(extractor)
    if not html.strip():
        return ""
    try:
        text = trafilatura.extract(html, **options)
    except Exception as exc:  # lxml/trafilatura internals on pathological markup
        raise ExtractionError(f"{extractor} failed ({_reason(exc)})") from exc
    return text or full_text(html)


def trafilatura_text(html: str) -> str:
    """``trafilatura.extract(html)`` with the library's own defaults (main text, comments
    and tables kept, its fallback extractors on); the full text when it finds none.

    The crawl's default: it holds on pages none of our tuning saw (docs/extraction.md,
    leave-one-set-out over three sets).
    """
    return _trafilatura_or_full_text(html, "trafilatura")


def trafilatura_recall_text(html: str) -> str:
    """trafilatura favouring recall (``favor_recall``, tables kept, comments out); the full
    text when it finds none."""
    return _trafilatura_or_full_text(html, "trafilatura-recall", include_comments=False, include_tables=True,
                                     favor_recall=True, deduplicate=False, with_metadata=False)


#: The page facts ``focuscrawl extract --format json`` writes besides the text.
METADATA_FIELDS = ("title", "author", "date", "url", "language")


def page_metadata(html: str, url: str | None = None) -> dict[str, str | None]:
    """Title, author, date (ISO), URL and language of a page where it states them (None
    where not): trafilatura's metadata extraction (``<meta>``, JSON-LD, byline and date
    heuristics; ``url`` when the page names no canonical URL), the language from
    ``<html lang>`` or a ``content-language`` ``<meta>``."""
    _trafilatura("page metadata")
    from trafilatura.metadata import extract_metadata
    from trafilatura.utils import load_html
    tree = load_html(html) if html.strip() else None
    if tree is None:
        return dict.fromkeys(METADATA_FIELDS) | {"url": url}
    try:
        found = extract_metadata(tree, default_url=url)
    except Exception as exc:  # trafilatura's date/author heuristics on pathological markup
        raise ExtractionError(f"metadata failed ({_reason(exc)})") from exc
    language = tree.get("lang") or next(iter(tree.xpath(
        "//meta[translate(@http-equiv, 'CONTENTLAGU-', 'contentlagu-')='content-language']/@content")), None)
    return {"title": found.title, "author": found.author, "date": found.date,
            "url": url or found.url, "language": language.strip() if language else None}


def justext_text(html: str) -> str:
    """jusText paragraphs classified good (language-independent: no stoplist, like SPEC §1)."""
    justext = _require("justext", "justext", "justext")
    if not html.strip():
        return ""
    try:
        # An empty stoplist makes jusText language-independent: it classifies by length
        # and link density only (its documented "no stoplist" mode).
        paragraphs = justext.justext(html.encode("utf-8", "replace"), frozenset(), encoding="utf-8",
                                     stopwords_low=0, stopwords_high=0)
    except Exception as exc:  # jusText raises lxml ParserError and others on broken input
        raise ExtractionError(f"justext failed ({_reason(exc)})") from exc
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def auto_text(html: str) -> str:
    """trafilatura or trafilatura ∪ jusText, chosen per page (:mod:`focuscrawl.text.combined`).

    One parse serves both extractors; a page where both find nothing gets its full text.
    """
    from focuscrawl.text import combined
    _trafilatura("auto")
    _require("justext", "justext", "auto")
    page = parse_page(html)
    if page.root is None:
        return ""
    if page.too_deep:  # the parse stopped early: read the page flat
        return flat_text(html)
    try:
        text = combined.choose(combined.candidates(page.root))
    except Exception as exc:  # lxml/trafilatura/jusText internals on pathological markup
        raise ExtractionError(f"auto failed ({_reason(exc)})") from exc
    del page  # one tree at a time: the fallback below parses again
    return text or full_text(html)


EXTRACTORS: dict[str, Extractor] = {
    "auto": auto_text,
    "fulltext": full_text,
    "article": _boilerpy3("ArticleExtractor"),
    "default": _boilerpy3("DefaultExtractor"),
    "keepeverything": _boilerpy3("KeepEverythingExtractor"),
    "largestcontent": _boilerpy3("LargestContentExtractor"),
    "canola": _boilerpy3("CanolaExtractor"),
    "articlesentences": _boilerpy3("ArticleSentencesExtractor"),
    "numwordsrules": _boilerpy3("NumWordsRulesExtractor"),
    "trafilatura": trafilatura_text,
    "trafilatura-recall": trafilatura_recall_text,
    "justext": justext_text,
}


#: The optional package (import name, pip name) each extractor needs.
REQUIRES: dict[str, tuple[str, str]] = {
    **{name: ("boilerpy3.extractors", "boilerpy3") for name in EXTRACTORS if name not in ("fulltext", "auto")},
    "auto": ("justext", "justext"),
    "trafilatura": ("trafilatura", "trafilatura"),
    "trafilatura-recall": ("trafilatura", "trafilatura"),
    "justext": ("justext", "justext"),
}


def get_extractor(name: str) -> Extractor:
    """The extractor called ``name``; a clear error listing the valid names otherwise.

    Its optional package is imported now, so a crawl configured with a missing one
    stops at startup with :class:`ExtractorUnavailable` instead of failing every page.
    """
    try:
        extractor = EXTRACTORS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown text extractor {name!r}; choose one of {sorted(EXTRACTORS)}") from None
    if name.lower() in REQUIRES:
        _require(*REQUIRES[name.lower()], name.lower())
    return extractor


# --- limits and notes: what the crawl and ``focuscrawl extract`` call ---------------------
#: Notes on how a page's text was obtained (stat names, focuscrawl/text/<note>).
TOO_DEEP = "too_deep"  # nested deeper than the parser reads: read flat (all text)
TRUNCATED = "truncated"  # longer than the size cap: only its first bytes were read
CHARSET_FALLBACK = "charset_fallback"  # the declared charset did not fit the bytes


@dataclass(frozen=True)
class PageText:
    """A page's text and the notes (stat names) on how it was obtained."""

    text: str
    notes: tuple[str, ...] = ()


class _Deadline(BaseException):
    """Raised by the timer; a BaseException so that libraries' ``except Exception`` blocks
    (trafilatura has many) do not swallow it and carry on."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`ExtractionTimeout` in the block after ``seconds`` (0: no limit).

    A SIGALRM timer, so it works only in the main thread of a POSIX process (elsewhere the
    block runs unlimited) and interrupts Python code only: a long C call (an lxml parse)
    finishes first. The size cap (``FOCUSCRAWL_TEXT_MAX_BYTES``) bounds those.
    """
    if seconds <= 0 or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _expired(signum, frame):
        raise _Deadline

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _Deadline:
        raise ExtractionTimeout(f"extraction ran past the {seconds:g} s limit") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def extract_page(extract: Extractor, html: str, seconds: float = 0, max_tags: int = 0) -> PageText:
    """``extract(html)`` within a time limit, on the page up to its ``max_tags``-th start tag
    (0: all; cut: noted ``truncated``); a page nested deeper than the parser reads (libxml2
    stops at 2048 levels and drops the rest) is read flat, all of it, noted ``too_deep``.

    Raises :class:`ExtractionError` (one-line reason) when the page cannot be read.
    """
    clipped, cut = clip_markup(html, max_tags)
    with time_limit(seconds):
        text = extract(clipped)
        # Only a page whose text is tiny for its size can be one the parse cut short. It is
        # read flat, all of it: the stdlib tokenizer builds no tree.
        if len(html) > 20_000 and len(text) * 100 < len(html) and parse_page(clipped).too_deep:
            return PageText(flat_text(html), (TOO_DEEP,))
    return PageText(text, (TRUNCATED,) if cut else ())


def decode_head(body: bytes, content_type: str | None = None, max_bytes: int = 0) -> tuple[str, tuple[str, ...]]:
    """The first ``max_bytes`` (0: all) of a page decoded with the charset fallback, and the
    notes (``truncated``, ``charset_fallback``). A caller that drops ``body`` now extracts
    without holding the raw bytes too."""
    body, truncated = clip_html(body, max_bytes)
    decoded = decode_page(body, content_type)
    return decoded.text, ((TRUNCATED,) if truncated else ()) + ((CHARSET_FALLBACK,) if decoded.fallback else ())


def page_text_from_html(html: str, extractor: str | Extractor, notes: tuple[str, ...] = (), max_bytes: int = 0,
                        seconds: float = 0) -> PageText:
    """The text of a decoded page (``notes`` from :func:`decode_head`) extracted within
    ``seconds`` from at most ``max_bytes / 256`` start tags of it
    (:func:`~focuscrawl.text.html.markup_budget`); notes say what happened.

    A pure function of its arguments (no settings, no state), so it can run in any
    process. Raises :class:`ExtractionError` with a one-line reason.
    """
    extract = get_extractor(extractor) if isinstance(extractor, str) else extractor
    result = extract_page(extract, html, seconds, markup_budget(max_bytes))
    return PageText(result.text, result.notes + tuple(n for n in notes if n not in result.notes))

