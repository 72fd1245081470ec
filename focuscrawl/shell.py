"""Why did the crawl do that? ``explain(response)`` in ``scrapy shell``.

    $ scrapy shell http://example.org/cats
    >>> from focuscrawl.shell import explain
    >>> explain(response)                   # project settings (mode, model, thresholds)
    >>> explain(response, mode="document")  # or another mode, or settings=crawler.settings

Prints the page's document perplexity and keyword score, then every out-link with
anchor perplexity, anchor keyword score, link score, bucket, priority and whether
the crawl follows it, computed by the same functions as the crawl.
"""
from __future__ import annotations

import sys
from typing import TextIO

from scrapy.http import HtmlResponse, Response
from scrapy.settings import BaseSettings

from focuscrawl.middlewares.priority import LinkDecision, LinkRanker
from focuscrawl.scoring import scorer_from_settings
from focuscrawl.spiders.focused import page_links, page_text
from focuscrawl.urls import SurtRules, domain_allowed, repeated_path_segment


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def explain_links(response: Response, settings: BaseSettings | None = None, mode: str | None = None,
                  scorer=None) -> tuple[float | None, float, list[tuple[str, str, LinkDecision, str]]]:
    """(document PP, keyword score, [(url, anchor, decision, scope verdict)]) of ``response``."""
    if settings is None:
        from scrapy.utils.project import get_project_settings
        settings = get_project_settings()
    settings = settings.copy()
    if mode:
        settings.set("FOCUSCRAWL_MODE", mode, priority="cmdline")
    scorer = scorer or scorer_from_settings(settings)
    if not isinstance(response, HtmlResponse):
        raise ValueError(f"not an HTML page: {response.url} ({response.headers.get('Content-Type')})")
    text = page_text(response, settings.get("FOCUSCRAWL_TEXT_EXTRACTOR"))
    doc, _ = scorer.score_document(text, settings.getint("FOCUSCRAWL_MIN_SENTENCE_TOKENS"))
    ranker = LinkRanker(settings, scorer)
    reject = SurtRules(settings.getlist("FOCUSCRAWL_REJECT_SURTS"))
    allowed = settings.getlist("FOCUSCRAWL_ALLOWED_DOMAINS")
    max_repeats = settings.getint("FOCUSCRAWL_MAX_PATH_REPEATS")
    depth = response.meta.get("depth", 0) if response.request is not None else 0
    links, _ = page_links(response.selector.root, response)
    rows = []
    for url, anchor in links.items():
        if allowed and not domain_allowed(url.split("/")[2].split(":")[0], allowed):
            scope = "offsite"
        elif reject.matches(url):
            scope = "rejected"
        elif repeated_path_segment(url, max_repeats):
            scope = "path trap"
        elif len(url) > settings.getint("URLLENGTH_LIMIT"):
            scope = "too long"
        else:
            scope = ""
        rows.append((url, anchor, ranker.decide(doc.perplexity, anchor, depth + 1), scope))
    return doc.perplexity, doc.keyword_score, rows


def explain(response: Response, settings: BaseSettings | None = None, mode: str | None = None,
            out: TextIO | None = None) -> None:
    """Print the document perplexity and every link's score, bucket and decision."""
    out = out or sys.stdout
    doc_pp, kw, rows = explain_links(response, settings, mode)
    print(f"page {response.url}\n  document perplexity {_num(doc_pp)}, keyword score {kw:.4f}, "
          f"{len(rows)} links", file=out)
    print(f"  {'decision':<10} {'score':>10} {'bucket':<7} {'prio':>5} {'anchor PP':>10} {'anchor kw':>9}  url  [anchor]",
          file=out)
    for url, anchor, d, scope in rows:
        decision = scope or ("follow" if d.followed else "razored")
        print(f"  {decision:<10} {_num(d.score):>10} {d.bucket:<7} {d.priority if d.followed else '':>5} "
              f"{_num(d.anchor_perplexity):>10} {_num(d.anchor_keyword_score):>9}  {url}  [{anchor[:60]}]", file=out)
