"""Images on a page: the HTML rules, the src guess string, scoring and the final score (SPEC §6).

Pure functions over lxml elements and a ``TopicScorer``; the Scrapy components in
``focuscrawl.middlewares.images`` and ``focuscrawl.pipelines`` are thin wrappers.
"""
