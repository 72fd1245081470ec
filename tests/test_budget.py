"""The page budget is exact in page rows, and it bounds the work: no more pages are
analysed than the budget (pages in progress count against it), and the ones still in
flight when it is reached are fetched (at most CONCURRENT_REQUESTS) but neither analysed
nor written, nor their images or links. Default concurrency and an analysis worker on
the demo web, so many pages are in progress at the end."""
from __future__ import annotations

import json

import pytest

from focuscrawl.demo import demo_web
from focuscrawl.eval.crawl_metrics import read_tsv
from focuscrawl.eval.crawls import run_crawl
from focuscrawl.testweb.server import TestWebServer


@pytest.mark.parametrize("budget", [50, 100])
def test_budget_is_exact_in_page_rows(tmp_path, budget):
    web = demo_web()
    with TestWebServer(web, slow_factor=0) as server:
        run_crawl("keywords", web.seeds(), tmp_path, budget, proxy=server.proxy)
    pages = read_tsv(tmp_path / "pages.tsv")
    assert len(pages) == budget
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["finish_reason"] == "page_budget"
    assert stats["focuscrawl/pages/crawled"] == budget  # analysed: the budget's pages, no more
    # at most CONCURRENT_REQUESTS late responses each time the engine was paused
    assert stats.get("focuscrawl/budget/responses_over_budget", 0) <= 16 * stats["focuscrawl/budget/pauses"]
    urls = {p["url"] for p in pages}
    assert {r["page_url"] for r in read_tsv(tmp_path / "images.tsv")} <= urls  # no image of an unwritten page
