"""The ``focused`` spider: fetch pages, score their text, emit a PageItem and out-links.

    scrapy crawl focused -a seeds=FILE_OR_COMMA_LIST -a mode=keywords|document|unfocused|learning
        [-a topic=BUNDLE_DIR] [-a model=ARPA] [-a keywords=FILE] [-a output=DIR] [-a domains=a.org,b.com] [-a budget=N]

The spider only extracts: the page's analysis (``focuscrawl.analysis.PageAnalysis``: scores,
sentences, links, image decisions, SimHash) is left in ``response.meta["page_analysis"]``,
the one meta key the spider middlewares read it from (``focuscrawl.analysis.page_analysis``);
its document perplexity also goes into the PageItem; every out-link becomes a Request with its
anchor text in its ``LinkFacts`` (``meta["focuscrawl_link"]``, ``focuscrawl.focus.ranker``), except one whose URL the scheduler has seen already
(``focuscrawl.frontier.KnownLinks``): it goes in ``PageItem.known_links`` instead. Scoring and ordering the links is the job of
``LinkPriorityMiddleware``, scope and traps of ``ScopeMiddleware``, images of the
image middleware and pipelines.

The spider builds the crawl's mode strategy once, in ``from_crawler``, as ``self.focus``
(``focuscrawl.focus.modes``: the crawl's models, link rule, queue and judge); the link
middleware and the progress extension find it as ``crawler.spider.focus``.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, AsyncIterator

import scrapy
from scrapy import signals
from scrapy.exceptions import UsageError
from scrapy.http import HtmlResponse, Response
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.response import get_base_url
from twisted.internet.defer import Deferred

from focuscrawl.analysis import META_KEY
from focuscrawl.analysis_pool import AnalysisFailed, PageAnalyser
from focuscrawl.focus.modes import focus_class
from focuscrawl.focus.ranker import LINK_META, LinkFacts
from focuscrawl.frontier import KnownLinks
from focuscrawl.items import PageItem
from focuscrawl.middlewares.budget import PageBudgetSpent
from focuscrawl.middlewares.images import ImageExtractionMiddleware
from focuscrawl.middlewares.neardup import NearDuplicatePageMiddleware
from focuscrawl.middlewares.priority import LinkPriorityMiddleware
from focuscrawl.scrapy_compat import quiet_robots_network_errors, quiet_startup_listings, spider_middleware_enabled
from focuscrawl.processes import ignore_stop_signals_once_stopped
from focuscrawl.rights.policy import SITE_OPTOUT_META, OptOutPolicy, count_names
from focuscrawl.text.extractors import CHARSET_FALLBACK, TRUNCATED, get_extractor
from focuscrawl.text.html import clip_html, fallback_encoding
from focuscrawl.urls import excerpt, url_problem

logger = logging.getLogger(__name__)

#: spider argument -> setting it overrides (applied before any component is built)
SPIDER_ARG_SETTINGS = {
    "mode": "FOCUSCRAWL_MODE",
    "model": "FOCUSCRAWL_MODEL",
    "keywords": "FOCUSCRAWL_KEYWORDS",
    "topic": "FOCUSCRAWL_TOPIC",
    "output": "FOCUSCRAWL_OUTPUT_DIR",
    "seeds": "FOCUSCRAWL_SEEDS",
    "domains": "FOCUSCRAWL_ALLOWED_DOMAINS",
    "budget": "FOCUSCRAWL_PAGE_BUDGET",
    "extractor": "FOCUSCRAWL_TEXT_EXTRACTOR",
}


def read_seeds(value: str) -> list[str]:
    """Seed URLs from a file (one per line, ``#`` comments) or a comma-separated list.

    A seed that cannot be requested (not http(s), no host, bad port, broken IPv6
    literal) is left out with one ERROR line naming it; ``UsageError`` when no seed
    is left."""
    value = (value or "").strip()
    if not value:
        raise UsageError("no seeds: pass -a seeds=FILE or -a seeds=URL,URL")
    if "://" in value.split(",")[0]:
        urls = [u.strip() for u in value.split(",") if u.strip()]
    else:
        path = Path(value)
        if not path.is_file():
            raise UsageError(f"seeds file not found: {path}")
        urls = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    if not urls:
        raise UsageError(f"no seed URLs in {value}")
    usable = []
    for url in urls:
        problem = url_problem(url)
        if problem:
            logger.error("focused: bad seed %s: %s", excerpt(url, 200), problem)
        else:
            usable.append(url)
    if not usable:
        raise UsageError(f"no usable seed among {len(urls)}: seeds must be http(s) URLs with a host")
    return usable


def readable_response(response: HtmlResponse, max_bytes: int) -> tuple[HtmlResponse, tuple[str, ...]]:
    """The response as the text and link layers read it: its first ``max_bytes`` (0: all),
    decoded with a fallback charset when the declared one does not fit the bytes (Latin-1
    under ``charset=utf-8``); notes (stat names) say which of the two happened."""
    notes: tuple[str, ...] = ()
    body, cut = clip_html(response.body, max_bytes)
    if cut:
        response, notes = response.replace(body=body), (TRUNCATED,)
    text = response.text
    if "\ufffd" in text:
        encoding = fallback_encoding(response.body, response.encoding, text)
        if encoding:
            response, notes = response.replace(encoding=encoding), notes + (CHARSET_FALLBACK,)
    return response, notes


class FocusedSpider(scrapy.Spider):
    """Best-first (or breadth-first) crawl from seeds; see the module docstring."""

    name = "focused"

    @classmethod
    def from_crawler(cls, crawler, *args: Any, **kwargs: Any):
        apply_spider_args(crawler.settings, kwargs)
        spider = super().from_crawler(crawler, *args, **kwargs)
        try:
            spider._configure(crawler)
        except UsageError as exc:
            raise reported(exc, cls.name)
        return spider

    def _configure(self, crawler) -> None:
        settings = crawler.settings
        try:
            mode = focus_class(settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        self.mode = mode.name
        self.seed_urls = read_seeds(settings.get("FOCUSCRAWL_SEEDS") or "")
        try:
            self.extractor_name = settings.get("FOCUSCRAWL_TEXT_EXTRACTOR")
            get_extractor(self.extractor_name)
            # load the models now: a bad path stops the crawl before any request; the page
            # analysis computes what the spider middlewares that run read
            self.focus = mode.from_settings(
                settings, images=spider_middleware_enabled(settings, ImageExtractionMiddleware),
                neardup=spider_middleware_enabled(settings, NearDuplicatePageMiddleware))
            self.analyser = PageAnalyser(self.focus.analysis, self.focus.scorer,
                                         settings.getint("FOCUSCRAWL_ANALYSIS_WORKERS"), self.focus.page_topic)
        except (ValueError, FileNotFoundError) as exc:
            raise UsageError(str(exc)) from exc
        self.focus.use_priority_queue(settings)
        try:
            self.optouts = OptOutPolicy.from_settings(settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        self.optouts.warn_relaxed()
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ignore_stop_signals_once_stopped, signal=signals.engine_stopped, weak=False)
        self.text_max_bytes = settings.getint("FOCUSCRAWL_TEXT_MAX_BYTES")
        #: out-links the scheduler has seen (focuscrawl.frontier.KnownLinks; the scheduler fills
        #: it): None when off, or without the link middleware that decides the skipped links
        known = settings.getint("FOCUSCRAWL_KNOWN_LINKS")
        self.known_links = (KnownLinks(known) if known > 0
                            and spider_middleware_enabled(settings, LinkPriorityMiddleware) else None)
        self.depth_limit = settings.getint("DEPTH_LIMIT")
        self.allowed_domains = settings.getlist("FOCUSCRAWL_ALLOWED_DOMAINS")

    def _spider_opened(self, spider=None) -> None:
        if self.focus.bundle is not None:  # `focuscrawl rank` ranks the run with the bundle it was crawled with
            self.stats.set_value("focuscrawl/topic/bundle", str(self.focus.bundle))

    def _spider_closed(self, spider=None) -> None:
        """The crawl process's LM counters, then the workers' added."""
        for key, value in self.focus.stats().items():
            self.stats.set_value(key, value)
        self.analyser.close()
        for key, value in self.analyser.worker_counters().items():
            if value:
                self.stats.inc_value(key, value)

    @property
    def stats(self):
        return self.crawler.stats

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.seed_urls:
            yield scrapy.Request(url, callback=self.parse, errback=self.on_error, meta={"seed": True})

    # -- parsing ---------------------------------------------------------------
    async def parse(self, response: Response) -> AsyncIterator[Any]:
        if not isinstance(response, HtmlResponse):
            ctype = response.headers.get(b"Content-Type", b"").decode("latin-1").split(";")[0].strip()
            self.stats.inc_value("focuscrawl/skipped/non_html")
            logger.debug("skipping non-HTML %s (%s)", response.url, ctype or "no type")
            return
        try:
            response, notes = readable_response(response, self.text_max_bytes)
            html, base_url = response.text, get_base_url(response)
        except (UnicodeError, LookupError) as exc:
            self.stats.inc_value("focuscrawl/skipped/undecodable")
            logger.warning("cannot decode %s: %s", response.url, exc)
            return
        analysis = self.analyse(html, response.url, base_url, response.meta.get("depth", 0))
        if isinstance(analysis, Deferred):  # on the worker pool: the reactor goes on meanwhile
            try:
                analysis = await maybe_deferred_to_future(analysis)
            except AnalysisFailed as exc:
                self.stats.inc_value("focuscrawl/skipped/analysis_failed")
                logger.warning("page skipped: %s", exc)
                return
            self.stats.inc_value("focuscrawl/analysis/pool_pages")
        if analysis.error:
            self.stats.inc_value(f"focuscrawl/skipped/{analysis.error}")
            logger.warning("text extraction %s on %s: %s",
                           "skipped" if analysis.error == "extraction_timeout" else "failed",
                           response.url, analysis.error_detail)
            return
        for note in dict.fromkeys(notes + analysis.notes):  # a page cut by size and markup: once
            self.stats.inc_value(f"focuscrawl/text/{note}")
        if TRUNCATED in notes:
            logger.info("page %s longer than %d bytes: its first %d read", response.url,
                        self.text_max_bytes, self.text_max_bytes)
        response.meta[META_KEY] = analysis
        score, sentences, links, images = analysis.score, analysis.sentences, analysis.links, analysis.img_count
        self.stats.inc_value("focuscrawl/pages/crawled")
        self.stats.inc_value(f"focuscrawl/language/pages/{analysis.language or 'unknown'}")
        if not analysis.language_wanted:  # crawled through: links followed, text not scored
            self.stats.inc_value("focuscrawl/pages/other_language")
        elif score.perplexity is None:
            self.stats.inc_value("focuscrawl/pages/without_text")
        self.stats.inc_value("focuscrawl/links/found", len(links))
        optout = self.optouts.page(response.headers, analysis.rights.signals if analysis.rights else None,
                                   response.meta.get(SITE_OPTOUT_META))
        for name in count_names(optout):
            self.stats.inc_value(f"focuscrawl/optout/{name}")
        if optout.nofollow:  # the owner asked that these links are not followed
            self.stats.inc_value("focuscrawl/optout/links_not_followed", len(links))
            links = {}
        # Links before the page's item: they are queued (and journaled, focuscrawl.frontier)
        # before the page's row can be written, so a crawl killed in between never has a
        # committed page whose links were lost.
        # A link the scheduler has seen already would be filtered there: no request is built
        # for it; the link middleware decides and logs it from the item (PageItem.known_links).
        # Not past DEPTH_LIMIT, where Scrapy's DepthMiddleware drops every link unlogged.
        depth = response.meta.get("depth", 0)
        known = self.known_links if not (self.depth_limit and depth >= self.depth_limit) else None
        skipped: list[str] = []
        for url, anchor in links.items():
            if known is not None and known.known(url):
                skipped.append(url)
            else:
                request = self.link_request(url, anchor)
                if request is not None:
                    yield request
        page = PageItem(
            url=response.url,
            depth=depth,
            status=response.status,
            host=urlparse_cached(response).hostname,
            size=len(response.body),
            fetched_at=time.time(),
            perplexity=score.perplexity,
            keyword_score=score.keyword_score,
            sentences=[] if optout.no_text else sentences,
            links=len(analysis.links),
            images=images,
            near_duplicate_of=None,
            language=analysis.language,
        )
        if optout.nofollow or optout.no_text or optout.no_images:
            page["optout"] = {"nofollow": optout.nofollow, "text": optout.no_text, "images": optout.no_images}
        if (analysis.rights is not None and not analysis.rights.page.empty()) or optout.tdm_policy:
            rights = analysis.rights.page.as_dict() if analysis.rights is not None else {}
            if optout.tdm_policy:
                rights["tdm_policy"] = optout.tdm_policy
            page["rights"] = rights
        if skipped:
            page["known_links"] = skipped
            self.stats.inc_value("focuscrawl/links/known_skipped", len(skipped))
        yield page

    def analyse(self, html: str, url: str, base_url: str, depth: int):
        """The page's ``PageAnalysis`` (or a Deferred of it, from the pool): ``PageAnalyser.analyse``."""
        return self.analyser.analyse(html, url, base_url, depth)

    def link_request(self, url: str, anchor: str | None) -> scrapy.Request | None:
        """The request of an out-link the page yields (None: no request for it)."""
        return scrapy.Request(url, callback=self.parse, errback=self.on_error, meta={LINK_META: LinkFacts(anchor)})

    def on_error(self, failure) -> None:
        """Count failed downloads by exception type; the crawl goes on."""
        if failure.check(PageBudgetSpent):  # not a download error: PageBudget counts and requeues it
            return
        name = failure.type.__name__ if failure.type else "unknown"
        self.stats.inc_value(f"focuscrawl/download_errors/{name}")
        logger.debug("download failed: %s: %s", failure.request.url if hasattr(failure, "request") else "", failure.value)


def reported(exc: UsageError, spider: str) -> UsageError:
    """``exc`` logged as one clear ERROR line and marked so that its traceback is not
    logged again (``_not_reported_yet``): raise the result from ``from_crawler``."""
    logger.error("%s: cannot start the crawl: %s", spider, exc)
    exc.focuscrawl_reported = True
    return exc


def _not_reported_yet(record: logging.LogRecord) -> bool:
    """Logging filter: Scrapy re-raises a spider's startup error for asyncio to log as
    "Task exception was never retrieved" with its traceback (the exit code is 1 either
    way); an error the spider already reported in one line is not logged again."""
    exc = record.exc_info[1] if record.exc_info else None
    return not getattr(exc, "focuscrawl_reported", False)


logging.getLogger("asyncio").addFilter(_not_reported_yet)
quiet_robots_network_errors()
quiet_startup_listings()


def apply_spider_args(settings, args: dict[str, Any]) -> None:
    """Spider arguments override settings (priority ``spider``) so every component sees them."""
    for arg, name in SPIDER_ARG_SETTINGS.items():
        if arg in args and args[arg] not in (None, ""):
            settings.set(name, args[arg], priority="spider")
