"""Items emitted by the ``focused`` spider.

For every crawled page the spider yields one ``PageItem`` and then one ``ImageItem``
per candidate ``<img>`` that passed the HTML rules (SPEC §6 steps 1-4). Pipelines
download, score, merge (same image URL on several pages) and write them. Scores of
a text are dicts ``{"perplexity", "keyword_score", "weighted", "tokens"}``
(``focuscrawl.lm.scorer.TextScore`` as a dict; perplexity ``None`` = missing).
"""
from __future__ import annotations

import scrapy


class PageItem(scrapy.Item):
    """One crawled HTML page, in crawl order."""

    url = scrapy.Field()
    depth = scrapy.Field()
    status = scrapy.Field()
    host = scrapy.Field()
    size = scrapy.Field()  # body bytes
    fetched_at = scrapy.Field()  # unix time
    perplexity = scrapy.Field()  # document PP (None: no sentence)
    keyword_score = scrapy.Field()
    sentences = scrapy.Field()  # normalised sentences (≥ 5 tokens) in page order
    links = scrapy.Field()  # number of out-links found
    images = scrapy.Field()  # number of <img> elements on the page
    near_duplicate_of = scrapy.Field()  # URL of an earlier near-identical page, or None
    language = scrapy.Field()  # ISO 639-1 code of the text's language ("": unknown)
    #: the links.tsv rows of the page's out-links (``LinkPriorityMiddleware``, with
    #: ``FOCUSCRAWL_LINKS_LOG``); the page writer takes them off the item and writes them in
    #: the page's batch, so feed exports never see them
    link_rows = scrapy.Field()


class ImageItem(scrapy.Item):
    """One candidate image found on one page, with every text and score around it."""

    image_url = scrapy.Field()
    page_url = scrapy.Field()
    page_depth = scrapy.Field()
    page_perplexity = scrapy.Field()
    alt = scrapy.Field()
    title = scrapy.Field()
    src_guess = scrapy.Field()
    alt_scores = scrapy.Field()
    title_scores = scrapy.Field()
    src_scores = scrapy.Field()
    html_width = scrapy.Field()
    html_height = scrapy.Field()
    css_class = scrapy.Field()
    style = scrapy.Field()
    extension = scrapy.Field()  # from the URL path: jpg, jpeg, png, gif
    # [{"kind": "parent"|"sibling", "level": i, "tag", "text", "length", "distance", "scores"}]
    contexts = scrapy.Field()
    # optional extra context extractors: {name: {"text", "scores"}}
    extra_contexts = scrapy.Field()
    # filled by the pipelines
    final_score = scrapy.Field()
    final_context = scrapy.Field()  # which context the final score used, e.g. "parent-1"
    image_path = scrapy.Field()  # relative to the run directory
    width = scrapy.Field()  # real size after download
    height = scrapy.Field()
    image_format = scrapy.Field()  # as Pillow reads it
    image_size = scrapy.Field()  # bytes
    image_sha1 = scrapy.Field()
    record_path = scrapy.Field()
    first_seen = scrapy.Field()  # order of first sighting in the crawl
    near_duplicate_page = scrapy.Field()  # page is a near-duplicate (images marked, not skipped)
    language = scrapy.Field()  # of its ALT text, else title, else parent-0 context, else page ("": unknown)
