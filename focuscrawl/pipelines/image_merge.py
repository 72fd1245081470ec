"""Merge and dedupe images by URL: the first sighting goes on, later ones join its record.

A later sighting (the same image URL on another page) adds its page, texts,
contexts and scores (its final score too: the score pipeline runs first) to the image's
record (``ImageStore``) and is dropped from the pipeline (``DropItem`` at DEBUG level), so
each image URL is downloaded and logged once, and nothing seen is lost. Unique images are
counted by the context of their final score (``focuscrawl/images/final_context/<label>``).
"""
from __future__ import annotations

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured

from focuscrawl.items import ImageItem
from focuscrawl.output.run_state import RunState
from focuscrawl.output.images import ImageStore


class ImageMergePipeline:
    def __init__(self, store: ImageStore, stats) -> None:
        self.store = store
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "ImageMergePipeline":
        store = crawler.get_extension(RunState).images
        if store is None:
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR: images are not merged")
        return cls(store, crawler.stats)

    def process_item(self, item):
        if not isinstance(item, ImageItem):
            return item
        if self.store.first_sighting(item):
            self.stats.inc_value("focuscrawl/images/unique")
            self.stats.inc_value(f"focuscrawl/images/final_context/{item.get('final_context') or 'none'}")
            return item
        self.stats.inc_value("focuscrawl/images/merge/later_sightings")
        raise DropItem(f"image {item['image_url']} already seen: merged into its record", log_level="DEBUG")
