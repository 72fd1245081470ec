"""Why did the crawl do that? ``explain(response)`` in ``scrapy shell``.

    $ scrapy shell -s FOCUSCRAWL_TOPIC=DIR http://example.org/cats
    >>> from focuscrawl.shell import explain
    >>> explain(response)                   # the shell's settings (its -s) over focuscrawl's
    >>> explain(response, mode="document")  # or another mode, or settings=crawler.settings
    >>> explain(response, learner="run/link_learner.pkl")  # the learned score a crawl's learner gives

Prints the page's document perplexity and keyword score (and, with a topic bundle, its
calibrated P(on topic) under every scorer), then every out-link with anchor perplexity,
anchor keyword score, link score, bucket, priority and whether the crawl follows it
(with a link learner, or in mode ``learning``: the learned score next to the thesis's,
and the priority the learning crawl gives) — ``follow`` only for a link the crawl would
request: links out of scope (``offsite``, ``rejected``, ``path trap``, ``too long``, ``too
deep`` past ``DEPTH_LIMIT``) and
links the host's robots.txt forbids (``robots.txt``; fetched once per host, as the crawl
does, when ``ROBOTSTXT_OBEY``) say so, and so do kept images whose download robots.txt
or the allowed domains refuse; drops that depend on what the crawl has seen before
(duplicates, a host's page cap, query variants) are not shown — then every ``<img>`` with its
ALT/title/context scores, final score, P(on topic) (the ranking's score, ``focuscrawl
rank``) and keep/drop reason; computed by the same functions as the crawl and the ranking.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Callable, TextIO
from urllib.parse import urlsplit

from scrapy.http import HtmlResponse, Response
from scrapy.settings import BaseSettings

from scrapy.utils.misc import load_object
from scrapy.utils.response import get_base_url

from focuscrawl.images.extract import ContextSettings, ImageDecision, image_items
from focuscrawl.images.final import final_score
from focuscrawl.images.inspect import ImageInfo, ImageRejected, allowed_formats, inspect_image
from focuscrawl.images.rules import ImageRules
from focuscrawl.focus.modes import focus_from_settings
from focuscrawl.focus.ranker import LinkDecision, link_facts
from focuscrawl.crawl_scorer import scorer_from_settings, topic_model_from_settings
from focuscrawl.analysis import AnalysisConfig, analyse_page, budgeted_tree
from focuscrawl.rights.licenses import page_rights, rights_elements
from focuscrawl.rights.policy import SITE_OPTOUT_META, OptOutPolicy
from focuscrawl.topic.images import item_logit
from focuscrawl.topic.model import sigmoid
from focuscrawl.urls import SurtRules, domain_allowed, repeated_path_segment, too_many_path_segments


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _learner(learner):
    """A ``LinkLearner``, or a saved one's path (``None``: the mode's own, mode ``learning``)."""
    from focuscrawl.focus.link_learner import LinkLearner

    return LinkLearner.load(learner) if isinstance(learner, (str, Path)) else learner


def fetch_robots(url: str, user_agent: str) -> bytes | None:
    """The body of ``url`` (any status, as Scrapy parses it), or None when it cannot be fetched."""
    import urllib.error
    import urllib.request

    try:  # honours http_proxy like the crawl's HttpProxyMiddleware
        with urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": user_agent}),
                                    timeout=10) as answer:
            return answer.read()
    except urllib.error.HTTPError as exc:
        return exc.read()
    except (OSError, ValueError):
        return None


class RobotsRules:
    """robots.txt as the crawl's ``RobotsTxtMiddleware`` applies it: one fetch per scheme and
    host, parsed by ``ROBOTSTXT_PARSER``, matched with ``ROBOTSTXT_USER_AGENT`` or
    ``USER_AGENT``; a robots.txt that cannot be fetched forbids nothing."""

    def __init__(self, obey: bool, parser: type, user_agent: str,
                 fetch: Callable[[str, str], bytes | None] = fetch_robots) -> None:
        self.obey = obey
        self.parser = parser
        self.user_agent = user_agent
        self.fetch = fetch
        self.parsers: dict[str, object] = {}

    @classmethod
    def from_settings(cls, settings: BaseSettings, fetch: Callable[[str, str], bytes | None] = fetch_robots):
        return cls(settings.getbool("ROBOTSTXT_OBEY"), load_object(settings["ROBOTSTXT_PARSER"]),
                   settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT"), fetch)

    def allowed(self, url: str) -> bool:
        if not self.obey:
            return True
        parts = urlsplit(url)
        root = f"{parts.scheme}://{parts.netloc}"
        if root not in self.parsers:
            body = self.fetch(f"{root}/robots.txt", self.user_agent)
            self.parsers[root] = None if body is None else self.parser.from_crawler(None, body)
        parser = self.parsers[root]
        return parser is None or parser.allowed(url, self.user_agent)


def explain_links(response: Response, settings: BaseSettings | None = None, mode: str | None = None,
                  scorer=None, learner=None, robots: RobotsRules | None = None) -> tuple[float | None, float, list[tuple[str, str, LinkDecision, str]]]:
    """(document PP, keyword score, [(url, anchor, decision, scope verdict)]) of ``response``;
    with ``learner`` (or in mode ``learning``) each decision carries the learned score; the
    verdict is empty for a link the crawl requests, else why it drops it (``robots``: the
    robots.txt rules, by default fetched as the crawl fetches them)."""
    settings = _settings(settings).copy()
    if mode:
        settings.set("FOCUSCRAWL_MODE", mode, priority="cmdline")
    if not isinstance(response, HtmlResponse):
        raise ValueError(f"not an HTML page: {response.url} ({response.headers.get('Content-Type')})")
    focus = focus_from_settings(settings, scorer, _learner(learner))  # the crawl's mode, as the spider builds it
    depth = response.meta.get("depth", 0) if response.request is not None else 0
    page = _analysis(response, focus.analysis, focus.scorer, depth, focus.page_topic)
    doc = page.score
    ranker = focus.ranker
    doc_value = focus.page_score(page)  # what the crawl's ranker reads
    topicality = focus.judge.topicality(doc.weighted, page.topic_logit) if focus.judge is not None else None
    came_by = link_facts(response)  # the link that led to the page, in a crawl's response
    grand = came_by.parent_topicality if came_by is not None else None
    reject = SurtRules(settings.getlist("FOCUSCRAWL_REJECT_SURTS"))
    allowed = settings.getlist("FOCUSCRAWL_ALLOWED_DOMAINS")
    max_repeats = settings.getint("FOCUSCRAWL_MAX_PATH_REPEATS")
    max_segments = settings.getint("FOCUSCRAWL_MAX_PATH_SEGMENTS")
    robots = robots or RobotsRules.from_settings(settings)
    rows = []
    for url, anchor in page.links.items():
        if allowed and not domain_allowed(url.split("/")[2].split(":")[0], allowed):
            scope = "offsite"
        elif reject.matches(url):
            scope = "rejected"
        elif repeated_path_segment(url, max_repeats) or too_many_path_segments(url, max_segments):
            scope = "path trap"
        elif len(url) > settings.getint("URLLENGTH_LIMIT"):
            scope = "too long"
        elif 0 < settings.getint("DEPTH_LIMIT") < depth + 1:  # Scrapy's DepthMiddleware
            scope = "too deep"
        else:
            scope = ""
        decision = ranker.decide(doc_value, anchor, depth + 1, url=url, parent_url=response.url,
                                 parent_topicality=topicality, grandparent_topicality=grand)
        if not scope and decision.followed and not robots.allowed(url):  # requested, then refused
            scope = "robots.txt"
        rows.append((url, anchor, decision, scope))
    return doc.perplexity, doc.keyword_score, rows


def _analysis(response: HtmlResponse, config: AnalysisConfig, scorer, depth: int = 0, topic=None):
    """The page as the crawl reads it (``analysis.analyse_page``: its text extractor and
    markup budget), without its images (``explain_images`` shows dropped ones too)."""
    config = dataclasses.replace(config, images=False, ngrams=())
    return analyse_page(response.text, response.url, get_base_url(response), depth, config, scorer, topic)


def _shell_settings() -> BaseSettings | None:
    """The settings of the ``crawler`` of the code that called into this module: in ``scrapy
    shell`` the shell's crawler, with its ``-s NAME=VALUE``; None elsewhere."""
    from scrapy.crawler import Crawler

    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    if frame is None:
        return None
    for scope in (frame.f_locals, frame.f_globals):
        crawler = scope.get("crawler")
        if isinstance(crawler, Crawler):
            return crawler.settings
    return None


def _settings(settings: BaseSettings | None) -> BaseSettings:
    """focuscrawl's settings with ``settings`` (default: the shell's crawler's) over them: a
    shell outside the checkout (no scrapy.cfg) has Scrapy's defaults and its ``-s`` only."""
    from scrapy.settings import SETTINGS_PRIORITIES

    from focuscrawl.resources import project_settings

    if settings is None:
        settings = _shell_settings()
    if settings is not None and settings.get("FOCUSCRAWL_MODE") is not None:  # focuscrawl's project settings
        return settings
    full = project_settings()
    for name in settings or ():
        priority = settings.getpriority(name)
        if priority is not None and priority > SETTINGS_PRIORITIES["default"]:
            full.set(name, settings[name], priority=priority)
    return full


def explain_images(response: HtmlResponse, settings: BaseSettings | None = None,
                   scorer=None) -> list[tuple[ImageDecision, float | None, str | None]]:
    """Every ``<img>`` of the page: (decision with its scored item, final score, final context)."""
    settings = _settings(settings)
    scorer = scorer or scorer_from_settings(settings)
    context = ContextSettings.from_settings(settings)
    root, _ = budgeted_tree(response.text, response.url, AnalysisConfig.from_settings(settings).text_max_tags)
    decisions = image_items(root, response.url, scorer, ImageRules.from_settings(settings),
                            context, base_url=get_base_url(response), score_dropped=True)
    rows = []
    for d in decisions:
        score, label = (None, None)
        if d.item is not None:
            score, label = final_score(d.item.get("alt_scores"), d.item.get("title_scores"), d.item.get("contexts"),
                                       d.item.get("extra_contexts"), context.final)
        rows.append((d, score, label))
    return rows


def explain_optout(response: HtmlResponse, settings: BaseSettings | None = None):
    """(the crawl's opt-out decision for the page, the page's ``PageRights``): its headers,
    its markup and, when the response came through the crawl's downloader middlewares (``scrapy
    shell`` with focuscrawl's settings), its host's robots.txt AI groups and ``tdmrep.json``."""
    settings = _settings(settings)
    policy = OptOutPolicy.from_settings(settings)
    config = AnalysisConfig.from_settings(settings)
    root, _ = budgeted_tree(response.text, response.url, config.text_max_tags)
    rights = page_rights(rights_elements(root), get_base_url(response), config.robots_agents, config.ai_agents)
    site = response.meta.get(SITE_OPTOUT_META) if response.request is not None else None
    return policy.page(response.headers, rights.signals, site), rights


def explain_image(response: Response, settings: BaseSettings | None = None) -> tuple[str, ImageInfo | None, str]:
    """(why the crawl keeps this downloaded image out of the corpus, "" if it does not: its
    response headers, its host's files when it came through the crawl's downloader middlewares,
    its own metadata; what Pillow and the metadata say, ``None`` if it is not a kept image;
    why not, as ``focuscrawl/images/failed/<reason>``), as the image download decides."""
    settings = _settings(settings)
    policy = OptOutPolicy.from_settings(settings)
    site = response.meta.get(SITE_OPTOUT_META) if response.request is not None else None
    optout = policy.image_response(response.headers, site)
    try:
        info = inspect_image(response.body, allowed_formats(settings.getlist("FOCUSCRAWL_IMAGE_FORMATS")),
                             settings.getint("FOCUSCRAWL_IMAGE_MAX_PIXELS"), read_metadata=True)
    except ImageRejected as exc:
        return optout, None, exc.reason
    return optout or policy.image_file(info.metadata.mining), info, ""


def _print_image(response: Response, settings: BaseSettings, out: TextIO) -> None:
    optout, info, rejected = explain_image(response, settings)
    print(f"image {response.url}", file=out)
    if info is not None:
        print(f"  {info.format} {info.width}x{info.height}, {len(response.body):,} bytes", file=out)
    decision = f"opted out ({optout})" if optout else f"not kept: {rejected}" if rejected else "keep"
    print(f"  decision: {decision}", file=out)
    if info is not None:
        declared = ", ".join(f"{k} {v!r}" for k, v in info.metadata.mining.items())
        print(f"  its own metadata on mining: {declared or 'nothing declared'}", file=out)
        rights = ", ".join(f"{k} {v!r}" for k, v in info.metadata.rights.as_dict().items() if v)
        print(f"  its own rights: {rights or 'none declared'}", file=out)


def _download_verdict(src: str, robots: RobotsRules, allowed: list[str]) -> str:
    """What the image download does with an image the HTML rules keep: it obeys robots.txt
    and the allowed domains too (``images/failed/filtered``, OUTPUT.md)."""
    if allowed and not domain_allowed(urlsplit(src).hostname or "", allowed):
        return "offsite"
    return "keep" if robots.allowed(src) else "robots.txt"


def explain(response: Response, settings: BaseSettings | None = None, mode: str | None = None,
            out: TextIO | None = None, learner=None, robots: RobotsRules | None = None) -> None:
    """Print the document perplexity, every link's score (and learned score), bucket and
    decision, and every image's scores and keep/drop reason; for an image response, the image
    download's decision, and what the file's own metadata says. ``learner``: a
    ``LinkLearner`` or the path of one a crawl saved (``RUN_DIR/link_learner.pkl``).
    A link's decision is ``follow`` only when the crawl would request it (robots.txt and
    scope included); ``robots``: the robots.txt rules (default: fetched per host)."""
    out = out or sys.stdout
    settings = _settings(settings)
    if not isinstance(response, HtmlResponse) and not response.headers.get("Content-Type", b"").startswith(b"text/"):
        _print_image(response, settings, out)
        return
    robots = robots or RobotsRules.from_settings(settings)
    doc_pp, kw, rows = explain_links(response, settings, mode, learner=learner, robots=robots)
    model = topic_model_from_settings(settings)
    print(f"page {response.url}\n  document perplexity {_num(doc_pp)}, keyword score {kw:.4f}, "
          f"{len(rows)} links", file=out)
    if model is not None:
        text = "\n".join(_analysis(response, AnalysisConfig.from_settings(settings),
                                    scorer_from_settings(settings)).sentences)
        probs = model.scores(text) or {}
        print(f"  P(on topic) under topic bundle {model.manifest.get('name')!r}: "
              + ", ".join(f"{k} {v:.3f}" for k, v in probs.items())
              + f"; the ranking uses {model.scorer}, cut {model.threshold('cut'):.3f}", file=out)
    optout, rights = explain_optout(response, settings)
    withheld = [f"{what} ({', '.join(reasons)})" for what, reasons in
                (("links not followed", optout.nofollow), ("text withheld", optout.no_text),
                 ("images withheld", optout.no_images)) if reasons]
    print("  opt-outs: " + ("; ".join(withheld) if withheld else "none"), file=out)
    page_rights_text = ", ".join(f"{k} {v!r}" for k, v in rights.page.as_dict().items() if v)
    print(f"  page rights: {page_rights_text or 'none declared'}", file=out)
    print(f"  {'decision':<10} {'score':>10} {'learned':>8} {'bucket':<7} {'prio':>5} {'anchor PP':>10} "
          f"{'anchor kw':>9}  url  [anchor]", file=out)
    for url, anchor, d, scope in rows:
        decision = scope or ("nofollow" if optout.nofollow else "follow" if d.followed else "razored")
        print(f"  {decision:<10} {_num(d.score):>10} {_num(d.learned):>8} {d.bucket:<7} "
              f"{d.priority if d.followed else '':>5} {_num(d.anchor_perplexity):>10} "
              f"{_num(d.anchor_keyword_score):>9}  {url}  [{anchor[:60]}]", file=out)
    images = explain_images(response, settings)
    allowed = settings.getlist("FOCUSCRAWL_ALLOWED_DOMAINS")
    print(f"  {len(images)} images", file=out)
    print(f"  {'decision':<16} {'final':>9} {'from':<14} {'ALT PP':>9} {'ALT wPP':>9} {'parent-1 wPP':>12} "
          f"{'P(topic)':>8}  src  [alt]", file=out)
    for d, score, label in images:
        item = d.item or {}
        alt = item.get("alt_scores") or {}
        parents = [c for c in item.get("contexts") or [] if c.get("kind") == "parent" and c.get("level") == 1]
        parent = (parents[0].get("scores") or {}).get("weighted") if parents else None
        value = item_logit(model, item) if model is not None and item else None
        prob = None if value is None else sigmoid(value)
        verdict = d.reason or ("opted out" if optout.no_images else _download_verdict(d.src, robots, allowed))
        print(f"  {verdict:<16} {_num(score):>9} {label or '-':<14} {_num(alt.get('perplexity')):>9} "
              f"{_num(alt.get('weighted')):>9} {_num(parent):>12} {_num(prob):>8}  {d.src}  "
              f"[{(item.get('alt') or '')[:50]}]", file=out)
