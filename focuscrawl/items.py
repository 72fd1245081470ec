"""Items emitted by the ``focused`` spider, and the fields each stage adds.

For every crawled page the spider yields one ``PageItem`` and then (the image
extraction middleware) one ``ImageItem`` per candidate ``<img>`` that passed the HTML
rules (SPEC §6 steps 1-4). Components pass data to each other in these declared
fields only (no attributes set on items); the page's analysis itself travels in
``response.meta["page_analysis"]`` (``focuscrawl.analysis``). Scores of a text are
dicts ``{"perplexity", "keyword_score", "weighted", "tokens"}``
(``focuscrawl.lm.scorer.TextScore`` as a dict; perplexity ``None`` = missing).
"""
from __future__ import annotations

import scrapy


class PageItem(scrapy.Item):
    """One crawled HTML page, in crawl order.

    The spider fills every field from the page analysis; on its way out the near-duplicate
    middleware sets ``near_duplicate_of`` and the link priority middleware ``link_rows`` and
    ``judged``;
    ``PageLogWriterPipeline`` (810) writes it (docs/ARCHITECTURE.md, data flow).
    """

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
    #: what the site owner withholds (absent: nothing): ``{"nofollow", "text", "images"}``, each
    #: a list of reasons ``source:directive`` (``focuscrawl.rights``); with ``text`` the page's
    #: ``sentences`` are empty, with ``images`` no ImageItem follows it
    optout = scrapy.Field()
    #: the page's licence, creator, ... as its markup says (``focuscrawl.rights.licenses.Rights``
    #: as a dict; absent: none)
    rights = scrapy.Field()
    #: the links.tsv rows of the page's out-links (``LinkPriorityMiddleware``, with
    #: ``FOCUSCRAWL_LINKS_LOG``); the page writer takes them off the item and writes them in
    #: the page's batch, so feed exports never see them
    link_rows = scrapy.Field()
    #: out-links the scheduler has seen already (``focuscrawl.frontier.KnownLinks``), for which
    #: the spider built no request; the link priority middleware takes them off the item and
    #: decides and logs them as it does the page's requests
    known_links = scrapy.Field()
    #: mode ``learning``: the page judge's ``(topicality, on_topic)`` (``LinkLearningMiddleware``);
    #: the page writer takes it off the item into ``judged.tsv``, so feed exports never see it
    judged = scrapy.Field()


class ImageItem(scrapy.Item):
    """One candidate image found on one page (a *sighting*), with every text and score around it.

    The image chain, in order (numbers: ``ITEM_PIPELINES``); each stage reads the fields
    filled before it and fills its own, below:

    1. ``ImageExtractionMiddleware`` (spider middleware): the item from the page analysis
       (``focuscrawl.images.extract``), ``near_duplicate_page`` from the page's
       ``PageItem.near_duplicate_of``; at start, the items a killed crawl had accepted
       (``images.pending``) again.
    2. ``FinalScorePipeline`` (100): ``final_score``, ``final_context``, on every sighting:
       the only place the final score is computed.
    3. ``ImageRecordsPipeline`` (200): a first sighting of its URL gets ``first_seen`` and
       ``record_path`` and goes on; a later one joins the image's record in the
       ``ImageStore`` and stops.
    4. ``ImageDownloadPipeline`` (300): ``image_path``, ``width``, ``height``,
       ``image_format``, ``image_size``, ``image_sha1``; a failed download stops the item
       (``ImageDropped``: its URL is marked dropped).
    5. ``ImageRecordsPipeline`` again, on Scrapy's ``item_scraped`` once the item has been
       through every pipeline: the record and the ``images.tsv`` row, from these fields
       (``focuscrawl.output.images``).
    """

    # 1. the image extraction (page analysis)
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
    language = scrapy.Field()  # of its ALT text, else title, else parent-0 context, else page ("": unknown)
    near_duplicate_page = scrapy.Field()  # page is a near-duplicate (images marked, not skipped)
    #: licence, creator, credit, copyright notice, TDM policy (``focuscrawl.rights.licenses.Rights``
    #: as a dict): the image's own JSON-LD, else the page's markup; the download adds what the
    #: file's metadata says where the markup has nothing more specific
    rights = scrapy.Field()
    # 2. the final score
    final_score = scrapy.Field()
    final_context = scrapy.Field()  # which context the final score used, e.g. "parent-1"
    # 3. the merge
    first_seen = scrapy.Field()  # order of first sighting in the crawl
    record_path = scrapy.Field()
    # 4. the download
    image_path = scrapy.Field()  # relative to the run directory
    width = scrapy.Field()  # real size after download
    height = scrapy.Field()
    image_format = scrapy.Field()  # as Pillow reads it
    image_size = scrapy.Field()  # bytes
    image_sha1 = scrapy.Field()
    #: ``downloaded``; ``not_archived``: a replay's archives hold no copy of the image, so the
    #: pair is written without image (a candidate: ``rank`` exports its URL to be fetched)
    image_status = scrapy.Field()
