"""The crawl mode strategy (focuscrawl.focus.modes): chosen once from the settings, owner of
the crawl's models, found by the other components through ``crawler.spider.focus``."""
from __future__ import annotations

import pickle

import pytest

from tests.support.crawler import focuscrawl_crawler, focused_crawler

from focuscrawl.analysis import PageAnalysis
from focuscrawl.focus.modes import (DocumentFocus, KeywordsFocus, LearningFocus, UnfocusedFocus, crawl_focus,
                                    focus_class, focus_from_settings)
from focuscrawl.lm.scorer import TextScore
from focuscrawl.resources import project_settings


def settings(**values):
    return project_settings(values)


@pytest.mark.parametrize("mode, cls", [("keywords", KeywordsFocus), ("document", DocumentFocus),
                                       ("unfocused", UnfocusedFocus), ("learning", LearningFocus)])
def test_the_mode_setting_chooses_the_strategy(mode, cls):
    assert focus_class(settings(FOCUSCRAWL_MODE=mode)) is cls
    with pytest.raises(ValueError, match="unknown crawl mode 'bogus'; choose one of keywords, document"):
        focus_class(settings(FOCUSCRAWL_MODE="bogus"))


def test_each_mode_ranks_links_and_judges_pages_its_way():
    keywords = focus_from_settings(settings(FOCUSCRAWL_MODE="keywords"))
    assert keywords.ranker.focused and keywords.ranker.anchors and keywords.ranker.scorer is keywords.scorer
    assert keywords.ranker.topic is None and keywords.page_topic is None and keywords.judge is None
    assert keywords.learner is None and keywords.priority_queue is None

    calibrated = focus_from_settings(settings(FOCUSCRAWL_MODE="keywords", FOCUSCRAWL_CRAWL_SCORING="calibrated"))
    assert calibrated.ranker.topic is not None and calibrated.page_topic is calibrated.ranker.topic

    document = focus_from_settings(settings(FOCUSCRAWL_MODE="document"))  # the bundled cats bundle
    assert document.ranker.topic is not None and not document.ranker.anchors and document.ranker.scorer is None

    unfocused = focus_from_settings(settings(FOCUSCRAWL_MODE="unfocused", FOCUSCRAWL_CRAWL_SCORING="calibrated"))
    assert not unfocused.ranker.focused and unfocused.page_topic is None  # nothing would read the log-odds

    learning = focus_from_settings(settings(FOCUSCRAWL_MODE="learning"))
    assert learning.learner is not None and learning.ranker.learned_priority and learning.ranker.topic is None
    assert learning.judge.calibrated and learning.page_topic is not None
    assert learning.priority_queue == "focuscrawl.frontier.RerankingPriorityQueue"
    # the judge's bundle is the crawl's scorer's (the bundled cats one): it reads the page's LM sum
    assert learning.analysis.topic_reuses_score
    by_perplexity = focus_from_settings(settings(FOCUSCRAWL_MODE="learning", FOCUSCRAWL_LEARNING_JUDGE="perplexity"))
    assert not by_perplexity.judge.calibrated and by_perplexity.page_topic is None
    assert not by_perplexity.analysis.topic_reuses_score
    with pytest.raises(ValueError, match="FOCUSCRAWL_LEARNING_JUDGE"):
        focus_from_settings(settings(FOCUSCRAWL_MODE="learning", FOCUSCRAWL_LEARNING_JUDGE="oracle"))


def test_the_page_score_links_are_ranked_by_is_calibrated_only_with_a_topic_model():
    page = PageAnalysis(TextScore._of(120.0, 0.0, 120.0, 10), [], {}, 0, [], None, topic_logit=1.5)
    assert focus_from_settings(settings(FOCUSCRAWL_MODE="keywords")).page_score(page) == 120.0
    assert focus_from_settings(settings(FOCUSCRAWL_MODE="document")).page_score(page) == 1.5


def test_learning_mode_sets_its_queue_unless_the_crawl_names_its_own(tmp_path):
    s = settings(FOCUSCRAWL_MODE="learning", JOBDIR=str(tmp_path / "job"), FOCUSCRAWL_OUTPUT_DIR=str(tmp_path / "out"))
    focus = focus_from_settings(s)
    focus.use_priority_queue(s)
    assert s["SCHEDULER_PRIORITY_QUEUE"] == "focuscrawl.frontier.RerankingPriorityQueue"
    own = settings(FOCUSCRAWL_MODE="learning", SCHEDULER_PRIORITY_QUEUE="scrapy.pqueues.DownloaderAwarePriorityQueue")
    focus_from_settings(own).use_priority_queue(own)
    assert own["SCHEDULER_PRIORITY_QUEUE"] == "scrapy.pqueues.DownloaderAwarePriorityQueue"
    focus.learner_state.close()  # at a clean stop: where a resume and explain() find it
    assert (tmp_path / "job" / "focuscrawl" / "link_learner.pkl").exists()
    assert (tmp_path / "out" / "link_learner.pkl").exists()


def test_an_analysis_worker_loads_the_crawls_scorer_from_a_plain_config():
    focus = focus_from_settings(settings(FOCUSCRAWL_MODE="keywords", FOCUSCRAWL_LM_CACHE_SIZE=7))
    files = pickle.loads(pickle.dumps(focus.analysis)).scorer  # what a worker receives
    worker = files.load()
    text = "the cat sleeps on the sofa"
    assert worker.score(text) == focus.scorer.score(text) and files.cache_size == 7
    assert worker.keywords.score("tabby cat kitten") == focus.scorer.keywords.score("tabby cat kitten") > 0


def test_components_find_the_spiders_strategy_through_the_crawler():
    from scrapy.squeues import FifoMemoryQueue

    from focuscrawl.focus.ranker import LINK_META, LinkFacts
    from focuscrawl.frontier import RerankingPriorityQueue
    from focuscrawl.middlewares.learning import LinkLearningMiddleware
    from focuscrawl.middlewares.priority import LinkPriorityMiddleware

    crawler = focused_crawler(FOCUSCRAWL_MODE="learning", SCHEDULER_PRIORITY_QUEUE="scrapy.pqueues.ScrapyPriorityQueue")
    focus = crawler.spider.focus
    assert crawl_focus(crawler) is focus
    assert crawler.settings["SCHEDULER_PRIORITY_QUEUE"] == "focuscrawl.frontier.RerankingPriorityQueue"
    mw = LinkPriorityMiddleware.from_crawler(crawler)
    assert mw.ranker is focus.ranker and mw.judge is focus.judge
    learning = LinkLearningMiddleware.from_crawler(crawler)
    assert learning.learner is focus.learner and learning.judge is focus.judge
    queue = RerankingPriorityQueue.from_crawler(crawler, FifoMemoryQueue, "")
    # one learner: the learning middleware trains what the link middleware scores and the queue re-ranks by
    assert queue.learner is focus.learner is mw.ranker.learner
    with pytest.raises(RuntimeError, match="no crawl mode strategy"):
        crawl_focus(focuscrawl_crawler())


def test_the_learning_middleware_is_off_outside_mode_learning():
    from scrapy.exceptions import NotConfigured

    from focuscrawl.middlewares.learning import LinkLearningMiddleware

    for mode in ("keywords", "document", "unfocused"):
        with pytest.raises(NotConfigured):
            LinkLearningMiddleware.from_crawler(focused_crawler(FOCUSCRAWL_MODE=mode))


def test_the_progress_line_reads_the_lm_counters_of_the_spiders_scorer():
    from focuscrawl.extensions.progress import CrawlProgress

    crawler = focused_crawler(FOCUSCRAWL_MODE="keywords")
    crawler.stats.open_spider()
    crawler.spider.focus.scorer.score("the cat sleeps on the sofa")
    progress = CrawlProgress(crawler, 1.0)
    assert "LM 1 queries (0% cached)" in progress.scorer_line()


def test_the_frontiers_re_ranking_keeps_a_demoted_link_below_the_others():
    """A link of a near-duplicate page (``LinkFacts.demoted``, FOCUSCRAWL_NEARDUP_LINKS) is re-scored
    by the newer model like any other, and stays below every link that is not demoted."""
    from scrapy import Request
    from scrapy.squeues import FifoMemoryQueue

    from focuscrawl.focus.ranker import LINK_META, LinkFacts
    from focuscrawl.frontier import RerankingPriorityQueue

    from focuscrawl.middlewares.learning import LinkLearningMiddleware

    crawler = focused_crawler(FOCUSCRAWL_MODE="learning")
    ranker = crawler.spider.focus.ranker
    LinkLearningMiddleware.from_crawler(crawler)  # registers the crawl's learner with RunState
    del crawler.spider.focus  # the queue gets the learner from the crawler's RunState, not the spider
    queue = RerankingPriorityQueue.from_crawler(crawler, FifoMemoryQueue, "")
    assert queue.learner is ranker.learner
    for url, demoted in (("http://blog.test/archive/2", True), ("http://d.test/", False)):
        d = ranker.decide(100.0, "tabby", 1, url=url, parent_url="http://a.test/")
        request = Request(url, meta={LINK_META: LinkFacts("tabby", d.score, vector=d.vector, demoted=demoted)})
        request.priority = ranker.demoted(d.priority) if demoted else d.priority
        queue.push(request)
    queue.top = 10
    assert queue.rerank() == 2
    first, second = queue.pop(), queue.pop()
    assert [first.url, second.url] == ["http://d.test/", "http://blog.test/archive/2"]
    assert second.priority < ranker.lowest_priority <= first.priority
