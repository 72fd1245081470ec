"""Quality measurements: extraction, image context, near-duplicates, crawl runs (``focuscrawl eval``)."""
