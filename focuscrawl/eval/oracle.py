"""Oracle bounds: what crawlers with perfect knowledge harvest on the same graph, seeds and budget.

A graph simulation of the test web, no crawl: pages are rendered as the test web serves
them (``focuscrawl.testweb.render.respond``) and their links read by the crawl's own
``page_links`` (``focuscrawl.analysis``), with the
crawl's fetch accounting: robots.txt per host (Protego, as Scrapy), the scope rules
(path repeats, query variants), one fetch per URL (redirects followed, a redirect to a
URL already seen is dropped), and only 2xx HTML pages count towards the page budget
(``PageBudget`` counts PageItems). Three frontier orders:

* ``breadth_first``: FIFO by depth (the ``unfocused`` crawl);
* ``page_classifier``: a perfect page classifier, links of on-topic pages first
  (FIFO within each class);
* ``link_oracle``: knows every link target's label: links to on-topic pages first,
  then links of on-topic pages, then the rest.

The harvest of a page sequence (crawl or simulation) is measured by the same pure
function, ``harvest_of``: page harvest = on-topic pages / pages, image harvest =
on-topic content images / content images on those pages (the ground truth's images).
"""
from __future__ import annotations

import heapq
import itertools
import json
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from protego import Protego
from scrapy.http import HtmlResponse
from scrapy.utils.response import get_base_url

from focuscrawl import settings as defaults
from focuscrawl.testweb.render import respond
from focuscrawl.urls import QueryVariantLimit, repeated_path_segment

POLICIES = ("breadth_first", "page_classifier", "link_oracle")
ORACLE_FILE = "oracle.json"
MAX_REDIRECTS = 20  # Scrapy's REDIRECT_MAX_TIMES


@dataclass
class PageTruth:
    """Per page: on topic, content images, on-topic content images (from the ground truth)."""

    on_topic: dict[str, bool]
    images: dict[str, tuple[int, int]]

    def page(self, url: str) -> bool:
        return self.on_topic.get(url, False)

    @classmethod
    def from_rows(cls, pages, images) -> "PageTruth":
        """From truth rows (``TestWeb.truth()`` or the truth TSVs: booleans or "0"/"1")."""
        counts: dict[str, list[int]] = {}
        for img in images:
            if not img.get("page_url"):  # a truth without image pages: no image harvest
                continue
            c = counts.setdefault(img["page_url"], [0, 0])
            c[0] += 1
            c[1] += _true(img["shows_topic"])
        return cls({p["url"]: _true(p["on_topic"]) for p in pages}, {u: (a, b) for u, (a, b) in counts.items()})

    @classmethod
    def from_web(cls, web) -> "PageTruth":
        return cls.from_rows(*web.truth())

    @classmethod
    def load(cls, folder: str | Path) -> "PageTruth | None":
        """From ``truth_pages.tsv.gz`` and ``truth_images.tsv.gz`` in ``folder`` (``None`` if absent)."""
        from focuscrawl.output.files import read_tsv

        folder = Path(folder)
        if not (folder / "truth_pages.tsv.gz").exists():
            return None
        return cls.from_rows(read_tsv(folder / "truth_pages.tsv.gz"), read_tsv(folder / "truth_images.tsv.gz"))


def _true(value) -> bool:
    return value is True or value == "1" or value == 1


def harvest_of(page_urls: list[str], truth: PageTruth) -> dict:
    """Page and image harvest of a sequence of fetched pages, with the cumulative curves."""
    on_pages = images = on_images = 0
    pages_curve, images_curve = [], []
    for url in page_urls:
        on_pages += truth.page(url)
        n, k = truth.images.get(url, (0, 0))
        images += n
        on_images += k
        pages_curve.append(on_pages)
        images_curve.append(on_images)
    n = len(page_urls)
    return {"pages": n, "on_topic_pages": on_pages, "images": images, "on_topic_images": on_images,
            "page_harvest": on_pages / n if n else None, "image_harvest": on_images / images if images else None,
            "curves": {"on_topic_pages": pages_curve, "on_topic_images": images_curve}}


class SimulatedFetcher:
    """Fetches from a ``TestWeb`` as the crawl would see it: robots.txt, redirects, statuses."""

    def __init__(self, web, user_agent: str = "focuscrawl", max_path_repeats: int = defaults.FOCUSCRAWL_MAX_PATH_REPEATS,
                 max_query_variants: int = defaults.FOCUSCRAWL_MAX_QUERY_VARIANTS) -> None:
        self.web = web
        self.user_agent = user_agent
        self.robots: dict[str, Protego] = {}
        self.max_path_repeats = max_path_repeats
        self.query_variants = QueryVariantLimit(max_query_variants)

    def allowed(self, url: str) -> bool:
        host = urlsplit(url).hostname or ""
        rules = self.robots.get(host)
        if rules is None:  # Scrapy parses whatever robots.txt answers (a 404 or 500 body: no rules)
            r = respond(self.web, host, "/robots.txt")
            rules = self.robots[host] = Protego.parse(r.body.decode("utf-8", "replace"))
        return rules.can_fetch(url, self.user_agent)

    def in_scope(self, url: str) -> bool:
        parts = urlsplit(url)
        return not repeated_path_segment(parts, self.max_path_repeats) and self.query_variants.admit(parts)

    def fetch(self, url: str, seen: set[str]) -> tuple[str, dict[str, str]] | None:
        """``(final URL, links)`` of a 2xx HTML page, ``None`` for anything else (not a page)."""
        from focuscrawl.analysis import page_links

        for _ in range(MAX_REDIRECTS + 1):
            if not self.allowed(url):
                return None
            parts = urlsplit(url)
            r = respond(self.web, parts.hostname or "", parts.path + ("?" + parts.query if parts.query else ""))
            if r.status in (301, 302, 303, 307, 308) and "Location" in r.headers:
                url = urljoin(url, r.headers["Location"])
                if url in seen:  # the dupe filter drops the redirected request
                    return None
                seen.add(url)
                continue
            if not 200 <= r.status < 300 or "html" not in r.headers.get("Content-Type", ""):
                return None
            response = HtmlResponse(url, body=r.body, headers=r.headers)
            try:
                return url, page_links(response.selector.root, get_base_url(response))[0]
            except (UnicodeError, LookupError):
                return None
        return None


def simulate(web, seeds: list[str], budget: int, policy: str, truth: PageTruth,
             fetcher: SimulatedFetcher | None = None) -> list[str]:
    """Page URLs in the order a crawler with ``policy`` fetches them (at most ``budget``)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown oracle policy {policy!r}; choose one of {', '.join(POLICIES)}")
    fetcher = fetcher or SimulatedFetcher(web)
    counter = itertools.count()
    frontier: list[tuple] = []
    seen: set[str] = set()
    for url in seeds:
        if url not in seen:
            seen.add(url)
            heapq.heappush(frontier, ((-1,), next(counter), url, 0))  # seeds first
    pages: list[str] = []
    while frontier and len(pages) < budget:
        _, _, url, depth = heapq.heappop(frontier)
        got = fetcher.fetch(url, seen)
        if got is None:
            continue
        final, links = got
        pages.append(final)
        parent_on = truth.page(final)
        for link in links:
            if link in seen or not fetcher.in_scope(link):
                continue
            seen.add(link)
            if policy == "breadth_first":
                key = (depth + 1,)
            elif policy == "page_classifier":
                key = (0 if parent_on else 1,)
            else:
                key = (0 if truth.page(link) else 1 if parent_on else 2,)
            heapq.heappush(frontier, (key, next(counter), link, depth + 1))
    return pages


def oracle_pages(web, seeds: list[str], budget: int, truth: PageTruth | None = None) -> dict[str, list[str]]:
    """``{policy: simulated page URLs}`` for every policy."""
    truth = truth or PageTruth.from_web(web)
    return {policy: simulate(web, seeds, budget, policy, truth) for policy in POLICIES}


def oracle_bounds(web, seeds: list[str], budget: int, truth: PageTruth | None = None) -> dict[str, dict]:
    """``{policy: harvest_of(simulated pages)}`` for every policy."""
    truth = truth or PageTruth.from_web(web)
    return {policy: harvest_of(pages, truth) for policy, pages in oracle_pages(web, seeds, budget, truth).items()}


def write_oracle(web, seeds: list[str], budget: int, folder: str | Path) -> dict[str, dict]:
    """Simulate every policy and write ``folder/oracle.json`` (page sequences and harvests,
    and the ``upper_bound`` no crawl order can beat)."""
    truth = PageTruth.from_web(web)
    pages = oracle_pages(web, seeds, budget, truth)
    summary = {policy: {k: v for k, v in harvest_of(urls, truth).items() if k != "curves"}
               for policy, urls in pages.items()}
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / ORACLE_FILE).write_text(json.dumps({"budget": budget, "seeds": seeds, "harvest": summary,
                                                        "upper_bound": upper_bounds(web, seeds, budget, truth),
                                                        "pages": pages}) + "\n")
    return summary


def upper_bound_fractions(harvest: dict, bound: dict) -> dict[str, float | None]:
    """A run's on-topic pages and images as a fraction of the upper bound's (at most 1)."""
    return {key: harvest[key] / bound[key] if harvest.get(key) is not None and bound.get(key) else None
            for key in UPPER_BOUND_METRICS}


def bound_fractions(harvest: dict, bounds: dict[str, dict]) -> dict[str, dict]:
    """A run's page and image harvest as a fraction of each bound's."""
    out = {}
    for policy, bound in bounds.items():
        out[policy] = {key: (harvest[key] / bound[key] if harvest.get(key) is not None and bound.get(key) else None)
                       for key in ("image_harvest", "page_harvest")}
    return out


# -- a true upper bound: no crawl order of the same budget can harvest more ----------------
UPPER_BOUND_METRICS = ("on_topic_pages", "on_topic_images")


def web_graph(web, seeds: list[str], truth: PageTruth,
              fetcher: SimulatedFetcher | None = None) -> dict[str, list[str]]:
    """``{page URL: linked page URLs}`` of every page reachable from ``seeds`` as the crawl
    fetches them (robots.txt, redirects, path-repeat scope; 2xx HTML pages only).

    Pages outside the truth (traps: calendars, session ids, archives, log-in pages) are
    infinite in number but share their host's layout: each gets the links of the host's
    first such page, which alone is expanded (every path to a truth page is kept;
    ``tests/test_hard_web.py`` checks the premise). The
    query-variant limit is ignored: more edges can only raise the bound.
    """
    fetcher = fetcher or SimulatedFetcher(web)
    graph: dict[str, list[str]] = {}
    resolved: dict[str, str | None] = {}
    links_of: dict[str, list[str]] = {}
    trap_links: dict[str, list[str]] = {}
    todo = list(dict.fromkeys(seeds))
    while todo:
        url = todo.pop()
        if url in resolved:
            continue
        got = fetcher.fetch(url, set())
        resolved[url] = got[0] if got else None
        if got is None or got[0] in graph:
            continue
        final, links = got
        resolved[final] = final
        host = urlsplit(final).hostname or ""
        if final in truth.on_topic or host not in trap_links:
            links_of[final] = [link for link in links
                               if not repeated_path_segment(urlsplit(link), fetcher.max_path_repeats)]
            if final not in truth.on_topic:
                trap_links[host] = links_of[final]
        else:  # another trap page of the host: the links of its first one (see above)
            links_of[final] = trap_links[host]
        graph[final] = []
        todo.extend(link for link in links_of[final] if link not in resolved)
    for page, links in links_of.items():
        graph[page] = list(dict.fromkeys(resolved[link] for link in links if resolved.get(link)))
    return graph


def harvest_upper_bound(graph: dict[str, list[str]], seeds: list[str], weights: dict[str, int],
                        budget: int) -> int:
    """The most weight (on-topic pages or images) any crawl of ``budget`` pages can fetch.

    A crawl fetches a page only through a fetched page that links to it, so each fetched
    page ``v`` with weight comes with at least ``c(v)`` fetched pages without weight (the
    fewest on any path from a seed, 0-1 BFS). With ``T`` the weighted pages fetched:
    ``|T| + max c(T) <= budget``, so the harvest is at most ``max over m`` of the ``budget - m``
    largest weights with ``c <= m``: admissible (a relaxation of the Steiner-tree optimum).
    """
    cost: dict[str, int] = {}
    queue: deque[tuple[int, str]] = deque()
    for s in seeds:
        if s in graph:
            queue.append((0 if weights.get(s, 0) > 0 else 1, s))
    while queue:
        d, u = queue.popleft()
        if u in cost:
            continue
        cost[u] = d
        for v in graph.get(u, ()):
            if v not in cost:
                if weights.get(v, 0) > 0:
                    queue.appendleft((d, v))
                else:
                    queue.append((d + 1, v))
    weighted = sorted(((cost[v], -weights[v]) for v in cost if weights.get(v, 0) > 0))
    best, chosen = 0, []
    for i, (c, neg_w) in enumerate(weighted):
        chosen.append(-neg_w)
        if i + 1 < len(weighted) and weighted[i + 1][0] == c:
            continue  # every page of this cost first
        if c <= budget:
            best = max(best, sum(heapq.nlargest(budget - c, chosen)))
    return best


def upper_bounds(web, seeds: list[str], budget: int, truth: PageTruth | None = None) -> dict:
    """The most on-topic pages and on-topic images any crawl of ``budget`` pages from
    ``seeds`` can fetch on the web's graph (``harvest_upper_bound``), and the page harvest."""
    truth = truth or PageTruth.from_web(web)
    graph = web_graph(web, seeds, truth)
    pages = harvest_upper_bound(graph, seeds, {u: int(truth.page(u)) for u in graph}, budget)
    images = harvest_upper_bound(graph, seeds, {u: truth.images.get(u, (0, 0))[1] for u in graph}, budget)
    return {"budget": budget, "graph_pages": len(graph), "on_topic_pages": pages, "on_topic_images": images,
            "page_harvest": pages / budget if budget else None}
