"""One constructor style for focuscrawl's Scrapy components (issue #17): ``from_crawler``
reads the settings and wires the signals; ``__init__`` takes plain values (and the
crawler objects it uses at run time, such as stats) and reads no setting; nothing is
patched onto an instance after it is built.

Where Scrapy dictates ``__init__``'s signature (schedulers, priority queues, the files
pipeline, download handlers) the class says so in its docstring and is listed here."""
from __future__ import annotations

import ast
from pathlib import Path

import focuscrawl

PACKAGE = Path(focuscrawl.__file__).parent

#: classes whose ``__init__`` signature Scrapy dictates (it passes the crawler or reads
#: settings itself); each says so in its docstring
SCRAPY_SIGNATURES = {
    "JournaledScheduler": "scrapy.core.scheduler.Scheduler(dupefilter, jobdir, ..., crawler=)",
    "RerankingPriorityQueue": "scrapy.pqueues.ScrapyPriorityQueue(crawler, downstream_queue_cls, key, ...)",
    "ImageDownloadPipeline": "scrapy.pipelines.files.FilesPipeline(store_uri, *, crawler=)",
    "ArchiveDownloadHandler": "scrapy.core.downloader.handlers.base.BaseDownloadHandler(crawler)",
    "RobotsTxtMiddleware": "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware(crawler)",
}


#: components whose ``__init__`` still takes the crawler because they use it at run time for
#: what does not exist yet when ``from_crawler`` runs, as Scrapy's own ``CloseSpider`` and
#: ``AutoThrottle`` do; each says so in its docstring ("at run time")
RUN_TIME_CRAWLER = {
    "PageBudget": "closes the spider through the engine",
    "TdmRepMiddleware": "downloads each host's tdmrep.json through the engine",
    "CrawlProgress": "reads the engine's scheduler every interval",
    "LeanReplayMiddleware": "hands an archive's pages to the engine's downloader and scraper",
    "RedisHostThrottle": "reads each host's Crawl-delay from the engine's downloader",
    "RedisWorkers": "asks the engine whether it is busy; gets RunState (lease book, run directory) "
                    "at spider_opened, as an extension cannot reach another one while they are built",
}


#: spiders get their spider arguments in ``__init__`` and the crawler after it, so Scrapy's
#: own spiders (``CrawlSpider``) configure themselves in ``from_crawler``
SPIDERS = {"FocusedSpider", "ArchiveSpider"}


def _components():
    """(path, class node) of every class with a ``from_crawler`` classmethod or whose
    ``__init__`` takes a crawler or settings (a component built by Scrapy's base class)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            init = _method(node, "__init__")
            takes = init is not None and {"crawler", "settings"} & {a.arg for a in init.args.args + init.args.kwonlyargs}
            if _method(node, "from_crawler") is not None or takes:
                yield path, node


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == name), None)


def _reads_settings(fn: ast.FunctionDef) -> bool:
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and node.attr == "settings":
            return True
        if isinstance(node, ast.Name) and node.id == "settings" and "settings" in params:
            return True
    return False


def _patched_attributes(fn: ast.FunctionDef) -> list[str]:
    """``obj.attr = ...`` in ``from_crawler`` on a local that ``cls(...)`` or ``super()`` built."""
    built = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            builds = (isinstance(func, ast.Name) and func.id == "cls") or (
                isinstance(func, ast.Attribute) and func.attr == "from_crawler")
            if builds:
                built |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return [f"{t.value.id}.{t.attr}" for node in ast.walk(fn) if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in built]


def test_init_reads_no_setting_and_from_crawler_patches_nothing():
    found, wrong = [], []
    for path, cls in _components():
        found.append(cls.name)
        where = f"{path.relative_to(PACKAGE.parent)}: {cls.name}"
        init = _method(cls, "__init__")
        if init is not None and _reads_settings(init) and cls.name not in SCRAPY_SIGNATURES:
            wrong.append(f"{where}.__init__ reads settings")
        from_crawler = _method(cls, "from_crawler")
        patched = _patched_attributes(from_crawler) if from_crawler is not None else []
        if patched and cls.name not in SCRAPY_SIGNATURES.keys() | SPIDERS:
            wrong.append(f"{where}.from_crawler sets {patched} after construction")
    assert len(found) > 15 and wrong == []


def test_init_takes_no_crawler():
    """``from_crawler`` hands ``__init__`` plain values and the crawler objects it uses (stats,
    a writer), not the crawler, unless Scrapy dictates the signature or the class needs the
    crawler at run time (both listed above, and said in the class)."""
    wrong = []
    for path, cls in _components():
        init = _method(cls, "__init__")
        params = {a.arg for a in init.args.args + init.args.kwonlyargs} if init is not None else set()
        if "crawler" in params and cls.name not in SCRAPY_SIGNATURES.keys() | RUN_TIME_CRAWLER.keys():
            wrong.append(f"{path.relative_to(PACKAGE.parent)}: {cls.name}.__init__ takes the crawler")
    assert wrong == []


def test_run_time_crawlers_say_why():
    classes = {cls.name: cls for _, cls in _components()}
    for name, why in RUN_TIME_CRAWLER.items():
        assert "at run time" in (ast.get_docstring(classes[name]) or ""), f"{name}: say why it keeps the crawler ({why})"


def test_scrapy_dictated_signatures_say_so():
    classes = {cls.name: cls for _, cls in _components()}
    for name, signature in SCRAPY_SIGNATURES.items():
        doc = ast.get_docstring(classes[name]) or ""
        assert "Scrapy" in doc and "signature" in doc, f"{name}: say why __init__ takes {signature}"


def test_the_scan_finds_what_it_looks_for():
    code = ("class A:\n"
            "    def __init__(self, crawler):\n        self.x = crawler.settings.getint('X')\n"
            "    @classmethod\n    def from_crawler(cls, crawler):\n"
            "        o = cls(crawler)\n        o.crawler = crawler\n        return o\n")
    cls = ast.parse(code).body[0]
    assert _reads_settings(_method(cls, "__init__"))
    assert _patched_attributes(_method(cls, "from_crawler")) == ["o.crawler"]


def test_benchmarks_remove_their_temporary_folders():
    """Benchmarks left ``focuscrawl-*`` folders in the system temp folder: each uses
    ``tempfile.TemporaryDirectory`` (removed when done, and at exit after an error), never
    ``mkdtemp``, and writes nowhere in /tmp by default."""
    import re

    leaks = [f"{path.name}:{n}" for path in sorted((PACKAGE.parent / "benchmarks").glob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if "mkdtemp(" in line or re.search(r"default=[\"']/tmp/", line)]
    assert leaks == []
