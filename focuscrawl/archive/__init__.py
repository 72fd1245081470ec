"""Web archives in and out: WARC writing during a crawl, WARC/ARC reading and replay.

``reader``: index and read HTTP response records of WARC and ARC files (SPEC §8 rules);
``writer``: rotating WARC files written from a downloader middleware;
``replay``: serve archived responses to a crawl instead of the network.
"""
