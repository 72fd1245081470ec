"""``focuscrawl.shell.explain``: the crawl's decisions for one page, without a crawl."""
from __future__ import annotations

import io

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.project import get_project_settings

from tests.support.toymodel import NORMAL, write_model
from focuscrawl.shell import explain, explain_links
from tests.support.localweb import LocalWeb, Page, html
from tests.support import warmfork


@pytest.fixture
def settings(tmp_path):
    model, keywords = write_model(tmp_path)
    s = get_project_settings().copy()
    s.setdict({"FOCUSCRAWL_MODEL": str(model), "FOCUSCRAWL_KEYWORDS": str(keywords),
               "FOCUSCRAWL_REJECT_SURTS": ["(test,rejected,"],
               "ROBOTSTXT_OBEY": False}, priority="cmdline")  # no robots.txt lookups of *.test hosts
    return s


IMAGES = ('<p>tabby kitten <img src="/big.jpg" width="800" height="600" alt="tabby kitten"></p>'
          '<img src="/small.jpg" width="20" height="20" alt="cat">')


def page() -> HtmlResponse:
    body = html("seed", NORMAL, [("http://a.test/", "click here"), ("/kit", "tabby"),
                                 ("http://rejected.test/", "tabby"), ("/photo.jpg", "tabby")], extra=IMAGES)
    return HtmlResponse("http://seed.test/", body=body.encode(), encoding="utf-8")


def test_explain_links_keywords_mode(settings):
    doc_pp, kw, rows = explain_links(page(), settings, mode="keywords")
    assert doc_pp == pytest.approx(3162.28, rel=1e-4)
    by_url = {url: (d, scope) for url, _, d, scope in rows}
    assert set(by_url) == {"http://a.test/", "http://seed.test/kit", "http://rejected.test/"}
    assert by_url["http://a.test/"][0].score == pytest.approx(3162.28, rel=1e-4)
    assert by_url["http://a.test/"][0].bucket == "normal" and by_url["http://a.test/"][0].priority == 200 - 35
    # "normal" = bucket rank 1 of 0..3, 200 priorities per bucket; step ceil(10 * log10(3162)) = 35
    assert by_url["http://seed.test/kit"][0].score == 1.0 and by_url["http://seed.test/kit"][0].bucket == "high"
    assert by_url["http://rejected.test/"][1] == "rejected"


def test_explain_prints_every_link_and_razor(settings):
    settings.set("FOCUSCRAWL_LINK_RAZOR", 3000.0, priority="cmdline")
    out = io.StringIO()
    explain(page(), settings, mode="document", out=out)
    text = out.getvalue()
    assert "document perplexity 3162" in text
    lines = [line for line in text.splitlines() if "test/" in line and not line.startswith("page")
             and ".jpg" not in line]
    assert len(lines) == 3
    assert all(line.split()[0] in ("razored", "rejected") for line in lines)
    images = [line.split() for line in text.splitlines() if ".jpg" in line and "photo" not in line]
    assert [(row[0], next(t for t in row if t.endswith(".jpg"))) for row in images] == [("keep", "http://seed.test/big.jpg"),
                                                     ("too_small", "http://seed.test/small.jpg")]


def test_explain_refuses_non_html(settings):
    with pytest.raises(ValueError, match="not an HTML page"):
        explain_links(TextResponse("http://x.test/a.txt", body=b"hi", encoding="utf-8"), settings)


def test_explain_shows_the_learned_score_of_a_saved_learner(settings, tmp_path):
    from focuscrawl.focus.link_learner import LinkLearner, link_features

    learner = LinkLearner(retrain_every=2)
    for i in range(6):  # links to a.test led to off-topic pages, links to seed.test to on-topic ones
        learner.observe(link_features("x", f"http://a.test/{i}", "http://p.test/", 0.1, None, 3000.0), "a.test", False)
        learner.observe(link_features("x", f"http://seed.test/{i}", "http://p.test/", 0.1, None, 3000.0),
                        "seed.test", True)
    learner.save(tmp_path / "link_learner.pkl")
    _, _, rows = explain_links(page(), settings, mode="keywords", learner=str(tmp_path / "link_learner.pkl"))
    by_url = {url: d for url, _, d, _ in rows}
    assert by_url["http://seed.test/kit"].learned > 0.5 > by_url["http://a.test/"].learned
    assert by_url["http://a.test/"].priority == 200 - 35  # mode keywords: the thesis's priority stands
    assert "u:kit" in by_url["http://seed.test/kit"].features
    out = io.StringIO()
    explain(page(), settings, mode="learning", out=out, learner=str(tmp_path / "link_learner.pkl"))
    header = next(line for line in out.getvalue().splitlines() if "learned" in line)
    assert header.split()[:3] == ["decision", "score", "learned"]
    _, _, rows = explain_links(page(), settings, mode="learning")  # a fresh learner: prior and host term
    assert all(0 < d.learned < 1 and d.priority == LinkLearner.priority(d.learned) for _, _, d, _ in rows if d.followed)


def test_explain_shows_the_topic_bundle_probabilities():
    """With a topic bundle (here the bundled cats one) explain prints the page's P(on topic)
    under every scorer and each image's ranking probability."""
    from focuscrawl.resources import default_topic_path

    s = get_project_settings().copy()
    s.set("FOCUSCRAWL_TOPIC", str(default_topic_path()), priority="cmdline")
    s.set("ROBOTSTXT_OBEY", False, priority="cmdline")
    out = io.StringIO()
    explain(page(), s, mode="keywords", out=out)
    text = out.getvalue()
    assert "P(on topic) under topic bundle 'cats'" in text and "the ranking uses combined" in text
    assert any("P(topic)" in line for line in text.splitlines())
    big = next(line.split() for line in text.splitlines() if "big.jpg" in line)
    src = next(i for i, t in enumerate(big) if t.endswith("big.jpg"))
    assert big[0] == "keep" and float(big[src - 1]) > 0.5  # "tabby kitten": the column before src


def test_explain_reads_a_page_as_the_crawl_does_up_to_its_markup_budget(settings):
    """A page past the markup budget (FOCUSCRAWL_TEXT_MAX_BYTES / 256 start tags) is read as
    the crawl reads it: its links and images past the budget are not there."""
    from focuscrawl.analysis import AnalysisConfig, analyse_page
    from focuscrawl.crawl_scorer import scorer_from_settings
    from focuscrawl.shell import explain_images

    settings.set("FOCUSCRAWL_TEXT_MAX_BYTES", 256 * 40, priority="cmdline")  # a budget of 40 start tags
    links = "".join(f'<p><a href="/p{i}">tabby {i}</a> <img src="/i{i}.jpg" width="800" height="600" alt="cat {i}"></p>'
                    for i in range(60))
    response = HtmlResponse("http://seed.test/", body=f"<html><body>{links}</body></html>".encode(), encoding="utf-8")
    _, _, rows = explain_links(response, settings, mode="keywords")
    crawl = analyse_page(response.text, response.url, response.url, 0, AnalysisConfig.from_settings(settings),
                         scorer_from_settings(settings))
    assert "truncated" in crawl.notes
    assert [url for url, _, _, _ in rows] == list(crawl.links) and 10 < len(rows) < 60
    images = [d.src for d, _, _ in explain_images(response, settings)]
    assert images == [d.src for d in crawl.images] and 10 < len(images) < 60


def test_explain_shows_the_document_mode_order_the_crawl_uses(settings):
    """Mode ``document`` with a topic bundle: every link gets the odds against the topic
    of the page's calibrated probability, as in the crawl (SPEC's 3162 without one)."""
    from focuscrawl.resources import default_topic_path

    _, _, spec = explain_links(page(), settings, mode="document")
    assert {round(d.score) for _, _, d, _ in spec} == {3162}
    settings.set("FOCUSCRAWL_TOPIC", str(default_topic_path()), priority="cmdline")
    _, _, calibrated = explain_links(page(), settings, mode="document")
    scores = {d.score for _, _, d, _ in calibrated}
    assert len(scores) == 1 and 0 < scores.pop() < 1e3  # odds (1 - p) / p of one page


def test_explain_says_robots_txt_for_the_links_the_crawl_drops_for_it(settings):
    """explain said ``follow`` for links that robots.txt forbids; the crawl's RobotsTxtMiddleware
    drops them. The host's real robots.txt (a local server) decides, as in the crawl."""
    robots = Page(b"User-agent: *\nDisallow: /private/\n", "text/plain")
    with LocalWeb({"/robots.txt": robots}) as web:
        images = (f'<p>tabby kitten <img src="{web.base}/private/cat.jpg" width="800" height="600" alt="tabby"></p>'
                  f'<p>tabby kitten <img src="{web.base}/cat.jpg" width="800" height="600" alt="tabby"></p>')
        body = html("seed", NORMAL, [(f"{web.base}/private/kit", "tabby"), (f"{web.base}/kit", "tabby")],
                    extra=images)
        response = HtmlResponse(f"{web.base}/", body=body.encode(), encoding="utf-8")
        settings.set("ROBOTSTXT_OBEY", True, priority="cmdline")
        out = io.StringIO()
        explain(response, settings, mode="keywords", out=out)
        assert web.requests.count("127.0.0.1/robots.txt") == 1  # once per host
    decisions = {line.split()[-2]: line.split()[0] for line in out.getvalue().splitlines() if "/kit" in line}
    assert decisions == {f"{web.base}/private/kit": "robots.txt", f"{web.base}/kit": "follow"}
    # the image download obeys robots.txt too (images/failed/filtered in the crawl)
    images = {line.split()[-2]: line.split()[0] for line in out.getvalue().splitlines() if "cat.jpg" in line}
    assert images == {f"{web.base}/private/cat.jpg": "robots.txt", f"{web.base}/cat.jpg": "keep"}
    settings.set("ROBOTSTXT_OBEY", False, priority="cmdline")  # the crawl with -s ROBOTSTXT_OBEY=False
    _, _, rows = explain_links(response, settings, mode="keywords")
    assert {url: scope for url, _, _, scope in rows} == {f"{web.base}/private/kit": "", f"{web.base}/kit": ""}


def test_explain_says_too_deep_past_depth_limit(settings):
    """With ``-s DEPTH_LIMIT=N`` Scrapy's DepthMiddleware drops links deeper than N."""
    settings.set("DEPTH_LIMIT", 1, priority="cmdline")
    request = Request("http://seed.test/", meta={"depth": 1})
    response = HtmlResponse("http://seed.test/", body=page().body, encoding="utf-8", request=request)
    _, _, rows = explain_links(response, settings, mode="keywords")
    assert {url: scope for url, _, _, scope in rows}["http://seed.test/kit"] == "too deep"
    _, _, rows = explain_links(page(), settings, mode="keywords")  # a seed (depth 0): its links are depth 1
    assert {url: scope for url, _, _, scope in rows}["http://seed.test/kit"] == ""


def test_explain_says_offsite_for_a_kept_image_outside_the_allowed_domains(settings):
    settings.set("FOCUSCRAWL_ALLOWED_DOMAINS", ["seed.test"], priority="cmdline")
    body = html("seed", NORMAL, [], extra='<p>tabby <img src="http://cdn.test/cat.jpg" width="800" height="600" '
                                          'alt="tabby kitten"></p>' + IMAGES)
    out = io.StringIO()
    explain(HtmlResponse("http://seed.test/", body=body.encode(), encoding="utf-8"), settings, mode="keywords",
            out=out)
    verdicts = {next(t for t in line.split() if t.endswith(".jpg")): line.split()[0]
                for line in out.getvalue().splitlines() if ".jpg" in line}
    assert verdicts == {"http://cdn.test/cat.jpg": "offsite", "http://seed.test/big.jpg": "keep",
                        "http://seed.test/small.jpg": "too_small"}


def test_explain_in_scrapy_shell_uses_the_shells_settings_inside_and_outside_the_checkout(tmp_path):
    """``scrapy shell -s FOCUSCRAWL_TOPIC=DIR``: ``explain(response)`` scores with that bundle (it
    used the bundled cats one), and ``explain(response, settings=crawler.settings)`` works outside
    the checkout, where the shell's settings are Scrapy's defaults (it failed: "unknown crawl
    mode None")."""
    import json
    import os
    import sys
    from pathlib import Path

    from tests.support.toymodel import build_topic_bundle, write_topic_corpora

    root = Path(__file__).resolve().parents[1]
    bundle = build_topic_bundle(write_topic_corpora(tmp_path / "corpora"), tmp_path / "bundle")
    name = json.loads((bundle / "bundle.json").read_text()).get("name")
    assert name and name != "cats"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    code = ("__import__('focuscrawl.shell').shell.explain(response) or "
            "__import__('focuscrawl.shell').shell.explain(response, settings=crawler.settings)")
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    with LocalWeb({"/": Page(html("seed", "a tabby cat sleeps on the sofa in the sun.", [("/kit", "tabby")]))}) as web:
        for cwd in (outside, root):
            proc = warmfork.run([sys.executable, "-m", "scrapy", "shell", "-s", f"FOCUSCRAWL_TOPIC={bundle}",
                                 "-s", "ROBOTSTXT_OBEY=False", "--nolog", f"{web.base}/", "-c", code],
                                cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert "Traceback" not in proc.stderr
            assert proc.stdout.count(f"P(on topic) under topic bundle {name!r}") == 2, (cwd, proc.stdout[-2000:])


def test_explain_shows_the_opt_outs_and_the_rights_of_a_page(settings):
    body = html("seed", NORMAL, [("http://a.test/", "tabby")],
                extra=IMAGES + '<meta name="robots" content="nofollow, noimageai">'
                      '<link rel="license" href="https://creativecommons.org/licenses/by/4.0/">')
    response = HtmlResponse("http://seed.test/", body=body.encode(), encoding="utf-8",
                            headers={"X-Robots-Tag": "focuscrawl: noindex"})
    out = io.StringIO()
    explain(response, settings, mode="keywords", out=out)
    text = out.getvalue()
    assert ("opt-outs: links not followed (meta_robots:nofollow); text withheld (x_robots_tag:noindex); "
            "images withheld (meta_robots:noimageai, x_robots_tag:noindex)") in text
    assert "license 'CC-BY-4.0'" in text
    assert next(line for line in text.splitlines() if "http://a.test/" in line).split()[0] == "nofollow"
    assert next(line for line in text.splitlines() if "big.jpg" in line).split()[:2] == ["opted", "out"]
    plain = io.StringIO()
    explain(page(), settings, mode="keywords", out=plain)
    assert "opt-outs: none" in plain.getvalue() and "page rights: none declared" in plain.getvalue()


@pytest.mark.parametrize("name, decision", [
    ("dmi", "opted out (image_metadata:dmi-prohibited-aimltraining)"),
    ("dmijpeg", "opted out (image_metadata:dmi-prohibited-genaimltraining)"),
    ("xmptdm", "opted out (tdmrep:xmp)"),
    ("imgxrt", "opted out (x_robots_tag:noimageai)"),
    ("imgtdm", "opted out (tdmrep:header)"),
    ("dmiallowed", "keep"),
    ("control", "keep"),
])
def test_explain_an_image_response_gives_the_image_downloads_decision(settings, name, decision):
    """The opt-out site's images (tests/support/optoutsite.py), as ``fetch(url)`` in
    ``scrapy shell`` gives them: the decision the crawl's image download takes, and why."""
    from scrapy.http import Response

    from tests.support.optoutsite import CASES, optout_site

    case = next(c for c in CASES if c.name == name)
    host, path = case.image_url.split("://", 1)[1].split("/", 1)
    served = optout_site()[(host, "/" + path)]
    response = Response(case.image_url, body=served.body, headers={"Content-Type": served.content_type,
                                                                   **served.headers})
    out = io.StringIO()
    explain(response, settings, out=out)
    assert f"  decision: {decision}\n" in out.getvalue()
    if case.source == "image_metadata":
        settings.set("FOCUSCRAWL_OPTOUTS", ["meta_robots", "x_robots_tag", "tdmrep", "robots_ai"], priority="cmdline")
        out = io.StringIO()
        explain(response, settings, out=out)
        assert "  decision: keep\n" in out.getvalue() and "DMI-PROHIBITED" in out.getvalue()
    if case.image_kind in ("xmp", "jpegxmp") and case.license:  # a licence of the file's own
        assert f"license {case.license!r}" in out.getvalue()


def test_explain_an_image_response_that_is_no_image(settings):
    from scrapy.http import Response

    out = io.StringIO()
    explain(Response("http://x.test/a.jpg", body=b"<html>oops</html>", headers={"Content-Type": "image/jpeg"}),
            settings, out=out)
    assert "  decision: not kept: not_an_image\n" in out.getvalue()
