"""NearDuplicatePageMiddleware with real Scrapy crawlers, responses, items and JOBDIR files."""
import functools
import random
from pathlib import Path

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse

from focuscrawl.analysis import META_KEY, AnalysisConfig, analyse_page
from focuscrawl.items import ImageItem, PageItem
from focuscrawl.middlewares.neardup import STATE_FILE, NearDuplicatePageMiddleware
from focuscrawl.output.files import JOB_STATE_DIR
from tests.support.crawler import focuscrawl_crawler

ARTICLE = """The domestic cat is a small carnivorous mammal.
It is the only domesticated species in the family Felidae and is often called the house cat.
A cat can either be a house cat, a farm cat or a feral cat which ranges freely and avoids people.
Domestic cats are valued by humans for companionship and for their ability to kill rodents.
About sixty cat breeds are recognised by various cat registries around the world today.
Cats have a strong flexible body, quick reflexes, sharp teeth and retractable claws.
Their night vision and sense of smell are well developed and they hunt small prey at dusk.
Cats communicate by meowing, purring, trilling, hissing, growling and grunting as well as by body language.
They are social animals that tend to groom each other and rest close together in groups.
A kitten is born blind and deaf and opens its eyes after about one week of life.
Mother cats move their kittens to a new hiding place several times in the first weeks.
The kittens start to eat solid food at about four weeks and are weaned at about eight weeks.
Indoor cats usually live longer than cats that roam outside among cars and predators.
Many cats enjoy sleeping in warm sunny places such as window sills, sofas and cardboard boxes.
Veterinarians recommend regular vaccinations, parasite control and a balanced diet for every cat.
Cats were first domesticated in the Near East around the time that farming began there.
Ancient Egyptians revered cats and sometimes mummified them after death with great care.
Ships carried cats around the world because they kept the stores free of rats and mice.
Today the domestic cat is one of the most popular pets in many countries of the world."""
OTHER = """Kenlm estimates language models with modified Kneser Ney smoothing from large corpora.
The binary format loads quickly and answers many queries per second on one core.
Perplexity measures how well a model predicts a held out sample of text sentences.
Focused crawlers use such scores to decide which links to follow first on the web.
A crawler frontier keeps the pending requests ordered by the estimated relevance."""


@functools.lru_cache(maxsize=1)
def scorer():
    return AnalysisConfig().scorer.load()


def page(url: str, text: str, ngrams: tuple[int, ...]) -> tuple[HtmlResponse, PageItem]:
    """The response with the page analysis the spider leaves in its meta (its SimHash with
    ``ngrams``), and the page's item."""
    html = "<html><body>" + "".join(f"<p>{line}</p>" for line in text.splitlines()) + "</body></html>"
    response = HtmlResponse(url=url, body=html.encode(), encoding="utf-8", request=Request(url))
    config = AnalysisConfig(extractor="fulltext", images=False, ngrams=ngrams)
    analysis = response.meta[META_KEY] = analyse_page(response.text, url, url, 0, config, scorer())
    return response, PageItem(url=url, depth=0, status=200, sentences=analysis.sentences)


def run(mw: NearDuplicatePageMiddleware, url: str, text: str) -> list:
    response, item = page(url, text, mw.ngrams)
    image = ImageItem(image_url=url + "/a.jpg", page_url=url)
    out = list(mw.process_spider_output(response, [item, image, Request(url + "/next")]))
    assert out[1] is image and isinstance(out[2], Request)  # everything else passes untouched
    return out


def middleware(tmp_path: Path | None = None, **settings) -> tuple[NearDuplicatePageMiddleware, object]:
    if tmp_path is not None:
        settings["JOBDIR"] = str(tmp_path)
    crawler = focuscrawl_crawler(Spider, **settings)
    return NearDuplicatePageMiddleware.from_crawler(crawler), crawler


def state_path(jobdir: Path) -> Path:
    return jobdir / JOB_STATE_DIR / STATE_FILE


def test_marks_near_duplicates_of_earlier_pages():
    mw, crawler = middleware()
    assert run(mw, "http://a.test/1", ARTICLE)[0]["near_duplicate_of"] is None
    assert run(mw, "http://b.test/2", OTHER)[0]["near_duplicate_of"] is None
    edited = ARTICLE.replace("sixty", "seventy") + "\nShare this page with your friends."
    assert run(mw, "http://c.test/copy", edited)[0]["near_duplicate_of"] == "http://a.test/1"
    empty = run(mw, "http://d.test/empty", "Hi.")[0]
    assert empty["near_duplicate_of"] is None
    stats = crawler.stats.get_stats()
    assert stats["focuscrawl/neardup/pages_checked"] == 3
    assert stats["focuscrawl/neardup/near_duplicates"] == 1
    assert stats["focuscrawl/neardup/pages_without_text"] == 1


def test_numba_loads_with_the_first_sorted_tables_not_with_the_middleware():
    """numba and its compiled query cost ~0.6 s of CPU to load: a crawl whose index is still a
    brute-force tail (fewer than ~2,000 pages) never loads them; the merge that builds the
    first sorted tables does, so no query waits for it (a fresh process: no test before)."""
    import sys

    code = ("import sys\n"
            "from scrapy import Spider\n"
            "from focuscrawl.dedup.index import SimHashIndex\n"
            "from focuscrawl.middlewares.neardup import NearDuplicatePageMiddleware\n"
            "from tests.support.crawler import focuscrawl_crawler\n"
            "NearDuplicatePageMiddleware.from_crawler(focuscrawl_crawler(Spider))\n"
            "index = SimHashIndex(merge_threshold=4)\n"
            "index.add_many(range(3))\n"
            "print('numba' in sys.modules, index.query(1, 0))\n"
            "index.add(3)\n"  # the fourth: the merge
            "from focuscrawl.dedup.index import compiled_query_tables\n"
            "print('numba' in sys.modules, len(compiled_query_tables().signatures), index.query(1, 0))\n")
    out = warmfork.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parents[1], check=True).stdout.splitlines()
    assert out == ["False [(1, 0)]", "True 1 [(1, 0)]"]


def test_state_survives_jobdir_and_same_url_is_not_its_own_duplicate(tmp_path):
    mw, _ = middleware(tmp_path)
    run(mw, "http://a.test/1", ARTICLE)
    run(mw, "http://b.test/2", OTHER)
    mw.close()
    size = state_path(tmp_path).stat().st_size

    mw2, crawler2 = middleware(tmp_path)
    assert crawler2.stats.get_value("focuscrawl/neardup/fingerprints_loaded") == 2
    assert run(mw2, "http://e.test/mirror", ARTICLE)[0]["near_duplicate_of"] == "http://a.test/1"
    # the same URL fetched again after a resume is not a duplicate of itself, nor stored twice
    assert run(mw2, "http://b.test/2", OTHER)[0]["near_duplicate_of"] is None
    mw2.close()
    assert len(mw2.urls) == 3
    assert state_path(tmp_path).stat().st_size == size + len("0123456789abcdef\thttp://e.test/mirror\n")


def test_torn_record_is_cut_and_crawl_goes_on(tmp_path):
    mw, _ = middleware(tmp_path)
    run(mw, "http://a.test/1", ARTICLE)
    run(mw, "http://b.test/2", OTHER)
    mw.close()
    path = state_path(tmp_path)
    whole = path.read_bytes()
    path.write_bytes(whole[:-5])  # killed in the middle of the last record
    mw2, crawler2 = middleware(tmp_path)
    assert mw2.urls == ["http://a.test/1"]
    assert crawler2.stats.get_value("focuscrawl/neardup/torn_records") == 1
    assert run(mw2, "http://b.test/2", OTHER)[0]["near_duplicate_of"] is None
    mw2.close()
    mw3, _ = middleware(tmp_path)
    assert mw3.urls == ["http://a.test/1", "http://b.test/2"]
    mw3.close()


def test_settings_ngrams_k_blocks_and_errors(tmp_path):
    mw, _ = middleware(FOCUSCRAWL_NEARDUP_NGRAMS="3+5", FOCUSCRAWL_NEARDUP_MAX_DISTANCE=5,
                       FOCUSCRAWL_NEARDUP_BLOCKS=6)
    assert mw.ngrams == (3, 5) and mw.index.max_distance == 5 and mw.index.tables == 6
    with pytest.raises(NotConfigured):
        middleware(FOCUSCRAWL_NEARDUP_ENABLED=False)
    with pytest.raises(ValueError, match="FOCUSCRAWL_NEARDUP"):
        middleware(FOCUSCRAWL_NEARDUP_MAX_DISTANCE=4, FOCUSCRAWL_NEARDUP_BLOCKS=4)
    with pytest.raises(ValueError, match="FOCUSCRAWL_NEARDUP"):
        middleware(FOCUSCRAWL_NEARDUP_NGRAMS="tri")
    # a JOBDIR written with other n-grams is refused instead of silently compared
    mw, _ = middleware(tmp_path)
    run(mw, "http://a.test/1", ARTICLE)
    mw.close()
    with pytest.raises(ValueError, match="other near-duplicate settings"):
        middleware(tmp_path, FOCUSCRAWL_NEARDUP_NGRAMS="5")


def test_torn_header_starts_a_fresh_file(tmp_path):
    state_path(tmp_path).parent.mkdir()
    state_path(tmp_path).write_bytes(b"focuscrawl-neard")  # killed while writing the header
    mw, crawler = middleware(tmp_path)
    assert mw.urls == [] and crawler.stats.get_value("focuscrawl/neardup/torn_records") == 1
    run(mw, "http://a.test/1", ARTICLE)
    mw.close()
    mw2, _ = middleware(tmp_path)
    assert mw2.urls == ["http://a.test/1"]
    mw2.close()


# --- real crawls of a local web with the focused spider ------------------------------

from tests.support.crawl import crawl, items  # noqa: E402
from tests.support.localweb import LocalWeb, Page  # noqa: E402
from tests.support import warmfork


def paragraphs(text: str, links: str = "") -> Page:
    return Page("<html><body>" + "".join(f"<p>{line}</p>" for line in text.splitlines()) + links + "</body></html>")


SITE = {
    ("seed.test", "/"): paragraphs("Welcome to the test site about cats and models.",
                                   '<a href="http://cats.test/">cats</a> <a href="http://lm.test/">lm</a>'),
    ("cats.test", "/"): paragraphs(ARTICLE, '<a href="/print">print</a>'),
    ("cats.test", "/print"): paragraphs(ARTICLE + "\nPrinted from the archive of the test site."),
    ("lm.test", "/"): paragraphs(OTHER),
}


def test_real_crawl_stopped_and_resumed_keeps_comparing(tmp_path):
    """Run 1 stops after 2 HTML pages (the page budget); run 2 resumes the JOBDIR and finds the copy of a run-1 page."""
    jobdir = tmp_path / "job"
    settings = {"JOBDIR": str(jobdir)}
    with LocalWeb(SITE) as web:
        stats1, proc1 = crawl(web, tmp_path, "http://seed.test/", mode="unfocused", settings=settings, budget="2")
        assert proc1.returncode == 0, proc1.stderr[-3000:]
        first = [p["url"] for p in items(tmp_path) if "sentences" in p]
        assert "http://cats.test/" in first and "http://cats.test/print" not in first
        stats2, proc2 = crawl(web, tmp_path, "http://seed.test/", mode="unfocused", settings=settings)
        assert proc2.returncode == 0, proc2.stderr[-3000:]
    pages = [p for p in items(tmp_path) if "sentences" in p]
    by_url = {p["url"]: p for p in pages}
    assert len(pages) == len(by_url) == 4  # nothing lost, nothing twice
    assert by_url["http://cats.test/print"]["near_duplicate_of"] == "http://cats.test/"
    assert by_url["http://cats.test/"]["near_duplicate_of"] is None
    assert by_url["http://lm.test/"]["near_duplicate_of"] is None
    assert stats2["focuscrawl/neardup/fingerprints_loaded"] == len(first)
    assert stats2["focuscrawl/neardup/near_duplicates"] == 1
    # Scrapy's own files, and focuscrawl's resume state in one folder
    assert {p.name for p in jobdir.iterdir()} <= {"requests.queue", "requests.seen", "spider.state", JOB_STATE_DIR}


def test_real_crawl_image_middleware_skips_images_of_near_duplicate_pages(tmp_path):
    img = '<img src="/cat.jpg" width="640" height="480" alt="a tabby cat">'
    site = {
        ("seed.test", "/"): paragraphs("Welcome to the test site about cats and models.",
                                       '<a href="http://cats.test/">cats</a> <a href="http://copy.test/">copy</a>'),
        ("cats.test", "/"): paragraphs(ARTICLE, img),
        ("copy.test", "/"): paragraphs(ARTICLE, img),
    }
    for mode, stat in (("skip", "focuscrawl/images/pages_skipped_near_duplicate"), ("mark", "focuscrawl/images/kept_near_duplicate_page")):
        run_dir = tmp_path / mode
        run_dir.mkdir()
        with LocalWeb(site) as web:
            stats, proc = crawl(web, run_dir, "http://seed.test/", mode="unfocused",
                                settings={"FOCUSCRAWL_NEARDUP_IMAGES": mode})
        assert proc.returncode == 0, proc.stderr[-3000:]
        pages = {p["url"]: p for p in items(run_dir) if "sentences" in p}
        assert pages["http://copy.test/"]["near_duplicate_of"] == "http://cats.test/"
        assert stats[stat] == 1
        assert stats["focuscrawl/images/kept"] == (1 if mode == "skip" else 2)



def test_a_page_is_checked_once_and_the_answer_kept_in_its_analysis():
    """The page is checked at its first output (a link) and its item gets the same answer;
    the answer travels in the page analysis, not in a scratch ``response.meta`` key."""
    mw, crawler = middleware()
    run(mw, "http://a.test/1", ARTICLE)
    response, item = page("http://c.test/copy", ARTICLE.replace("sixty", "seventy"), mw.ngrams)
    out = list(mw.process_spider_output(response, [Request("http://c.test/next"), item]))
    assert out[1]["near_duplicate_of"] == "http://a.test/1"
    analysis = response.meta[META_KEY]
    assert (analysis.near_duplicate_checked, analysis.near_duplicate_of) == (True, "http://a.test/1")
    assert set(response.meta) == {META_KEY}
    assert crawler.stats.get_value("focuscrawl/neardup/pages_checked") == 2


def test_near_identical_pages_cost_no_list_of_every_earlier_match(monkeypatch):
    """Thousands of near-identical pages (an archive of tiny records, a site of templates): each
    page matched every earlier one, and ``check_page`` built and sorted that list (issue #44:
    a replay of 100K tiny records slowed down as it went, 14,028 records in 300 s). It asks the
    index for the nearest match alone now; the answer is the same (the nearest, then oldest page)."""
    mw, crawler = middleware()
    rnd = random.Random(5)
    base = rnd.getrandbits(64)
    monkeypatch.setattr(mw.index, "query", lambda *a, **k: pytest.fail("the list of every match was built"))
    answers = [mw.check_page(f"http://t.test/{i}", base ^ (1 << rnd.randrange(64))) for i in range(3000)]
    assert answers[0] is None and None not in answers[1:]
    assert mw.check_page("http://t.test/7", base) == "http://t.test/0"  # fetched again: not its own duplicate
    assert len(mw.index) == 3000


def test_a_page_checked_again_meets_only_the_pages_checked_before_it(tmp_path):
    """A page whose row a kill lost is fetched and checked again by the resumed crawl: a copy
    found after its first check is no original of it (the crawl never killed said so too)."""
    mw, _ = middleware(tmp_path)
    run(mw, "http://a.test/1", ARTICLE)
    assert run(mw, "http://b.test/copy", ARTICLE)[0]["near_duplicate_of"] == "http://a.test/1"
    mw.close()
    resumed, _ = middleware(tmp_path)
    assert run(resumed, "http://a.test/1", ARTICLE)[0]["near_duplicate_of"] is None
    assert run(resumed, "http://b.test/copy", ARTICLE)[0]["near_duplicate_of"] == "http://a.test/1"
    assert run(resumed, "http://c.test/copy", ARTICLE)[0]["near_duplicate_of"] == "http://a.test/1"
    resumed.close()
