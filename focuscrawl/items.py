"""Items produced by the focused spider (filled in by the crawl components)."""
