"""A minimal link-following spider for infrastructure tests (Redis frontier, WARC, resume).

Not part of the product: it exercises the deployment components (scheduler,
dupefilter, throttle, WARC writer, JOBDIR) independently of the focused spider.
Each link's ``data-priority`` becomes the request priority. Output: one JSON line
per page to ``-a out=FILE`` (appended, one write per row).
"""
import json
import os

import scrapy


class LinkSpider(scrapy.Spider):
    name = "links"
    # the focused crawl's own link scoring would overwrite the priorities under test
    custom_settings = {"SPIDER_MIDDLEWARES": {}, "EXTENSIONS": {}}

    def __init__(self, start=None, out=None, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.start_urls = [start] if start else []
        self.out = out

    def parse(self, response):
        row = {"url": response.url, "pid": os.getpid(), "priority": response.request.priority}
        if self.out:
            with open(self.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
        for a in response.css("a[href]"):
            yield response.follow(a, priority=int(a.attrib.get("data-priority", 0)))
        yield row
