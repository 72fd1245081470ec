"""The crawl's one ``TopicScorer``, built from settings and shared by all components.

Spider, middlewares and pipelines call ``topic_scorer(crawler)``: the model is
loaded once per crawler and its LM counters go to the stats when the spider closes.
"""
from __future__ import annotations

import weakref
from pathlib import Path

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from focuscrawl.lm.scorer import TopicScorer
from focuscrawl.resources import default_topic_path
from focuscrawl.text.language import LanguageFilter, parse_languages
from focuscrawl.topic.model import bundle_language, default_keywords_path, default_model_path

_scorers: "weakref.WeakKeyDictionary[Crawler, TopicScorer]" = weakref.WeakKeyDictionary()
_topic_models: "weakref.WeakKeyDictionary[Crawler, object]" = weakref.WeakKeyDictionary()


def scorer_from_settings(settings: BaseSettings) -> TopicScorer:
    """Build a scorer from ``FOCUSCRAWL_MODEL``/``FOCUSCRAWL_KEYWORDS``, else the topic bundle's
    (``FOCUSCRAWL_TOPIC``), else the bundled cats demo model and keywords.

    A custom model without keywords scores with an empty keyword list (keyword score 0).
    """
    model = settings.get("FOCUSCRAWL_MODEL") or ""
    keywords = settings.get("FOCUSCRAWL_KEYWORDS") or ""
    bundle = topic_bundle_path(settings)
    if not model and bundle is not None:
        from focuscrawl.topic.model import read_manifest

        manifest = read_manifest(bundle)
        model = bundle / manifest["topic_lm"]
        keywords = keywords or bundle / manifest["keywords"]
    if not model:
        model = default_model_path()
        keywords = keywords or default_keywords_path()
    return TopicScorer.from_files(
        model, keywords or None,
        cache_size=settings.getint("FOCUSCRAWL_LM_CACHE_SIZE"),
        keyword_weight=settings.getfloat("FOCUSCRAWL_KEYWORD_WEIGHT"),
    )


def topic_bundle_path(settings: BaseSettings) -> Path | None:
    """``FOCUSCRAWL_TOPIC`` as an absolute folder (``None`` if unset)."""
    value = settings.get("FOCUSCRAWL_TOPIC") or ""
    return Path(value).resolve() if value else None


def crawl_bundle(settings: BaseSettings) -> Path | None:
    """The topic bundle a crawl with ``settings`` scores with: ``FOCUSCRAWL_TOPIC``, else the
    bundled cats bundle when no ``FOCUSCRAWL_MODEL`` is set (the demo), else none."""
    bundle = topic_bundle_path(settings)
    if bundle is None and not settings.get("FOCUSCRAWL_MODEL"):
        bundle = default_topic_path()
    return bundle


def language_filter(settings: BaseSettings) -> LanguageFilter:
    """The crawl's languages: ``FOCUSCRAWL_LANGUAGES``, else the crawl bundle's language."""
    wanted = parse_languages(settings.get("FOCUSCRAWL_LANGUAGES"))
    if wanted is None:
        language = bundle_language(crawl_bundle(settings))
        wanted = frozenset([language]) if language else frozenset()
    return LanguageFilter(wanted, settings.getfloat("FOCUSCRAWL_LANGUAGE_MIN_CONFIDENCE"),
                          settings.getint("FOCUSCRAWL_LANGUAGE_TEXT_CHARS"))


def topic_model_from_settings(settings: BaseSettings):
    """The calibrated ``TopicModel`` that ranks the corpus: ``FOCUSCRAWL_TOPIC``, else the
    bundled cats bundle when no ``FOCUSCRAWL_MODEL`` is set; ``None`` with a custom model and no
    bundle, or with ``FOCUSCRAWL_SCORING = "thesis"``."""
    from focuscrawl.resources import default_topic_path
    from focuscrawl.topic.model import TopicModel

    scoring = settings.get("FOCUSCRAWL_SCORING")
    if scoring in ("thesis", ""):  # empty (-s FOCUSCRAWL_SCORING=) is SPEC's ranking too
        return None
    bundle = topic_bundle_path(settings)
    if bundle is None and not settings.get("FOCUSCRAWL_MODEL"):
        bundle = default_topic_path()
    return TopicModel(bundle, scoring) if bundle is not None else None


def topic_scorer(crawler: Crawler) -> TopicScorer:
    """The crawler's shared scorer (created on first use)."""
    scorer = _scorers.get(crawler)
    if scorer is None:
        scorer = _scorers[crawler] = scorer_from_settings(crawler.settings)
        bundle = topic_bundle_path(crawler.settings)
        if bundle is not None:  # `focuscrawl rank` ranks the run with the bundle it was crawled with

            def record_bundle(spider=None) -> None:
                crawler.stats.set_value("focuscrawl/topic/bundle", str(bundle))

            crawler.signals.connect(record_bundle, signal=signals.spider_opened, weak=False)

        def publish_counters(spider=None) -> None:
            for key, value in scorer.counters().items():
                crawler.stats.set_value(key, value)

        crawler.signals.connect(publish_counters, signal=signals.spider_closed, weak=False)
    return scorer


def crawl_topic_model(crawler: Crawler):
    """The crawler's shared ``TopicModel`` when ``FOCUSCRAWL_CRAWL_SCORING = "calibrated"`` (page
    and link scores in calibrated log-odds) or in mode ``document`` (the page's calibrated
    probability orders its links: SPEC's perplexity lets a look-alike topic capture the
    crawl, docs/EVALUATION.md), else ``None`` (SPEC's perplexity rules; also with no bundle or
    ``FOCUSCRAWL_SCORING = "thesis"``)."""
    if not calibrated_crawl(crawler.settings):
        return None
    return _shared_topic_model(crawler)


def calibrated_crawl(settings: BaseSettings) -> bool:
    """Links are ordered by calibrated log-odds when a topic model exists (``crawl_topic_model``)."""
    return settings.get("FOCUSCRAWL_CRAWL_SCORING") == "calibrated" or settings.get("FOCUSCRAWL_MODE") == "document"


def page_topic_model(crawler: Crawler):
    """The ``TopicModel`` that gives each page its calibrated log-odds (``page_topic_logit``):
    the calibrated crawl's, or in mode ``learning`` with ``FOCUSCRAWL_LEARNING_JUDGE =
    "calibrated"`` the one that judges pages for the link learner; else ``None``."""
    s = crawler.settings
    if s.get("FOCUSCRAWL_MODE") == "learning" and s.get("FOCUSCRAWL_LEARNING_JUDGE") == "calibrated":
        return _shared_topic_model(crawler)
    return crawl_topic_model(crawler)


def _shared_topic_model(crawler: Crawler):
    if crawler not in _topic_models:
        _topic_models[crawler] = topic_model_from_settings(crawler.settings)
    return _topic_models[crawler]
