"""The page budget is exact in page rows: pages still in flight when the budget is
spent are fetched (at most CONCURRENT_REQUESTS) but not written, nor their images or
links. Default concurrency on the demo web, so responses are in flight at the end."""
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
    assert stats["focuscrawl/pages/crawled"] >= budget  # the spider parsed the over-budget ones too
    urls = {p["url"] for p in pages}
    assert {r["page_url"] for r in read_tsv(tmp_path / "images.tsv")} <= urls  # no image of an unwritten page
