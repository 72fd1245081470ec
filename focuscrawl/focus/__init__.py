"""What makes the crawl focused beyond scoring texts: link scores and their Scrapy
priorities (SPEC §5) and the online link learner of crawl mode ``learning``."""
