"""Link score and priority maths (SPEC §5), no crawl."""
from __future__ import annotations

import pytest

from focuscrawl.focus.links import (LINK_RAZOR, PRIORITY_BUCKETS, bucket_index, bucket_name,
                                    bucket_priority, link_score, seed_priority)


def test_thesis_debug_example_listing_3_2():
    # thesis Listing 3.2: "Rasseporträt Maine Coon" on a German page, English model
    score = link_score(1.2596494866605083e7, 5.816842896896651, 0.01863814855281087)
    assert score == pytest.approx(8324519.834708901, rel=1e-12)
    # without the anchor keyword score the thesis's 8.3e6 is not reached
    assert link_score(1.2596494866605083e7, 5.816842896896651, 0.0) == pytest.approx(8.8175e6, rel=1e-4)


def test_anchor_blends_only_below_threshold_and_document():
    # anchor PP above T_otx (3000): document PP alone
    assert link_score(5000.0, 3500.0, 0.0) == 5000.0
    # anchor PP above the document's: document PP alone
    assert link_score(100.0, 200.0, 0.0) == 100.0
    # no anchor words: document PP alone, still shrunk by keywords (0 here)
    assert link_score(100.0, None, 0.0) == 100.0
    assert link_score(1000.0, 10.0, 0.1) == pytest.approx((700.0 + 3.0) * 0.7)
    assert link_score(1000.0, None, 0.1) == pytest.approx(700.0)
    # boundaries are inclusive
    assert link_score(3000.0, 3000.0, 0.0) == pytest.approx(3000.0)


def test_negative_score_becomes_one_and_zero_stays():
    assert link_score(1e6, 5.0, 0.5) == 1.0
    assert link_score(1e6, 5.0, 1 / 3) == pytest.approx(0.0, abs=1e-6)


def test_custom_weights():
    assert link_score(1000.0, 10.0, 0.0, doc_weight=0.5, anchor_weight=0.5) == pytest.approx(505.0)
    assert link_score(1000.0, 10.0, 0.1, keyword_weight=1.0) == pytest.approx(703.0 * 0.9)
    assert link_score(1000.0, 10.0, 0.0, anchor_max_pp=5.0) == 1000.0


@pytest.mark.parametrize("score, index, name, prio", [
    (1.0, 0, "high", 3), (600.0, 0, "high", 3), (600.1, 1, "medium", 2), (2000.0, 1, "medium", 2),
    (9999.0, 2, "normal", 1), (1e4, 2, "normal", 1), (1.01e4, 3, "low", 0), (2.9e4, 3, "low", 0),
])
def test_thesis_buckets(score, index, name, prio):
    assert bucket_index(score) == index
    assert bucket_name(index) == name
    assert bucket_priority(score, PRIORITY_BUCKETS, 0) == prio
    assert seed_priority(PRIORITY_BUCKETS, 0) > prio


def test_best_first_inside_buckets_by_default():
    scores = [1.0, 3.0, 10.0, 30.0, 599.0, 600.1, 2382.0, 3162.0, 1e4, LINK_RAZOR, 1e20, 1e25]
    prios = [bucket_priority(s) for s in scores]
    assert prios == sorted(prios, reverse=True)
    assert len(set(prios[:-1])) == len(prios) - 1  # distinct steps up to 1e20
    assert prios[-1] == prios[-2]  # beyond: the bucket's last step
    assert bucket_priority(1.0) - bucket_priority(10.0) == 10  # ten steps per power of ten
    assert bucket_priority(2382.0) > bucket_priority(3162.0)  # same "normal" bucket, ordered
    assert seed_priority() > prios[0]


def test_a_better_bucket_always_wins_over_a_coarse_step():
    # 600 and 600.1 share a log step (ceil(27.78) == 28) but not a bucket
    assert bucket_priority(600.0, PRIORITY_BUCKETS, 10) > bucket_priority(600.1, PRIORITY_BUCKETS, 10)
    # with 1 step per decade 11 and 99 tie inside "high", FIFO there
    assert bucket_priority(11.0, PRIORITY_BUCKETS, 1) == bucket_priority(99.0, PRIORITY_BUCKETS, 1)
    assert bucket_priority(99.0, PRIORITY_BUCKETS, 1) > bucket_priority(101.0, PRIORITY_BUCKETS, 1)


def test_other_bucket_counts_get_generic_names():
    assert bucket_index(5.0, [10.0]) == 0 and bucket_index(50.0, [10.0]) == 1
    assert bucket_name(1, 2) == "b1"
    assert bucket_priority(50.0, [10.0], 0) == 0 and seed_priority([10.0], 0) == 2


def test_links_log_keeps_whole_lines_after_a_kill(tmp_path):
    from focuscrawl.middlewares.priority import LINKS_LOG_COLUMNS, LINKS_LOG_FLOAT_DIGITS, LINKS_LOG_HEADER
    from focuscrawl.output.files import LineLog
    from focuscrawl.output.tsv import row

    def write(*values):
        log = LineLog(path, LINKS_LOG_HEADER)
        log.write_lines([row(values, float_digits=LINKS_LOG_FLOAT_DIGITS)])
        log.close()

    path = tmp_path / "links.tsv"
    write("http://a.test/", "http://b.test/", "tab\there", 10.0, None, 0.5, 12.5, "high", 3, 1)
    with open(path, "a") as f:
        f.write("http://a.test/\thttp://c.test/\thalf-wri")  # a killed crawl
    write("http://a.test/", "http://d.test/", "", 10.0, None, None, 10.0, "high", 3, 1)
    lines = path.read_text().splitlines()
    assert lines[0].split("\t") == list(LINKS_LOG_COLUMNS)
    assert [line.split("\t") for line in lines[1:]] == [
        ["http://a.test/", "http://b.test/", "tab here", "10", "", "0.5", "12.5", "high", "3", "1"],
        ["http://a.test/", "http://d.test/", "", "10", "", "", "10", "high", "3", "1"]]


def test_links_log_rows_of_a_response_go_with_its_page_item(tmp_path):
    """links.tsv: the middleware writes nothing itself; the rows of one response go, as one
    list, with the page's item to the page writer (which writes them with the page's row,
    under one checkpoint). A response without a page item (its row is never written) logs none."""
    import asyncio

    from scrapy import Request
    from scrapy.http import HtmlResponse

    from tests.support.crawler import focused_crawler

    from focuscrawl.analysis import META_KEY, PageAnalysis
    from focuscrawl.focus.ranker import LINK_META, LinkFacts
    from focuscrawl.items import PageItem
    from focuscrawl.lm.scorer import TextScore
    from focuscrawl.middlewares.priority import LinkPriorityMiddleware

    crawler = focused_crawler(FOCUSCRAWL_MODE="unfocused", FOCUSCRAWL_LINKS_LOG=True,
                              FOCUSCRAWL_OUTPUT_DIR=str(tmp_path))
    mw = LinkPriorityMiddleware.from_crawler(crawler)
    crawler.stats.open_spider()
    response = HtmlResponse("http://a.test/", body=b"<html></html>", request=Request("http://a.test/"))
    # the page's score comes from the analysis the spider left in meta (no other key)
    response.meta[META_KEY] = PageAnalysis(TextScore(123.0, 0.5, 80.0, 9), [], {}, 0, [], None)
    links = [Request(f"http://a.test/{i}", meta={LINK_META: LinkFacts(f"a{i}"), "depth": 1}) for i in range(3)]
    page = PageItem(url="http://a.test/")

    async def output():
        for o in [*links, page]:
            yield o

    async def run():
        return [o async for o in mw.process_spider_output_async(response, output())]

    out = asyncio.run(run())
    assert out == [*links, page] and [r.priority for r in links] == [-1, -1, -1]
    assert [line.split("\t")[:4] for line in page["link_rows"]] == [
        ["http://a.test/", f"http://a.test/{i}", f"a{i}", "123"] for i in range(3)]
    again = PageItem(url="http://a.test/")
    assert list(mw.process_spider_output(response, iter(links[:2]))) == links[:2]  # no item: no rows kept
    assert list(mw.process_spider_output(response, iter([again]))) == [again] and "link_rows" not in again
    mw.spider_closed()
    assert not (tmp_path / "links.tsv").exists()


def test_link_facts_go_with_the_request_in_one_meta_key_and_come_back_with_its_page():
    """Mode ``learning``: what the link middleware decides of a link (score, the learner's vector
    and score, the topicality of the page it was found on) goes in the request's one
    ``LinkFacts``; on the page it leads to, the same facts are the learner's training example
    and the grandparent's topicality of that page's links. No other key is written to either meta."""
    from scrapy import Request
    from scrapy.http import HtmlResponse

    from tests.support.crawler import focused_crawler

    from focuscrawl.analysis import META_KEY, PageAnalysis
    from focuscrawl.focus.ranker import LINK_META, LinkFacts
    from focuscrawl.items import PageItem
    from focuscrawl.lm.scorer import TextScore
    from focuscrawl.middlewares.learning import LinkLearningMiddleware
    from focuscrawl.middlewares.priority import LinkPriorityMiddleware

    crawler = focused_crawler(FOCUSCRAWL_MODE="learning", FOCUSCRAWL_LEARNING_JUDGE="perplexity")
    mw, teacher = LinkPriorityMiddleware.from_crawler(crawler), LinkLearningMiddleware.from_crawler(crawler)
    crawler.stats.open_spider()
    learner = mw.ranker.learner
    assert teacher.learner is learner

    def output(response, result):  # the spider's output through both, as SPIDER_MIDDLEWARES chains them
        return list(teacher.process_spider_output(response, mw.process_spider_output(response, result)))

    def page(url: str, request: Request, perplexity: float) -> HtmlResponse:
        response = HtmlResponse(url, body=b"<html></html>", request=request)
        response.meta[META_KEY] = PageAnalysis(TextScore(perplexity, 0.0, perplexity, 9), [], {}, 0, [], None)
        return response

    seed = page("http://a.test/", Request("http://a.test/", meta={"seed": True}), 50.0)
    link = Request("http://a.test/cats", meta={LINK_META: LinkFacts("tabby cats"), "depth": 1})
    assert output(seed, [link, PageItem(url="http://a.test/")])[0] is link
    facts = link.meta[LINK_META]
    assert set(link.meta) == {LINK_META, "depth"} and set(seed.meta) == {"seed", META_KEY}
    topicality = mw.judge.topicality(50.0)
    assert facts.anchor == "tabby cats" and facts.parent_perplexity == 50.0 and facts.score is not None
    assert facts.vector is not None and facts.learned is not None and facts.parent_topicality == topicality

    child = page("http://a.test/cats", link, 5000.0)
    onward = Request("http://a.test/dogs", meta={LINK_META: LinkFacts("dogs"), "depth": 2})
    item = PageItem(url="http://a.test/cats")
    scored = list(mw.process_spider_output(child, [onward, item]))
    assert learner.batch == [] and "judged" not in item  # the link middleware only scores
    list(teacher.process_spider_output(child, scored))
    assert [vector for vector, _ in learner.batch] == [facts.vector]  # the link that led to the page
    assert item["judged"] == (mw.judge.topicality(5000.0), False)
    decided = mw.ranker.decide(5000.0, "dogs", 2, facts.score, url="http://a.test/dogs",
                               parent_url="http://a.test/cats", parent_topicality=mw.judge.topicality(5000.0),
                               grandparent_topicality=topicality)
    assert "g:2" in decided.features  # the grandparent's topicality, from the facts of the link to the page
    assert (onward.meta[LINK_META].vector, onward.meta[LINK_META].learned) == (decided.vector, decided.learned)
