"""The models a crawl scores with, from its settings: the SPEC ``TopicScorer`` and the
calibrated ``TopicModel`` of a topic bundle, and the crawl's language filter.

A crawl loads them once, in its mode strategy (``focuscrawl.focus.modes``), which the
spider keeps as ``spider.focus``; ``focuscrawl shell``, the ranking and the
tools load them from settings here.
"""
from __future__ import annotations

from pathlib import Path

from scrapy.settings import BaseSettings

from focuscrawl.lm.scorer import ScorerFiles, TopicScorer
from focuscrawl.resources import default_topic_path
from focuscrawl.text.language import LanguageFilter, parse_languages
from focuscrawl.topic.model import bundle_language, default_keywords_path, default_model_path


def scorer_files(settings: BaseSettings) -> ScorerFiles:
    """The scorer's files from ``FOCUSCRAWL_MODEL``/``FOCUSCRAWL_KEYWORDS``, else the topic
    bundle's (``FOCUSCRAWL_TOPIC``), else the bundled cats demo model and keywords.

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
    return ScorerFiles(str(model), str(keywords or ""), settings.getint("FOCUSCRAWL_LM_CACHE_SIZE"),
                       settings.getfloat("FOCUSCRAWL_KEYWORD_WEIGHT"))


def scorer_from_settings(settings: BaseSettings) -> TopicScorer:
    """The scorer of ``scorer_files``, loaded."""
    return scorer_files(settings).load()


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
