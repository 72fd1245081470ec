"""Crawl mode ``learning``: the online link learner, its host term, and a real crawl on a loopback web."""
from __future__ import annotations

import pytest
from scrapy.settings import Settings

from focuscrawl import settings as defaults
from focuscrawl.analysis import LinkContext, page_links, parse_tree
from focuscrawl.focus.judge import PageJudge
from focuscrawl.focus.link_learner import (HostHarvest, LinkLearner, feature_prefixes, link_features,
                                           average_ranks, best_blend_trust, learner_from_settings, ranking_auc,
                                           trust_from_auc)
from tests.support.crawl import crawl, links_log
from tests.support.runfiles import read_tsv
from tests.support.localweb import LocalWeb, Page, html
from tests.support.toymodel import LOW, NORMAL
from tests.support import warmfork


def _features(url: str, anchor: str = "read more") -> list[str]:
    return link_features(anchor, url, "http://portal.test/", 0.2, None, 300.0)


def test_features_name_anchor_url_parents_and_thesis_score():
    feats = link_features("Cute Cats!", "http://cats-blog-1.test/post/3-a-cat.html", "http://portal.test/",
                          0.95, None, 12.0)
    assert {"a:cute", "a:cats", "u:cats", "u:blog", "u:test", "u:post", "u:cat", "u:html"} <= set(feats)
    assert "x:other-host" in feats and "p:5" in feats and "g:none" in feats and "t:2" in feats
    assert "u:3" not in feats  # digits say nothing about the topic
    assert link_features("", "http://a.test/x", "http://a.test/", None, 0.0, None)[0] == "a:<none>"


def test_feature_groups_leave_groups_out_for_an_ablation():
    from focuscrawl.focus.ranker import LinkRanker

    settings = Settings({"FOCUSCRAWL_LEARNING_FEATURES": ["url", "host", "thesis"]})
    ranker = LinkRanker.from_settings(settings)
    feats = link_features("Cute Cats!", "http://cats-blog-1.test/post", "http://portal.test/", 0.95, None, 12.0,
                          ranker.feature_prefixes)
    assert feats == ["u:cats", "u:blog", "u:test", "u:post", "x:other-host", "t:2"]  # no anchor, no parents
    with pytest.raises(ValueError, match="FOCUSCRAWL_LEARNING_FEATURES: unknown group"):
        LinkRanker.from_settings(Settings({"FOCUSCRAWL_LEARNING_FEATURES": ["anchor", "sibling"]}))


def test_link_contexts_name_each_links_block_and_the_words_around_its_anchor():
    page = ('<html><body><div id="main"><p>Our vet says <a href="/care">kitten care</a> matters a lot. '
            'See <a href="/food">food</a>.</p></div><div id="side"><h3>Recent posts</h3><!-- x --><ul>'
            '<li><a href="/a">Tabby <b>tips</b></a></li><li><a href="/b">Litter</a></li></ul></div>'
            '<div id="nav" class="top bar"><a href="/c">C</a></div></body></html>')
    contexts: dict = {}
    links, _ = page_links(parse_tree(page, "http://h.test/"), "http://h.test/", contexts)
    assert links == page_links(parse_tree(page, "http://h.test/"), "http://h.test/")[0]  # the same links
    assert contexts["http://h.test/care"] == LinkContext(0, "Our vet says matters a lot. See food", "p")
    assert contexts["http://h.test/food"].block == 0 and contexts["http://h.test/c"].kind == "div#nav.top"
    # the list's heading, then the neighbouring anchors
    assert contexts["http://h.test/a"] == LinkContext(1, "Recent posts Litter", "ul")
    assert contexts["http://h.test/b"] == LinkContext(1, "Recent posts Tabby tips", "ul")


def test_context_tokens_and_the_new_groups_are_selectable():
    feats = link_features("read more", "http://a.test/x", "http://a.test/", None, None, None, context="Recent kitten posts, 2015 kitten")
    assert [f for f in feats if f.startswith("c:")] == ["c:recent", "c:kitten", "c:posts"]
    assert not [f for f in link_features("read more", "http://a.test/x", "http://a.test/", None, None, None)
                if f.startswith("c:")]
    assert feature_prefixes(["anchor", "context", "block", "siblings", "hubs"]) == frozenset({"a", "c", "k"})
    assert "k:ul.nav" in link_features("a", "http://a.test/x", "", None, None, None, block="ul.nav")
    without = link_features("a", "http://a.test/x", "", None, None, None, feature_prefixes(["anchor"]), "kitten")
    assert without == ["a:a"]


def test_siblings_lift_the_links_of_a_block_of_finds_and_sink_a_block_of_misses():
    learner = LinkLearner(siblings=True)
    assert learner.sibling_shift(("http://p.test/", 0)) == 0.0  # nothing judged: no shift
    for i in range(3):
        learner.observe(_features(f"http://a.test/{i}"), "a.test", True, origin=("http://p.test/", 0))
        learner.observe(_features(f"http://b.test/{i}"), "b.test", False, origin=("http://p.test/", 1))
    finds, misses = learner.sibling_shift(("http://p.test/", 0)), learner.sibling_shift(("http://p.test/", 1))
    assert finds > 0 > misses
    # a block not judged yet takes the page's rate (half on topic here: above the prior)
    assert 0 < learner.sibling_shift(("http://p.test/", 2)) < finds
    assert learner.sibling_shift(("http://q.test/", 0)) == 0.0
    # the shift enters the learned score, with the weight; off by default
    learner.trust = 1.0
    assert learner.score(_features("http://c.test/"), 300.0, "c.test", origin=("http://p.test/", 0)) > learner.score(
        _features("http://c.test/"), 300.0, "c.test", origin=("http://p.test/", 1))
    plain = LinkLearner()
    plain.observe(_features("http://a.test/1"), "a.test", True, origin=("http://p.test/", 0))
    assert plain.sibling_shift(("http://p.test/", 0)) == 0 and not plain.sibling_blocks


def test_hubs_an_off_topic_page_that_led_to_an_on_topic_one_teaches_its_link_once():
    learner = LinkLearner(hubs=True, retrain_every=100)
    learner.observe(_features("http://hub.test/list", "links"), "hub.test", False, url="http://hub.test/list")
    assert (learner.positives, learner.negatives) == (0, 1)
    learner.observe(_features("http://cat.test/1"), "cat.test", True, url="http://cat.test/1",
                    origin=("http://hub.test/list", 0))
    # the page's own example and the hub's delayed positive one (the hub's link's vector)
    assert (learner.positives, learner.negatives, learner.hub_examples) == (2, 1, 1)
    assert learner.batch[-1] == (learner.vector(_features("http://hub.test/list", "links")), 1)
    learner.observe(_features("http://cat.test/2"), "cat.test", True, url="http://cat.test/2",
                    origin=("http://hub.test/list", 0))
    assert learner.hub_examples == 1  # once per hub
    plain = LinkLearner()
    plain.observe(_features("http://hub.test/list"), "hub.test", False, url="http://hub.test/list")
    plain.observe(_features("http://cat.test/1"), "cat.test", True, origin=("http://hub.test/list", 0))
    assert plain.hub_examples == 0 and plain.positives == 1


def test_siblings_and_hubs_forget_their_oldest_pages_beyond_the_bound(monkeypatch):
    from focuscrawl.focus import link_learner

    monkeypatch.setattr(link_learner, "MAX_REMEMBERED", 2)
    learner = LinkLearner(siblings=True, hubs=True)
    for i in range(3):
        learner.observe(_features(f"http://a.test/{i}"), "a.test", False, url=f"http://a.test/{i}",
                        origin=(f"http://p{i}.test/", 0))
    assert list(learner.sibling_pages) == ["http://p1.test/", "http://p2.test/"]
    assert len(learner.sibling_blocks) == 2 and list(learner.hub_candidates) == ["http://a.test/1", "http://a.test/2"]


def test_a_save_holds_the_siblings_and_hubs_state_only_when_they_are_on(tmp_path):
    import pickle

    plain, both = LinkLearner(), LinkLearner(siblings=True, hubs=True)
    for learner in (plain, both):
        learner.observe(_features("http://a.test/1"), "a.test", False, url="http://a.test/1", origin=("http://p.test/", 0))
    plain.save(tmp_path / "plain.pkl")
    both.save(tmp_path / "both.pkl")
    assert not {"sibling_pages", "hubs", "hub_candidates"} & set(pickle.loads((tmp_path / "plain.pkl").read_bytes()))
    loaded = LinkLearner.load(tmp_path / "both.pkl")
    assert loaded.hubs and loaded.sibling_pages == {"http://p.test/": [1, 0]} and "http://a.test/1" in loaded.hub_candidates



def test_url_host_is_urlsplits_hostname():
    """The learner's host (its harvest, same-host feature) is the URL's host name: not a user
    name before ``@``, nor a port, nor part of an IPv6 literal or of a query."""
    from urllib.parse import urlsplit

    from focuscrawl.focus.link_learner import url_host

    urls = ["http://a.test/p", "https://Cats.Example.ORG:8443/x/y?z=1", "https://u:p@Ex.com:81/x",
            "http://user@host.test/", "http://[::1]:8080/p", "http://[2001:DB8::7]/", "http://a.b?q=1",
            "http://a.b#frag", "http://127.0.0.1:39033/p/4581", "https://xn--bcher-kva.example/", "http://a.test"]
    for url in urls:
        assert url_host(url) == urlsplit(url).hostname, url


def test_host_harvest_rises_and_sinks_but_one_page_is_not_a_verdict():
    hosts = HostHarvest(exploration=0.05)
    for _ in range(20):
        hosts.add("elsewhere.test", False)
    unseen = hosts.score("new.test")
    hosts.add("decoy.test", False)
    once = hosts.score("decoy.test")
    assert 0.6 * unseen < once < unseen  # judged on one page: only a little lower
    for _ in range(6):
        hosts.add("decoy.test", False)
        hosts.add("good.test", True)
    assert hosts.score("decoy.test") < 0.5 * once
    assert hosts.score("good.test") > 2 * unseen


def test_learner_moves_a_host_up_and_a_decoy_host_down():
    learner = LinkLearner(retrain_every=4)
    good, decoy = "http://good.test/post/1.html", "http://decoy.test/post/1.html"
    before = learner.score(_features(good), 300.0, "good.test"), learner.score(_features(decoy), 300.0, "decoy.test")
    assert before[0] == before[1]  # same anchor, same thesis score: nothing known yet
    for i in range(12):
        learner.observe(_features(f"http://good.test/post/{i}.html"), "good.test", True)
        learner.observe(_features(f"http://decoy.test/post/{i}.html"), "decoy.test", False)
    assert learner.version == 6 and learner.trained
    after = learner.score(_features(good), 300.0, "good.test"), learner.score(_features(decoy), 300.0, "decoy.test")
    assert after[0] > before[0] > after[1]
    # the model itself (not only the host term) learnt the URL tokens of the good host
    assert learner.model_probability(_features(good)) > 0.5 > learner.model_probability(_features(decoy))
    assert learner.priority(after[0]) > learner.priority(after[1])


def test_learner_is_deterministic():
    def run() -> list[float]:
        learner = LinkLearner(retrain_every=3)
        for i in range(30):
            learner.observe(_features(f"http://h{i % 4}.test/p/{i}", f"w{i % 5}"), f"h{i % 4}.test", i % 3 == 0)
        return [learner.score(_features(f"http://h{k}.test/q", "w1"), 100.0, f"h{k}.test") for k in range(5)]

    assert run() == run()


def test_average_ranks_are_scipys_rankdata():
    import numpy as np
    from scipy.stats import rankdata

    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 2000):
        for values in (rng.normal(size=n), rng.integers(0, 5, size=n).astype(float), np.round(rng.normal(size=n), 1)):
            assert average_ranks(values).tolist() == rankdata(values).tolist()


def test_ranking_auc_and_the_trust_it_gives():
    assert ranking_auc([3, 2, 1], [1, 0, 0]) == 1.0 and ranking_auc([1, 2, 3], [1, 0, 0]) == 0.0
    assert ranking_auc([1, 1, 1, 1], [1, 0, 1, 0]) == 0.5  # ties count half
    assert ranking_auc([1, 2], [1, 1]) is None  # one class: nothing to rank
    assert trust_from_auc(0.9, 0.5, 0.0) == 1.0 and trust_from_auc(0.5, 0.9, 1.0) == 0.0
    assert abs(trust_from_auc(0.8, 0.7, 0.0) - 0.6) < 1e-12 and trust_from_auc(0.3, 0.4, 0.0) == 0.5
    assert trust_from_auc(None, 0.9, 0.25) == 0.25


def _judge_links(learner: LinkLearner, thesis_ranks_well: bool) -> None:
    """Links to an on-topic host and to an off-topic one with the same anchor; the thesis's
    score (lower = better) either tells them apart or points the wrong way."""
    for i in range(40):
        good = i % 2 == 0
        host = "good.test" if good else "decoy.test"
        thesis = 5.0 if good == thesis_ranks_well else 500.0
        learner.observe(_features(f"http://{host}/post/{i}.html"), host, good, thesis_score=thesis)


def test_learner_is_trusted_only_where_it_ranks_better_than_the_thesis():
    # the thesis's score already tells on-topic links from the others: the learner, which
    # starts from it, is at best as good, and gets at most half a say
    agreeing = LinkLearner(retrain_every=4)
    _judge_links(agreeing, thesis_ranks_well=True)
    assert 0 < agreeing.trust <= 0.5
    # the thesis's score points to the decoy (a look-alike topic): the learner takes over
    misled = LinkLearner(retrain_every=4)
    _judge_links(misled, thesis_ranks_well=False)
    assert misled.trust == 1.0
    good, decoy = _features("http://good.test/post/99.html"), _features("http://decoy.test/post/99.html")
    assert misled.score(good, 500.0, "good.test") > misled.score(decoy, 5.0, "decoy.test")
    # with little trust the thesis's order of two unseen hosts' links stands
    assert agreeing.score(_features("http://a.test/1"), 5.0, "a.test") > agreeing.score(
        _features("http://b.test/1"), 500.0, "b.test")


def test_best_blend_trust_is_the_blend_weight_that_ranked_the_judged_links_best():
    thesis, learned, labels = [0, 1, 2, 3], [0, 3, 1, 2], [0, 0, 1, 1]
    # the thesis alone ranks them perfectly, the learned score alone does not (AUC 0.5): only
    # a blend with less than 1/3 learned keeps the order; of equal blends the nearest to before
    assert best_blend_trust(thesis, learned, labels, 0.9) == 0.3
    assert best_blend_trust(thesis, learned, labels, 0.0) == 0.0
    assert best_blend_trust(learned, thesis, labels, 0.0) == 0.7  # roles swapped: above 2/3
    assert best_blend_trust(thesis, learned, [1, 1, 1, 1], 0.3) == 0.3  # one class: unchanged
    # in a learner (FOCUSCRAWL_LEARNING_TRUST_RULE): the thesis's score already ranks the
    # judged links perfectly, so it keeps the whole say (the AUC share gives the learner half)
    agreeing = LinkLearner(retrain_every=4, trust_rule="best-blend")
    _judge_links(agreeing, thesis_ranks_well=True)
    assert agreeing.trust == 0.0
    misled = LinkLearner(retrain_every=4, trust_rule="best-blend")
    _judge_links(misled, thesis_ranks_well=False)
    assert misled.trust == 1.0


def test_a_learner_saved_before_the_trust_existed_still_loads(tmp_path):
    """A JOBDIR from the version before the trust (no ``trust``, ``judged_scores``,
    ``thesis_steps_per_decade`` in the pickle) resumes with no trust: the keywords order."""
    import pickle

    learner = LinkLearner(retrain_every=4)
    _judge_links(learner, thesis_ranks_well=False)
    learner.save(tmp_path / "new.pkl")
    state = pickle.loads((tmp_path / "new.pkl").read_bytes())
    for name in ("trust", "judged_scores", "thesis_steps_per_decade"):
        del state[name]
    (tmp_path / "old.pkl").write_bytes(pickle.dumps(state))
    old = LinkLearner.load(tmp_path / "old.pkl")
    assert old.trust == 0.0 and not old.judged_scores and old.version == learner.version
    assert old.score(_features("http://a.test/1"), 5.0, "a.test") > old.score(
        _features("http://b.test/1"), 500.0, "b.test")


def test_page_judge_threshold_is_the_on_topic_perplexity():
    judge = PageJudge(on_topic_pp=50)
    assert judge.topicality(None) is None
    assert judge.on_topic(judge.topicality(1.0)) and judge.on_topic(judge.topicality(50.0))
    assert not judge.on_topic(judge.topicality(51.0))


def test_calibrated_page_judge_uses_the_topic_probability():
    settings = Settings({"FOCUSCRAWL_LEARNING_JUDGE": "calibrated", "FOCUSCRAWL_LEARNING_ON_TOPIC_PP": 50.0,
                         "FOCUSCRAWL_LEARNING_ON_TOPIC_P": 0.5})
    assert not PageJudge.from_settings(settings).calibrated  # no topic bundle: judged by perplexity
    judge = PageJudge.from_settings(settings, topic_model=object())
    assert judge.calibrated and judge.topicality(1.0, None) is None  # no calibrated score: not judged
    assert judge.on_topic(judge.topicality(1e6, 0.0)) and not judge.on_topic(judge.topicality(1.0, -0.1))
    assert abs(judge.topicality(None, 2.0) - 0.8808) < 1e-4
    with pytest.raises(ValueError, match="FOCUSCRAWL_LEARNING_JUDGE"):
        PageJudge.from_settings(Settings({"FOCUSCRAWL_LEARNING_JUDGE": "oracle"}))


def test_calibrated_page_judge_cuts_at_the_on_topic_probability():
    """FOCUSCRAWL_LEARNING_ON_TOPIC_P: a page the bundle finds only as likely on topic as not
    (a look-alike topic's) teaches the learner nothing positive; the perplexity judge keeps its cut."""
    settings = Settings({"FOCUSCRAWL_LEARNING_JUDGE": "calibrated", "FOCUSCRAWL_LEARNING_ON_TOPIC_P": 0.7,
                         "FOCUSCRAWL_LEARNING_ON_TOPIC_PP": 50.0})
    judge = PageJudge.from_settings(settings, topic_model=object())
    assert not judge.on_topic(judge.topicality(None, 0.8)) and judge.on_topic(judge.topicality(None, 0.9))
    by_perplexity = PageJudge.from_settings(settings)  # no bundle
    assert by_perplexity.on_topic(by_perplexity.topicality(50.0))
    # the default (issue #28's measurement): a page as likely on topic as not is not a find
    default = PageJudge.from_settings(Settings({"FOCUSCRAWL_LEARNING_JUDGE": "calibrated",
                                                "FOCUSCRAWL_LEARNING_ON_TOPIC_P": defaults.FOCUSCRAWL_LEARNING_ON_TOPIC_P}),
                                      topic_model=object())
    assert not default.on_topic(0.55) and default.on_topic(0.6)
    with pytest.raises(ValueError, match="FOCUSCRAWL_LEARNING_ON_TOPIC_P must be a probability"):
        PageJudge.from_settings(Settings({"FOCUSCRAWL_LEARNING_JUDGE": "calibrated",
                                          "FOCUSCRAWL_LEARNING_ON_TOPIC_P": 60}), topic_model=object())


def test_an_unknown_trust_rule_is_a_clear_error():
    settings = Settings()
    settings.setmodule(defaults)
    settings.set("FOCUSCRAWL_LEARNING_TRUST_RULE", "best_blend")
    with pytest.raises(ValueError, match="FOCUSCRAWL_LEARNING_TRUST_RULE must be one of auc-share, best-blend"):
        learner_from_settings(settings)
    settings.set("FOCUSCRAWL_LEARNING_TRUST_RULE", "best-blend")
    assert learner_from_settings(settings).trust_rule == "best-blend"


#: five distinct on-topic texts (toy model: PP 2-7; distinct, so not near-duplicates of each other)
GOOD_TEXTS = ["cat cat cat cat cat.", "kitten tabby cat kitten tabby.", "tabby tabby kitten cat cat.",
              "kitten cat kitten cat tabby tabby.", "cat tabby cat kitten kitten kitten."]


def loopback_web() -> dict:
    """A portal links with the same generic anchor to five pages each of a decoy host
    (off topic, listed first) and a good host (on topic), interleaved."""
    links = []
    for i in range(1, 6):
        links += [(f"http://decoy.test/{i}", "read more"), (f"http://good.test/{i}", "read more")]
    pages = {("portal.test", "/"): Page(html("portal", NORMAL, links))}
    for i in range(1, 6):
        pages[("decoy.test", f"/{i}")] = Page(html("decoy", LOW))
        pages[("good.test", f"/{i}")] = Page(html("good", GOOD_TEXTS[i - 1]))
    return pages


def test_keywords_mode_cannot_tell_the_hosts_apart(tmp_path):
    with LocalWeb(loopback_web()) as web:
        _, proc = crawl(web, tmp_path, "http://portal.test/", mode="keywords")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert web.pages_requested()[1:5] == ["decoy.test/1", "good.test/1", "decoy.test/2", "good.test/2"]


def test_learning_crawl_moves_the_good_host_up_and_the_decoy_down(tmp_path):
    settings = {"FOCUSCRAWL_LEARNING_RETRAIN_EVERY": 1}
    with LocalWeb(loopback_web()) as web:
        stats, proc = crawl(web, tmp_path, "http://portal.test/", mode="learning", settings=settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    order = web.pages_requested()
    # one page of each host is fetched in link order; then the frontier is re-ranked:
    # the good host's pages all come before the decoy's
    assert order[:3] == ["portal.test/", "decoy.test/1", "good.test/1"]
    assert order[3:7] == [f"good.test/{i}" for i in range(2, 6)]
    assert order[7:] == [f"decoy.test/{i}" for i in range(2, 6)]
    assert stats["focuscrawl/learning/judged_on_topic"] == 5
    # the portal and the decoy's five pages (four near-duplicates of the first)
    assert stats["focuscrawl/learning/judged_off_topic"] == 6
    assert stats["focuscrawl/learning/updates"] == 10 and stats["focuscrawl/learning/reranked"] > 0
    # every call is in judged.tsv, in crawl order (eval scores the judge with it)
    judged = read_tsv(tmp_path / "out" / "judged.tsv")
    assert [r["url"].split("://")[1] for r in judged] == order
    assert sum(r["on_topic"] == "1" for r in judged) == 5
    assert {r["url"] for r in judged if r["on_topic"] == "1"} == {f"http://good.test/{i}" for i in range(1, 6)}
    assert all(0 < float(r["topicality"]) < 1 for r in judged)
    assert "judged" not in (tmp_path / "out" / "items.jsonl").read_text()  # not in the feed
    rows = links_log(tmp_path)
    assert {r["to"] for r in rows} >= {"http://good.test/1", "http://decoy.test/5"}
    row = next(r for r in rows if r["to"] == "http://good.test/1")
    assert 0 < float(row["learned"]) < 1 and "a:read" in row["features"].split() and row["score"]


def test_learning_crawl_feeds_context_siblings_and_hubs_to_the_learner(tmp_path):
    """portal -> an off-topic hub -> a listed block of on-topic pages: the context tokens are
    the links' features, the siblings are counted per block, the hub's link is taught."""
    block = ("<h3>Kitten pages</h3><ul>" + "".join(f'<li><a href="http://good.test/{i}">read more</a></li>'
                                                    for i in range(1, 4)) + "</ul>")
    pages = {("portal.test", "/"): Page(html("portal", NORMAL, [("http://hub.test/", "read more")])),
             ("hub.test", "/"): Page(html("hub", LOW, extra=block))}
    for i in range(1, 4):
        pages[("good.test", f"/{i}")] = Page(html("good", GOOD_TEXTS[i - 1]))
    groups = "anchor,url,host,parent,grandparent,thesis,context,block,siblings,hubs"
    settings = {"FOCUSCRAWL_LEARNING_RETRAIN_EVERY": 1, "FOCUSCRAWL_LEARNING_FEATURES": groups}
    with LocalWeb(pages) as web:
        stats, proc = crawl(web, tmp_path, "http://portal.test/", mode="learning", settings=settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats["focuscrawl/learning/judged_on_topic"] == 3
    row = next(r for r in links_log(tmp_path) if r["to"] == "http://good.test/1")
    assert {"c:kitten", "c:pages", "c:read", "k:ul"} <= set(row["features"].split())
    assert stats["focuscrawl/learning/hub_examples"] == 1
    learner = LinkLearner.load(tmp_path / "out" / "link_learner.pkl")
    assert learner.hub_examples == 1
    assert learner.sibling_pages == {"http://portal.test/": [1, 0], "http://hub.test/": [3, 3]}
    assert sorted(learner.sibling_blocks.values()) == [[1, 0], [3, 3]]


def test_learning_crawl_resumes_from_jobdir_with_what_it_had_learnt(tmp_path):
    from focuscrawl.focus.link_learner import LinkLearner

    settings = {"FOCUSCRAWL_LEARNING_RETRAIN_EVERY": 1, "JOBDIR": str(tmp_path / "job")}
    with LocalWeb(loopback_web()) as web:
        stats1, proc = crawl(web, tmp_path, "http://portal.test/", mode="learning", settings=settings, budget="4")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert stats1["finish_reason"] == "page_budget"
        saved = LinkLearner.load(tmp_path / "job" / "focuscrawl" / "link_learner.pkl")
        assert saved.hosts.judged.get("good.test", 0) >= 1 and saved.version >= 1
        stats2, proc = crawl(web, tmp_path, "http://portal.test/", mode="learning", settings=settings)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert stats2["finish_reason"] == "finished"
    order = web.pages_requested()
    assert len(order) == len(set(order)) == 11  # every page once across the two sessions
    # the resumed session knew the decoy from the first: the good host's pages came first
    second = order[4:]
    assert [p for p in second if p.startswith("good")] == second[:len([p for p in second if p.startswith("good")])]
    assert (tmp_path / "out" / "link_learner.pkl").exists()


# -- the fast paths of mode learning's per-link work (issue #26) compute what they replace ----------
def test_feature_columns_and_vectors_are_the_hashing_vectorizers():
    """``_column`` hashes with mmh3 instead of ``HashingVectorizer.transform`` (0.4 ms a new token)
    and ``vector`` has a fast path for features without repeats: both give the vectorizer's row."""
    import numpy as np

    learner = LinkLearner()
    rows = [_features("http://cats-blog-1.test/post/3-a-cat.html", "Cute Cats!"),
            ["a:cat", "a:cat", "u:été", "u:猫", "x:same-host"],  # a repeated token: counts 2
            ["a:<none>"], [], [f"u:w{i}" for i in range(300)]]  # some of them share a column (2^16)
    for features in rows:
        cols, vals = learner.vector(features)
        expected = learner.vectorizer.transform([features]).toarray()[0] if features else np.zeros(learner.n_features)
        got = np.zeros(learner.n_features)
        got[list(cols)] = list(vals)
        assert got.tolist() == expected.tolist()  # exactly, value by value
        assert len(set(cols)) == len(cols)


def test_cached_parts_of_a_links_features_and_score_are_exact():
    from focuscrawl.focus.link_learner import TOPICALITY_EDGES, _bin, feature_prefixes, FEATURE_GROUPS

    for value in (None, 0.0, 0.1, 0.1000001, 0.3, 0.5, 0.69, 0.7, 0.9, 0.95, 1.0, -1.0, float("nan")):
        expected = "none" if value is None else str(sum(value > e for e in TOPICALITY_EDGES))
        assert _bin(value, TOPICALITY_EDGES) == expected
    # every group named: the same tokens as no filter
    everything = feature_prefixes(list(FEATURE_GROUPS))
    assert link_features("Cute Cats!", "http://a.test/x-y", "http://b.test/", 0.4, 0.8, 12.0, everything) == \
        link_features("Cute Cats!", "http://a.test/x-y", "http://b.test/", 0.4, 0.8, 12.0)
    learner = LinkLearner()
    for score in (None, 0.5, 1.0, 12.0, 12.0, 99.9, 100.0, 1e6):
        assert learner._thesis_logit(score) == learner._thesis_logit_of(score)


def test_a_reloaded_learner_does_not_keep_scores_cached_with_other_settings(tmp_path):
    saved = LinkLearner(prior_reference=10.0)
    saved.save(tmp_path / "l.pkl")
    learner = LinkLearner()
    learner._thesis_logit(50.0)  # cached under the default prior
    learner.load_state(tmp_path / "l.pkl")
    assert learner._thesis_logit(50.0) == saved._thesis_logit_of(50.0) != LinkLearner()._thesis_logit(50.0)


def test_the_kept_coefficients_are_the_models_after_every_update_and_save_as_a_list(tmp_path):
    """Scores read the model's coefficients through a view, not a copy made at every update:
    after each update they are ``coef_`` value by value, and a save still holds the list."""
    import pickle

    import numpy as np

    learner = LinkLearner(retrain_every=3)
    for i in range(30):
        if learner.observe(_features(f"http://h{i % 4}.test/p/{i}", f"w{i % 5}"), f"h{i % 4}.test", i % 3 == 0):
            assert list(learner._coef) == learner.model.coef_[0].tolist()
            assert np.shares_memory(np.asarray(learner._coef), learner.model.coef_)  # no copy
            features = _features(f"http://h{i % 4}.test/q", "w1")
            cols, vals = learner.vector(features)
            expected = learner.model.intercept_[0] + sum(learner.model.coef_[0][c] * v for c, v in zip(cols, vals))
            assert learner.model_probability(features) == pytest.approx(1 / (1 + 2.718281828459045 ** -expected))
    learner.save(tmp_path / "l.pkl")
    saved = pickle.loads((tmp_path / "l.pkl").read_bytes())["_coef"]
    assert type(saved) is list and saved == learner.model.coef_[0].tolist()
    loaded = LinkLearner.load(tmp_path / "l.pkl")
    probe = _features("http://h1.test/q", "w1")
    assert loaded.score(probe, 100.0, "h1.test") == learner.score(probe, 100.0, "h1.test")
    for i in range(30, 33):  # both go on learning alike
        for each in (learner, loaded):
            each.observe(_features(f"http://h{i % 4}.test/p/{i}", f"w{i % 5}"), f"h{i % 4}.test", True)
    assert loaded.score(probe, 100.0, "h1.test") == learner.score(probe, 100.0, "h1.test")
    assert list(loaded._coef) == list(learner._coef)



def _learn_like_a_crawl(learner: LinkLearner, n: int = 120) -> None:
    for i in range(n):
        learner.observe(_features(f"http://h{i % 4}.test/p/{i}", f"w{i % 7} x{i % 3}"), f"h{i % 4}.test",
                        i % 3 == 0 or i % 7 == 1, thesis_score=float(10 + i))


def test_every_update_is_scikit_learns_public_partial_fit(monkeypatch):
    """No private scikit-learn step: each model update is one ``partial_fit`` (skipping its input
    checks with ``_fit_binary`` saved ~1 ms an update, one every 20 judged pages)."""
    from sklearn.linear_model import SGDClassifier

    calls = []
    public = SGDClassifier.partial_fit
    monkeypatch.setattr(SGDClassifier, "partial_fit", lambda self, *a, **k: calls.append(1) or public(self, *a, **k))
    learner = LinkLearner(retrain_every=5)
    _learn_like_a_crawl(learner)
    assert learner.version == len(calls) == 24


def _interlinked_web() -> dict:
    """A portal and two hosts whose pages all link to each other: most links of a page are
    known already (``KnownLinks``)."""
    urls = [f"http://{h}.test/{i}" for i in range(1, 4) for h in ("decoy", "good")]
    everything = [(u, f"read {u[7:11]}") for u in urls]
    pages = {("portal.test", "/"): Page(html("portal", NORMAL, everything))}
    for i in range(1, 4):
        pages[("decoy.test", f"/{i}")] = Page(html("decoy", f"{LOW} {i}", everything))
        pages[("good.test", f"/{i}")] = Page(html("good", GOOD_TEXTS[i - 1], everything))
    return pages


def test_a_learning_crawl_without_links_log_decides_and_learns_as_with_it(tmp_path):
    """Without links.tsv the learner does not score the known links (nothing reads their
    score): the crawl's order, stats and saved learner are those of a crawl that logs them."""
    results = []
    for log in (True, False):
        out = tmp_path / str(log)
        out.mkdir()
        settings = {"FOCUSCRAWL_LEARNING_RETRAIN_EVERY": 1, "FOCUSCRAWL_LINKS_LOG": log}
        with LocalWeb(_interlinked_web()) as web:
            stats, proc = crawl(web, out, "http://portal.test/", mode="learning", settings=settings)
        assert proc.returncode == 0, proc.stderr[-3000:]
        counts = {k: v for k, v in stats.items() if k.startswith(("focuscrawl/links/", "focuscrawl/learning/"))}
        results.append((web.pages_requested(), counts, (out / "out" / "link_learner.pkl").read_bytes()))
    assert results[0] == results[1]
    pages, counts, _ = results[0]
    assert counts["focuscrawl/learning/reranked"] > 0 and len(pages) == 7
    # every page's six links were decided, five or six of them known already
    assert sum(v for k, v in counts.items() if k.startswith(("focuscrawl/links/bucket/", "focuscrawl/links/razored"))) \
        == 7 * 6


def test_a_link_decided_without_the_learner_leaves_it_untouched():
    from focuscrawl.focus.ranker import LinkRanker

    learner = LinkLearner()
    ranker = LinkRanker([10.0, 100.0], 10, 1000.0, dict(doc_weight=1.0, anchor_weight=0.0, keyword_weight=0.0,
                                                         anchor_max_pp=1000.0), 16, learner=learner,
                        learned_priority=True)
    kept = ranker.decide(50.0, "cats", url="http://a.test/cats", parent_url="http://b.test/", learn=False)
    assert kept.learned is None and kept.features is None and not learner._index
    learned = ranker.decide(50.0, "cats", url="http://a.test/cats", parent_url="http://b.test/")
    assert (learned.score, learned.followed) == (kept.score, kept.followed) and learned.learned is not None
    assert learner._index


def test_the_learner_learns_without_importing_pandas():
    """scikit-learn imports pandas if it can (0.2 s of CPU and ~60 MB in the crawl process at
    every start); the learner blocks it while importing scikit-learn, learns as ever, and
    leaves pandas importable afterwards."""
    import sys

    code = ("import sys; from focuscrawl.focus.link_learner import LinkLearner, link_features; "
            "l = LinkLearner(retrain_every=5); "
            "[l.observe(link_features('read', f'http://h{i % 3}.test/{i}', 'http://p.test/', 0.5, None, 40.0), "
            "f'h{i % 3}.test', i % 3 == 0) for i in range(20)]; assert l.version == 4; "
            "print('pandas' in sys.modules, 'sklearn' in sys.modules); import pandas")
    out = warmfork.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


def test_pandas_imported_before_the_learner_stays(monkeypatch):
    import sys

    from focuscrawl.focus.link_learner import _pandas_unimportable

    sentinel = object()
    monkeypatch.setitem(sys.modules, "pandas", sentinel)
    with _pandas_unimportable():
        assert sys.modules["pandas"] is sentinel
    assert sys.modules["pandas"] is sentinel


def test_the_token_memo_is_bounded_and_columns_stay_the_hash():
    import mmh3

    learner = LinkLearner()
    learner.TOKEN_MEMO_SIZE = 8
    tokens = [f"u:{i}" for i in range(50)]
    columns = [learner._column(t) for t in tokens]
    assert len(learner._index) <= 8
    assert columns == [abs(mmh3.hash(t)) % learner.n_features for t in tokens]
    assert [learner._column(t) for t in tokens] == columns  # remembered or hashed again: the same


@pytest.mark.parametrize("siblings", [False, True])
def test_scores_of_a_batch_are_each_links_score_exactly(siblings):
    """The frontier re-ranks hundreds of links at once with ``scores``: its numpy dot products
    must give each link's ``score`` to the last bit (a priority is the score rounded), before
    the first update (no model), with no trust (the thesis prior) and after training."""
    learner = LinkLearner(retrain_every=5, siblings=siblings)

    def features(i):  # 7 to 30 features: sums long enough for numpy to add in another order
        return _features(f"http://h{i % 3}.test/p/{i}/" + "/".join(f"u{j}" for j in range(i % 11)),
                         " ".join(f"w{(i + j) % 23}" for j in range(i % 13)))

    links = [(None if i % 7 == 0 else 3.0 + 97 * i, f"h{i % 3}.test", learner.vector(features(i)),
              (f"http://h{i % 2}.test/", i % 4) if i % 5 else None) for i in range(60)]
    links.append((10.0, "h0.test", learner.vector([]), None))  # no features at all

    def one_by_one():
        return [learner.score(None, thesis, host, vector, origin) for thesis, host, vector, origin in links]

    assert learner.scores(links) == one_by_one() and learner.scores([]) == []
    for i in range(200):
        learner.observe(features(i * 7), f"h{i % 3}.test", i % 3 == 0 or i % 11 == 0,
                        thesis_score=5.0 * i, origin=(f"http://h{i % 2}.test/", i % 4))
    assert learner.trained and learner.trust > 0
    assert learner.scores(links) == one_by_one()
    assert len(set(learner.scores(links))) > 10  # the links differ: nothing compared is constant
    learner.trust = 0.0
    assert learner.scores(links) == one_by_one()


def test_scikit_learn_still_imports_pandas_unless_the_learner_blocks_it():
    """Pins the reason for ``_pandas_unimportable``: the installed scikit-learn imports pandas
    with the learner's classes (when this fails, it no longer does: remove the block)."""
    import sys

    code = ("import sys; from sklearn.linear_model import SGDClassifier; "
            "from sklearn.feature_extraction.text import HashingVectorizer; print('pandas' in sys.modules)")
    assert warmfork.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == [
        "True"]


# -- a learning crawl stopped and resumed from its JOBDIR goes on in the uninterrupted order -------
def _two_level_web() -> dict:
    """A portal links to the first pages of two good and two decoy hosts, each of which links
    to three more of its own host and one of the other kind: enough queued links that the
    re-ranking (top 3) leaves most of them at the priorities they were queued with."""
    import random

    def text(seed: int, good: bool) -> str:
        r = random.Random(seed * 7 + good)
        words = [r.choice(("cat", "kitten", "tabby")) for _ in range(6)] if good else \
            ["qqq"] * 4 + [r.choice(("cat", "kitten", "tabby")), f"w{seed}"]
        return " ".join(words) + "."

    links = []
    for i in range(1, 7):
        links += [(f"http://decoy{i % 2}.test/{i}", "read more"), (f"http://good{i % 2}.test/{i}", "read more")]
    pages = {("portal.test", "/"): Page(html("portal", NORMAL, links))}
    for i in range(1, 7):
        decoys = [(f"http://decoy{i % 2}.test/{i}/{j}", f"more {j}") for j in range(1, 4)]
        goods = [(f"http://good{i % 2}.test/{i}/{j}", f"more {j}") for j in range(1, 4)]
        pages[(f"decoy{i % 2}.test", f"/{i}")] = Page(html("decoy", text(i, False), decoys + goods[:1]))
        pages[(f"good{i % 2}.test", f"/{i}")] = Page(html("good", text(i, True), goods + decoys[:1]))
        for j in range(1, 4):
            pages[(f"decoy{i % 2}.test", f"/{i}/{j}")] = Page(html("decoy", text(100 + 10 * i + j, False)))
            pages[(f"good{i % 2}.test", f"/{i}/{j}")] = Page(html("good", text(100 + 10 * i + j, True)))
    return pages


_RESUME_SETTINGS = {"FOCUSCRAWL_LEARNING_RETRAIN_EVERY": 1, "FOCUSCRAWL_LEARNING_RERANK_TOP": 3}


def _uninterrupted_order(tmp_path) -> list[str]:
    (tmp_path / "whole").mkdir()
    with LocalWeb(_two_level_web()) as web:
        stats, proc = crawl(web, tmp_path / "whole", "http://portal.test/", mode="learning", settings=_RESUME_SETTINGS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats["focuscrawl/learning/reranked"] > 0
    return web.pages_requested()


def _resumed_order(tmp_path, between=None) -> list[str]:
    """Stopped by a page budget, ``between(jobdir)``, then resumed to the end."""
    settings = {**_RESUME_SETTINGS, "JOBDIR": str(tmp_path / "job")}
    with LocalWeb(_two_level_web()) as web:
        first, proc = crawl(web, tmp_path, "http://portal.test/", mode="learning", settings=settings, budget="12")
        assert proc.returncode == 0 and first["finish_reason"] == "page_budget", proc.stderr[-3000:]
        if between is not None:
            between(tmp_path / "job")
        second, proc = crawl(web, tmp_path, "http://portal.test/", mode="learning", settings=settings)
        assert proc.returncode == 0 and second["finish_reason"] == "finished", proc.stderr[-3000:]
    return web.pages_requested()


def test_a_learning_crawl_stopped_and_resumed_from_jobdir_crawls_in_the_uninterrupted_order(tmp_path):
    """The queued requests keep their learned scores and vectors (``LinkFacts`` in JOBDIR's queue)
    and the learner what it had learnt: every page in the order of a crawl never stopped."""
    assert _resumed_order(tmp_path) == _uninterrupted_order(tmp_path)


def _separate_link_keys(link) -> dict:
    """The request meta keys the crawl kept a link's facts in before they went in one ``LinkFacts``."""
    meta = {"anchor": link.anchor, "link_score": link.score, "link_bucket": link.bucket,
            "parent_perplexity": link.parent_perplexity}
    if link.anchor_perplexity is not None or link.anchor_keyword_score is not None:
        meta["anchor_perplexity"], meta["anchor_keyword_score"] = link.anchor_perplexity, link.anchor_keyword_score
    if link.vector is not None:
        meta["link_vector"], meta["link_learned"] = link.vector, link.learned
        meta["parent_topicality"] = link.parent_topicality
    if link.origin is not None:
        meta["link_origin"] = link.origin
    if link.demoted:
        meta["link_demoted"] = True
    return meta


def _queue_with_separate_link_keys(jobdir) -> int:
    """Rewrite every request in JOBDIR's queues as a crawl before ``LinkFacts`` queued it."""
    import pickle

    from queuelib.queue import FifoDiskQueue

    from focuscrawl.focus.ranker import LINK_META

    rewritten = 0
    for folder in sorted(p for p in (jobdir / "requests.queue").iterdir() if p.is_dir()):
        queue, requests = FifoDiskQueue(str(folder)), []
        while (data := queue.pop()) is not None:
            requests.append(pickle.loads(data))
        queue.close()
        queue = FifoDiskQueue(str(folder))
        for d in requests:
            link = d["meta"].pop(LINK_META, None)
            if link is not None:
                d["meta"].update(_separate_link_keys(link))
                rewritten += 1
            queue.push(pickle.dumps(d, protocol=4))
        queue.close()
    return rewritten


def test_requests_queued_with_separate_link_keys_resume_in_the_uninterrupted_order(tmp_path):
    """A JOBDIR queued before the link facts went in one ``LinkFacts`` (anchor, link_score,
    link_vector, link_learned, ... as separate meta keys): the queue gathers them as it reads
    each request back, so the resumed crawl re-ranks, learns and crawls as if never stopped."""
    rewritten = []
    order = _resumed_order(tmp_path, lambda jobdir: rewritten.append(_queue_with_separate_link_keys(jobdir)))
    assert rewritten[0] > 10
    assert order == _uninterrupted_order(tmp_path)
