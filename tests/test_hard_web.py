"""The ``hard`` test web profile and the oracle bounds (graph simulation with the crawl's accounting)."""
from __future__ import annotations

import re
from collections import Counter
from urllib.parse import urlsplit

import pytest

from focuscrawl.eval.oracle import PageTruth, bound_fractions, harvest_of, oracle_bounds, simulate
from focuscrawl.testweb.render import respond
from focuscrawl.testweb.web import GENERIC_ANCHORS, TestWeb, web_config
from tests.support.testweb_pool import small_pool


@pytest.fixture(scope="module")
def pool():
    return small_pool()


@pytest.fixture(scope="module")
def hard(pool):
    return TestWeb(pool, "cat", 3, web_config("hard", scale=0.4))


def test_hard_web_is_rare_unseeded_and_deterministic(pool, hard):
    pages, _ = hard.truth()
    share = sum(p["on_topic"] for p in pages) / len(pages)
    assert 0 < share <= 0.03
    seeds = hard.seeds()
    assert seeds and all(hard.hosts[urlsplit(s).hostname].kind in ("portal", "other") for s in seeds)
    assert not any(PageTruth.from_web(hard).page(s) for s in seeds)
    again = TestWeb(pool, "cat", 3, web_config("hard", scale=0.4))
    assert again.truth() == hard.truth() and again.seeds() == seeds
    some = [p["url"] for p in pages[::97]]
    assert all(respond(hard, *_split(u)).body == respond(again, *_split(u)).body for u in some)
    other = TestWeb(pool, "cat", 4, web_config("hard", scale=0.4))
    assert other.truth() != hard.truth()


def test_the_neighbour_looks_like_the_topic_and_portals_link_to_it(hard):
    topic_like = re.compile(r"^[a-z]+-[a-z]+-\d+\.test$")
    neighbours = hard.by_kind["neighbour"]
    assert all(topic_like.match(h) for h in neighbours)  # no "dogs-world": the name gives nothing away
    assert {hard.hosts[h].style for h in neighbours} <= {"wordpress", "plain"}
    weights = hard.config.external_weights("portal")
    assert weights["neighbour"] > weights["topic"]
    assert hard.config.external_weights("other")["topic"] < 1  # the topic is reached through portals


def _split(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.hostname, parts.path + (f"?{parts.query}" if parts.query else "")


def test_a_third_of_the_anchors_are_generic(hard):
    anchors: Counter = Counter()
    for host in hard.by_kind["portal"][:3] + hard.by_kind["topic"][:2]:
        for url in [f"http://{host}/"] + [hard.article(host, i).url for i in range(min(8, hard.hosts[host].n_articles))]:
            body = respond(hard, *_split(url)).body.decode("utf-8", "replace")
            for text in re.findall(r'<h2><a href="[^"]+">([^<]*)</a></h2>', body):
                anchors["generic" if text in GENERIC_ANCHORS else "title"] += 1
    share = anchors["generic"] / sum(anchors.values())
    assert 0.22 < share < 0.45


def test_standard_profile_is_unchanged_by_the_new_knobs(pool):
    from focuscrawl.testweb.web import WebConfig

    assert TestWeb(pool, "cat", 7, web_config("standard", scale=0.15)).truth() == \
        TestWeb(pool, "cat", 7, WebConfig(scale=0.15)).truth()


def test_oracle_bounds_order_and_accounting(hard):
    truth = PageTruth.from_web(hard)
    bounds = oracle_bounds(hard, hard.seeds(), 150, truth)
    assert all(b["pages"] == 150 for b in bounds.values())
    bf, pc, lo = (bounds[p]["on_topic_pages"] for p in ("breadth_first", "page_classifier", "link_oracle"))
    assert bf < pc <= lo
    again = simulate(hard, hard.seeds(), 150, "page_classifier", truth)
    assert harvest_of(again, truth)["on_topic_pages"] == pc  # deterministic
    fractions = bound_fractions(bounds["page_classifier"], bounds)
    assert fractions["page_classifier"] == {"image_harvest": 1.0, "page_harvest": 1.0}
    # pages are counted as the crawl counts them: 2xx HTML, each URL once, robots.txt obeyed
    pages = simulate(hard, hard.seeds(), 150, "breadth_first", truth)
    assert len(set(pages)) == len(pages)
    blocked = [h for h, host in hard.hosts.items() if host.robots == "disallow-all"]
    assert not any(urlsplit(u).hostname in blocked for u in pages)
    assert not any("/go/" in u for u in pages)  # a redirect counts as its target page
    assert not any("/private/" in u and hard.hosts[urlsplit(u).hostname].robots == "standard" for u in pages)


def test_harvest_of_counts_images_of_the_pages_fetched():
    truth = PageTruth({"a": True, "b": False}, {"a": (3, 2), "b": (2, 0)})
    h = harvest_of(["a", "b", "c"], truth)
    assert (h["on_topic_pages"], h["images"], h["on_topic_images"]) == (1, 5, 2)
    assert h["page_harvest"] == pytest.approx(1 / 3) and h["image_harvest"] == pytest.approx(0.4)
    assert h["curves"]["on_topic_images"] == [2, 2, 2]


def _best_closed_set(graph, seeds, weights, budget):
    """Brute force: the most weight of any page set a crawl of ``budget`` pages can fetch
    (every page reached from a seed through fetched pages), over every crawl order."""
    best, seen = 0, set()

    def grow(fetched, frontier, total):
        nonlocal best
        best = max(best, total)
        if len(fetched) == budget or fetched in seen:
            return
        seen.add(fetched)
        for v in frontier:
            grow(fetched | {v}, (frontier | set(graph[v])) - fetched - {v}, total + weights.get(v, 0))

    grow(frozenset(), frozenset(s for s in seeds if s in graph), 0)
    return best


@pytest.mark.parametrize("case", range(12))
def test_upper_bound_is_never_beaten_by_any_crawl_order(case):
    import random

    from focuscrawl.eval.oracle import harvest_upper_bound

    rng = random.Random(case)
    nodes = [f"p{i}" for i in range(8)]
    graph = {u: rng.sample([v for v in nodes if v != u], rng.randint(0, 3)) for u in nodes}
    weights = {u: rng.choice([0, 0, 1, 2, 3]) for u in nodes}
    seeds = nodes[:rng.randint(1, 2)]
    for budget in (1, 2, 3, 5):
        assert harvest_upper_bound(graph, seeds, weights, budget) >= _best_closed_set(graph, seeds, weights, budget)


def test_upper_bound_is_exact_on_a_chain_and_a_star():
    from focuscrawl.eval.oracle import harvest_upper_bound

    chain = {"s": ["a"], "a": ["b"], "b": ["t"], "t": []}  # two empty pages before the topic
    assert harvest_upper_bound(chain, ["s"], {"t": 1}, 3) == 0
    assert harvest_upper_bound(chain, ["s"], {"t": 1}, 4) == 1
    star = {"s": ["x", "y", "z"], "x": [], "y": [], "z": []}
    assert harvest_upper_bound(star, ["s"], {"x": 5, "y": 1, "z": 3}, 3) == 8  # the seed and the two best


def test_no_policy_or_random_order_beats_the_upper_bound(pool):
    import random

    from focuscrawl.eval.oracle import upper_bounds, web_graph

    web = TestWeb(pool, "cat", 2, web_config("hard", scale=0.12))
    truth, seeds, budget = PageTruth.from_web(web), web.seeds(), 60
    ub = upper_bounds(web, seeds, budget, truth)
    for policy, h in oracle_bounds(web, seeds, budget, truth).items():
        assert h["on_topic_pages"] <= ub["on_topic_pages"], policy
        assert h["on_topic_images"] <= ub["on_topic_images"], policy
    graph = web_graph(web, seeds, truth)
    for k in range(5):  # crawls in random orders of the same graph
        rng, fetched, frontier = random.Random(k), [], [s for s in seeds if s in graph]
        while frontier and len(fetched) < budget:
            page = frontier.pop(rng.randrange(len(frontier)))
            if page not in fetched:
                fetched.append(page)
                frontier += [v for v in graph[page] if v not in fetched]
        h = harvest_of(fetched, truth)
        assert h["on_topic_pages"] <= ub["on_topic_pages"] and h["on_topic_images"] <= ub["on_topic_images"]
    assert ub["on_topic_pages"] <= sum(truth.on_topic.values())


def test_trap_pages_of_a_host_link_to_the_same_truth_pages(hard):
    """The premise of ``web_graph``: pages outside the truth share their host's links."""
    from focuscrawl.eval.oracle import SimulatedFetcher

    truth, fetcher = PageTruth.from_web(hard), SimulatedFetcher(hard)
    calendar = hard.by_kind["trap-calendar"][0]
    session = hard.by_kind["trap-session"][0]
    archive = next(h for h, host in hard.hosts.items() if host.archive_trap and host.robots == "standard")
    for host, paths in ((calendar, ["/calendar/2015/3/", "/calendar/2019/11/4/"]),
                        (session, ["/item/3?sid=abc", "/item/77?sid=0123456789ab"]),
                        (archive, ["/archive/2015/03/", "/archive/2011/07/"])):
        got = [fetcher.fetch(f"http://{host}{p}", set()) for p in paths]
        assert all(g is not None and g[0] not in truth.on_topic for g in got)
        truth_links = [{u for u in g[1] if u in truth.on_topic} for g in got]
        assert truth_links[0] and all(t == truth_links[0] for t in truth_links)
