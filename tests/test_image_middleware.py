"""ImageExtractionMiddleware with a real Scrapy crawler, response and items (no crawl).

Each response carries its page analysis (``focuscrawl.analysis``) in its meta, as the
spider leaves it."""
import asyncio

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response, TextResponse

from scrapy.utils.response import get_base_url

from focuscrawl.analysis import META_KEY, AnalysisConfig, analyse_page
from focuscrawl.items import ImageItem, PageItem
from focuscrawl.middlewares.images import ImageExtractionMiddleware
from tests.support.crawler import focuscrawl_crawler

HTML = b"""<html><head><base href="http://cdn.test/pics/"></head><body><div><p>My cat sleeps on the sofa.</p>
<img src="a.jpg" alt="a cat" width="600" height="400"><img src="b.jpg" width="600" height="400">
<img src="c.jpg" alt="tiny" width="10" height="10"></div></body></html>"""


def make_mw(**settings):
    crawler = focuscrawl_crawler(**settings)
    crawler.stats.open_spider()
    return ImageExtractionMiddleware.from_crawler(crawler), crawler.stats


def analysed(url, body=HTML, depth=1):
    """An HtmlResponse with the page analysis the spider would have left in its meta."""
    resp = HtmlResponse(url, body=body, request=Request(url))
    config = AnalysisConfig()
    resp.meta[META_KEY] = analyse_page(resp.text, url, get_base_url(resp), depth, config, config.scorer.load())
    return resp


def output(mw, response, objs):
    return list(mw.process_spider_output(response, iter(objs)))


def page_item(url="http://s.test/p", dup=None):
    return PageItem(url=url, depth=1, perplexity=50.0, sentences=[], near_duplicate_of=dup)


def test_page_item_then_its_images_and_counts():
    mw, stats = make_mw()
    resp = analysed("http://s.test/p")
    req = Request("http://s.test/next")
    out = output(mw, resp, [page_item(), req])
    assert isinstance(out[0], PageItem) and out[2] is req
    img = out[1]
    assert isinstance(img, ImageItem)
    assert img["image_url"] == "http://cdn.test/pics/a.jpg"  # <base href> honoured
    page_pp = resp.meta[META_KEY].score.perplexity
    assert img["page_url"] == "http://s.test/p" and img["page_depth"] == 1 and img["page_perplexity"] == page_pp > 0
    assert img["near_duplicate_page"] is False
    assert stats.get_value("focuscrawl/images/seen") == 3 and stats.get_value("focuscrawl/images/kept") == 1
    assert stats.get_value("focuscrawl/images/dropped/no_alt_title") == 1 and stats.get_value("focuscrawl/images/dropped/too_small") == 1


def test_async_output_matches_sync():
    mw, _ = make_mw()
    resp = analysed("http://s.test/p")

    async def gen():
        yield page_item()

    async def collect():
        return [o async for o in mw.process_spider_output_async(resp, gen())]

    out = asyncio.run(collect())
    sync = output(make_mw()[0], resp, [page_item()])
    assert [type(o) for o in out] == [PageItem, ImageItem]
    assert [dict(o) for o in out] == [dict(o) for o in sync]
    assert out[1]["image_url"] == "http://cdn.test/pics/a.jpg" and out[1]["alt"] == "a cat"


@pytest.mark.parametrize("mode, kept", [("mark", 1), ("skip", 0)])
def test_near_duplicate_pages(mode, kept):
    mw, stats = make_mw(FOCUSCRAWL_NEARDUP_IMAGES=mode)
    out = output(mw, analysed("http://s.test/p2"), [page_item("http://s.test/p2", "http://s.test/p")])
    images = [o for o in out if isinstance(o, ImageItem)]
    assert len(images) == kept
    if mode == "mark":
        assert images[0]["near_duplicate_page"] is True
        assert stats.get_value("focuscrawl/images/kept_near_duplicate_page") == 1
    else:
        assert stats.get_value("focuscrawl/images/pages_skipped_near_duplicate") == 1
        assert stats.get_value("focuscrawl/images/seen") is None


def test_non_html_and_bad_setting():
    mw, stats = make_mw()
    out = output(mw, Response("http://s.test/x.bin", body=b"\x00\x01", request=Request("http://s.test/x.bin")),
                 [page_item()])
    assert len(out) == 1 and stats.get_value("focuscrawl/images/pages_unparseable") == 1
    out = output(mw, TextResponse("http://s.test/x", body=b"", encoding="utf-8", request=Request("http://s.test/x")),
                 [page_item()])
    assert len(out) == 1
    with pytest.raises(ValueError, match="FOCUSCRAWL_NEARDUP_IMAGES"):
        make_mw(FOCUSCRAWL_NEARDUP_IMAGES="drop")
