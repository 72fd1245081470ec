"""Scrapy settings for focuscrawl, with the method's defaults from SPEC.md.

Every ``FOCUSCRAWL_*`` setting is documented here; components read them in
``from_crawler``. Override with ``-s NAME=VALUE`` or ``custom_settings``.

Grouped by concern: the project and politeness, then the crawl's components (each
component dict is defined once, in "Components"), then the settings of each part of the
crawl in the order a page goes through it, then the tools that work on a finished run.
"""

BOT_NAME = "focuscrawl"
SPIDER_MODULES = ["focuscrawl.spiders"]
NEWSPIDER_MODULE = "focuscrawl.spiders"

# --- Politeness (DEVELOPERS.md standard 6) ------------------------------------------
#: Contact appended to the User-Agent so site owners can reach the operator.
FOCUSCRAWL_CONTACT = "+https://github.com/focuscrawl/focuscrawl"
USER_AGENT = f"focuscrawl/0.1 (focused research crawler; {FOCUSCRAWL_CONTACT})"
ROBOTSTXT_OBEY = True
#: The other "no"s of a site owner that the crawl obeys (docs/OPTOUTS.md): ``meta_robots``
#: (``<meta name="robots">`` and ``<meta name="focuscrawl">``), ``x_robots_tag`` (the header,
#: on pages and on image responses), ``tdmrep`` (``tdm-reservation`` meta and header,
#: ``/.well-known/tdmrep.json``, ``tdm:reservation`` in an image's XMP), ``robots_ai``
#: (robots.txt groups that disallow the AI crawlers of FOCUSCRAWL_AI_AGENTS by name, and
#: their ``<meta name=AGENT>`` or ``X-Robots-Tag: AGENT: ...`` noindex/noai),
#: ``image_metadata`` (IPTC's "Data Mining" property in an image's XMP, ``plus:DataMining``
#: ``DMI-PROHIBITED…``), ``content_signals`` (a refusal of AI training in robots.txt's or a
#: response's ``Content-Signal``, Cloudflare's, or ``Content-Usage``, the IETF's:
#: ``ai-train=no``, ``train-ai=n``). Leave one out to relax it: the crawl warns at start.
FOCUSCRAWL_OPTOUTS = ["meta_robots", "x_robots_tag", "tdmrep", "robots_ai", "image_metadata", "content_signals"]
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 2
DOWNLOAD_DELAY = 0.5
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 1.0
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
RETRY_TIMES = 1
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
#: Scrapy 2.19's remote control (an HTTP server on localhost that runs Python code sent to
#: it, behind a token) is off like the telnet console: a crawl of untrusted pages opens no
#: code-execution port, and it leaves no job file in the user's state folder (every crawl
#: that was killed left one there). Set it to True to use it.
REMOTE_CONTROL_ENABLED = False
FEED_EXPORT_ENCODING = "utf-8"
#: JSON feeds (``-O items.jsonl``) say each item's kind first: ``"type": "page"`` or ``"image"``
#: (focuscrawl.output.feeds); Scrapy's exporters otherwise.
FEED_EXPORTERS = {
    "json": "focuscrawl.output.feeds.TypedJsonItemExporter",
    "jsonlines": "focuscrawl.output.feeds.TypedJsonLinesItemExporter",
    "jsonl": "focuscrawl.output.feeds.TypedJsonLinesItemExporter",
    "jl": "focuscrawl.output.feeds.TypedJsonLinesItemExporter",
}
LOG_LEVEL = "INFO"
#: No Referer header: the crawl does not need it, and Scrapy's RefererMiddleware
#: computes a referrer policy for every out-link (~10% of the CPU per page with 20 links).
REFERER_ENABLED = False

# --- Components ---------------------------------------------------------------------
#: Spider middlewares: spider output flows from high to low numbers (closest to the
#: spider first): Scrapy's depth (900) and URL length (800) middlewares, then scope, link
#: priority and link learning; images after near-duplicates.
SPIDER_MIDDLEWARES = {
    # next to the spider: the pages of an over-budget response reach no other middleware
    # (FOCUSCRAWL_PAGE_BUDGET)
    "focuscrawl.middlewares.budget.PageBudget": 990,
    # near-duplicates (FOCUSCRAWL_NEARDUP_*): a higher number than the image middleware, so
    # that each PageItem's near_duplicate_of is set before its images are extracted
    "focuscrawl.middlewares.neardup.NearDuplicatePageMiddleware": 950,
    # crawl scope and traps (FOCUSCRAWL_ALLOWED_DOMAINS, _REJECT_SURTS, _MAX_PATH_*, ...)
    "focuscrawl.middlewares.scope.ScopeMiddleware": 790,
    # link scores and priorities (FOCUSCRAWL_MODE, FOCUSCRAWL_LINK_*, FOCUSCRAWL_LEARNING_*)
    "focuscrawl.middlewares.priority.LinkPriorityMiddleware": 780,
    # mode learning: each page's item, after its links were scored, teaches the link learner
    # (FOCUSCRAWL_LEARNING_*; off in other modes)
    "focuscrawl.middlewares.learning.LinkLearningMiddleware": 770,
    # one ImageItem per <img> the page analysis kept, after each PageItem (FOCUSCRAWL_IMAGE_*)
    "focuscrawl.middlewares.images.ImageExtractionMiddleware": 500,
}
DOWNLOADER_MIDDLEWARES = {
    # Scrapy's offsite filter only when there are allowed domains (it checked every scheduled
    # request against "allow all" otherwise; focuscrawl.middlewares.offsite)
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "focuscrawl.middlewares.offsite.OffsiteMiddleware": 50,
    # pages per host and per domain (FOCUSCRAWL_MAX_PAGES_PER_HOST, _PER_DOMAIN), before
    # Scrapy's RobotsTxtMiddleware (100): a capped domain's new hosts get no robots.txt request
    "focuscrawl.middlewares.hostlimit.HostPageLimitMiddleware": 90,
    # robots.txt with its AI-crawler groups (FOCUSCRAWL_OPTOUTS robots_ai), at Scrapy's place,
    # then each host's /.well-known/tdmrep.json (FOCUSCRAWL_OPTOUTS tdmrep)
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "focuscrawl.middlewares.optout.RobotsTxtMiddleware": 100,
    "focuscrawl.middlewares.optout.TdmRepMiddleware": 110,
    # Scrapy's redirect middlewares at their places, minus the Referer handling (REFERER_ENABLED)
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "focuscrawl.middlewares.redirect.MetaRefreshMiddleware": 580,
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "focuscrawl.middlewares.redirect.RedirectMiddleware": 600,
    # next to the downloader: stores bodies as sent (still content-encoded) (FOCUSCRAWL_WARC_*)
    "focuscrawl.archive.writer.WarcWriterMiddleware": 950,
}
#: Item pipelines, in order (the image chain: focuscrawl.items.ImageItem): final score of
#: every sighting, merge/dedupe by image URL (first sighting goes on; the image records'
#: owner, which writes a record once its image has been through every pipeline), download
#: (FilesPipeline), then the page writer. FOCUSCRAWL_OUTPUT_DIR is the run directory; empty =
#: nothing is written and images are not downloaded (records, download and writer stay off).
ITEM_PIPELINES = {
    "focuscrawl.pipelines.score.FinalScorePipeline": 100,
    "focuscrawl.pipelines.image_records.ImageRecordsPipeline": 200,
    "focuscrawl.pipelines.download.ImageDownloadPipeline": 300,
    "focuscrawl.pipelines.writers.PageLogWriterPipeline": 810,
}
EXTENSIONS = {
    # Scrapy's AutoThrottle, which keeps a host's robots.txt Crawl-delay as the floor of its delay
    "scrapy.extensions.throttle.AutoThrottle": None,
    "focuscrawl.scrapy_compat.AutoThrottle": 0,
    # a progress line every FOCUSCRAWL_PROGRESS_INTERVAL seconds, in place of Scrapy's LogStats
    # (whose "Crawled N pages" counts image downloads and robots.txt too)
    "scrapy.extensions.logstats.LogStats": None,
    "focuscrawl.extensions.progress.CrawlProgress": 500,
    # the crawl's summary when it ends (FOCUSCRAWL_CRAWL_SUMMARY)
    "focuscrawl.extensions.progress.CrawlSummary": 505,
    # Python's garbage collector set for a crawl (FOCUSCRAWL_GC_FREEZE, FOCUSCRAWL_GC_THRESHOLD)
    "focuscrawl.extensions.collector.CollectorTuning": 510,
    # + focuscrawl.output.run_state.RunState at 890 (the owner of the run directory,
    # image store and lease book), put in by its add-on below
    # stats.json in the run directory when the crawl ends
    "focuscrawl.output.stats.StatsFileWriter": 900,
    # JOBDIR/spider.state written whole (Scrapy's is torn by a full disk: no resume reads it)
    "scrapy.extensions.spiderstate.SpiderState": None,
    "focuscrawl.extensions.spiderstate.AtomicSpiderState": 0,
    # crawl.json in the run directory when the crawl opens: seeds, mode, opt-outs, changed settings
    "focuscrawl.output.manifest.CrawlManifest": 910,
}
#: RunStateAddon enables the RunState extension even where a spider or project replaces
#: EXTENSIONS (the scheduler, middlewares and pipelines get it from the crawler).
#: Redis profile (focuscrawl.distributed; FOCUSCRAWL_REDIS_*): off unless FOCUSCRAWL_REDIS_URL is set.
#: RemoteControlWhenEnabled leaves Scrapy's remote control out unless REMOTE_CONTROL_ENABLED.
ADDONS = {"focuscrawl.output.run_state.RunStateAddon": 0, "focuscrawl.distributed.RedisProfile": 0,
          "focuscrawl.extensions.remote_control.RemoteControlWhenEnabled": 0}
#: Scheduler: Scrapy's, plus a frontier journal in JOBDIR (focuscrawl.frontier) that
#: lets a crawl killed without a clean stop recover its queued and in-flight requests.
SCHEDULER = "focuscrawl.frontier.JournaledScheduler"
#: Scrapy's downloader keeping each host to CONCURRENT_REQUESTS_PER_DOMAIN: Scrapy's own
#: starts every request queued in a host's slot at once (focuscrawl.scrapy_compat), so a
#: page's image downloads went out in bursts beyond the limit, each on a new connection.
DOWNLOADER = "focuscrawl.scrapy_compat.SlotBoundDownloader"
#: Request fingerprints (the dupefilter's, the frontier journal's) cached by method, URL
#: and body (focuscrawl.fingerprints), so that a site's navigation links are not
#: fingerprinted anew on every page. The same fingerprints as Scrapy's.
REQUEST_FINGERPRINTER_CLASS = "focuscrawl.fingerprints.CachingRequestFingerprinter"
#: Scrapy's in-memory stats without the deprecation check Scrapy wraps around every stats
#: call (~100 a page: ~5% of the crawl process's CPU); same stats.
STATS_CLASS = "focuscrawl.scrapy_compat.MemoryStatsCollector"
#: Scrapy's per-response and per-item log messages are not built when no log handler
#: would write them (~8 a page: ~2% of the crawl process); with DEBUG logging all are.
LOG_FORMATTER = "focuscrawl.logformatter.LevelLogFormatter"

# --- Seeds, crawl scope and traps (docs/CRAWL.md) -----------------------------------
#: Seeds: a file (one URL per line, # comments) or comma-separated URLs (spider arg ``seeds``).
#: Spider arguments ``seeds mode model keywords output domains budget extractor`` override
#: the settings FOCUSCRAWL_SEEDS/_MODE/_MODEL/_KEYWORDS/_OUTPUT_DIR/_ALLOWED_DOMAINS,
#: FOCUSCRAWL_PAGE_BUDGET and FOCUSCRAWL_TEXT_EXTRACTOR before any component is built.
FOCUSCRAWL_SEEDS = ""
#: Only these domains and their subdomains are crawled (empty = all).
FOCUSCRAWL_ALLOWED_DOMAINS: list[str] = []
#: Links whose SURT starts with one of these are rejected (SPEC §5 thesis scope); a
#: SURT prefix "(org,wikipedia," / "http://(org,wikipedia," or a plain domain.
FOCUSCRAWL_REJECT_SURTS = [
    "(org,wikipedia,", "(com,amazon,", "(uk,co,amazon,", "(de,amazon,", "(com,googleapis,maps,",
]
#: Page budget (spider arg ``budget``): the run has exactly this many HTML pages
#: (pages.tsv rows), counted by the spider middleware
#: focuscrawl.middlewares.budget.PageBudget (enabled in "Components"; pages still in
#: flight when it is spent are not written); Scrapy's CLOSESPIDER_PAGECOUNT would count
#: image downloads and robots.txt too.
#: The budget is the run's: a crawl resumed from JOBDIR counts the rows pages.tsv has.
#: 0 = no budget.
FOCUSCRAWL_PAGE_BUDGET = 0
#: Crawler-trap guards (docs/CRAWL.md "Operating"), each drop counted in the stats.
#: Maximum link depth from the seeds (Scrapy's setting, dropped links counted as
#: depth/request_ignored_count; 0 = unlimited). Unlimited: hops across hosts are how a
#: focused crawl finds new topical sites (the test web's best-first crawls reach depth
#: 24 within 1,000 pages), and traps stay on one host, where the guards below end them.
DEPTH_LIMIT = 0
#: Pages fetched per host at most (robots.txt, retries and image downloads not counted;
#: a crawl resumed from JOBDIR starts from the pages per host in pages.tsv); 0 = unlimited.
#: The backstop against traps no URL rule sees (link generators, session ids): a
#: focused crawl wants many topical hosts, not one host's every page.
FOCUSCRAWL_MAX_PAGES_PER_HOST = 500
#: Pages fetched per registered domain at most, all its hosts together (public-suffix
#: aware, tldextract's bundled list, no download: ``a.b.example.co.uk`` counts for
#: ``example.co.uk``, ``x.github.io`` is its own); 0 = unlimited. The backstop against
#: subdomain traps (``n.example.com`` for ever), which the per-host cap never ends.
#: **Choice**: 4 per-host caps, so a site with a few busy hosts (www, blog, shop) keeps
#: its pages.
FOCUSCRAWL_MAX_PAGES_PER_DOMAIN = 2000
#: Longest URL (Scrapy's UrlLengthMiddleware).
URLLENGTH_LIMIT = 2048

# --- Page text (SPEC §2) ------------------------------------------------------------
#: Page-text extractor by name: "trafilatura", "trafilatura-recall", "auto", "justext",
#: "fulltext" (all body text) or a boilerpy3 one ("article", "default", ...); see
#: focuscrawl.text.extractors. Default "trafilatura": trafilatura.extract(html) with the
#: library's own defaults (the full text when it finds none), chosen by leave-one-set-out
#: over CLEANEVAL, the article benchmark and Mozilla Readability's pages (docs/extraction.md):
#: the per-page chooser of "auto" and every other tuned rule fell below it on a held-out
#: set (article benchmark: 0.922 vs 0.947 LCS-F1), so no tuned rule is the default.
#: "trafilatura-recall" is trafilatura with favor_recall (tables kept, comments out).
FOCUSCRAWL_TEXT_EXTRACTOR = "trafilatura"

# --- Language (docs/CORPUS.md "Language", focuscrawl.text.language) ---------------------
#: The corpus's languages (ISO 639-1 codes, comma-separated, e.g. "en,de"). A page whose
#: text is in another language is crawled through (its links are followed, with the score
#: of the link that led to it) but its text is not scored; an image whose ALT (or title)
#: text, else parent-0 context, else page, is in another language is dropped (`other_language`). "" = the
#: topic bundle's language (recorded at `topic build`: FOCUSCRAWL_TOPIC, else the bundled
#: cats bundle when no FOCUSCRAWL_MODEL is set; no filter for a bundle without one or a
#: custom model without a bundle); "any" = no filter. Languages are identified (columns
#: `language` of pages.tsv, images.tsv and the exports) either way.
FOCUSCRAWL_LANGUAGES = ""

# --- Language model and keywords (SPEC §3, §4) ----------------------------------------
#: ARPA or KenLM binary model; empty = the bundled cats demo model.
FOCUSCRAWL_MODEL = ""
#: Keyword file (token;score lines); empty = the bundled cats keywords.
FOCUSCRAWL_KEYWORDS = ""

# --- Topic bundles and calibrated scores (docs/CORPUS.md, focuscrawl.topic) -------------
#: A topic bundle folder (`focuscrawl topic build`; `-a topic=DIR`): its topic LM and
#: keywords score the crawl unless FOCUSCRAWL_MODEL/FOCUSCRAWL_KEYWORDS are set, it is
#: recorded in stats.json (`focuscrawl/topic/bundle`) and `focuscrawl rank` ranks with it.
FOCUSCRAWL_TOPIC = ""
#: How the ranked corpus is scored: a bundle scorer (wpp, perplexity, keywords, xent,
#: classifier, combined) = P(on topic) from the bundle's calibration, ranked high to low,
#: cut at the calibrated probability; "thesis" = SPEC exactly (weighted perplexity,
#: ascending, cut FOCUSCRAWL_SCORE_MIN..MAX). The environment variable of the same name
#: overrides it for `focuscrawl rank`. Chosen by measurement (docs/EVALUATION.md).
FOCUSCRAWL_SCORING = "combined"

# --- Link scoring, crawl modes and the frontier (SPEC §5; docs/CRAWL.md) --------------
#: Crawl mode: "learning" (the thesis's link score plus online link learning, beyond the
#: thesis: settings FOCUSCRAWL_LEARNING_*), "keywords" (the thesis's method exactly),
#: "document" (Remus & Biemann), "unfocused". "learning" is the default by measurement
#: (docs/EVALUATION.md): on hard webs of three topics it found more on-topic
#: pages than "keywords" on every run and the same pages on the standard webs.
FOCUSCRAWL_MODE = "learning"
#: Strict best-first: one global priority queue across hosts (Scrapy's default
#: DownloaderAwarePriorityQueue orders only within a host's slot), FIFO within a
#: priority (breadth-first for `unfocused`, where priority = -depth). The order lags by
#: one response per free download slot (Scrapy starts the next request before the spider
#: has queued the finished page's links); SCRAPER_SLOT_MAX_ACTIVE_SIZE = 1 with
#: CONCURRENT_REQUESTS = 1 makes it exact at the cost of throughput, so both keep
#: Scrapy's defaults here (focuscrawl.eval.crawls and the crawl-order tests set them).
SCHEDULER_PRIORITY_QUEUE = "scrapy.pqueues.ScrapyPriorityQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
#: With JOBDIR, Scrapy's pickled FIFO of a priority, made on disk only once it holds 8
#: requests (or at a clean stop): a queue per priority made and removed on disk as a
#: learning crawl re-ranks its frontier cost more than the crawl (docs/CRAWL.md);
#: "scrapy.squeues.PickleFifoDiskQueue" is Scrapy's own.
SCHEDULER_DISK_QUEUE = "focuscrawl.frontier.PickleLazyFifoDiskQueue"


# --- Images (SPEC §6) ---------------------------------------------------------------
#: Smallest image kept, by its HTML width/height attributes (pixels).
FOCUSCRAWL_IMAGE_MIN_WIDTH = 512
#: Smallest image height kept (HTML attribute, pixels).
FOCUSCRAWL_IMAGE_MIN_HEIGHT = 384
#: Largest image width kept (HTML attribute, pixels).
FOCUSCRAWL_IMAGE_MAX_WIDTH = 9600
#: Largest image height kept (HTML attribute, pixels).
FOCUSCRAWL_IMAGE_MAX_HEIGHT = 7200
#: Drop images whose HTML has no width/height attributes (kickUnspecifiedImages).
FOCUSCRAWL_IMAGE_KICK_UNSPECIFIED = True
#: Instead of dropping an image without width/height attributes, download it and apply
#: the size limits to its real size (counted as focuscrawl/images/size_measured/rescued|dropped).
#: Off for a live crawl (the thesis could not afford those downloads); on for
#: `focuscrawl warc` / the archive spider, where the bytes are in the archive anyway.
FOCUSCRAWL_IMAGE_MEASURE_UNSIZED = False
#: Image file extensions kept (the thesis's format filter).
FOCUSCRAWL_IMAGE_FORMATS = ["jpg", "jpeg", "png", "gif"]
#: Context of the final image score: "thesis" (parent-1, SPEC §6) or a name listed in
#: FOCUSCRAWL_IMAGE_EXTRA_CONTEXTS (e.g. "figure", best on captioned figures, docs/context.md).
FOCUSCRAWL_IMAGE_FINAL_CONTEXT = "thesis"
#: Images of a page marked as near-duplicate (``PageItem["near_duplicate_of"]``):
#: "mark" = extracted with ``near_duplicate_page=True``; "skip" = not extracted.
FOCUSCRAWL_NEARDUP_IMAGES = "mark"
#: Lowest final score kept by the thesis's ranking (``rank --scoring thesis``, the evaluation's
#: image funnel; inclusive).
FOCUSCRAWL_SCORE_MIN = 2.0
#: Highest final score kept by the thesis's ranking (inclusive).
FOCUSCRAWL_SCORE_MAX = 70000.0
#: Image URLs that redirect (http -> https, CDNs) are followed (Scrapy's media setting).
MEDIA_ALLOW_REDIRECTS = True

# --- Near-duplicates (SPEC §10; docs/NEARDUP.md) --------------------------------------
#: NearDuplicatePageMiddleware: SimHash each page's sentences and set PageItem
#: "near_duplicate_of" to an earlier page within Hamming distance k (SPEC §10).
FOCUSCRAWL_NEARDUP_ENABLED = True

# --- Run directory and resume (docs/OUTPUT.md) ---------------------------------------
#: Run directory (links.tsv, pages.tsv, ...); empty = no files written.
FOCUSCRAWL_OUTPUT_DIR = ""
#: Write links.tsv (every scored link with its decision) into the output dir.
FOCUSCRAWL_LINKS_LOG = False
#: Seconds between progress lines (pages / budget, pages/s, images, queue, ETA, politeness; a
#: replay: pages / the archives' pages, and with ``warc --jobs`` files, pages, pairs as files end); 0 = off.
FOCUSCRAWL_PROGRESS_INTERVAL = 30.0

# --- Throughput (docs/CRAWL.md) -----------------------------------------------------
#: Worker processes for each page's pure CPU work (focuscrawl.analysis.analyse_page:
#: text extraction within FOCUSCRAWL_TEXT_TIME_LIMIT, sentence and document scores, the
#: calibrated page score, links, image contexts and scores, SimHash); each loads the
#: models once. 0 = in the crawl process. Results are the same either way
#: (tests/test_analysis_pool.py); 1 puts the work on a second core.
FOCUSCRAWL_ANALYSIS_WORKERS = 1
#: Items and requests of one response processed at once. Scrapy's default (100) starts
#: 100 asyncio tasks per response whatever it yields; a page yields ~25 here, and 16
#: cut the crawl's CPU per page by ~18% (benchmarks/crawl_throughput.py, docs/CRAWL.md).
CONCURRENT_ITEMS = 16

# --- Deployment: WARC files, Redis (docs/DEPLOY.md) ----------------------------------
#: Write every fetched response (pages, images, robots.txt) to rotating gzipped WARC
#: files in this directory; empty = off. Files are ``*.warc.gz``; the one being
#: written is ``*.warc.gz.open`` until rotated or closed (complete records only).
FOCUSCRAWL_WARC_DIR = ""
#: Rotate to a new WARC file once the current one reaches this many bytes.
FOCUSCRAWL_WARC_MAX_SIZE = 1024 ** 3
#: Redis profile (focuscrawl.distributed): a redis:// URL switches the crawl to the
#: shared scrapy-redis frontier + dupefilter, the Redis per-host throttle and worker
#: coordination. Empty = single-process crawl with the JOBDIR-capable local scheduler.
FOCUSCRAWL_REDIS_URL = ""
#: Name of the shared crawl (Redis key namespace); empty = the spider name.
FOCUSCRAWL_REDIS_CRAWL = ""
#: Minimum seconds between request starts to one host across all processes;
#: -1 = DOWNLOAD_DELAY.
FOCUSCRAWL_REDIS_HOST_DELAY = -1

# --- Ranking, export, annotation (docs/CORPUS.md) ------------------------------------
# Read by `focuscrawl rank` and `focuscrawl annotate` as their defaults (docs/CORPUS.md);
# the score cut of the ranking is FOCUSCRAWL_SCORE_MIN / FOCUSCRAWL_SCORE_MAX above.
#: Images loaded for annotation from the top of the ranking (thesis: 2500).
FOCUSCRAWL_ANNOTATION_TOP = 2500
#: Distinct annotators per image (thesis: 3).
FOCUSCRAWL_ANNOTATION_PER_IMAGE = 3
#: The five image-topic categories shown to annotators: topic, pet, animal, living being, other.
FOCUSCRAWL_ANNOTATION_IMAGE_LABELS = ["Cat", "Pet", "Animal", "Living being", "Other"]
#: SQLite database of `focuscrawl annotate` (the environment variable of the same name
#: overrides it; so does --db).
FOCUSCRAWL_ANNOTATION_DB = "annotation.sqlite3"

# Advanced settings: tuning and method parameters that a crawl rarely changes. Their
# defaults are measured (docs/CRAWL.md, docs/EVALUATION.md); set them like any other
# setting (-s NAME=VALUE). The settings reference lists them after the others.

# --- Advanced: Politeness -----------------------------------------------------------
#: robots.txt's ``Crawl-delay`` for our User-Agent (or ``*``) is obeyed with ROBOTSTXT_OBEY:
#: the host's requests (pages and images) start at least that many seconds apart, without
#: jitter, whatever AutoThrottle makes of its latency; a longer one is held to this many
#: seconds (counted, docs/CRAWL.md). 0: ignored, as Scrapy does.
FOCUSCRAWL_ROBOTS_CRAWL_DELAY_MAX = 60.0
#: robots.txt user agents of AI-training crawlers: a path their group disallows is crawled
#: (if robots.txt allows us) but nothing of it enters the corpus; so is a page whose
#: ``<meta name=AGENT>`` or ``X-Robots-Tag: AGENT: ...`` says noindex, none or noai to one.
FOCUSCRAWL_AI_AGENTS = ["GPTBot", "CCBot", "Google-Extended", "Applebot-Extended", "anthropic-ai", "ClaudeBot",
                        "cohere-ai", "Meta-ExternalAgent", "Bytespider", "Omgilibot", "ImagesiftBot",
                        "img2dataset"]

# --- Advanced: Seeds, crawl scope and traps (docs/CRAWL.md) ---------------------------
#: A link whose path repeats a segment more often than this (/a/b/a/b/a/b) is dropped.
FOCUSCRAWL_MAX_PATH_REPEATS = 2
#: A link with more path segments than this (paths that grow without repeating,
#: /x1/x2/x3/...; Heritrix rejects over 20) is dropped.
FOCUSCRAWL_MAX_PATH_SEGMENTS = 12
#: Distinct query strings followed per host+path at most.
FOCUSCRAWL_MAX_QUERY_VARIANTS = 100
#: Trap-like pages fetched per host at most (a path ending in a date, a repeated path
#: segment, more than FOCUSCRAWL_TRAP_PATH_SEGMENTS segments, another query string of a
#: path already seen, a session id). Keeps calendars and facets from spending
#: FOCUSCRAWL_MAX_PAGES_PER_HOST before the real pages are reached; 0 = no limit.
FOCUSCRAWL_MAX_TRAP_PAGES_PER_HOST = 50
#: A link with more path segments than this looks like a trap (FOCUSCRAWL_MAX_TRAP_PAGES_PER_HOST).
FOCUSCRAWL_TRAP_PATH_SEGMENTS = 6

# --- Advanced: Page text (SPEC §2) ----------------------------------------------------
#: Bytes of a page that text extraction (and link extraction) reads; the rest of a longer
#: page is cut (stat focuscrawl/text/truncated). 2 MiB is above every real page of the
#: evaluation sets (largest 1.6 MB) and bounds the C part of extraction. Text extraction
#: also parses at most cap/256 start tags (8,192; the evaluation pages have at most ~3,000
#: elements; stat focuscrawl/text/truncated), which bounds its memory (~11× the cap over
#: the process's base with the default extractor); benchmarks/text_limits.py measures the
#: worst pages of this size (docs/extraction.md). 0 = no cap.
FOCUSCRAWL_TEXT_MAX_BYTES = 2 * 1024 * 1024
#: Seconds of extraction per page before the page is skipped (stat
#: focuscrawl/skipped/extraction_timeout). Interrupts Python code only (SIGALRM, main
#: thread); the size cap bounds what runs in C. 0 = no limit.
FOCUSCRAWL_TEXT_TIME_LIMIT = 30.0
#: A sentence counts for page perplexity and the sentence log with ≥ this many tokens.
FOCUSCRAWL_MIN_SENTENCE_TOKENS = 5

# --- Advanced: Language (docs/CORPUS.md "Language", focuscrawl.text.language) ---------
#: py3langid's normalised probability under which a text's language is unknown (an empty
#: `language` cell; an unknown language is never filtered). 0.5 dropped none of 2,800 real
#: English ALT texts and captions and 84% of ALT-length non-English snippets
#: (benchmarks/language_id.py, docs/CORPUS.md).
FOCUSCRAWL_LANGUAGE_MIN_CONFIDENCE = 0.5
#: The first characters of a page's text its language is identified from: py3langid's
#: time grows with the length (a pure-Python walk over the bytes); from 300, 72 of the 73
#: benchmark pages were identified and 1 left unknown, none wrong (docs/CORPUS.md).
FOCUSCRAWL_LANGUAGE_TEXT_CHARS = 300

# --- Advanced: Language model and keywords (SPEC §3, §4) ------------------------------
#: Sentence scores kept in the LRU cache.
FOCUSCRAWL_LM_CACHE_SIZE = 200_000
#: γ_kw in weighted PP = PP * (1 - γ_kw * keyword score).
FOCUSCRAWL_KEYWORD_WEIGHT = 3.0

# --- Advanced: Topic bundles and calibrated scores (docs/CORPUS.md, focuscrawl.topic) ---
#: How the crawl orders links: "thesis" = SPEC §5 (perplexities, buckets 6e2/2e3/1e4, razor
#: 3e4, T_otx 3000); "calibrated" = the FOCUSCRAWL_SCORING scorer's log-odds of page and
#: anchor (anchor blended 0.7/0.3 when at least as topical as the page), buckets at
#: P = 0.9/0.5/0.1, razor at the bundle's calibrated razor probability. Chosen by
#: measurement (docs/EVALUATION.md); FOCUSCRAWL_SCORING = "thesis" forces SPEC here too.
#: Mode "document" always orders by the page's calibrated probability when there is a
#: topic model (a bundle, or the bundled cats one without FOCUSCRAWL_MODEL): SPEC's page
#: perplexity is captured by look-alike topics; FOCUSCRAWL_SCORING = "thesis" gives SPEC's.
FOCUSCRAWL_CRAWL_SCORING = "thesis"

# --- Advanced: Link scoring, crawl modes and the frontier (SPEC §5; docs/CRAWL.md) ----
#: γ_d of the link score formula (SPEC §5): the page perplexity's weight in the blend.
FOCUSCRAWL_LINK_DOC_WEIGHT = 0.7
#: γ_otx of the link score formula: the anchor perplexity's weight in the blend.
FOCUSCRAWL_LINK_ANCHOR_WEIGHT = 0.3
#: γ_linkkw of the link score formula: the score is shrunk by 1 - γ_linkkw * keyword score.
FOCUSCRAWL_LINK_KEYWORD_WEIGHT = 3.0
#: T_otx of the link score formula: an anchor blends in only at most this perplexity.
FOCUSCRAWL_LINK_ANCHOR_MAX_PP = 3000.0
#: Bucket boundaries (high / medium / normal / low), ascending scores.
FOCUSCRAWL_PRIORITY_BUCKETS = [6e2, 2e3, 1e4]
#: Links scoring above this are not followed in focused modes.
FOCUSCRAWL_LINK_RAZOR = 3e4
#: Order inside a priority bucket (choice: SPEC §5 is silent on it): k > 0 = best-first,
#: k log-scale priorities per power of ten of the link score, a better bucket always
#: first; 0 = one Scrapy priority per bucket, FIFO inside it (Heritrix-style). With the
#: thesis's boundaries and a model whose perplexities are ~10-1,000 (the bundled one)
#: nearly every link is "high", so 0 crawls almost breadth-first (docs/EVALUATION.md).
FOCUSCRAWL_PRIORITY_STEPS_PER_DECADE = 10
#: Journal the frontier when JOBDIR is set (False = Scrapy's behaviour: a killed crawl
#: loses the requests it had queued).
FOCUSCRAWL_FRONTIER_JOURNAL = True

# --- Advanced: Crawl mode "learning": online link learning (docs/CRAWL.md) ------------
#: A page is judged on topic when its weighted perplexity is at most this
#: (topicality = T / (T + wPP)); the judgement labels the link that led to it.
FOCUSCRAWL_LEARNING_ON_TOPIC_PP = 50.0
#: How a page is judged for the learner: "calibrated" (the topic bundle's calibrated
#: probability >= 0.5: FOCUSCRAWL_TOPIC, or the bundled cats bundle without FOCUSCRAWL_MODEL;
#: the same scale for any model and topic; costs the page's topic score) or "perplexity"
#: (FOCUSCRAWL_LEARNING_ON_TOPIC_PP above; also used when there is no bundle). Chosen by
#: measurement on hard cats/dogs and standard webs (docs/EVALUATION.md).
FOCUSCRAWL_LEARNING_JUDGE = "calibrated"
#: The calibrated judge's cut: a page is on topic from this probability. 0.6, not 0.5: at 0.5
#: the look-alike topic's pages (baseball for tennis) taught the learner to fetch more of them;
#: 0.6 raised the worst hard run's image harvest from 0.83x to 0.92x keywords' and found as
#: many on-topic pages (docs/EVALUATION.md).
FOCUSCRAWL_LEARNING_ON_TOPIC_P = 0.6
#: The calibrated judge at the level of pages: a page is on topic only when its log-odds
#: reach those of all but this share of the topic bundle's held-out topic pages (pseudo-pages
#: of held-out topic sentences, half of them general text; `focuscrawl topic show`); 0 = the
#: cut above alone. Without it a bundle built from a small or narrow neutral corpus calls
#: nearly every page on topic. Chosen leave-one-topic-out on hard webs of three topics with
#: neutral corpora of 3-24 encyclopaedia leads (docs/EVALUATION.md); a bundle without a page
#: calibration (built before it existed) is judged by the cut above alone.
FOCUSCRAWL_LEARNING_PAGE_QUANTILE = 0.3
#: The crawl warns once (and sets the stat focuscrawl/learning/judge_implausible) when, after
#: at least ..._WARN_AFTER judged pages, its page judge has called more than ..._WARN_SHARE of
#: them on topic and on more than ..._WARN_HOSTS of the hosts they come from: a judge fooled by
#: a bundle whose neutral corpus is too small or too narrow calls nearly every page of every
#: site on topic, and the link learner learns from it; a crawl that finds its topic fetches
#: mostly on-topic pages too, but of few of the sites it sees. Set on hard webs where the
#: warning came for every run of the fooled judge and for none of the calibrated one
#: (docs/EVALUATION.md).
FOCUSCRAWL_LEARNING_JUDGE_WARN_SHARE = 0.8
#: The share of the judged pages' sites with a page called on topic above which the warning
#: (``..._WARN_SHARE``) comes.
FOCUSCRAWL_LEARNING_JUDGE_WARN_HOSTS = 0.5
#: Judged pages before the warning (``..._WARN_SHARE``) is considered; 0 = never.
FOCUSCRAWL_LEARNING_JUDGE_WARN_AFTER = 500
#: Judged pages between two partial_fit updates of the link model (and frontier re-rankings).
FOCUSCRAWL_LEARNING_RETRAIN_EVERY = 20
#: The model's probability is blended with a prior from the thesis's link score,
#: weight n_pos / (n_pos + PRIOR_PAGES); the prior is PRIOR_PP / (PRIOR_PP + score).
FOCUSCRAWL_LEARNING_PRIOR_PAGES = 10
#: PRIOR_PP of the prior above: the thesis link score at which the prior is one half.
FOCUSCRAWL_LEARNING_PRIOR_PP = 100.0
#: Weight (log-odds) of the target host's harvest (Beta prior mean + UCB bonus).
FOCUSCRAWL_LEARNING_HOST_WEIGHT = 1.0
#: The host harvest's UCB exploration constant.
FOCUSCRAWL_LEARNING_EXPLORATION = 0.05
#: Requests at the top of the frontier re-scored with each new model (0 = none).
FOCUSCRAWL_LEARNING_RERANK_TOP = 500
#: The learned score is trusted by how much better it ranked the last this many judged
#: links than the thesis's link score did (AUC above chance; docs/CRAWL.md): 0 = thesis
#: order, 1 = the learner's. A horizon, so that the trust follows the model as it learns.
FOCUSCRAWL_LEARNING_TRUST_WINDOW = 2000
#: How the trust is measured over that window: "auc-share" (each score's AUC above chance,
#: the learned one's share) or "best-blend" (the blend weight, in tenths, whose blended
#: score ranked the window's links best).
FOCUSCRAWL_LEARNING_TRUST_RULE = "auc-share"
#: The link model's feature groups (focuscrawl.focus.link_learner.FEATURE_GROUPS): anchor words,
#: URL tokens, same/other host, the page's and its parent's judged topicality, the thesis's
#: score decade. Fewer groups = an ablation (docs/EVALUATION.md). Not on by default (no web
#: gained from them, docs/EVALUATION.md): "context" (the words around the anchor in its block
#: and the block's heading), "block" (the block's kind: tag, id, class), "siblings" (the outcomes of the links already followed from the
#: same page and block) and "hubs" (delayed labels: the link to an off-topic page that led on
#: to an on-topic one is taught as a positive example; LEARNER_TERMS).
FOCUSCRAWL_LEARNING_FEATURES = ["anchor", "url", "host", "parent", "grandparent", "thesis"]
#: Weight (log-odds) of the siblings' outcomes ("siblings" in FOCUSCRAWL_LEARNING_FEATURES);
#: 2 found more on-topic pages than 1 on hard cats and tennis seed 1 (docs/EVALUATION.md).
FOCUSCRAWL_LEARNING_SIBLING_WEIGHT = 2.0

# --- Advanced: Images (SPEC §6) -------------------------------------------------------
#: Context extractors (focuscrawl.context.extractors: full, nt10, nt20, nt10-20, ant, par,
#: mon, art, art2d, clus, figure, thesis-parent0/1) whose text is recorded and scored per
#: image in ImageItem["extra_contexts"]; empty = only the thesis parents/siblings.
FOCUSCRAWL_IMAGE_EXTRA_CONTEXTS: list[str] = []
#: At most this many non-empty ancestors are collected as context.
FOCUSCRAWL_IMAGE_MAX_PARENTS = 5
#: Distance value per context level (imgDistanceWeight).
FOCUSCRAWL_IMAGE_DISTANCE_WEIGHT = 500
#: At most this many element siblings (with text) are collected as context.
FOCUSCRAWL_IMAGE_MAX_SIBLINGS = 5
#: A context text longer than this is stored and scored cut to this many characters
#: (a parent near <body> is the whole page); its full length is kept in the record.
FOCUSCRAWL_IMAGE_CONTEXT_MAX_CHARS = 10_000
#: Lazy-loading attributes read when ``src`` is missing or a ``data:`` placeholder
#: **(choice)**: the thesis read ``src`` only; [] restores that.
FOCUSCRAWL_IMAGE_LAZY_SRC = ["data-src", "data-lazy-src", "data-original"]
#: Candidate images kept per page; more are dropped as ``page_limit`` (crawler traps).
FOCUSCRAWL_IMAGE_MAX_PER_PAGE = 200
#: Folder whose ``images/`` the image files are written to; empty = the run directory.
#: ``focuscrawl warc --jobs`` points every job at the merged run directory (a file is
#: named by its URL, so jobs that fetch one image write the same bytes to one name) and
#: its merge then has no image file to link; ``image_path`` is relative to this folder.
FOCUSCRAWL_IMAGE_STORE = ""
#: Largest image file downloaded (bytes, per-request ``download_maxsize``).
FOCUSCRAWL_IMAGE_MAX_BYTES = 10 * 1024 * 1024
#: Decompression-bomb guard: images with more pixels are rejected before decoding.
#: Also set as Pillow's process-wide ``Image.MAX_IMAGE_PIXELS``.
FOCUSCRAWL_IMAGE_MAX_PIXELS = 9600 * 7200
#: Later sightings merged into one image record at most (a logo on every page).
FOCUSCRAWL_IMAGE_MAX_SIGHTINGS = 100

# --- Advanced: Near-duplicates (SPEC §10; docs/NEARDUP.md) ----------------------------
#: Word n-grams of the SimHash features: "3", "5" or "3+5" (the union in one vector).
FOCUSCRAWL_NEARDUP_NGRAMS = "3"
#: k: pages whose 64-bit SimHashes differ in at most k bits are near-duplicates.
FOCUSCRAWL_NEARDUP_MAX_DISTANCE = 3
#: B: blocks of the permutation index, C(B, B-k) tables; needs k < B <= 16.
FOCUSCRAWL_NEARDUP_BLOCKS = 4
#: Links of a page that nearly repeats an earlier one (focused modes): "keep" = scored as
#: any link's; "demote" = same score and bucket, priority below every other link's (an
#: archive calendar's empty month pages repeat the blog's layout, score on topic and link
#: the next month). "keep" by default: on the hard webs "demote" cuts the trap pages but
#: lowers the image harvest (docs/EVALUATION.md, "demoting the links of near-duplicate pages").
FOCUSCRAWL_NEARDUP_LINKS = "keep"

# --- Advanced: Run directory and resume (docs/OUTPUT.md) ------------------------------
#: sentences.txt.gz is written as one gzip member per batch of this many bytes of
#: text (with the batch's pages.tsv and links.tsv rows); 0 = one member per page.
FOCUSCRAWL_SENTENCES_BATCH_BYTES = 64 * 1024
#: ... or once its first page waited this many seconds (0 = no time limit): pages with little
#: text are still committed every few seconds, so a crawl killed again and again (with
#: JOBDIR) commits new pages in every session (a trap site's short pages may never fill a
#: batch between two kills).
FOCUSCRAWL_SENTENCES_BATCH_SECONDS = 5.0
#: With JOBDIR: images a killed crawl had accepted but not written are downloaded again
#: after the seeds, at most this many at a time, so that slow ones cannot fill every
#: per-host download slot ahead of new pages.
FOCUSCRAWL_RECOVERED_IMAGES_IN_FLIGHT = 1
#: With JOBDIR: seconds between checkpoints of the run directory's offsets (0 = after
#: every image and page batch). After a kill the rows since the last checkpoint are
#: cut back and redone (frontier journal, images.pending). Without JOBDIR: the least seconds
#: between two writes of the running session's stats (stats.checkpoint.json).
FOCUSCRAWL_CHECKPOINT_INTERVAL = 1.0
#: Seconds a crawl told to stop (Ctrl-C, SIGTERM) may take to stop cleanly; then it stops as on
#: a second Ctrl-C (a download or a page that never ends cannot keep it alive); 0 = no limit.
FOCUSCRAWL_SHUTDOWN_TIMEOUT = 60.0
#: Log a short summary when the crawl ends (what was written where, why it stopped, the limits,
#: opt-outs and errors; focuscrawl.output.summary). Scrapy's raw stats dump is logged at
#: DEBUG only; stats.json keeps every counter.
FOCUSCRAWL_CRAWL_SUMMARY = True

# --- Advanced: Throughput (docs/CRAWL.md) ---------------------------------------------
#: URLs whose request fingerprint is kept (REQUEST_FINGERPRINTER_CLASS; least recently
#: used dropped first; ~300 bytes each).
FOCUSCRAWL_FINGERPRINT_CACHE_SIZE = 20_000
#: Out-link URLs the scheduler has seen (accepted or filtered as duplicates) that are
#: remembered, so that a link found again on another page builds no request (its
#: links.tsv row and counters stay; focuscrawl.frontier.KnownLinks); least recently seen
#: forgotten first, ~200 bytes each; 0 = every link becomes a request.
FOCUSCRAWL_KNOWN_LINKS = 50_000
#: At spider_opened the objects alive (modules, models, components: ~200,000 containers)
#: are moved out of Python's cyclic garbage collector's reach (gc.freeze), which otherwise
#: walked them again on every full collection (focuscrawl.extensions.collector); put back at
#: spider_closed.
FOCUSCRAWL_GC_FREEZE = True
#: Net container allocations between two young collections during a crawl (Python's: 700);
#: a page makes hundreds, and each young collection promotes the page's objects in flight
#: towards the full collections. 0 = Python's own.
FOCUSCRAWL_GC_THRESHOLD = 10_000

# --- Advanced: Deployment: WARC files, Redis (docs/DEPLOY.md) -------------------------
#: File name prefix of written WARC files (the process id is part of the name too).
FOCUSCRAWL_WARC_PREFIX = "focuscrawl"
#: Replay an archive's pages without the scheduler round trip (focuscrawl.archive.lean):
#: downloaded and scraped in archive order, their analyses started ahead on the analysis
#: workers; the same outputs. False = every page through the engine as in a crawl (so is a
#: replay with JOBDIR or FOCUSCRAWL_REDIS_URL).
FOCUSCRAWL_ARCHIVE_LEAN = True
#: Analysis workers of a replay (`focuscrawl warc` / the archive spider; the crawl's is
#: FOCUSCRAWL_ANALYSIS_WORKERS): with the scheduler out of the way the replay process has
#: little to do but read and write, so one worker per core keeps one file on every core.
#: By default at most this many, one per 250 pages (a worker's start-up costs about a
#: second of CPU, more than a small archive's analysis saves); a value you set is used as is.
FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS = 2
#: An idle process waits while another was busy within this many seconds.
FOCUSCRAWL_REDIS_BUSY_TIMEOUT = 3.0
#: A worker's leased requests go back to the shared queue when its process is gone:
#: at once on the same host (no such pid), else after this many seconds without a
#: heartbeat (every 0.5 s).
FOCUSCRAWL_REDIS_LEASE_TIMEOUT = 30.0
