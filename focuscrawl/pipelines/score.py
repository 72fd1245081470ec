"""Final image score: geometric mean of ALT and parent-1 weighted perplexity (SPEC §6).

The first stage of the image chain (``focuscrawl.items.ImageItem``) and the only place the
score is computed: every sighting gets ``final_score`` and ``final_context`` before the merge
pipeline, which keeps a later sighting's in the image's record.
``FOCUSCRAWL_IMAGE_FINAL_CONTEXT`` other than "thesis" takes that extra context
(``ImageItem["extra_contexts"]``) instead of parent-1.
"""
from __future__ import annotations

from scrapy.crawler import Crawler

from focuscrawl.images.final import final_score
from focuscrawl.items import ImageItem


class FinalScorePipeline:
    def __init__(self, context_name: str) -> None:
        self.context_name = context_name

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "FinalScorePipeline":
        return cls(crawler.settings.get("FOCUSCRAWL_IMAGE_FINAL_CONTEXT"))

    def process_item(self, item):
        if isinstance(item, ImageItem):
            item["final_score"], item["final_context"] = final_score(
                item.get("alt_scores"), item.get("title_scores"), item.get("contexts"), item.get("extra_contexts"),
                self.context_name)
        return item
