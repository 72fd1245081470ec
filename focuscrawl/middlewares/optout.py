"""Downloader middlewares for what a host declares once for all its URLs: robots.txt groups of
AI-training crawlers, robots.txt's usage preferences (Content Signals, ``Content-Usage``) and
TDMRep's ``/.well-known/tdmrep.json``, each left in
``request.meta["site_optout"]`` (reason -> TDM policy URL) for the spider and the image
download pipeline to decide with (``focuscrawl.rights.policy``); and robots.txt's
``Crawl-delay``, held by the host's download slot."""
from __future__ import annotations

import logging

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object
from twisted.internet.defer import Deferred

from focuscrawl.archive.replay import NotArchived
from focuscrawl.rights.directives import CONTENT_SIGNALS, ROBOTS_AI, TDMREP, robots_named_agents
from focuscrawl.rights.policy import SITE_OPTOUT_META, OptOutPolicy
from focuscrawl.rights.tdmrep import PATH as TDMREP_PATH, TdmRules
from focuscrawl.rights.usage import UsageRules
from focuscrawl.scrapy_compat import hold_slot_delay

logger = logging.getLogger(__name__)

#: a tdmrep.json larger than this is cut by the downloader (and then unreadable: no rules)
TDMREP_MAX_BYTES = 1 << 20


def _site_optout(request: Request, reason: str, policy: str = "") -> None:
    request.meta.setdefault(SITE_OPTOUT_META, {})[reason] = policy


async def _shared_result(shared: Deferred):
    """The result of a Deferred that several requests wait for (a host's robots.txt or
    tdmrep.json): each waiter gets its own, as awaiting ``shared`` itself (``asFuture``) hands
    ``None`` on to the next waiter, which would then go without the host's rules."""
    own: Deferred = Deferred()
    shared.addBoth(lambda result: (own.callback(result), result)[1])
    return await maybe_deferred_to_future(own)


def _http(request: Request) -> bool:
    return request.url.startswith(("http://", "https://")) and not request.meta.get("dont_obey_robotstxt")


class RobotsTxtMiddleware(ScrapyRobotsTxtMiddleware):
    """Scrapy's robots.txt middleware, plus: where robots.txt allows us a URL but a group
    that names an AI-training crawler (``FOCUSCRAWL_AI_AGENTS``) disallows it, the URL is
    fetched and marked ``robots_ai:<agent>``: nothing of it enters the corpus; so is a URL that
    a ``Content-Signal`` / ``Content-Usage`` line of our group refuses for AI training
    (``content_signals:ai-train=no``). Without ``ROBOTSTXT_OBEY`` (a replay, whose archive maker
    applied robots.txt) robots.txt is still read for those lines. With ``ROBOTSTXT_OBEY`` a
    host's ``Crawl-delay`` for us is held by its download slot (up to
    ``FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX``). ``__init__`` keeps the signature of Scrapy's
    middleware (``crawler``), which reads its settings there."""

    def __init__(self, crawler) -> None:
        policy = OptOutPolicy.from_settings(crawler.settings)
        self.ai_agents = policy.ai_agents if ROBOTS_AI in policy.sources else ()
        #: our robots tokens, to find our group's usage lines (empty: content_signals not obeyed)
        self.usage_agents = policy.agents if CONTENT_SIGNALS in policy.sources else frozenset()
        self.obey = crawler.settings.getbool("ROBOTSTXT_OBEY")
        self.crawl_delay_max = crawler.settings.getfloat("FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX")
        if not self.crawl_delay_max >= 0:
            raise ValueError(f"FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX must be 0 (Crawl-delay ignored) or more seconds, "
                             f"not {self.crawl_delay_max}")
        if self.obey:
            super().__init__(crawler)
        elif not self.ai_agents and not self.usage_agents:
            raise NotConfigured("neither ROBOTSTXT_OBEY nor robots_ai or content_signals in FOCUSCRAWL_OPTOUTS")
        else:  # Scrapy's __init__ refuses to run without ROBOTSTXT_OBEY: the state robot_parser() uses
            self.crawler, self._stats, self._parsers = crawler, crawler.stats, {}
            self._parserimpl = load_object(crawler.settings.get("ROBOTSTXT_PARSER"))
        #: host -> the AI crawlers its robots.txt names
        self._named: dict[str, tuple[str, ...]] = {}
        #: host -> its robots.txt's usage lines that refuse training
        self._usage: dict[str, UsageRules] = {}

    async def _parse_robots(self, response: Response, netloc: str, request: Request) -> None:
        if self.ai_agents:
            self._named[netloc] = robots_named_agents(response.body, self.ai_agents)
        if self.usage_agents:
            self._usage[netloc] = UsageRules.parse(response.body if response.status == 200 else b"",
                                                   self.usage_agents)
        await super()._parse_robots(response, netloc, request)
        if self.obey and self.crawl_delay_max > 0:
            self._hold_crawl_delay(self._parsers.get(netloc), request)

    def _hold_crawl_delay(self, parser, request: Request) -> None:
        """The host's ``Crawl-delay`` for our User-Agent (the group robots.txt obeys for us), up
        to ``crawl_delay_max``, as the least time between its requests' starts."""
        if parser is None:  # robots.txt could not be read
            return
        try:
            asked = parser.crawl_delay(self._robotstxt_useragent or self._default_useragent)
        except (TypeError, ValueError):  # another ROBOTSTXT_PARSER on a Crawl-delay that is no number
            return
        if asked is None or not 0 < asked < float("inf"):
            return
        held = min(asked, self.crawl_delay_max)
        downloader = self.crawler.engine.downloader
        hold_slot_delay(downloader, downloader.get_slot_key(request), held)
        self._stats.inc_value("focuscrawl/politeness/crawl_delay_hosts")
        self._stats.max_value("focuscrawl/politeness/crawl_delay_max_seconds", held)
        if asked > held:
            self._stats.inc_value("focuscrawl/politeness/crawl_delay_held_to_max")
            logger.info("robots.txt of %s asks for a Crawl-delay of %g s: held to %g s "
                        "(FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX)", urlparse_cached(request).netloc, asked, held)
        else:
            logger.debug("robots.txt of %s asks for a Crawl-delay of %g s", urlparse_cached(request).netloc, asked)

    async def robot_parser(self, request: Request):
        parser = self._parsers.get(urlparse_cached(request).netloc)
        if isinstance(parser, Deferred):  # Scrapy's awaits it directly: its third waiter would get None
            return await _shared_result(parser)
        return await super().robot_parser(request)

    def _nothing_to_read(self, netloc: str) -> bool:
        """This host's robots.txt is read, and has neither an AI group nor a usage line for us."""
        return ((not self.ai_agents or self._named.get(netloc) == ())
                and (not self.usage_agents or (netloc in self._usage and not self._usage[netloc])))

    async def process_request(self, request: Request) -> None:
        if not _http(request):
            return
        netloc = urlparse_cached(request).netloc
        if not self.obey and self._nothing_to_read(netloc):
            return
        parser = await self.robot_parser(request)
        if self.obey:
            self.process_request_2(parser, request)
        usage = self._usage.get(netloc)
        denial = usage.denial(request.url) if usage is not None else ""
        if denial:
            _site_optout(request, f"{CONTENT_SIGNALS}:{denial}")
            self._stats.inc_value("focuscrawl/optout/content_signal_urls")
        if parser is None or not self.ai_agents:
            return
        for agent in self._named.get(netloc, ()):
            if not parser.allowed(request.url, agent):
                _site_optout(request, f"{ROBOTS_AI}:{agent.lower()}")
                self._stats.inc_value("focuscrawl/optout/robots_ai_urls")
                return


class TdmRepMiddleware:
    """Fetches each host's ``/.well-known/tdmrep.json`` once (as Scrapy's robots.txt
    middleware fetches robots.txt: the host's first request waits for it) and marks the URLs
    its rules reserve ``tdmrep:well-known``. A missing or unreadable file declares nothing;
    a replay whose archives do not hold it says so once per host. It keeps the crawler to
    download through its engine at run time, as Scrapy's robots.txt middleware does."""

    DOWNLOAD_PRIORITY = 1000

    def __init__(self, crawler, stats) -> None:
        self.crawler, self.stats = crawler, stats
        self._rules: dict[str, TdmRules | Deferred | None] = {}

    @classmethod
    def from_crawler(cls, crawler) -> "TdmRepMiddleware":
        if TDMREP not in OptOutPolicy.from_settings(crawler.settings).sources:
            raise NotConfigured("tdmrep is not in FOCUSCRAWL_OPTOUTS")
        return cls(crawler, crawler.stats)

    async def process_request(self, request: Request) -> None:
        if not _http(request):
            return
        rules = self._rules.get(urlparse_cached(request).netloc, False)
        if rules is False or isinstance(rules, Deferred):  # the host's file is not read yet
            rules = await self.rules_for(request)
        if not rules or not rules.rules:
            return
        reserved, policy = rules.reservation(request.url)
        if reserved:
            _site_optout(request, f"{TDMREP}:well-known", policy)
            self.stats.inc_value("focuscrawl/optout/tdmrep_urls")

    async def rules_for(self, request: Request) -> TdmRules | None:
        url = urlparse_cached(request)
        netloc = url.netloc
        if netloc not in self._rules:
            self._rules[netloc] = waiting = Deferred()
            rules = await self._fetch(f"{url.scheme}://{netloc}{TDMREP_PATH}", netloc)
            self._rules[netloc] = rules
            waiting.callback(rules)
            return rules
        rules = self._rules[netloc]
        if isinstance(rules, Deferred):
            return await _shared_result(rules)
        return rules

    async def _fetch(self, url: str, netloc: str) -> TdmRules | None:
        request = Request(url, priority=self.DOWNLOAD_PRIORITY, callback=NO_CALLBACK,
                          meta={"dont_obey_robotstxt": True, "download_maxsize": TDMREP_MAX_BYTES,
                                "download_warnsize": 0, "dont_retry": True})  # no ERROR line for a host that fails
        self.stats.inc_value("focuscrawl/optout/tdmrep_files/requested")
        try:
            response = await self.crawler.engine.download_async(request)
        except NotArchived:
            self.stats.inc_value("focuscrawl/optout/tdmrep_files/not_archived")
            logger.info("tdmrep: the archives hold no %s for %s: its host-wide TDM reservations are unknown",
                        TDMREP_PATH, netloc)
            return None
        except IgnoreRequest:
            return None
        except Exception as exc:  # a host that cannot be reached declares nothing here
            self.stats.inc_value("focuscrawl/optout/tdmrep_files/failed")
            logger.debug("tdmrep: %s: %s: %s", url, type(exc).__name__, exc)
            return None
        if response.status != 200:
            return None
        rules = TdmRules.parse(response.body)
        if not rules.readable:  # a site that answers every path with a page
            self.stats.inc_value("focuscrawl/optout/tdmrep_files/not_json")
            return None
        self.stats.inc_value("focuscrawl/optout/tdmrep_files/found")
        if rules.problems:
            self.stats.inc_value("focuscrawl/optout/tdmrep_files/problems", rules.problems)
            logger.info("tdmrep: %s: %d entries not understood (skipped)", url, rules.problems)
        return rules
