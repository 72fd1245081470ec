"""How many analysis workers a replay starts: a worker costs about a second of CPU to
start, so a small archive is analysed in the replay's own process."""
from __future__ import annotations

import pytest
from scrapy.settings import Settings

from focuscrawl import settings as project_settings
from focuscrawl.spiders.archive import PAGES_PER_ANALYSIS_WORKER, ArchiveSpider


def _settings(**cmdline) -> Settings:
    settings = Settings()
    settings.setmodule(project_settings, priority="project")
    settings.setdict(cmdline, priority="cmdline")
    return settings


@pytest.mark.parametrize("pages, workers", [
    (1, 0), (PAGES_PER_ANALYSIS_WORKER - 1, 0), (PAGES_PER_ANALYSIS_WORKER, 1),
    (2 * PAGES_PER_ANALYSIS_WORKER, 2), (100 * PAGES_PER_ANALYSIS_WORKER, 2)])
def test_by_default_a_replay_starts_one_worker_per_few_hundred_pages_up_to_the_setting(pages, workers):
    settings = _settings()
    ArchiveSpider._size_analysis_pool(settings, pages)
    assert settings.getint("FOCUSCRAWL_ANALYSIS_WORKERS") == workers


def test_a_worker_count_the_user_sets_is_used_as_it_is():
    settings = _settings(FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS=2)
    ArchiveSpider.update_settings(settings)
    ArchiveSpider._size_analysis_pool(settings, 3)
    assert settings.getint("FOCUSCRAWL_ANALYSIS_WORKERS") == 2
