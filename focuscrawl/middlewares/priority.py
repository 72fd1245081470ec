"""Spider middleware that scores every out-link by the crawl mode and sets its priority.

Modelled on Scrapy's ``DepthMiddleware``. The link rule, the page score it reads and the
learner's page judge are the crawl mode strategy's (``focuscrawl.focus.modes``); the page's
score comes from ``response.meta["page_analysis"]``, left by the spider before it yields
anything, so the order of the spider's output does not matter. What it decides of a link
goes with its request in one ``LinkFacts`` (``request.meta["focuscrawl_link"]``,
``focuscrawl.focus.ranker``), read back from the response of the page it led to. Links the
scheduler already knows (``PageItem.known_links``) are decided and logged the same way, then
dropped. The rules of each mode: docs/CRAWL.md "What happens to a page".
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, AsyncIterator, Iterable, Iterator, NamedTuple

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from w3lib.url import safe_url_string

from focuscrawl.analysis import LinkContext, PageAnalysis, page_analysis
from focuscrawl.focus.modes import CrawlFocus, crawl_focus
from focuscrawl.focus.ranker import LINK_META, LinkDecision, LinkFacts, LinkRanker, link_facts
from focuscrawl.items import PageItem
from focuscrawl.focus.judge import PageJudge
from focuscrawl.focus.link_learner import url_host
from focuscrawl.output.run_state import RunState
from focuscrawl.output.tsv import row

logger = logging.getLogger(__name__)

LINKS_LOG_COLUMNS = ("from", "to", "anchor", "doc_pp", "anchor_pp", "anchor_kw", "score",
                     "bucket", "priority", "followed", "learned", "features")
LINKS_LOG_HEADER = "\t".join(LINKS_LOG_COLUMNS)
#: FOCUSCRAWL_NEARDUP_LINKS: what becomes of the links of a near-duplicate page
NEARDUP_LINK_RULES = ("keep", "demote")
#: links.tsv is read by people and plots: scores to 6 significant digits
LINKS_LOG_FLOAT_DIGITS = 6


#: the facts of a page no link led to (a seed)
_NO_LINK = LinkFacts()


class PageContext(NamedTuple):
    """What every link of one page is decided with (computed once for its links)."""

    analysis: PageAnalysis | None
    #: the page score its links are ranked by (``CrawlFocus.page_score``)
    score: float | None
    #: the judge's topicality of the page (mode ``learning``)
    topicality: float | None
    #: the facts of the link that led to the page (``_NO_LINK`` for a seed)
    came_by: LinkFacts


class LinkPriorityMiddleware(BaseSpiderMiddleware):
    """Scores out-links, sets ``request.priority``, razors (docs/CRAWL.md "What happens to a page")."""

    def __init__(self, stats, focus: CrawlFocus, log_links: bool = False,
                 demote_neardup: bool = False, watch: "JudgeWatch | None" = None) -> None:  # pylint: disable=super-init-not-called
        self.stats = stats
        #: the crawl's mode strategy: its link rule, page score and (mode ``learning``) judge
        self.focus = focus
        self.ranker: LinkRanker = focus.ranker
        #: mode ``learning``: judges each page, which labels the link that led to it
        self.judge: PageJudge | None = focus.judge
        #: links.tsv rows are made (and handed to the page writer with the page's item)
        self.log_links = log_links
        #: the links of a near-duplicate page are fetched after all others (focused modes)
        self.demote_neardup = demote_neardup and self.ranker.focused
        #: warns once when the judge's on-topic share is implausible
        self.watch = watch or JudgeWatch(stats, bundle=focus.bundle)
        #: the response whose links are being decided, and its ``PageContext``
        self._page: tuple[Response | None, PageContext | None] = (None, None)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "LinkPriorityMiddleware":
        s = crawler.settings
        neardup_links = str(s.get("FOCUSCRAWL_NEARDUP_LINKS")).lower()
        if neardup_links not in NEARDUP_LINK_RULES:
            raise ValueError(f"FOCUSCRAWL_NEARDUP_LINKS must be one of {NEARDUP_LINK_RULES}, got {neardup_links!r}")
        if getattr(crawler.spider, "focus", None) is None:  # `scrapy shell URL` in the project: its DefaultSpider
            raise NotConfigured(f"{crawler.spidercls.__name__} has no crawl mode strategy: no link priorities")
        focus = crawl_focus(crawler)
        mw = cls(crawler.stats, focus,
                 s.getbool("FOCUSCRAWL_LINKS_LOG") and bool(s.get("FOCUSCRAWL_OUTPUT_DIR")),
                 neardup_links == "demote", JudgeWatch.from_settings(s, crawler.stats, focus.bundle))
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        if mw.focus.learner_state is not None:  # mode ``learning``: restored now, saved at a clean stop
            crawler.get_extension(RunState).register(mw.focus.learner_state)
        return mw

    def spider_closed(self, spider=None) -> None:
        if self.ranker.scorer is not None:  # anchors answered from the per-anchor cache
            info = self.ranker.anchor_score.cache_info()
            self.stats.set_value("focuscrawl/links/anchor_lookups", info.hits + info.misses)
            self.stats.set_value("focuscrawl/links/anchor_cache_hits", info.hits)

    # -- learning: every parsed page is a training example for the link that led to it ----
    def _topicality(self, analysis: PageAnalysis | None) -> float | None:
        """The judge's topicality of the analysed page (``None``: no judge, or not judged): a
        feature of its links and the label of the link that led to it."""
        if self.judge is None or analysis is None:
            return None
        return self.judge.topicality(analysis.score.weighted, analysis.topic_logit)

    def get_processed_item(self, item, response: Response | None):
        """The page's item (after its links; the near-duplicate middleware has marked it):
        train the learner. A near-duplicate of an earlier page counts as off topic: it
        brings nothing new (an archive calendar of an on-topic blog is a trap, not a find)."""
        if self.judge is None or response is None or not isinstance(item, PageItem):
            return item
        topicality = self._topicality(page_analysis(response))
        if topicality is None:
            self.stats.inc_value("focuscrawl/learning/unjudged")
            return item
        on_topic = self.judge.on_topic(topicality) and not item.get("near_duplicate_of")
        host = url_host(response.url)
        learner = self.ranker.learner
        hubs = learner.hub_examples
        link = link_facts(response) or _NO_LINK
        if learner.observe(None, host, on_topic, vector=link.vector, thesis_score=link.score, url=response.url,
                           origin=link.origin):
            self.stats.inc_value("focuscrawl/learning/updates")
        if learner.hub_examples > hubs:
            self.stats.inc_value("focuscrawl/learning/hub_examples")
        self.stats.inc_value(f"focuscrawl/learning/judged_{'on' if on_topic else 'off'}_topic")
        item["judged"] = (topicality, on_topic)
        self.watch.judged(on_topic, host)
        return item

    # -- links.tsv: a response's rows go with its page item to the page writer -------------
    def process_spider_output(self, response: Response | None, result: Iterable[Any]) -> Iterator[Any]:
        rows: list[tuple[str, str]] = []
        for o in result:
            if (o := self._processed(o, response, rows)) is not None:
                yield o

    async def process_spider_output_async(self, response: Response | None,
                                          result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        rows: list[tuple[str, str]] = []
        async for o in result:
            if (o := self._processed(o, response, rows)) is not None:
                yield o

    def _processed(self, o: Any, response: Response | None, rows: list[tuple[str, str]]) -> Any:
        """A request is decided and its links.tsv row kept in ``rows`` (with its URL); the page's
        item (after its links) brings the links the spider built no request for
        (``known_links``), decided here, and takes the rows, in the page's link order, to the
        page writer, which writes them with the page's row."""
        if isinstance(o, Request):
            return self._decided(o, response, rows)
        if isinstance(o, PageItem):
            known = o.pop("known_links", None)
            if known and response is not None:
                self._known_decided(known, response, rows)
            if rows:
                o["link_rows"] = [r for _, r in rows]
                rows.clear()
        return self.get_processed_item(o, response)

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        return self._decided(request, response, [])

    def _decided(self, request: Request, response: Response | None, rows: list[tuple[str, str]]) -> Request | None:
        meta = request.meta
        if response is None or meta.get("seed"):
            request.priority = self.ranker.seed_priority
            self.stats.inc_value("focuscrawl/links/seeds")
            return request
        link = meta.get(LINK_META)
        if link is None:  # a request the spider did not build from one of the page's links
            link = meta[LINK_META] = LinkFacts()
        page = self._page_context(response)
        d, place = self._decide(request.url, link.anchor or "", meta.get("depth", 0), response, rows)
        link.parent_perplexity = page.score
        if d.learned is not None:  # the frontier re-scores it with a newer model (vector, host)
            link.vector, link.learned = d.vector, d.learned
            link.parent_topicality = page.topicality
            if self.ranker.link_contexts:  # the learner's siblings and hubs: the page and block it came from
                link.origin = (response.url, place.block if place is not None else -1)
        if self.ranker.focused:
            link.score, link.bucket = d.score, d.bucket
            link.anchor_perplexity, link.anchor_keyword_score = d.anchor_perplexity, d.anchor_keyword_score
        if d.followed:
            request.priority = d.priority
            link.demoted = self._demotes(page.analysis)  # the frontier's re-ranking keeps it down
        return request if d.followed else None

    def _demotes(self, analysis: PageAnalysis | None) -> bool:
        """The links of the analysed page go below every other link: it nearly repeats an
        earlier page (``PageAnalysis.near_duplicate_of``, set at its first output by the
        near-duplicate middleware). A calendar trap is a chain of such pages: each month's
        page is an empty copy of the blog's layout, and each links the next."""
        return self.demote_neardup and analysis is not None and bool(analysis.near_duplicate_of)

    def _known_decided(self, urls: list[str], response: Response, rows: list[tuple[str, str]]) -> None:
        """The links the scheduler has seen already (``focuscrawl.frontier.KnownLinks``): decided,
        counted and logged as their requests would have been (the chain before this middleware
        let them through when they were first scheduled; their depth is DepthMiddleware's), then
        dropped, as the dupefilter would have dropped them. ``rows`` are put in the page's link order."""
        analysis = page_analysis(response)
        links = analysis.links if analysis is not None else {}
        depth = response.meta.get("depth", 0) + 1
        start = len(rows)
        for url in urls:
            self._decide(url, links.get(url, ""), depth, response, rows, queued=False)
        if self.log_links and start and len(rows) > start:
            rows[:] = in_link_order(rows, start, links)

    def _page_context(self, response: Response) -> PageContext:
        """The ``PageContext`` of ``response``, computed at its first link."""
        last, page = self._page
        if last is not response or page is None:
            analysis = page_analysis(response)
            page = PageContext(analysis, None if analysis is None else self.focus.page_score(analysis),
                               self._topicality(analysis), link_facts(response) or _NO_LINK)
            self._page = (response, page)
        return page

    def _decide(self, url: str, anchor: str, depth: int, response: Response, rows: list[tuple[str, str]],
                queued: bool = True) -> tuple[LinkDecision, LinkContext | None]:
        """One out-link of ``response``: its decision (counted; its links.tsv row added to ``rows``)
        and its place on the page (``link_place``). A link that is not ``queued`` (a known link)
        gets the learner's score only for links.tsv."""
        page = self._page_context(response)
        analysis, doc_pp, came_by = page.analysis, page.score, page.came_by
        place = link_place(analysis, url)
        d = self.ranker.decide(doc_pp, anchor, depth, came_by.score,
                               url=url, parent_url=response.url,
                               parent_topicality=page.topicality,
                               grandparent_topicality=came_by.parent_topicality,
                               context=place.words if place is not None else "",
                               block=place.kind if place is not None else "",
                               learn=queued or self.log_links)
        if d.followed and self._demotes(analysis):
            d = replace(d, priority=self.ranker.demoted(d.priority))
            if queued:
                self.stats.inc_value("focuscrawl/links/neardup_demoted")
        if self.ranker.focused:
            self.stats.inc_value(f"focuscrawl/links/bucket/{d.bucket}" if d.followed else "focuscrawl/links/razored")
        else:
            self.stats.inc_value("focuscrawl/links/queued")
        if self.log_links:
            rows.append((url, row((response.url, url, anchor, doc_pp, d.anchor_perplexity, d.anchor_keyword_score,
                                   d.score, d.bucket, d.priority if d.followed else "", int(d.followed), d.learned,
                                   " ".join(d.features) if d.features else None),
                                  float_digits=LINKS_LOG_FLOAT_DIGITS)))
        return d, place


class JudgeWatch:
    """Warns once when the page judge's calls are implausible: after at least ``after`` judged
    pages, more than ``share`` of them on topic *and* on more than ``hosts`` of the hosts judged.
    A judge fooled by a topic bundle whose neutral corpus is too small or too narrow calls
    nearly every page of every site on topic, and the link learner then learns from wrong
    labels; a focused crawl that finds its topic fetches mostly on-topic pages too, but from
    few of the sites it has seen (the hosts are what tell them apart). A crawl seeded inside
    the topic's region can be both: the warning says what to check, it changes nothing."""

    def __init__(self, stats, after: int = 0, share: float = 1.0, hosts: float = 1.0, bundle=None) -> None:
        self.stats = stats
        self.after = after
        self.share = share
        self.hosts = hosts
        self.bundle = bundle
        self.seen = self.on = 0
        #: host -> a page of it was judged on topic (emptied once warned: one warning a crawl)
        self.host_calls: dict[str, bool] = {}
        self.warned = after <= 0

    @classmethod
    def from_settings(cls, settings, stats, bundle=None) -> "JudgeWatch":
        shares = {}
        for name in ("FOCUSCRAWL_LEARNING_JUDGE_WARN_SHARE", "FOCUSCRAWL_LEARNING_JUDGE_WARN_HOSTS"):
            shares[name] = settings.getfloat(name)
            if not 0.0 <= shares[name] < 1.0:
                raise ValueError(f"{name} must be a share in [0, 1), not {shares[name]}")
        return cls(stats, settings.getint("FOCUSCRAWL_LEARNING_JUDGE_WARN_AFTER"),
                   shares["FOCUSCRAWL_LEARNING_JUDGE_WARN_SHARE"], shares["FOCUSCRAWL_LEARNING_JUDGE_WARN_HOSTS"],
                   bundle)

    def judged(self, on_topic: bool, host: str = "") -> None:
        if self.warned:
            return
        self.seen += 1
        self.on += on_topic
        if on_topic or host not in self.host_calls:
            self.host_calls[host] = on_topic or self.host_calls.get(host, False)
        if self.seen < self.after or self.on <= self.share * self.seen:
            return
        hosts_on, hosts = sum(self.host_calls.values()), len(self.host_calls)
        if hosts_on <= self.hosts * hosts:
            return
        self.warned = True
        self.host_calls.clear()
        self.stats.set_value("focuscrawl/learning/judge_implausible", 1)
        show = f"`focuscrawl topic show {self.bundle}`" if self.bundle else "`focuscrawl topic show BUNDLE`"
        logger.warning("the page judge calls %d of the first %d pages on topic (%.0f%%), on %d of the %d sites "
                       "they come from: implausible unless the seeds are inside the topic, and the link learner "
                       "learns from these calls. The topic bundle's neutral corpus may be too small or too narrow "
                       "to calibrate pages (%s says; rebuild it with more general text, or keep the bundled "
                       "background beside it)", self.on, self.seen, 100.0 * self.on / self.seen, hosts_on, hosts,
                       show)


def link_place(analysis: PageAnalysis | None, url: str) -> LinkContext | None:
    """The ``LinkContext`` of ``url`` on the analysed page (``None``: not computed, or not found)."""
    return analysis.link_contexts.get(url) if analysis is not None and analysis.link_contexts else None


def in_link_order(rows: list[tuple[str, str]], known_from: int, links: dict[str, str]) -> list[tuple[str, str]]:
    """``rows`` (``(url, row)``: those of the page's requests, in the page's link order, then from
    ``known_from`` on those of its known links) merged in the order of ``links`` (the page's
    out-links as the spider went through them). A request's URL is its link's made safe by
    Scrapy (``safe_url_string``), which changes only links with unsafe characters: those are
    looked up by their safe form; a row whose URL is not found keeps its place after the row
    before it."""
    order = {url: i for i, url in enumerate(links)}
    safe: dict[str, int] | None = None
    keyed: list[tuple[float, int, tuple[str, str]]] = []
    last = -1.0
    for n, (url, text) in enumerate(rows):
        i = order.get(url)
        if i is None and n < known_from:
            if safe is None:
                safe = {safe_url_string(u): i for i, u in enumerate(links)}
            i = safe.get(url)
        last = float(i) if i is not None else last + 1e-6
        keyed.append((last, n, (url, text)))
    keyed.sort()
    return [r for _, _, r in keyed]
