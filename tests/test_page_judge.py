"""Mode learning's page judge calibrated at the level of pages: a topic bundle built from a small,
narrow neutral corpus must not call every page on topic; ``topic build``/``show`` say when the
neutral corpus is too small or too narrow; the crawl warns when its judge's share is implausible;
``eval`` scores the judge against the truth."""
from __future__ import annotations

import json
import logging
import random

import pytest
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from focuscrawl import settings as defaults
from focuscrawl.focus.judge import PageJudge
from tests.support.toymodel import write_topic_corpora

#: three encyclopaedia leads of the demo pool: a user's small neutral corpus, unlike captions in style
NARROW_LEADS = ("Asteroid", "Bread", "Brother")


@pytest.fixture(scope="module")
def pool():
    from focuscrawl.testweb.textpool import TextPool

    return TextPool.from_bundle()


@pytest.fixture(scope="module")
def narrow(pool, tmp_path_factory):
    """Cat captions (positive) and three Wikipedia leads (neutral), as files."""
    folder = tmp_path_factory.mktemp("narrow")
    positive, _ = write_topic_corpora(folder)
    neutral = []
    for title in NARROW_LEADS:
        path = folder / f"{title}.txt"
        path.write_text(pool.leads[title])
        neutral.append(path)
    return positive, neutral


def _build(corpora, out, **kwargs):
    from focuscrawl.topic.build import build_bundle

    lines = []
    build_bundle([corpora[0]], corpora[1], out, order=3, background_order=2, progress=lines.append, binary=False,
                 **kwargs)
    return lines


@pytest.fixture(scope="module")
def narrow_alone(narrow, tmp_path_factory):
    """The bundle of the narrow neutral corpus alone (``--no-background``), and what the build said."""
    out = tmp_path_factory.mktemp("alone") / "cats"
    return out, _build(narrow, out, background=False)


@pytest.fixture(scope="module")
def narrow_with_background(narrow, tmp_path_factory):
    out = tmp_path_factory.mktemp("kept") / "cats"
    return out, _build(narrow, out)


def _pages(sentences: list[str], n: int, seed: int) -> list[list[str]]:
    """``n`` pages of 6-12 normalised sentences each."""
    from focuscrawl.topic.build import unique_sentences

    sentences = unique_sentences(sentences)
    rng = random.Random(seed)
    return [rng.sample(sentences, rng.randint(6, 12)) for _ in range(n)]


def _general_pages(pool) -> list[list[str]]:
    """Pages of captions of photos of anything but cats and dogs: general web text of the topic's style."""
    return _pages([c for p in pool.other_photos("cat", "dog") for c in p.captions][1500:], 60, 1)


def _cat_pages(pool) -> list[list[str]]:
    from focuscrawl.lm.demo_corpus import topic_pattern

    cat = topic_pattern("cat")
    return _pages([c for p in pool.topic_photos("cat") for c in p.captions if cat.search(c)], 60, 2)


def _share_on_topic(judge: PageJudge, model, pages) -> float:
    return sum(judge.on_topic(judge.topicality(topic_logit=model.page_logit(p))) for p in pages) / len(pages)


def _judge(model, level: float) -> PageJudge:
    return PageJudge.from_settings(Settings({"FOCUSCRAWL_LEARNING_JUDGE": "calibrated",
                                             "FOCUSCRAWL_LEARNING_ON_TOPIC_P": defaults.FOCUSCRAWL_LEARNING_ON_TOPIC_P,
                                             "FOCUSCRAWL_LEARNING_PAGE_QUANTILE": level}), topic_model=model)


def test_a_narrow_neutral_corpus_alone_fools_the_sentence_calibration_not_the_page_cut(narrow_alone, pool):
    """The failure: against three encyclopaedia leads, captions of anything look like the topic's
    and the sentence calibration calls most pages of them on topic. The page cut (the log-odds
    of the bundle's held-out topic pseudo-pages) calls few, and keeps the cat pages."""
    from focuscrawl.topic.model import TopicModel

    model = TopicModel(narrow_alone[0])
    general, cats = _general_pages(pool), _cat_pages(pool)
    sentence_only = _judge(model, 0.0)
    assert sentence_only.page_cut is None
    assert _share_on_topic(sentence_only, model, general) > 0.5
    paged = _judge(model, defaults.FOCUSCRAWL_LEARNING_PAGE_QUANTILE)
    assert paged.page_cut == pytest.approx(model.page_quantile("positive", defaults.FOCUSCRAWL_LEARNING_PAGE_QUANTILE))
    assert _share_on_topic(paged, model, general) < 0.2
    assert _share_on_topic(paged, model, cats) > 0.9


def test_the_background_kept_beside_a_narrow_neutral_corpus_tells_general_pages_from_the_topic(
        narrow_with_background, pool):
    from focuscrawl.topic.build import BACKGROUND_SOURCE
    from focuscrawl.topic.model import TopicModel

    folder, _ = narrow_with_background
    manifest = json.loads((folder / "bundle.json").read_text())
    assert manifest["sources"]["neutral"] == [f"{t}.txt" for t in NARROW_LEADS] + [BACKGROUND_SOURCE]
    assert manifest["sentences"]["neutral_train"] > 10 * manifest["sentences"]["neutral_given"]
    model = TopicModel(folder)
    judge = _judge(model, defaults.FOCUSCRAWL_LEARNING_PAGE_QUANTILE)
    assert _share_on_topic(_judge(model, 0.0), model, _general_pages(pool)) < 0.2  # even at the sentence cut
    assert _share_on_topic(judge, model, _general_pages(pool)) < 0.1
    assert _share_on_topic(judge, model, _cat_pages(pool)) > 0.9


def test_the_page_calibration_holds_quantiles_of_three_kinds_of_pseudo_pages(narrow_alone):
    from focuscrawl.topic.build import PAGE_DILUTION, PAGE_SENTENCES
    from focuscrawl.topic.model import PAGE_SIDES, SCORERS, TopicModel

    model = TopicModel(narrow_alone[0])
    pages = model.calibration["pages"]
    assert pages["sentences_per_page"] == list(PAGE_SENTENCES) and pages["dilution"] == PAGE_DILUTION
    for scorer in SCORERS:
        assert set(pages["scorers"][scorer]) == set(PAGE_SIDES)
        assert model.page_quantile("positive", 0.5, scorer) > model.page_quantile("general", 0.5, scorer)
    # interpolated between the stored levels, monotone
    low, mid, high = (model.page_quantile("positive", q) for q in (0.05, 0.075, 0.1))
    assert low <= mid <= high
    assert model.page_share_above("positive", model.page_quantile("positive", 0.1)) == pytest.approx(0.9)


def test_pseudo_pages_are_deterministic_and_diluted_by_the_other_text():
    from focuscrawl.topic.build import PAGE_SENTENCES, pseudo_pages

    topic = [f"topic sentence {i}" for i in range(50)]
    other = [f"other sentence {i}" for i in range(50)]
    pages = pseudo_pages(topic, other, 200, 0.25, "seed")
    assert pages == pseudo_pages(topic, other, 200, 0.25, "seed")
    assert all(PAGE_SENTENCES[0] <= len(p) <= PAGE_SENTENCES[1] and len(set(p)) == len(p) for p in pages)
    share = sum(s.startswith("other") for p in pages for s in p) / sum(map(len, pages))
    assert 0.2 < share < 0.3
    assert not any(s.startswith("other") for p in pseudo_pages(topic, other, 20, 0.0, "seed") for s in p)


def test_the_judge_shifts_the_page_log_odds_to_the_page_cut():
    judge = PageJudge(calibrated=True, on_topic_p=0.6, page_cut=5.0)
    assert not judge.on_topic(judge.topicality(topic_logit=4.9)) and judge.on_topic(judge.topicality(topic_logit=5.0))
    assert judge.topicality(topic_logit=5.0) == pytest.approx(0.6)
    low = PageJudge(calibrated=True, on_topic_p=0.6, page_cut=-3.0)  # below the probability's cut: it stays
    assert low.shift == 0.0 and low.topicality(topic_logit=1.0) == pytest.approx(0.7310586)
    assert PageJudge(page_cut=5.0).page_cut is None  # the perplexity judge has none
    with pytest.raises(ValueError, match="FOCUSCRAWL_LEARNING_PAGE_QUANTILE must be a share"):
        PageJudge.from_settings(Settings({"FOCUSCRAWL_LEARNING_JUDGE": "calibrated",
                                          "FOCUSCRAWL_LEARNING_ON_TOPIC_P": 0.6,
                                          "FOCUSCRAWL_LEARNING_PAGE_QUANTILE": 5}), topic_model=object())


def test_a_bundle_without_page_calibration_is_judged_by_the_sentence_cut(narrow_alone, tmp_path):
    import shutil

    from focuscrawl.topic.model import TopicModel

    old = tmp_path / "old"
    shutil.copytree(narrow_alone[0], old)
    calibration = json.loads((old / "calibration.json").read_text())
    del calibration["pages"]
    (old / "calibration.json").write_text(json.dumps(calibration))
    model = TopicModel(old)
    assert model.page_quantile("positive", 0.05) is None
    assert _judge(model, 0.05).page_cut is None


def test_a_malformed_page_calibration_is_refused(narrow_alone, tmp_path):
    import shutil

    from focuscrawl.topic.model import TopicModel

    bad = tmp_path / "bad"
    shutil.copytree(narrow_alone[0], bad)
    calibration = json.loads((bad / "calibration.json").read_text())
    calibration["pages"]["scorers"]["combined"]["positive"] = [1.0, "x"]
    (bad / "calibration.json").write_text(json.dumps(calibration))
    with pytest.raises(ValueError, match="not a valid calibration"):
        TopicModel(bad)


def test_topic_build_and_show_say_the_neutral_corpus_is_small_and_narrow(narrow_alone, narrow_with_background,
                                                                          capsys):
    from focuscrawl.cli import main

    for folder, said in (narrow_alone, narrow_with_background):
        text = "\n".join(said)
        assert "the neutral corpus is small" in text and "the neutral corpus is narrow" in text
        assert "Add general text" in text and "Add neutral text written like the positive corpus" in text
        manifest = json.loads((folder / "bundle.json").read_text())
        assert manifest["neutral_check"]["general_share"] > 0.15
        assert main(["topic", "show", str(folder)]) == 0
        shown = capsys.readouterr().out
        assert "note: the neutral corpus is narrow" in shown and "page judge (combined, mode learning)" in shown
    assert "without the bundled background (--no-background)" in "\n".join(narrow_alone[1])
    assert "the bundled general-English background is kept beside it" in "\n".join(narrow_with_background[1])


def test_neutral_advice_is_silent_for_a_large_broad_corpus():
    from focuscrawl.topic.build import MIN_NEUTRAL_SENTENCES, neutral_advice

    broad = {"neutral_check": {"sentences": MIN_NEUTRAL_SENTENCES, "keywords_alone": ["cat"], "general_share": 0.01}}
    assert neutral_advice(broad, {}) == []
    assert neutral_advice({}, {}) == []  # built without --neutral: the background is the neutral corpus
    small = {"neutral_check": {"sentences": 10}}
    assert len(neutral_advice(small, {})) == 1


# -- the crawl's warning --------------------------------------------------------------------------
def _watch(after: int = 5, share: float = 0.8, hosts: float = 0.5):
    from focuscrawl.middlewares.learning import JudgeWatch

    crawler = get_crawler()
    crawler.stats.open_spider()
    return JudgeWatch(crawler.stats, after, share, hosts, bundle="cats/"), crawler.stats


def test_the_crawl_warns_once_when_its_judge_calls_nearly_every_page_of_every_site_on_topic(caplog):
    watch, stats = _watch()
    with caplog.at_level(logging.WARNING, logger="focuscrawl.middlewares.learning"):
        for i in range(4):
            watch.judged(True, f"site-{i}.test")
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # too few pages to tell
        for i in range(4, 10):
            watch.judged(True, f"site-{i}.test")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "calls 5 of the first 5 pages on topic (100%), on 5 of the 5 sites" in warnings[0].getMessage()
    assert "`focuscrawl topic show cats/`" in warnings[0].getMessage()
    assert stats.get_value("focuscrawl/learning/judge_implausible") == 1


def test_a_crawl_that_found_its_topic_on_a_few_sites_is_not_warned(caplog):
    """Nine pages in ten on topic, all of two sites among ten: a focused crawl that found its
    topic (the calibrated judge's crawls on the hard webs), not a fooled judge."""
    watch, stats = _watch(after=20)
    with caplog.at_level(logging.WARNING):
        for i in range(100):
            on = i % 10 != 0
            watch.judged(on, f"topic-{i % 2}.test" if on else f"other-{i % 8}.test")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert stats.get_value("focuscrawl/learning/judge_implausible") is None
    half, _ = _watch(after=20)
    for i in range(100):  # every site on topic, but half of the pages: plausible too
        half.judged(i % 2 == 0, f"site-{i // 2}.test")
    assert not half.warned
    never, _ = _watch(after=0)
    for i in range(100):
        never.judged(True, f"site-{i}.test")
    assert never.seen == 0


def test_warning_settings_are_checked():
    from focuscrawl.middlewares.learning import JudgeWatch

    crawler = get_crawler()
    for name in ("FOCUSCRAWL_LEARNING_JUDGE_WARN_SHARE", "FOCUSCRAWL_LEARNING_JUDGE_WARN_HOSTS"):
        settings = Settings({"FOCUSCRAWL_LEARNING_JUDGE_WARN_SHARE": 0.8, "FOCUSCRAWL_LEARNING_JUDGE_WARN_HOSTS": 0.5})
        settings.set(name, 1.5)
        with pytest.raises(ValueError, match=name):
            JudgeWatch.from_settings(settings, crawler.stats)


# -- eval: the judge against the truth ------------------------------------------------------------
def test_judge_scores_are_precision_and_recall_against_the_truth():
    from focuscrawl.eval.crawl_metrics import judge_scores

    called = [True, True, True, False, False, True]
    true = [True, False, True, True, False, False]
    scores = judge_scores(called, true)
    assert scores == {"judged": 6, "judged_on_topic_share": 4 / 6, "on_topic_share": 3 / 6,
                      "precision": 2 / 4, "recall": 2 / 3}
    assert judge_scores([False], [False])["precision"] is None and judge_scores([], [])["judged_on_topic_share"] is None


def test_a_learning_crawl_whose_judge_calls_every_page_on_topic_warns_once(tmp_path):
    """A real crawl: a portal and one on-topic page on each of five sites, the warning after
    four judged pages."""
    from tests.support.crawl import crawl
    from tests.support.localweb import LocalWeb, Page, html
    from tests.support.toymodel import NORMAL

    texts = ["cat cat cat cat cat.", "kitten tabby cat kitten tabby.", "tabby tabby kitten cat cat.",
             "kitten cat kitten cat tabby tabby.", "cat tabby cat kitten kitten kitten."]
    pages = {("portal.test", "/"): Page(html("portal", NORMAL, [(f"http://good-{i}.test/", "cats")
                                                                for i in range(1, 6)]))}
    for i, text in enumerate(texts, 1):
        pages[(f"good-{i}.test", "/")] = Page(html("good", text))
    settings = {"FOCUSCRAWL_LEARNING_JUDGE_WARN_AFTER": 4, "FOCUSCRAWL_LEARNING_JUDGE_WARN_SHARE": 0.5}
    with LocalWeb(pages) as web:
        stats, proc = crawl(web, tmp_path, "http://portal.test/", mode="learning", settings=settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats["focuscrawl/learning/judged_on_topic"] == 5
    assert stats["focuscrawl/learning/judge_implausible"] == 1
    assert proc.stderr.count("the page judge calls") == 1
    # the portal, then three cat pages of three sites
    assert "calls 3 of the first 4 pages on topic (75%), on 3 of the 4 sites" in proc.stderr
