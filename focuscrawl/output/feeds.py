"""Scrapy's JSON feed exporters with each item's kind: ``"type": "page"`` or ``"image"``.

A crawl's feed (``-O items.jsonl``) holds its ``PageItem``s and ``ImageItem``s in crawl
order; the ``type`` field, first in every item, tells them apart without guessing from the
fields. Enabled for Scrapy's JSON formats in ``FEED_EXPORTERS`` (focuscrawl.settings). To
write pages and images to separate feeds, Scrapy's feed option ``item_classes`` does it.
"""
from __future__ import annotations

from typing import Any, Iterable

from scrapy.exporters import JsonItemExporter, JsonLinesItemExporter

from focuscrawl.items import ImageItem, PageItem

#: item class -> its ``type`` in a feed
ITEM_TYPES = {PageItem: "page", ImageItem: "image"}


class _TypedItems:
    """``type`` first, then Scrapy's fields of the item (all of them: with ``FEED_EXPORT_FIELDS``
    the feed has the fields listed there, as in Scrapy)."""

    def get_serialized_fields(self, item: Any, default_value: Any = None,
                               include_empty: bool | None = None) -> Iterable[tuple[str, Any]]:
        kind = ITEM_TYPES.get(type(item))
        if kind is not None and self.fields_to_export is None:
            yield "type", kind
        yield from super().get_serialized_fields(item, default_value, include_empty)


class TypedJsonLinesItemExporter(_TypedItems, JsonLinesItemExporter):
    """Scrapy's JSON lines exporter with the item's ``type``."""


class TypedJsonItemExporter(_TypedItems, JsonItemExporter):
    """Scrapy's JSON exporter with the item's ``type``."""
