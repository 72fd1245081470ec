"""The crawl mode: one strategy object per ``FOCUSCRAWL_MODE``, chosen once from the settings.

The focused spider builds it in ``from_crawler`` (``focus_from_settings``: a model that
cannot be loaded stops the crawl before any request) and keeps it as ``spider.focus``;
the link middleware and the progress extension reach it as ``crawler.spider.focus``
(``crawl_focus``: Scrapy creates the spider before the engine, scheduler, middlewares and
pipelines); the re-ranking queue gets the crawl's learner from ``RunState``. It owns the
crawl's models and answers everything that differs between the modes:

* ``keywords`` (SPEC): links ranked by the link score of page and anchor (perplexity and
  keywords; or the topic bundle's log-odds of both with ``FOCUSCRAWL_CRAWL_SCORING =
  "calibrated"``), buckets, razor; Scrapy's priority queue; no judge.
* ``document`` (Remus & Biemann): the page's score ranks all its links: the bundle's
  log-odds when there is a topic model, else its perplexity; Scrapy's queue; no judge.
* ``unfocused``: breadth-first (``priority = -depth``); Scrapy's queue; no judge.
* ``learning``: the online link learner's score sets the priority (the ``keywords`` score
  is its prior); ``RerankingPriorityQueue`` re-ranks the frontier's top when the model
  changes; a ``PageJudge`` labels each page for the learner (``FOCUSCRAWL_LEARNING_JUDGE``).

``page_topic`` is the ``TopicModel`` the page analysis computes each page's log-odds with
(``PageAnalysis.topic_logit``): the calibrated ranking's, or the learner's calibrated judge
(``FOCUSCRAWL_LEARNING_JUDGE``); ``None`` when nothing reads them.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

from focuscrawl.analysis import AnalysisConfig, PageAnalysis
from focuscrawl.crawl_scorer import scorer_files, topic_bundle_path, topic_model_from_settings
from focuscrawl.focus.ranker import LinkRanker
from focuscrawl.focus.judge import PageJudge
from focuscrawl.focus.link_learner import LEARNER_FILE, LearnerState, LinkLearner, learner_from_settings, learner_state_path
from focuscrawl.lm.scorer import TopicScorer

#: Scrapy's default priority queue (``SCHEDULER_PRIORITY_QUEUE``), which a mode may replace
SCRAPY_PRIORITY_QUEUE = "scrapy.pqueues.ScrapyPriorityQueue"


class CrawlFocus:
    """What a crawl mode does, with the crawl's models (see the module docstring)."""

    #: the value of ``FOCUSCRAWL_MODE``
    name: ClassVar[str] = ""
    #: links are scored, bucketed and razored (else breadth-first: ``priority = -depth``)
    focused: ClassVar[bool] = True
    #: the anchor text's score enters the link's (SPEC §5; the ``TopicScorer``'s, or the
    #: topic model's log-odds in a calibrated crawl)
    scores_anchors: ClassVar[bool] = False
    #: the link learner's score sets the priority (else it is only shown, ``explain``)
    learned_priority: ClassVar[bool] = False
    #: the scheduler's priority queue in place of Scrapy's (``None``: Scrapy's)
    priority_queue: ClassVar[str | None] = None

    def __init__(self, scorer: TopicScorer, ranker: LinkRanker, analysis: AnalysisConfig, page_topic=None,
                 judge: PageJudge | None = None, bundle: Path | None = None,
                 learner_state: LearnerState | None = None) -> None:
        self.scorer = scorer
        self.ranker = ranker
        self.analysis = analysis
        self.page_topic = page_topic
        self.judge = judge
        #: the topic bundle the crawl was run with (``focuscrawl rank`` ranks the run with it)
        self.bundle = bundle
        #: the crawl's learner as a resumable state, restored from and saved to JOBDIR (a resume
        #: goes on learning) and saved to the run directory (``explain``); the link middleware
        #: registers it with ``RunState``
        self.learner_state = learner_state

    @property
    def learner(self) -> LinkLearner | None:
        return self.ranker.learner

    @classmethod
    def ranks_by_topic(cls, settings) -> bool:
        """Links are ranked by the topic bundle's calibrated log-odds (when there is one)."""
        return False

    @classmethod
    def crawl_learner(cls, settings) -> LinkLearner | None:
        """The link learner that sets the crawl's priorities (mode ``learning`` only)."""
        return None

    @classmethod
    def from_settings(cls, settings, scorer: TopicScorer | None = None,
                      learner: LinkLearner | None = None, *, images: bool = True,
                      neardup: bool = True) -> "CrawlFocus":
        """The mode with its models loaded from ``settings`` (``ValueError``,
        ``FileNotFoundError`` for a bad model, bundle or setting). ``scorer``, ``learner``:
        use these instead (``focuscrawl shell``: a learner in any mode shows what it would do).
        ``images``, ``neardup``: the page analysis computes what those middlewares read
        (``AnalysisConfig.from_settings``)."""
        files = scorer_files(settings)
        loaded = scorer is None  # the scorer of ``files`` (not one given)
        scorer = scorer or files.load()
        crawl_learner = cls.crawl_learner(settings) if learner is None else None
        learner = learner if learner is not None else crawl_learner
        ranked = cls.ranks_by_topic(settings)
        calibrated_judge = learner is not None and settings.get("FOCUSCRAWL_LEARNING_JUDGE") == "calibrated"
        topic = topic_model_from_settings(settings) if ranked or calibrated_judge else None
        judge = PageJudge.from_settings(settings, topic if calibrated_judge else None) if learner is not None else None
        ranker = LinkRanker.from_settings(settings, scorer if cls.scores_anchors else None, topic if ranked else None,
                                          learner, focused=cls.focused, anchors=cls.scores_anchors,
                                          learned_priority=cls.learned_priority)
        state = None
        if crawl_learner is not None:
            out = settings.get("FOCUSCRAWL_OUTPUT_DIR")
            jobdir_file = learner_state_path(settings)
            state = LearnerState(crawl_learner, jobdir_file,
                                 [p for p in (jobdir_file, Path(out) / LEARNER_FILE if out else None) if p])
        analysis = AnalysisConfig.from_settings(settings, files, images=images, neardup=neardup)
        if ranker.link_contexts:  # the learner reads where each link sits on its page
            analysis = dataclasses.replace(analysis, link_contexts=True)
        if loaded and topic is not None and topic.uses_files(files.model, files.keywords):
            analysis = dataclasses.replace(analysis, topic_reuses_score=True)
        return cls(scorer, ranker, analysis, topic, judge, topic_bundle_path(settings), state)

    def page_score(self, analysis: PageAnalysis) -> float | None:
        """The page score its links are ranked by: the calibrated log-odds when the ranker
        has a topic model, else SPEC's document perplexity."""
        return analysis.topic_logit if self.ranker.topic is not None else analysis.score.perplexity

    def use_priority_queue(self, settings) -> None:
        """Put the mode's priority queue into ``settings`` (before the scheduler is built),
        unless the crawl names its own."""
        if self.priority_queue and settings.get("SCHEDULER_PRIORITY_QUEUE") == SCRAPY_PRIORITY_QUEUE:
            settings.set("SCHEDULER_PRIORITY_QUEUE", self.priority_queue, priority="spider")

    def stats(self) -> dict[str, int]:
        """The crawl-process scorer's LM counters (the analysis workers add theirs)."""
        return self.scorer.counters()


class KeywordsFocus(CrawlFocus):
    """SPEC's focused crawl: page and anchor perplexity and keywords order the links."""

    name = "keywords"
    scores_anchors = True

    @classmethod
    def ranks_by_topic(cls, settings) -> bool:
        return settings.get("FOCUSCRAWL_CRAWL_SCORING") == "calibrated"


class DocumentFocus(CrawlFocus):
    """Remus & Biemann: a page's score orders all its links; the calibrated probability
    when there is a topic model (SPEC's perplexity lets a look-alike topic capture the
    crawl, docs/EVALUATION.md)."""

    name = "document"

    @classmethod
    def ranks_by_topic(cls, settings) -> bool:
        return True


class UnfocusedFocus(CrawlFocus):
    """Breadth-first: the baseline."""

    name = "unfocused"
    focused = False


class LearningFocus(CrawlFocus):
    """The online link learner sets the priorities; the frontier re-ranks its top when
    the learner's model changes."""

    name = "learning"
    scores_anchors = True
    learned_priority = True
    priority_queue = "focuscrawl.frontier.RerankingPriorityQueue"

    @classmethod
    def crawl_learner(cls, settings) -> LinkLearner:
        return learner_from_settings(settings)  # restored from JOBDIR by its ``LearnerState``


MODES: dict[str, type[CrawlFocus]] = {m.name: m for m in (KeywordsFocus, DocumentFocus, UnfocusedFocus, LearningFocus)}


def focus_class(settings) -> type[CrawlFocus]:
    """The strategy of ``FOCUSCRAWL_MODE`` (the one place that reads it)."""
    name = settings.get("FOCUSCRAWL_MODE")
    if name not in MODES:
        raise ValueError(f"unknown crawl mode {name!r}; choose one of {', '.join(MODES)}")
    return MODES[name]


def focus_from_settings(settings, scorer: TopicScorer | None = None,
                        learner: LinkLearner | None = None) -> CrawlFocus:
    """The crawl's mode strategy with its models loaded (``CrawlFocus.from_settings``)."""
    return focus_class(settings).from_settings(settings, scorer, learner)


def crawl_focus(crawler) -> CrawlFocus:
    """The crawl's mode strategy: the focused spider's (``crawler.spider.focus``)."""
    focus = getattr(crawler.spider, "focus", None)
    if focus is None:
        raise RuntimeError(f"{crawler.spidercls.__name__} has no crawl mode strategy (spider.focus): "
                           "focuscrawl's components run with the focused spider")
    return focus
