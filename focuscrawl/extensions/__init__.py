"""Scrapy extensions of focuscrawl (enabled in ``focuscrawl.settings.EXTENSIONS``)."""
