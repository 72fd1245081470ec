"""Crawl throughput and memory of the ``focused`` spider against plain Scrapy.

One generated web (page i at ``/p/i``: ~12 sentences, ~20 links with 1-3 word anchors,
3 ``<img>``) is served on 127.0.0.1 by a fast asyncio server in its own process. Each
crawl runs in its own process with the same download settings (no delays, no
robots.txt, 16 concurrent requests) and stops after ``--pages`` HTML pages:

* ``plain``: a Scrapy spider with Scrapy's default settings that follows every
  ``<a href>`` and does nothing else (page-only baseline);
* ``corpus``: the plain corpus spider, the same corpus work without any focus:
  follows every link, trafilatura text of every page, every ``<img>`` downloaded by
  Scrapy's FilesPipeline, one JSON line per page (feed export);
* ``unfocused``, ``document``, ``keywords``: ``scrapy crawl focused -a mode=...`` with
  everything as shipped (profile ``full``, the headline: page text (auto), image
  extraction and download, near-duplicates, writers, the analysis worker pool; razor
  off so that every mode does the same work); ``MODE/no-pool`` the same with
  ``FOCUSCRAWL_ANALYSIS_WORKERS=0``. ``--profile core`` is the old spider-only profile;
* ``learning``: ``keywords`` plus the online link learner and the re-ranking frontier
  (target: >= 0.9x keywords, i.e. the learning costs at most 10%).

Rounds are interleaved (``--repeat``; every other round in reverse order); ratios are
taken within each round and printed as median and spread (targets: keywords >= 0.9x
corpus and >= 0.8x plain by wall time; unfocused and document not slower than
keywords). The verdicts are on HTML pages a second; the ratios of responses a second
(pages and images: the unit of #14's own figures, 176/140/74 "responses/s") are
printed beside them: a page-only crawl moves one response a page, the corpus crawls
four on this web. ``--photos`` serves photo-like ~85 KB JPEGs (16 different ones)
instead of one flat 5 KB JPEG. Throughput is measured without start-up, on both sides: a
crawl's clock starts once its models are loaded, its analysis workers have loaded
theirs (~0.45-0.9 s of CPU each, printed per round as "workers' start-up"; the corpus spider
imports trafilatura first) and the spider is open (``engine_started``, after every
``spider_opened`` handler: printed as "opening", the wall time from Scrapy's ``start_time``;
the focused crawl's collector collects and freezes its start-up heap there). CPU time counts the crawl
process and its worker processes, up to the end of the crawl (not the deletion of its
output: every crawl's outputs are kept until the whole run is over, ``--delete-each``
removes each right after its crawl, which charges the next crawl's file creations for the
deletions on this machine's disk); "of it crawl" is the crawl process alone, "(kernel)" that process's system
time, "reactor" the CPU of its reactor thread alone (the serial part of a crawl). ``--memory-pages N`` then measures the peak PSS and RSS
(crawl + workers) of an N-page crawl with JOBDIR in ``--memory-mode`` (default: the crawl's
default mode, ``learning``; target <= 1 GB at 50,000), with its RSS trend every ``--trend-every`` pages. ``--redis`` then runs
``keywords`` crawls of ``--pages`` pages on one Redis frontier (a redis-server on
127.0.0.1 started for it), 1 process vs 2 processes at once (``--modes`` with no
names: only that). ``--cprofile OUT`` profiles one crawl of each of ``--modes`` instead
(default: keywords), into ``OUT`` (one mode) or ``OUT.MODE`` (the reactor thread's CPU time). ``--language-ab``: the cost
of language identification (issue #30): each focused mode of ``--modes`` (default:
keywords) as shipped and as ``MODE/no-language`` (nothing identified: the py3langid model
never loads, every text counts as unknown and nothing is filtered), interleaved in the
same rounds; CPU ms per page (crawl process + its workers, ``getrusage``: far less
sensitive to the machine's load than wall time) and pages/s, mean ± sd, and the on/off
ratio per round. ``--language-analysis PAGES``: the same A/B on the page analysis alone,
in this process (CPU ms per page, no crawl around it), and the model's load time; with
``--cprofile OUT`` also a profile of it per shape (``OUT.SHAPE``).

    python benchmarks/crawl_throughput.py [--pages 1500] [--repeat 2] [--memory-pages 50000] [--redis] [-s NAME=VALUE]
    python benchmarks/crawl_throughput.py --language-ab --shapes text images real --pages 1000 --repeat 4
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from focuscrawl.settings import FOCUSCRAWL_MODE as DEFAULT_MODE
from focuscrawl.text.language import UNKNOWN, LanguageFilter

REPO = Path(__file__).resolve().parents[1]

WORDS = (
    "the a of and to in is was it for on with as his he at by this had not are but from or have an "
    "they which one you were her all she there would their we him been has when who will more no if "
    "out so said what up its about into than them can only other new some could time these two may "
    "then do first any my now such like our over man me even most made after also did many before "
    "must through back years where much your way well down should because each just those people how "
    "too little state good very make world still own see men work long get here between both life "
    "being under never day same another know while last might us great old year off come since "
    "against go came right used take three house car engine market price football election"
).split()
TOPIC = "cat cats kitten kittens feline breed purr whiskers tabby litter paws fur coon maine".split()


def page_html(i: int, n_pages: int) -> bytes:
    """Page ``i`` of the web, the same bytes on every request."""
    rnd = random.Random(i)
    topical = rnd.random() < 0.4
    vocab = WORDS + (TOPIC * 4 if topical else [])
    sentences = []
    for _ in range(12):
        words = [rnd.choice(vocab) if rnd.random() < 0.9 else f"x{rnd.randrange(100000)}"
                 for _ in range(rnd.randint(6, 18))]
        sentences.append(" ".join(words).capitalize() + ".")
    links = [(i + 1) % n_pages] + [rnd.randrange(n_pages) for _ in range(19)]
    anchors = "".join(
        f'<li><a href="/p/{j}">{" ".join(rnd.choice(vocab) for _ in range(rnd.randint(1, 3)))}</a></li>'
        for j in links)
    images = "".join(
        f'<figure><img src="/img/{i}-{k}.jpg" width="640" height="480" alt="{rnd.choice(vocab)} {rnd.choice(vocab)}">'
        f"<figcaption>{sentences[k]}</figcaption></figure>" for k in range(3))
    body = (f"<!DOCTYPE html><html><head><title>Page {i}</title></head><body>"
            f"<nav><ul>{anchors}</ul></nav><main><h1>Page {i}</h1>"
            + "".join(f"<p>{s}</p>" for s in sentences[3:]) + images + "</main></body></html>")
    return body.encode("utf-8")


def _nav(rnd: random.Random, i: int, n_pages: int, vocab: list[str]) -> str:
    links = [(i + 1) % n_pages] + [rnd.randrange(n_pages) for _ in range(19)]
    return "<nav><ul>" + "".join(
        f'<li><a href="/p/{j}">{" ".join(rnd.choice(vocab) for _ in range(rnd.randint(1, 3)))}</a></li>'
        for j in links) + "</ul></nav>"


def _sentence(rnd: random.Random, vocab: list[str], n: int) -> str:
    return " ".join(rnd.choice(vocab) if rnd.random() < 0.9 else f"x{rnd.randrange(100000)}"
                    for _ in range(n)).capitalize() + "."


def text_page_html(i: int, n_pages: int) -> bytes:
    """The text-rich shape (issue #26): 6 paragraphs of ~40 words, 3 ``<figure>``s with ALT and
    figcaption whose images come from 500 distinct URLs recurring across pages, 20 nav links."""
    rnd = random.Random(i)
    vocab = WORDS + (TOPIC * 4 if rnd.random() < 0.4 else [])
    paragraphs = "".join(f"<p>{_sentence(rnd, vocab, 13)} {_sentence(rnd, vocab, 14)} {_sentence(rnd, vocab, 13)}</p>"
                         for _ in range(6))
    figures = "".join(
        f'<figure><img src="/img/pool-{rnd.randrange(500)}.jpg" width="640" height="480" '
        f'alt="{" ".join(rnd.choice(vocab) for _ in range(4))}"><figcaption>{_sentence(rnd, vocab, 12)}</figcaption>'
        f"</figure>" for _ in range(3))
    return (f"<!DOCTYPE html><html><head><title>Page {i}</title></head><body>{_nav(rnd, i, n_pages, vocab)}"
            f"<main><article><h1>Page {i}</h1>{paragraphs[:len(paragraphs) // 2]}{figures}"
            f"{paragraphs[len(paragraphs) // 2:]}</article></main></body></html>").encode("utf-8")


def image_page_html(i: int, n_pages: int) -> bytes:
    """The image-heavy shape: 12 images a page, 4 of them the site's own on every page (logo,
    banner, two share buttons, with ALT), 8 from a gallery of 2,000 URLs; 3 paragraphs."""
    rnd = random.Random(i)
    vocab = WORDS + (TOPIC * 4 if rnd.random() < 0.4 else [])
    chrome = "".join(f'<a href="/p/0"><img src="/img/site-{name}.jpg" width="640" height="480" alt="{name} of the site">'
                     f"</a>" for name in ("logo", "banner", "share-facebook", "share-twitter"))
    gallery = "".join(
        f'<div class="photo"><img src="/img/g-{rnd.randrange(2000)}.jpg" width="640" height="480" '
        f'alt="{" ".join(rnd.choice(vocab) for _ in range(3))}"><span>{_sentence(rnd, vocab, 8)}</span></div>'
        for _ in range(8))
    text = "".join(f"<p>{_sentence(rnd, vocab, 15)} {_sentence(rnd, vocab, 15)}</p>" for _ in range(3))
    return (f"<!DOCTYPE html><html><head><title>Page {i}</title></head><body><header>{chrome}</header>"
            f"{_nav(rnd, i, n_pages, vocab)}<main><h1>Page {i}</h1>{text}{gallery}</main></body></html>").encode("utf-8")


def real_pages(data: Path) -> list[bytes]:
    """The shape of real pages: the HTML of the shared data's CLEANEVAL and article-extraction
    benchmark sets, as published except that their links and images point to this web (every
    ``href`` becomes ``data-href``; every ``src`` of an ``<img>`` a local image URL of its own)."""
    import gzip
    import re

    docs = [p.read_bytes() for p in sorted((data / "cleaneval" / "final" / "input").glob("*.html"))]
    docs += [gzip.decompress(p.read_bytes()) for p in sorted((data / "article-extraction-benchmark" / "html")
                                                                 .glob("*.html.gz"))]
    if not docs:
        raise SystemExit(f"{data} holds no CLEANEVAL or article-benchmark pages: give the shared data folder with --data")
    href = re.compile(rb"\shref\s*=", re.I)
    src = re.compile(rb"(<img\b[^>]*?\s)src\s*=\s*([\"']?)([^\"'\s>]*)", re.I)
    return [src.sub(lambda m: m.group(1) + b"src=" + m.group(2) + b"/img/r-%d.jpg" % zlib.crc32(m.group(3)),
                    href.sub(b" data-href=", doc)) for doc in docs]


def real_page_html(i: int, n_pages: int, pages: list[bytes]) -> bytes:
    """Page ``i``: real page ``i mod len(pages)`` with 20 nav links to this web before ``</body>``."""
    doc = pages[i % len(pages)]
    nav = _nav(random.Random(i), i, n_pages, WORDS).encode()
    cut = doc.lower().rfind(b"</body>")
    return doc[:cut] + nav + doc[cut:] if cut >= 0 else doc + nav


PAGE_SHAPES = ("light", "text", "images", "real")


# -- server ---------------------------------------------------------------------------
def jpeg_bytes() -> bytes:
    """One 640x480 JPEG served for every ``/img/`` URL (passes the image size rules)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (640, 480), (200, 120, 40)).save(buf, "JPEG", quality=60)
    return buf.getvalue()


def photo_jpegs(n: int = 16) -> list[bytes]:
    """``n`` different 640x480 JPEGs of ~85 KB (blurred colour noise: compresses like a
    photo, not like a flat colour) for ``--photos``."""
    import io

    from PIL import Image, ImageFilter

    out = []
    for _ in range(n):
        bands = [Image.effect_noise((640, 480), 60).filter(ImageFilter.GaussianBlur(1)) for _ in range(3)]
        buf = io.BytesIO()
        Image.merge("RGB", bands).save(buf, "JPEG", quality=85)
        out.append(buf.getvalue())
    return out


async def _serve(port: int, n_pages: int, photos: bool = False, shape: str = "light", data: str = "") -> None:
    jpegs = photo_jpegs() if photos else [jpeg_bytes()]
    real = real_pages(Path(data)) if shape == "real" else []
    render = {"light": page_html, "text": text_page_html, "images": image_page_html,
              "real": lambda i, n: real_page_html(i, n, real)}[shape]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode("latin-1")
                if "://" in path:
                    path = "/" + path.split("/", 3)[3]
                if path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) < n_pages:
                    status, ctype, body = b"200 OK", b"text/html; charset=utf-8", render(int(path[3:]), n_pages)
                elif path.startswith("/img/"):
                    status, ctype, body = b"200 OK", b"image/jpeg", jpegs[zlib.crc32(path.encode()) % len(jpegs)]
                else:
                    status, ctype, body = b"404 Not Found", b"text/plain", b"not found"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype
                             + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=512)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def start_server(n_pages: int, photos: bool = False, shape: str = "light",
                 data: str = "") -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(n_pages), "--shapes", shape, "--data", data,
                             *(["--photos"] if photos else [])], stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    return proc, port


# -- crawls ---------------------------------------------------------------------------
COMMON = {
    "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False, "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False, "RETRY_ENABLED": False, "COOKIES_ENABLED": False,
    # the benchmark web is one host: the per-host and per-domain page caps (trap guards, 500
    # and 2,000) would end the focused crawls early, and politeness is off for every crawl alike
    "FOCUSCRAWL_MAX_PAGES_PER_HOST": 0, "FOCUSCRAWL_MAX_PAGES_PER_DOMAIN": 0,
}


#: ``plain/tuned``, ``corpus/tuned``: the baselines with the Scrapy-level settings the focused
#: crawl ships for speed (focuscrawl/settings.py), none of which is focus work
TUNED_BASELINE = {"CONCURRENT_ITEMS": 16, "REFERER_ENABLED": False,
                  "STATS_CLASS": "focuscrawl.scrapy_compat.MemoryStatsCollector",
                  "DOWNLOADER": "focuscrawl.scrapy_compat.SlotBoundDownloader",
                  "REQUEST_FINGERPRINTER_CLASS": "focuscrawl.fingerprints.CachingRequestFingerprinter",
                  "FOCUSCRAWL_FINGERPRINT_CACHE_SIZE": 20_000,
                  "DOWNLOADER_MIDDLEWARES": {"scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
                                             "focuscrawl.middlewares.offsite.OffsiteMiddleware": 50}}


def core_settings(project) -> dict:
    """The crawl core alone: spider, scope, link scoring; full-text extraction; no image
    extraction, near-duplicate detection, pipelines or writers (other components)."""
    spider_mws = {k: v for k, v in project.getdict("SPIDER_MIDDLEWARES").items()
                  if k.startswith(("focuscrawl.middlewares.scope", "focuscrawl.middlewares.priority"))}
    return {"SPIDER_MIDDLEWARES": spider_mws, "ITEM_PIPELINES": {}, "FOCUSCRAWL_TEXT_EXTRACTOR": "fulltext",
            "FOCUSCRAWL_NEARDUP_ENABLED": False}


#: set by ``main``: crawls write their outputs under this folder, removed once every crawl is done
KEEP_OUTPUTS = "FOCUSCRAWL_BENCH_OUTPUTS"


class _KeptDir:
    """A crawl's output folder under ``KEEP_OUTPUTS``, removed with it at the end of the run."""

    def __init__(self, prefix: str) -> None:
        self.name = os.path.join(os.environ[KEEP_OUTPUTS], f"{prefix}{os.getpid()}-{time.monotonic_ns()}")
        os.makedirs(self.name)

    def cleanup(self) -> None:
        pass


def _output_dir(prefix: str):
    """Where a crawl writes its outputs: removed right after it (``--delete-each``), or at the
    end of the benchmark. On this machine's journal-less ext4 a file made within minutes of
    thousands of deletions costs several times the kernel time (docs/CRAWL.md): deleting each
    crawl's ~4,000-9,000 files right after it charged the next crawl of the round for them,
    whichever kind it was."""
    return _KeptDir(prefix) if os.environ.get(KEEP_OUTPUTS) else tempfile.TemporaryDirectory(prefix=prefix)


def run_crawl(kind: str, port: int, pages: int, jobdir: str | None, profile: str = "full",
              extra: list[str] = (), profile_out: str | None = None, trend_every: int = 0, window: int = 0) -> dict:
    """In this process: one crawl, returns its numbers."""
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import Settings

    from focuscrawl.resources import project_settings

    class PlainSpider(scrapy.Spider):
        name = "plain"
        start_urls = [f"http://127.0.0.1:{port}/p/0"]

        def parse(self, response):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse)

    class CorpusSpider(PlainSpider):
        """Plain Scrapy doing the corpus work without any focus: trafilatura text of every
        page (the options of focuscrawl's trafilatura extractor), every ``<img>`` downloaded by
        Scrapy's FilesPipeline, one JSON line per page (feed export)."""

        name = "corpus"
        #: ``corpus/no-text``, ``corpus/no-images``: the same without trafilatura or without
        #: the image downloads (where the corpus spider's time goes)
        text, images = "no-text" not in kind, "no-images" not in kind

        def parse(self, response):
            import trafilatura

            text = trafilatura.extract(response.text, include_comments=False, include_tables=True,
                                       favor_recall=True, deduplicate=False, with_metadata=False) if self.text else None
            images = [response.urljoin(src) for src in response.css("img::attr(src)").getall()] if self.images else []
            yield {"url": response.url, "text": text, "file_urls": images}
            yield from super().parse(response)

    overrides = dict(COMMON, CLOSESPIDER_PAGECOUNT=pages)
    tmp_dirs = []
    if jobdir:
        overrides["JOBDIR"] = jobdir
    if kind.startswith(("plain", "corpus")):
        settings = Settings()
        if kind.startswith("corpus"):  # pages = items (image downloads are responses too)
            # its import (~0.3 s) before the clock, as the focused crawl's imports and models are
            import trafilatura  # noqa: F401
            tmp_dirs.append(_output_dir("focuscrawl-bench-corpus-"))
            out = tmp_dirs[-1].name
            overrides.update(CLOSESPIDER_PAGECOUNT=0, CLOSESPIDER_ITEMCOUNT=pages, FILES_STORE=f"{out}/files",
                             ITEM_PIPELINES={"scrapy.pipelines.files.FilesPipeline": 1},
                             FEEDS={f"{out}/pages.jsonl": {"format": "jsonlines"}})
        if kind.endswith("/tuned"):
            overrides.update(TUNED_BASELINE)
        settings.setdict(overrides, priority="cmdline")
        process = CrawlerProcess(settings)
        crawler = process.create_crawler(CorpusSpider if kind.startswith("corpus") else PlainSpider)
        process.crawl(crawler)
    else:
        os.chdir(REPO)
        settings = project_settings()
        if profile == "core":
            overrides.update(core_settings(settings))
        else:  # everything as shipped, writing a run directory; budget in pages, not image downloads
            tmp_dirs.append(_output_dir("focuscrawl-bench-"))
            overrides["FOCUSCRAWL_OUTPUT_DIR"] = tmp_dirs[-1].name
            overrides["CLOSESPIDER_PAGECOUNT"] = 0
            overrides["FOCUSCRAWL_PAGE_BUDGET"] = pages
        settings.setdict(dict(overrides, FOCUSCRAWL_LINK_RAZOR=1e300, FOCUSCRAWL_PROGRESS_INTERVAL=0),
                         priority="cmdline")
        for item in extra:
            name, _, value = item.partition("=")
            settings.set(name, value, priority="cmdline")
        mode, _, variant = kind.partition("/")
        if "no-pool" in variant.split("/"):  # the page analysis in the crawl process (one core)
            settings.set("FOCUSCRAWL_ANALYSIS_WORKERS", 0, priority="cmdline")
        if "no-language" in variant.split("/"):  # reaches the workers pickled in the analysis config
            import focuscrawl.crawl_scorer

            crawl_filter = focuscrawl.crawl_scorer.language_filter
            focuscrawl.crawl_scorer.language_filter = lambda settings: NoIdentification(crawl_filter(settings).wanted)
        process = CrawlerProcess(settings)
        crawler = process.create_crawler("focused")
        process.crawl(crawler, seeds=f"http://127.0.0.1:{port}/p/0", mode=mode)
    # the analysis workers load (~0.45 s of CPU each) before the clock starts, as the crawl
    # process's models do in process.crawl: throughput is measured without start-up on both
    # sides (the corpus spider's imports are made by now too); their start-up is reported
    startup_cpu = workers_loaded(os.getpid())
    # the clocks start at engine_started, when every spider_opened handler has run (the crawl
    # process's start-up: the focused crawl's collector freezes its heap there, ~0.05-0.1 s);
    # its wall time from Scrapy's start_time is reported as "opening"
    clock = Clock()
    crawler.signals.connect(clock.start, signal=signals.engine_started)
    phases = Phases()
    crawler.signals.connect(phases.response, signal=signals.response_received)
    stats = crawler.stats
    peak = PeakRss(lambda: stats.get_value("focuscrawl/pages/written") or stats.get_value("focuscrawl/pages/crawled")
                   or stats.get_value("item_scraped_count") or stats.get_value("response_received_count"),
                   every=trend_every, window=window)
    if profile_out:
        import cProfile

        # the reactor thread's CPU time, not wall time: on a loaded machine a wall clock
        # charges every syscall (a pipe write, epoll) with the time the thread waited for a core
        profiler = cProfile.Profile(time.thread_time)
        profiler.runctx("process.start()", globals(), {"process": process})
        profiler.dump_stats(profile_out)
    else:
        process.start()
    peak.stop()
    # CPU of the crawl, read before its output is deleted (removing ~9,000 files is no crawl work)
    cpu_seconds_used = cpu_seconds() - clock.cpu - startup_cpu  # the workers' CPU counts once reaped
    crawl_cpu_seconds_used = cpu_seconds((resource.RUSAGE_SELF,)) - clock.crawl_cpu
    crawl_sys_seconds_used = resource.getrusage(resource.RUSAGE_SELF).ru_stime - clock.crawl_sys
    reactor_cpu_seconds_used = time.thread_time() - clock.reactor_cpu
    stats = crawler.stats.get_stats()
    start = stats["start_time"].timestamp() if stats.get("start_time") else clock.wall
    finish = stats["finish_time"].timestamp() if stats.get("finish_time") else clock.wall
    for tmp in tmp_dirs:
        tmp.cleanup()
    return {
        "kind": kind,
        # page rows when written (the budget's exact count), else pages parsed
        "pages": stats.get("focuscrawl/pages/written") or stats.get("focuscrawl/pages/crawled", stats.get(
            "item_scraped_count", stats.get("response_received_count", 0))),
        "responses": stats.get("response_received_count", 0),
        # pages analysed: the budget's pages and those in flight when it was reached
        "analysed": stats.get("focuscrawl/pages/crawled", 0),
        "seconds": finish - clock.wall,
        "opening_seconds": clock.wall - start,
        # where the wall time goes: to the first response (robots.txt, tdmrep.json, the seed),
        # from there to the last response, and from it to the end (draining, closing)
        "first_response_seconds": (phases.first or clock.wall) - clock.wall,
        "last_response_seconds": (phases.last or clock.wall) - clock.wall,
        "closing_seconds": finish - (phases.last or finish),
        "start": clock.wall,
        "finish": finish,
        "lm_queries": stats.get("focuscrawl/lm/queries"), "lm_cache_hits": stats.get("focuscrawl/lm/cache_hits"),
        "cpu_seconds": cpu_seconds_used,
        "startup_cpu_seconds": startup_cpu,
        "crawl_cpu_seconds": crawl_cpu_seconds_used,
        "crawl_sys_seconds": crawl_sys_seconds_used,
        "reactor_cpu_seconds": reactor_cpu_seconds_used,
        "peak_rss_mb": peak.peak / 1024 ** 2,
        "peak_pss_mb": peak.peak_pss / 1024 ** 2,
        "rss_trend": peak.trend,
        "windows": peak.windows,
        "frontier": {k.rpartition("/")[2]: v for k, v in stats.items() if k.startswith("focuscrawl/frontier/")},
        # mode learning: model updates, re-ranked requests, judged pages (what its cost depends on)
        "learning": {k.rpartition("/")[2]: v for k, v in stats.items() if k.startswith("focuscrawl/learning/")},
        "other_language": {"pages": stats.get("focuscrawl/pages/other_language", 0),
                           "images": stats.get("focuscrawl/images/dropped/other_language", 0),
                           "images_kept": stats.get("focuscrawl/images/kept", 0)},
    }


class Phases:
    """Wall times of a crawl's first and last response, for the split of its wall time."""

    first = last = 0.0

    def response(self) -> None:
        self.last = time.time()
        self.first = self.first or self.last


class Clock:
    """A crawl's wall and CPU clocks at ``engine_started`` (connected in the reactor thread:
    ``thread_time`` there is the reactor's)."""

    wall = cpu = crawl_cpu = crawl_sys = reactor_cpu = 0.0

    def start(self) -> None:
        self.wall = time.time()
        self.cpu = cpu_seconds()
        self.crawl_cpu = cpu_seconds((resource.RUSAGE_SELF,))
        self.crawl_sys = resource.getrusage(resource.RUSAGE_SELF).ru_stime  # the kernel's share (file creation)
        self.reactor_cpu = time.thread_time()  # the reactor's thread alone: the crawl's serial part


class NoIdentification(LanguageFilter):
    """``MODE/no-language``: no text is identified (the model never loads), so every text is
    unknown and nothing is filtered: the crawl without issue #30's work (a class of this
    module: the spawned analysis workers unpickle it by name)."""

    def identify(self, text: str) -> str:
        return UNKNOWN


def cpu_seconds(who: tuple[int, ...] = (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) -> float:
    """User + system CPU of this process and its finished children (a worker pool)."""
    total = 0.0
    for w in who:
        usage = resource.getrusage(w)
        total += usage.ru_utime + usage.ru_stime
    return total


def workers_loaded(pid: int, timeout: float = 60.0) -> float:
    """Wait until the child processes of ``pid`` (the analysis workers) have loaded, i.e. use
    no CPU for 0.3 s; returns the CPU seconds they used (0.0 with no children)."""
    deadline, last, still = time.monotonic() + timeout, -1.0, 0
    while time.monotonic() < deadline and still < 3:
        now = sum(_tree_cpu(child) for child in _child_pids(pid))
        still = still + 1 if now == last else 0
        last = now
        time.sleep(0.1)
    return max(last, 0.0)


def _rss(pid: int) -> int:
    """RSS in bytes of process ``pid`` alone (Linux /proc; 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _pss(pid: int) -> int:
    """PSS in bytes of process ``pid`` alone: its private pages plus its share of pages it
    shares with other processes (the mapped language model, the forked workers' pages), so
    that a process tree's PSS adds up to the memory it really holds (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _child_pids(pid: int) -> list[int]:
    """The child processes of process ``pid`` (Linux /proc; ``OSError`` when it is gone)."""
    children: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            children += map(int, f.read().split())
    return children


def _tree_rss(pid: int, measure=_rss) -> int:
    """RSS (or, with ``measure=_pss``, PSS) in bytes of process ``pid`` and all its
    descendants (Linux /proc)."""
    total = measure(pid)
    try:
        total += sum(_tree_rss(child, measure) for child in _child_pids(pid))
    except (OSError, ValueError):
        pass
    return total


class PeakRss:
    """Peak RSS of this process plus its children (the worker pool), sampled every 0.2 s.

    With ``pages`` (a callable giving the pages crawled so far) and ``every``, also keeps
    the RSS trend: one sample (pages, seconds, crawl MB, workers MB) each time another
    ``every`` pages are done, printed to stderr as it goes so that a long run shows
    whether memory grows with the crawl; then the peak PSS of the tree is sampled too
    (every second: reading ``smaps_rollup`` walks the process's mappings)."""

    def __init__(self, pages=None, every: int = 0, window: int = 0) -> None:
        import threading

        self.peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        #: peak PSS of the tree (bytes), sampled only with a trend (``every``)
        self.peak_pss = 0
        self.trend: list[dict] = []
        #: (pages, seconds, CPU seconds of the crawl and its workers) each time another
        #: ``window`` pages are done (``--long``)
        self.windows: list[tuple[int, float, float]] = []
        self._window, self._next_window = window, window
        self._pages, self._every, self._next = pages, every, every
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        ticks = 0
        while not self._stop.wait(0.2):
            ticks += 1
            if self._every and ticks % 5 == 0:
                self.peak_pss = max(self.peak_pss, _tree_rss(os.getpid(), _pss))
            if self._window and (pages := self._pages() or 0) >= self._next_window:
                self.windows.append((pages, time.monotonic() - self._start, _tree_cpu(os.getpid())))
                self._next_window = (pages // self._window + 1) * self._window
            total = _tree_rss(os.getpid())
            self.peak = max(self.peak, total)
            if self._every and (pages := self._pages() or 0) >= self._next:
                self._next = (pages // self._every + 1) * self._every
                own = _rss(os.getpid())
                pss = _tree_rss(os.getpid(), _pss)
                self.peak_pss = max(self.peak_pss, pss)
                sample = {"pages": pages, "seconds": round(time.monotonic() - self._start, 1),
                          "crawl_mb": round(own / 1024 ** 2), "workers_mb": round((total - own) / 1024 ** 2),
                          "peak_mb": round(self.peak / 1024 ** 2), "pss_mb": round(pss / 1024 ** 2),
                          "peak_pss_mb": round(self.peak_pss / 1024 ** 2)}
                self.trend.append(sample)
                print(f"memory trend: {pages} pages at {sample['seconds']:.0f} s: crawl {sample['crawl_mb']} MB"
                      f" + workers {sample['workers_mb']} MB (peak so far {sample['peak_mb']} MB; PSS of all "
                      f"{sample['pss_mb']} MB, peak so far {sample['peak_pss_mb']} MB)",
                      file=sys.stderr, flush=True)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def start_crawl(kind: str, port: int, pages: int, jobdir: str | None = None, profile: str = "full",
                extra: list[str] = (), cprofile: str | None = None, trend_every: int = 0,
                source: str | None = None, stderr=None, window: int = 0,
                wrapper: list[str] = ()) -> subprocess.Popen:
    """One crawl in a process of its own (its result: ``crawl_result``); ``source``: import
    focuscrawl from that checkout (``--ab``) instead of this one; ``stderr``: a file for its
    log (default: a pipe read by ``crawl_result``, or this process's with ``trend_every``)."""
    cmd = [*wrapper, sys.executable, __file__, "--run", kind, "--port", str(port), "--pages", str(pages),
           "--profile", profile]
    if jobdir:
        cmd += ["--jobdir", jobdir]
    if trend_every:  # the trend lines go to stderr as they come (a long run)
        cmd += ["--trend-every", str(trend_every)]
    if cprofile:
        cmd += ["--cprofile", cprofile]
    if window:
        cmd += ["--window", str(window)]
    for item in extra:
        cmd += ["-s", item]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (source, os.environ.get("PYTHONPATH"))))) \
        if source else None
    if stderr is None:
        stderr = None if trend_every else subprocess.PIPE
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)


def crawl_result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"crawl {proc.args} failed ({proc.returncode}): {(err or '')[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def crawl_subprocess(kind: str, port: int, pages: int, jobdir: str | None = None, profile: str = "full",
                     extra: list[str] = (), cprofile: str | None = None, trend_every: int = 0,
                     source: str | None = None, window: int = 0) -> dict:
    return crawl_result(start_crawl(kind, port, pages, jobdir, profile, extra, cprofile, trend_every, source,
                                    window=window))


def long_run(port: int, pages: int, kinds: list[str], profile: str, extra: list[str], window: int = 1000) -> None:
    """``--long``: one crawl of each of ``kinds`` over ``pages`` pages (one after the other), pages/s
    in every ``window``-page window side by side; the verdict compares the focused crawl's last
    window with its first after the first 2,000 pages (target >= 0.8x)."""
    results = {}
    for kind in kinds:
        with tempfile.TemporaryDirectory() as jobdir:
            r = crawl_subprocess(kind, port, pages, jobdir if kind not in ("plain", "corpus") else None,
                                 profile=profile, extra=extra, window=window)
        results[kind] = r
        print(f"long run: {kind}: {r['pages']} pages in {r['seconds']:.0f} s, {1000 * r['cpu_seconds'] / r['pages']:.2f} "
              f"CPU ms/page, peak RSS {r['peak_rss_mb']:.0f} MB", flush=True)
    rates, cpu = {}, {}
    for kind, r in results.items():
        marks = [(0, 0.0, 0.0)] + [tuple(w) for w in r["windows"]]
        rates[kind] = [((p1 - p0) / (t1 - t0) if t1 > t0 else 0.0) for (p0, t0, _), (p1, t1, _) in zip(marks, marks[1:])]
        # CPU ms a page in each window: what the crawl's length costs, apart from the machine's load
        cpu[kind] = [(1000 * (c1 - c0) / (p1 - p0) if p1 > p0 else 0.0)
                     for (p0, _, c0), (p1, _, c1) in zip(marks[1:], marks[2:])]
        cpu[kind].insert(0, 0.0)  # the first window's CPU includes the start (imports, models)
    print("pages/s and CPU ms/page per window of " + str(window) + " pages: " + " | ".join(kinds))
    for n in range(max(len(v) for v in rates.values())):
        print(f"  {(n + 1) * window:>7} " + " ".join(
            f"{rates[k][n]:>9.1f} {cpu[k][n]:>6.2f}" if n < len(rates[k]) else f"{'':>16}" for k in kinds))
    skip = 2000 // window
    for kind, v in rates.items():
        if len(v) > skip + 1:
            ratio = v[-1] / v[skip] if v[skip] else 0.0
            cpu_ratio = cpu[kind][-1] / cpu[kind][skip] if cpu[kind][skip] else 0.0
            target = "" if kind in ("plain", "corpus") else \
                f" (target >= 0.8x: {'OK' if ratio >= 0.8 else 'BELOW TARGET'})"
            print(f"{kind}: last window / first after {skip * window} pages: pages/s {ratio:.2f}x{target}; "
                  f"CPU ms/page {cpu_ratio:.2f}x (> 1: each page costs more as the crawl grows)")


def _tree_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its running descendants (Linux /proc)."""
    try:
        return _cpu_of_pid(pid) + sum(_tree_cpu(child) for child in _child_pids(pid))
    except (OSError, ValueError, IndexError):
        return 0.0


def _cpu_of_pid(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def redis_scaling(port: int, pages: int, repeat: int, profile: str, extra: list[str]) -> None:
    """``keywords`` crawls of ``pages`` pages in all on one Redis frontier: one process,
    then two processes (``pages / 2`` each, same crawl name, own run directories) at once;
    a real redis-server on 127.0.0.1 started here. pages/s = pages of all processes / wall
    time from the first start to the last finish; CPU = the crawl processes and their
    workers, redis-server apart."""
    sys.path.insert(0, str(REPO))
    from tests.support.redisserver import RedisServer

    with tempfile.TemporaryDirectory() as workdir:
        server = RedisServer(workdir)
        try:
            rows: dict[int, list[dict]] = {1: [], 2: []}
            for n_round in range(repeat):
                for n in (1, 2):
                    name = f"bench-{n_round}-{n}"
                    settings = [*extra, f"FOCUSCRAWL_REDIS_URL={server.url}", f"FOCUSCRAWL_REDIS_CRAWL={name}"]
                    redis_cpu = _cpu_of_pid(server.proc.pid)
                    procs = [start_crawl("keywords", port, pages // n, profile=profile, extra=settings)
                             for _ in range(n)]
                    results = [crawl_result(proc) for proc in procs]
                    done = sum(r["pages"] for r in results)
                    wall = max(r["finish"] for r in results) - min(r["start"] for r in results)
                    row = {"pages": done, "rate": done / wall, "cpu_ms": 1000 * sum(r["cpu_seconds"] for r in results) / done,
                           "redis_cpu_ms": 1000 * (_cpu_of_pid(server.proc.pid) - redis_cpu) / done,
                           "per_process": [r["pages"] for r in results],
                           "spans": [f"{r['start'] - min(x['start'] for x in results):.0f}-"
                                     f"{r['finish'] - min(x['start'] for x in results):.0f} s" for r in results],
                           "peak_rss_mb": sum(r["peak_rss_mb"] for r in results)}
                    rows[n].append(row)
                    print(f"redis round {n_round + 1}, {n} process(es): {done} pages {row['per_process']} in "
                          f"{wall:.0f} s (each: {', '.join(row['spans'])}): {row['rate']:.1f} pages/s, {row['cpu_ms']:.1f} CPU ms/page "
                          f"(+ redis-server {row['redis_cpu_ms']:.2f})", flush=True)
                    server.client.flushdb()
        finally:
            server.stop()
    print(f"{'Redis frontier':<16} {'pages/s':>8} {'spread':>13} {'CPU ms/page':>11} {'redis ms/page':>13} "
          f"{'peak RSS MB':>11}")
    for n in (1, 2):
        rates = [r["rate"] for r in rows[n]]
        print(f"{n} process(es){'':<4} {statistics.median(rates):>8.1f} {min(rates):>6.1f}-{max(rates):<6.1f} "
              f"{statistics.median(r['cpu_ms'] for r in rows[n]):>11.1f} "
              f"{statistics.median(r['redis_cpu_ms'] for r in rows[n]):>13.2f} "
              f"{max(r['peak_rss_mb'] for r in rows[n]):>11.0f}")
    speedup = [two["rate"] / one["rate"] for one, two in zip(rows[1], rows[2])]
    print(f"2 processes / 1 process on one Redis frontier: wall {_spread(speedup)}")


ALL_MODES = ("plain", "corpus", "unfocused", "document", "keywords", "learning")


def language_analysis(shape: str, n_pages: int, rounds: int, data: str, cprofile: str | None = None) -> None:
    """``--language-analysis``: ``analyse_page`` (what a worker does with a page) on
    ``n_pages`` pages of ``shape`` in this process, with language identification and
    without, interleaved; CPU ms per page (``process_time``: one thread, no crawl dynamics
    such as the pages in flight at the budget). The identifier forgets its texts before each
    round (first sight, as in a crawl); the LM's cache is warm in both (a first round of
    each is not counted). Also the model's load: from the wheel and from the cached copy.
    ``cprofile``: then one more round with identification, under cProfile, into
    ``CPROFILE.SHAPE`` (the top functions printed): where a worker's CPU per page goes."""
    import dataclasses

    from focuscrawl.analysis import AnalysisConfig, _demo_scorer, analyse_page
    from focuscrawl.resources import project_settings, user_cache_dir
    from focuscrawl.text import language

    make = {"light": page_html, "text": text_page_html, "images": image_page_html}.get(shape)
    real = real_pages(Path(data)) if shape == "real" else None
    htmls = [(make(i, 10000) if make else real_page_html(i, 10000, real)).decode("utf-8", "replace")
             for i in range(n_pages)]
    on = AnalysisConfig.from_settings(project_settings(), _demo_scorer())
    off = dataclasses.replace(on, language=NoIdentification(on.language.wanted))
    scorer = on.scorer.load()
    t = time.process_time()
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    wheel = time.process_time() - t
    language.load_identifier(user_cache_dir() / "py3langid")  # written if missing
    t = time.process_time()
    language.load_identifier(user_cache_dir() / "py3langid")
    cached = time.process_time() - t

    def run(config) -> float:
        language._classify.cache_clear()
        start = time.process_time()
        for i, html in enumerate(htmls):
            analyse_page(html, f"http://127.0.0.1/p/{i}", f"http://127.0.0.1/p/{i}", 1, config, scorer)
        return 1000 * (time.process_time() - start) / len(htmls)

    run(on), run(off)
    ms = {"on": [], "off": []}
    for n in range(rounds):
        for name in (("on", "off") if n % 2 == 0 else ("off", "on")):
            ms[name].append(run(on if name == "on" else off))
    ratio = [a / b for a, b in zip(ms["on"], ms["off"])]
    load = os.getloadavg()
    print(f"{shape}: analyse_page of {n_pages} pages, {rounds} rounds (load {load[0]:.1f}): CPU ms/page "
          f"on {_mean_sd(ms['on'], 3)}, off {_mean_sd(ms['off'], 3)}, +{_mean_sd([a - b for a, b in zip(ms['on'], ms['off'])], 3)} ms; "
          f"on/off {_mean_sd(ratio, 3)}x (rounds {' '.join(f'{x:.3f}' for x in ratio)}); model load "
          f"{1000 * wheel:.0f} ms from the wheel, {1000 * cached:.0f} ms from the cached copy", flush=True)
    if cprofile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(run, on)
        profiler.dump_stats(f"{cprofile}.{shape}")
        print(f"{shape}: analyse_page profiled into {cprofile}.{shape}", flush=True)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def _mean_sd(values: list[float], digits: int = 2) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.{digits}f} ± {sd:.{digits}f}"


def language_costs(rounds: list[dict[str, dict]], modes: list[str]) -> None:
    """``--language-ab``: each mode with language identification against ``MODE/no-language``
    of the same round: CPU ms per analysed page (crawl + workers; the pages in flight when
    the budget is reached are analysed too, a number that varies from crawl to crawl) and
    pages/s, mean ± sd over the rounds, and their on/off ratios per round."""
    load = os.getloadavg()
    print(f"language identification on / off ({len(rounds)} rounds, interleaved; load average now "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}):")
    for kind in modes:
        if "/no-language" not in kind:
            continue
        on_kind = kind.replace("/no-language", "")  # MODE/no-language@ab: MODE@ab
        on, off = [rd[on_kind] for rd in rounds], [rd[kind] for rd in rounds]
        cpu_on = [1000 * r["cpu_seconds"] / r["analysed"] for r in on]
        cpu_off = [1000 * r["cpu_seconds"] / r["analysed"] for r in off]
        dropped = on[0]["other_language"]
        # analysed pages/s: the page budget stops a crawl after a number of pages written, but
        # the pages queued for analysis at that moment (tens to hundreds) are analysed too
        fair_on, fair_off = ([r["analysed"] / r["seconds"] for r in rs] for rs in (on, off))
        print(f"  {on_kind}: CPU ms per analysed page on {_mean_sd(cpu_on)}, off {_mean_sd(cpu_off)}; "
              f"pages/s on {_mean_sd([r['rate'] for r in on], 1)}, off {_mean_sd([r['rate'] for r in off], 1)}; "
              f"analysed pages/s on {_mean_sd(fair_on, 1)}, off {_mean_sd(fair_off, 1)} "
              f"(analysed on {' '.join(str(r['analysed']) for r in on)}, off {' '.join(str(r['analysed']) for r in off)}); "
              f"peak RSS MB on {max(r['peak_rss_mb'] for r in on):.0f}, off {max(r['peak_rss_mb'] for r in off):.0f}")
        cpu = [a / b for a, b in zip(cpu_on, cpu_off)]
        wall = [a["rate"] / b["rate"] for a, b in zip(on, off)]
        fair = [a / b for a, b in zip(fair_on, fair_off)]
        print(f"  {on_kind} on/off: CPU per page {_mean_sd(cpu, 3)}x (rounds {' '.join(f'{x:.3f}' for x in cpu)}); "
              f"pages/s {_mean_sd(wall, 3)}x (rounds {' '.join(f'{x:.3f}' for x in wall)}); "
              f"analysed pages/s {_mean_sd(fair, 3)}x (rounds {' '.join(f'{x:.3f}' for x in fair)}); "
              f"the on crawl left {dropped['pages']} pages unscored and dropped {dropped['images']} images "
              f"(of {dropped['images'] + dropped['images_kept']}) as other_language")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x (runs {min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1500, help="HTML pages per throughput crawl")
    parser.add_argument("--memory-pages", type=int, default=0,
                        help="pages of the JOBDIR memory crawl (0: skip; the target is stated for 50000)")
    parser.add_argument("--memory-mode", default=DEFAULT_MODE,
                        help="crawl mode of the --memory-pages crawl (default: the crawl's, %(default)s)")
    parser.add_argument("--modes", nargs="*", default=None,
                        help="crawls (default: all; keywords with --cprofile; no names: only --redis/--memory-pages): "
                             "plain, corpus, unfocused, document, keywords, "
                             "learning; MODE/no-pool = that mode with the page analysis in the crawl process "
                             "(FOCUSCRAWL_ANALYSIS_WORKERS=0); corpus/no-text, corpus/no-images = the corpus "
                             "spider without trafilatura or without image downloads; plain/tuned, corpus/tuned = "
                             "the baselines with the focused crawl's Scrapy-level speed settings (TUNED_BASELINE)")
    parser.add_argument("--repeat", type=int, default=2, help="interleaved rounds (ratios per round, spread shown; "
                                                              "0: only the --memory-pages crawl)")
    parser.add_argument("--profile", choices=("core", "full"), default="full",
                        help="full: every component as shipped (the headline; trafilatura, image extraction "
                             "and download, near-duplicates, writers); core: spider + link scoring only")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="setting for the focused crawls (repeatable), e.g. FOCUSCRAWL_ANALYSIS_WORKERS=0")
    parser.add_argument("--cprofile", metavar="OUT", help="profile one crawl of each of --modes (default: keywords) "
                                                          "with cProfile into OUT (OUT.MODE for several) and "
                                                          "print the top functions; with --language-analysis: "
                                                          "analyse_page in this process, into OUT.SHAPE")
    parser.add_argument("--ab", metavar="SRC", help="A/B: also run each focused mode as MODE@ab with focuscrawl "
                                                    "imported from the checkout SRC (e.g. `git worktree add SRC "
                                                    "main`), in the same rounds")
    parser.add_argument("--instructions", type=int, default=0, metavar="N",
                        help="only: machine instructions a page of each --modes (and --ab) crawl, counted by "
                             "valgrind over crawls of N and 2N pages (deterministic, unlike seconds; slow: "
                             "~30x a crawl)")
    parser.add_argument("--language-ab", action="store_true",
                        help="the cost of language identification: each focused mode of --modes (default: "
                             "keywords) also as MODE/no-language (nothing identified) in the same rounds; CPU "
                             "ms/page and pages/s, mean +- sd, and the on/off ratio per round")
    parser.add_argument("--language-analysis", type=int, default=0, metavar="PAGES",
                        help="only: analyse_page on PAGES pages of each --shapes in this process, language "
                             "identification on and off interleaved in --repeat rounds, CPU ms/page")
    parser.add_argument("--redis", action="store_true",
                        help="also: keywords crawls of --pages pages on one Redis frontier (a redis-server "
                             "started here), 1 process vs 2 processes, --repeat rounds")
    parser.add_argument("--trend-every", type=int, default=0,
                        help="RSS trend sample every N pages of the memory crawl (default: a tenth of "
                             "--memory-pages)")
    parser.add_argument("--photos", action="store_true",
                        help="serve photo-like JPEGs of ~85 KB (16 different ones) instead of one flat 5 KB JPEG")
    parser.add_argument("--shapes", nargs="+", choices=PAGE_SHAPES, default=["light"],
                        help="page shapes, each on a web of its own (every table is per shape): light (the "
                             "original ~12 sentences, 3 images), text (6 paragraphs of ~40 words, 3 figures with "
                             "ALT and figcaption from 500 recurring images, 20 nav links), images (12 images, 4 "
                             "on every page), real (CLEANEVAL + article benchmark HTML from --data)")
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"),
                        help="the shared data folder (shape real)")
    parser.add_argument("--long", type=int, default=0, metavar="PAGES",
                        help="also: one crawl of PAGES pages (>= 20000) on the first shape of corpus and of each "
                             "of corpus/keywords/learning in --modes (default: corpus and the crawl's default mode), "
                             "pages/s per 1,000-page window side by side")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--window", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--jobdir", help=argparse.SUPPRESS)
    parser.add_argument("--delete-each", action="store_true",
                        help="remove each crawl's outputs right after it (default: all at the end of the run)")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(0, args.serve, args.photos, args.shapes[0], args.data))
        return 0
    if args.run:
        print(json.dumps(run_crawl(args.run, args.port, args.pages, args.jobdir, args.profile, args.set,
                                   args.cprofile, args.trend_every, args.window)))
        return 0

    if "real" in args.shapes and not (Path(args.data) / "cleaneval").is_dir():
        parser.error(f"--data {args.data}: not the shared data folder (no cleaneval/): shape real needs it")
    if args.language_analysis:
        for shape in args.shapes:
            language_analysis(shape, args.language_analysis, args.repeat, args.data, args.cprofile)
        return 0
    if args.modes is None:
        args.modes = ["keywords"] if args.cprofile or args.language_ab or args.instructions else list(ALL_MODES)
    if args.language_ab:
        args.modes = [k for kind in args.modes for k in ((kind, f"{kind}/no-language")
                                                          if not kind.startswith(("plain", "corpus")) else (kind,))]
    if args.ab:
        args.modes = [k for kind in args.modes for k in ((kind, f"{kind}@ab") if not kind.startswith(("plain", "corpus"))
                                                           else (kind,))]
    # the memory crawl's web is 10x its pages: ~20 random links a page keep finding new URLs
    # to the end (on a web only 2x as big the frontier stops growing at ~30% of the crawl)
    web_pages = max(2 * args.pages, 10 * args.memory_pages, 10 * args.long, 10000)
    with tempfile.TemporaryDirectory(prefix="focuscrawl-bench-outputs-") as kept:
        if not args.delete_each:
            os.environ[KEEP_OUTPUTS] = kept  # the crawls' outputs, removed with it
        for n_shape, shape in enumerate(args.shapes):
            server, port = start_server(web_pages, args.photos, shape, args.data)
            try:
                print(f"== page shape: {shape}", flush=True)
                shape_runs(args, server, port, web_pages, first=n_shape == 0)
            finally:
                server.terminate()
                server.wait()
    return 0


def instructions(kind: str, port: int, pages: int, extra: list[str], source: str | None) -> dict[str, int]:
    """Machine instructions of one crawl (valgrind's cachegrind, no cache simulation): the
    crawl process's and, with its analysis workers, the total. Deterministic where seconds
    are not: the same work counts the same on a loaded machine."""
    with tempfile.TemporaryDirectory(prefix="focuscrawl-bench-cg-") as folder:
        wrapper = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
                   f"--cachegrind-out-file={folder}/cg.%p", "--log-file=/dev/null"]
        proc = start_crawl(kind, port, pages, extra=[*extra, "FOCUSCRAWL_CHECKPOINT_INTERVAL=3600",
                                                     "FOCUSCRAWL_PROGRESS_INTERVAL=0"],
                           source=source, wrapper=wrapper)
        crawl_result(proc)
        counts = {}
        for path in Path(folder).glob("cg.*"):
            summary = [line for line in path.read_text().splitlines() if line.startswith("summary:")]
            if summary:
                counts[int(path.suffix[1:])] = int(summary[0].split()[1])
    return {"crawl": counts.get(proc.pid, 0), "total": sum(counts.values())}


def instruction_runs(args, port: int) -> None:
    """``--instructions N``: each mode of --modes (and MODE@ab) crawls N and 2N pages under
    valgrind; the difference over N is the instructions a page, start-up and closing left out."""
    n = args.instructions
    print(f"machine instructions a page: (crawl of {2 * n} pages - crawl of {n}) / {n}, "
          f"PYTHONHASHSEED=0, valgrind cachegrind")
    os.environ["PYTHONHASHSEED"] = "0"
    per_page = {}
    for kind in args.modes:
        name, _, ab = kind.partition("@")
        # a first crawl of each checkout fills numba's cache: compiling there, not in a counted crawl
        crawl_subprocess(name, port, 5, extra=args.set, source=args.ab if ab else None)
        small, big = (instructions(name, port, pages, args.set, args.ab if ab else None) for pages in (n, 2 * n))
        per_page[kind] = {part: (big[part] - small[part]) / n for part in ("crawl", "total")}
        print(f"{kind:>16}: crawl process {per_page[kind]['crawl'] / 1e6:8.2f} M/page, "
              f"with its workers {per_page[kind]['total'] / 1e6:8.2f} M/page "
              f"(start-up and closing: {small['total'] / 1e9 - per_page[kind]['total'] * n / 1e9:.2f} G)", flush=True)
    for kind in args.modes:
        if kind.endswith("@ab"):
            base = per_page[kind]
            new = per_page[kind[:-3]]
            print(f"{kind[:-3]:>16}: this checkout / --ab: crawl process {new['crawl'] / base['crawl']:.3f}x, "
                  f"with its workers {new['total'] / base['total']:.3f}x")


def shape_runs(args, server: subprocess.Popen, port: int, web_pages: int, first: bool) -> None:
    """Every run of one page shape on its web (the Redis, memory and long crawls on the first only)."""
    if args.instructions:
        instruction_runs(args, port)
        return
    if args.cprofile:
        for kind in args.modes:
            out = args.cprofile if len(args.modes) == 1 else f"{args.cprofile}.{kind.replace('/', '-')}"
            name, _, ab = kind.partition("@")  # MODE@ab: MODE with focuscrawl from --ab's checkout
            r = crawl_subprocess(name, port, args.pages, profile=args.profile, extra=args.set, cprofile=out,
                                 source=args.ab if ab else None)
            print(f"{kind}: {r['pages']} pages, {r['responses']} responses in {r['seconds']:.1f} s; "
                  f"profile in {out}")
            import pstats

            pstats.Stats(out).sort_stats("tottime").print_stats(30)
            pstats.Stats(out).sort_stats("cumulative").print_stats(60)
        return
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores")
    print(f"web: {web_pages} pages (~20 links each{', photo-like ~85 KB JPEGs' if args.photos else ''}) on 127.0.0.1:{port}; {args.repeat} "
          f"interleaved rounds; focused profile: {args.profile}; settings: {args.set or 'as shipped'}")
    print("pages/s = HTML pages / wall seconds; CPU pages/s = pages / CPU seconds of the crawl process "
          "and its workers")
    rounds: list[dict[str, dict]] = []
    for n in range(args.repeat if args.modes else 0):
        results: dict[str, dict] = {}
        # ABBA: every other round runs the crawls in reverse order, so that a load that
        # drifts during a round does not always favour the same crawls
        for kind in (args.modes if n % 2 == 0 else reversed(args.modes)):
            name, _, ab = kind.partition("@")
            server_cpu = _cpu_of_pid(server.pid)
            r = crawl_subprocess(name, port, args.pages, profile=args.profile, extra=args.set,
                                 source=args.ab if ab else None)
            r["server_cpu_seconds"] = _cpu_of_pid(server.pid) - server_cpu
            r["rate"] = r["pages"] / r["seconds"] if r["seconds"] else 0.0
            r["response_rate"] = r["responses"] / r["seconds"] if r["seconds"] else 0.0
            r["cpu_rate"] = r["pages"] / r["cpu_seconds"] if r["cpu_seconds"] else 0.0
            results[kind] = r
        rounds.append(results)
        print(f"round {n + 1}: " + ", ".join(
            f"{k} {r['rate']:.1f} p/s {1000 * r['cpu_seconds'] / r['pages']:.2f} CPU ms/page"
            + f" (+ {r.get('opening_seconds', 0.0):.2f} s opening"
            + (f", {r['startup_cpu_seconds']:.2f} s workers' start-up)" if r.get("startup_cpu_seconds") else ")")
            + (f" ({r['analysed']} analysed)" if r.get("analysed") else "")
            + (f" [first response {r['first_response_seconds']:.2f} s, last {r['last_response_seconds']:.2f} s, "
               f"closing {r['closing_seconds']:.2f} s]" if "closing_seconds" in r else "") for k, r in results.items()), flush=True)
    if rounds:  # --repeat 0 or no --modes: the memory / Redis crawls alone
        print(f"{'crawl':<18} {'pages':>6} {'pages/s':>8} {'spread':>13} {'resp/s':>7} {'CPU p/s':>8} {'CPU ms/page':>11} "
              f"{'of it crawl':>11} {'(kernel)':>8} {'reactor':>7} {'server':>6} {'LM queries':>10} {'cache hits':>10} "
              f"{'peak RSS MB':>11}")
        for kind in args.modes:
            rs = [rd[kind] for rd in rounds]
            rates = [r["rate"] for r in rs]
            best = max(rs, key=lambda r: r["rate"])
            cpu_rate = statistics.median(r["cpu_rate"] for r in rs)
            print(f"{kind:<18} {best['pages']:>6} {statistics.median(rates):>8.1f} "
                  f"{min(rates):>6.1f}-{max(rates):<6.1f} {statistics.median(r['response_rate'] for r in rs):>7.1f} "
                  f"{cpu_rate:>8.1f} {1000 / cpu_rate if cpu_rate else 0:>11.2f} "
                  f"{statistics.median(1000 * r['crawl_cpu_seconds'] / r['pages'] for r in rs):>11.2f} "
                  f"{statistics.median(1000 * r.get('crawl_sys_seconds', 0) / r['pages'] for r in rs):>8.2f} "
                  f"{statistics.median(1000 * r.get('reactor_cpu_seconds', 0) / r['pages'] for r in rs):>7.2f} "
                  f"{statistics.median(1000 * r['server_cpu_seconds'] / r['pages'] for r in rs):>6.2f} "
                  f"{best['lm_queries'] or 0:>10} {best['lm_cache_hits'] or 0:>10} "
                  f"{max(r['peak_rss_mb'] for r in rs):>11.0f}", flush=True)
        verdicts = []
        for base, target in (("corpus", 0.9), ("plain", 0.8)):
            if base not in args.modes:
                continue
            for kind in ("keywords", "document", "unfocused"):
                if kind not in args.modes:
                    continue
                wall = [rd[kind]["rate"] / rd[base]["rate"] for rd in rounds]
                cpu = [rd[kind]["cpu_rate"] / rd[base]["cpu_rate"] for rd in rounds]
                responses = [rd[kind]["response_rate"] / rd[base]["response_rate"] for rd in rounds]
                line = f"{kind} / {base}: wall {_spread(wall)}, CPU {_spread(cpu)}, responses/s {_spread(responses)}"
                if kind == "keywords":
                    ok = statistics.median(wall) >= target
                    line += f" (target >= {target}x wall: {'OK' if ok else 'BELOW TARGET'})"
                    verdicts.append(ok)
                    if base == "corpus":  # issue #26: CPU per page at most 1.25x the corpus spider's
                        per_page = [rd[base]["cpu_rate"] / rd[kind]["cpu_rate"] for rd in rounds]
                        line += (f"; CPU ms/page {_spread(per_page)} (target <= 1.25x: "
                                 f"{'OK' if statistics.median(per_page) <= 1.25 else 'ABOVE TARGET'})")
                print(line)
        if "keywords" in args.modes:
            for kind in ("unfocused", "document"):
                if kind in args.modes:
                    wall = [rd[kind]["rate"] / rd["keywords"]["rate"] for rd in rounds]
                    print(f"{kind} / keywords: wall {_spread(wall)} (target >= 1x: "
                          f"{'OK' if statistics.median(wall) >= 0.97 else 'SLOWER'}; within 3% counts as equal)")
        if args.language_ab:
            language_costs(rounds, args.modes)
        for kind in args.modes:
            if kind.endswith("@ab"):
                wall = [rd[kind[:-3]]["rate"] / rd[kind]["rate"] for rd in rounds]
                cpu = [rd[kind[:-3]]["cpu_rate"] / rd[kind]["cpu_rate"] for rd in rounds]
                print(f"{kind[:-3]} / {kind}: wall {_spread(wall)}, CPU {_spread(cpu)}")
        if "keywords" in args.modes and "learning" in args.modes:
            wall = [rd["learning"]["rate"] / rd["keywords"]["rate"] for rd in rounds]
            cpu = [rd["learning"]["cpu_rate"] / rd["keywords"]["cpu_rate"] for rd in rounds]
            print(f"learning / keywords: wall {_spread(wall)}, CPU {_spread(cpu)} (target >= 0.9x: "
                  f"{'OK' if min(statistics.median(wall), statistics.median(cpu)) >= 0.9 else 'BELOW TARGET'})")
    if args.long and first:
        long_run(port, args.long, [k for k in args.modes if k in ("corpus", "keywords", "learning")]
                 or ["corpus", DEFAULT_MODE], args.profile, args.set)
    if args.redis and first:
        redis_scaling(port, args.pages, max(args.repeat, 1), args.profile, args.set)
    if args.memory_pages and first:
        with tempfile.TemporaryDirectory() as jobdir:
            t = time.monotonic()
            every = args.trend_every or max(args.memory_pages // 10, 1)
            r = crawl_subprocess(args.memory_mode, port, args.memory_pages, jobdir, profile=args.profile, extra=args.set,
                                 trend_every=every)
            for sample in r["rss_trend"]:
                print(f"  {sample['pages']:>7} pages {sample['seconds']:>7.0f} s: crawl {sample['crawl_mb']:>5} MB"
                      f" + workers {sample['workers_mb']:>4} MB RSS, peak so far {sample['peak_mb']:>5} MB; "
                      f"PSS {sample['pss_mb']:>5} MB, peak so far {sample['peak_pss_mb']:>5} MB")
            print(f"memory: {args.memory_mode} crawl of {r['pages']} pages with JOBDIR in {time.monotonic() - t:.0f} s: "
                  f"peak PSS (crawl + workers) {r['peak_pss_mb']:.0f} MB (target <= 1024 MB): "
                  f"{'OK' if r['peak_pss_mb'] <= 1024 else 'ABOVE TARGET'}; peak RSS {r['peak_rss_mb']:.0f} MB")




if __name__ == "__main__":
    sys.exit(main())
