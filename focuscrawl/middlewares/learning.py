"""Spider middleware that teaches the crawl's link learner (mode ``learning``).

Each page's ``PageItem`` (after its links, which the link priority middleware has scored
with the learner as it was) brings one training example: the facts of the link that led to
the page (its request's ``LinkFacts``) and the page judge's label of the page. The learner
is the crawl mode's (``crawler.spider.focus``), registered here with ``RunState`` as a
resumable state; the re-ranking queue finds it there. The method: docs/CRAWL.md "Mode learning".
"""
from __future__ import annotations

import logging

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from focuscrawl.analysis import page_analysis
from focuscrawl.focus.judge import PageJudge
from focuscrawl.focus.link_learner import LinkLearner, url_host
from focuscrawl.focus.modes import crawl_focus
from focuscrawl.focus.ranker import LinkFacts, link_facts
from focuscrawl.items import PageItem
from focuscrawl.output.leases import ROW_COMMITTED_META
from focuscrawl.output.run_state import RunState

logger = logging.getLogger(__name__)


class LinkLearningMiddleware(BaseSpiderMiddleware):
    """Judges each page and teaches the learner the link that led to it; off in other modes."""

    def __init__(self, stats, learner: LinkLearner, judge: PageJudge,  # pylint: disable=super-init-not-called
                 watch: "JudgeWatch | None" = None) -> None:
        self.stats = stats
        self.learner = learner
        self.judge = judge
        #: warns once when the judge's on-topic share is implausible
        self.watch = watch or JudgeWatch(stats)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "LinkLearningMiddleware":
        if getattr(crawler.spider, "focus", None) is None:  # not the focused spider: nothing to learn
            raise NotConfigured
        focus = crawl_focus(crawler)
        if focus.learner_state is None:  # not mode ``learning``
            raise NotConfigured
        # restored now (a resumed JOBDIR), saved at a clean stop; the re-ranking queue finds it here
        crawler.get_extension(RunState).register(focus.learner_state)
        return cls(crawler.stats, focus.learner_state.learner, focus.judge,
                   JudgeWatch.from_settings(crawler.settings, crawler.stats, focus.bundle))

    def get_processed_item(self, item, response: Response | None):
        """The page's item (the near-duplicate middleware has marked it): judged, its call kept
        in ``PageItem.judged`` (for judged.tsv), and taught. A near-duplicate of an earlier page
        counts as off topic: it brings nothing new (an archive calendar of an on-topic blog is
        a trap, not a find)."""
        if response is None or not isinstance(item, PageItem):
            return item
        if response.meta.get(ROW_COMMITTED_META):  # fetched again for its images: judged where its row is
            return item
        analysis = page_analysis(response)
        topicality = None if analysis is None else self.judge.topicality(analysis.score.weighted,
                                                                         analysis.topic_logit)
        if topicality is None:
            self.stats.inc_value("focuscrawl/learning/unjudged")
            return item
        on_topic = self.judge.on_topic(topicality) and not item.get("near_duplicate_of")
        self.learn(link_facts(response), response.url, on_topic)
        item["judged"] = (topicality, on_topic)
        self.watch.judged(on_topic, url_host(response.url))
        return item

    def learn(self, link: LinkFacts | None, url: str, on_topic: bool) -> None:
        """One training example: the facts of the link that led to the page at ``url`` (``None``
        for a seed: only its host's harvest is counted) and the page's label."""
        link = link or _NO_LINK
        learner = self.learner
        hubs = learner.hub_examples
        if learner.observe(None, url_host(url), on_topic, vector=link.vector, thesis_score=link.score, url=url,
                           origin=link.origin):
            self.stats.inc_value("focuscrawl/learning/updates")
        if learner.hub_examples > hubs:
            self.stats.inc_value("focuscrawl/learning/hub_examples")
        self.stats.inc_value(judged_stat(on_topic))


def judged_stat(on_topic: bool) -> str:
    """The counter of the page judge's calls ``on_topic``."""
    return f"focuscrawl/learning/judged_{'on' if on_topic else 'off'}_topic"


#: the facts of a page no link led to (a seed)
_NO_LINK = LinkFacts()


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
