"""``focuscrawl/settings.py`` is grouped by concern (issue #29): each setting, component
dicts included, is bound once, no section is empty, and the crawl's components are the
ones (and at the places) they were before the file was regrouped."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from focuscrawl import settings

SOURCE = Path(settings.__file__).read_text(encoding="utf-8")

#: The component dicts as the crawl had them when settings.py was regrouped: a change here
#: is a change of the crawl, to be made on purpose.
COMPONENTS = {
    "SPIDER_MIDDLEWARES": {
        "focuscrawl.middlewares.budget.PageBudget": 990,
        "focuscrawl.middlewares.neardup.NearDuplicatePageMiddleware": 950,
        "focuscrawl.middlewares.scope.ScopeMiddleware": 790,
        "focuscrawl.middlewares.priority.LinkPriorityMiddleware": 780,
        "focuscrawl.middlewares.learning.LinkLearningMiddleware": 770,  # trains what 780 scores with
        "focuscrawl.middlewares.images.ImageExtractionMiddleware": 500,
    },
    "DOWNLOADER_MIDDLEWARES": {
        "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
        "focuscrawl.middlewares.offsite.OffsiteMiddleware": 50,
        "focuscrawl.middlewares.hostlimit.HostPageLimitMiddleware": 90,
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "focuscrawl.middlewares.optout.RobotsTxtMiddleware": 100,  # robots.txt AI groups (opt-outs)
        "focuscrawl.middlewares.optout.TdmRepMiddleware": 110,
        "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
        "focuscrawl.middlewares.redirect.MetaRefreshMiddleware": 580,
        "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
        "focuscrawl.middlewares.redirect.RedirectMiddleware": 600,
        "focuscrawl.archive.writer.WarcWriterMiddleware": 950,
    },
    "ITEM_PIPELINES": {  # the score before the merge (#29: every sighting scored once, in one place)
        "focuscrawl.pipelines.score.FinalScorePipeline": 100,
        # the image records' one owner: merges here, commits and drops on Scrapy's item signals
        "focuscrawl.pipelines.image_records.ImageRecordsPipeline": 200,
        "focuscrawl.pipelines.download.ImageDownloadPipeline": 300,
        "focuscrawl.pipelines.writers.PageLogWriterPipeline": 810,
    },
    "EXTENSIONS": {
        # Scrapy's AutoThrottle, keeping a host's robots.txt Crawl-delay as its delay's floor
        "scrapy.extensions.throttle.AutoThrottle": None,
        "focuscrawl.scrapy_compat.AutoThrottle": 0,
        "scrapy.extensions.logstats.LogStats": None,
        "focuscrawl.extensions.progress.CrawlProgress": 500,
        "focuscrawl.extensions.progress.CrawlSummary": 505,
        "focuscrawl.extensions.collector.CollectorTuning": 510,  # #26: the collector set for a crawl
        "focuscrawl.output.stats.StatsFileWriter": 900,
        # #44: spider.state written whole (a full disk tore Scrapy's and no resume could read it)
        "scrapy.extensions.spiderstate.SpiderState": None,
        "focuscrawl.extensions.spiderstate.AtomicSpiderState": 0,
        "focuscrawl.output.manifest.CrawlManifest": 910,  # crawl.json, the dataset card's source
    },
    "ADDONS": {"focuscrawl.output.run_state.RunStateAddon": 0, "focuscrawl.distributed.RedisProfile": 0,
               "focuscrawl.extensions.remote_control.RemoteControlWhenEnabled": 0},
}


def test_component_dicts_are_unchanged():
    assert {name: getattr(settings, name) for name in COMPONENTS} == COMPONENTS


def test_every_setting_is_bound_once_and_never_patched():
    bound, patched = [], []
    for node in ast.parse(SOURCE).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            if isinstance(target, ast.Name):
                bound.append(target.id)
            else:  # SPIDER_MIDDLEWARES["..."] = 500: a dict completed in another section
                patched.append(ast.unparse(target))
    assert patched == []
    assert sorted(name for name in set(bound) if bound.count(name) > 1) == []


def test_no_empty_section():
    sections = re.split(r"^# --- .*$", SOURCE, flags=re.M)[1:]
    assert sections and all(re.search(r"^[A-Z_]+\s*[:=]", s, flags=re.M) for s in sections)


def test_at_most_40_user_facing_settings():
    """Internal knobs live in the "Advanced:" sections at the end, so that the settings a user
    reads first are the ones a user sets (docs/reference/settings.md lists them first)."""
    advanced_from = SOURCE.index("\n# --- Advanced:")
    user = re.findall(r"^FOCUSCRAWL_[A-Z_]+", SOURCE[:advanced_from], flags=re.M)
    advanced = re.findall(r"^FOCUSCRAWL_[A-Z_]+", SOURCE[advanced_from:], flags=re.M)
    assert len(user) <= 40, user
    assert "FOCUSCRAWL_LM_CACHE_SIZE" in advanced and "FOCUSCRAWL_MODE" in user
    # nothing but advanced sections after the first one
    assert all(title.startswith("Advanced:") for title in re.findall(r"^# --- (.*?) -+$", SOURCE[advanced_from:], flags=re.M))
