"""focuscrawl: a focused web crawler for topical image-text corpora."""

__version__ = "0.1.0"
