"""The test web generator: determinism, size, topical locality, truth consistent with pages."""
from __future__ import annotations

import re
from collections import Counter
from urllib.parse import urlsplit

import pytest
from lxml import html as lxml_html

from focuscrawl.testweb.cli import write_truth
from focuscrawl.testweb.render import image_bytes, respond
from focuscrawl.testweb.web import NEIGHBOURS, TestWeb, WebConfig, image_spec, web_config
from tests.support.testweb_pool import BASEBALL_CAPTIONS, TENNIS_CAPTIONS, small_pool, sports_pool

SMALL = WebConfig(scale=0.15)


@pytest.fixture(scope="module")
def pool():
    return small_pool()


@pytest.fixture(scope="module")
def web(pool):
    return TestWeb(pool, "cat", 7, SMALL)


def path_of(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.hostname, parts.path + (f"?{parts.query}" if parts.query else "")


def fetch(web: TestWeb, url: str):
    return respond(web, *path_of(url))


def test_same_seed_same_web_other_seed_other_web(pool, web):
    again = TestWeb(pool, "cat", 7, SMALL)
    assert again.truth() == web.truth()
    for page in web.truth()[0][:40]:
        assert fetch(again, page["url"]).body == fetch(web, page["url"]).body
    other = TestWeb(pool, "cat", 8, SMALL)
    assert [p["url"] for p in other.truth()[0]] != [p["url"] for p in web.truth()[0]]


def test_default_web_has_hundreds_of_hosts_and_20000_pages(pool):
    full = TestWeb(pool, "cat", 1)
    assert len(full.hosts) >= 200
    assert full.page_count() >= 20_000
    assert set(full.by_kind) >= {"topic", "neighbour", "portal", "other", "trap-calendar", "trap-session"}


def _external_kinds(web: TestWeb, kind: str) -> Counter:
    """Kinds of the hosts that article pages of ``kind`` hosts link to (other hosts only)."""
    kinds: Counter = Counter()
    for host in web.by_kind[kind]:
        for i in range(web.hosts[host].n_articles):
            page = fetch(web, web.article(host, i).url)
            if page.status != 200:
                continue
            for href in lxml_html.fromstring(page.body).xpath("//a/@href"):
                target = urlsplit(href).hostname
                if target and target != host and target in web.hosts:
                    kinds[web.hosts[target].kind] += 1
    return kinds


def test_topical_locality(web):
    from_topic = _external_kinds(web, "topic")
    from_other = _external_kinds(web, "other")
    assert from_topic["topic"] / sum(from_topic.values()) > 0.5
    assert from_other["topic"] / sum(from_other.values()) < 0.1
    assert from_other["other"] / sum(from_other.values()) > 0.5


def test_portals_link_out_with_the_targets_titles(web):
    portal = web.by_kind["portal"][0]
    doc = lxml_html.fromstring(fetch(web, f"http://{portal}/section/pets/").body)
    titles = {web.article(h, i).url: web.article(h, i).title
              for h in web.hosts for i in range(web.hosts[h].n_articles)}
    outbound = [(a.get("href"), a.text_content()) for a in doc.xpath("//div[@class='teaser']//a")
                if urlsplit(a.get("href")).hostname != portal]
    assert outbound
    assert all(titles[href] == text for href, text in outbound)
    labels = Counter(web.article(*_host_index(web, href)).label for href, _ in outbound)
    assert labels["cat"] + labels["dog"] > labels["other"]  # the pets section is mostly pets


def _host_index(web: TestWeb, url: str) -> tuple[str, int]:
    host, path = path_of(url)
    return host, int(re.match(r"/post/(\d+)-", path).group(1))


def test_truth_is_consistent_with_the_pages(web):
    pages, images = web.truth()
    by_page: dict[str, list[dict]] = {}
    for img in images:
        by_page.setdefault(img["page_url"], []).append(img)
    pattern = re.compile(r"\b(cat|cats|kitten)\b", re.I)
    checked = 0
    for page in pages:
        response = fetch(web, page["url"])
        assert response.status == page["status"], page["url"]
        if response.status != 200 or page["kind"] != "article":
            continue
        doc = lxml_html.fromstring(response.body)
        imgs = {el.get("src"): el for el in doc.xpath("//img")}
        text = doc.xpath("string(//article)")
        if page["on_topic"]:
            assert pattern.search(text), page["url"]
        for img in by_page.get(page["url"], []):
            el = imgs[img["url"]]
            photo = next(p for p in web.pool.photos if p.key == img["photo"])
            assert img["shows_topic"] == any(pattern.search(c) for c in photo.captions)
            assert (el.get("alt") is None) == (img["alt"] is None)
            if img["alt_describes"]:
                assert el.get("alt") in photo.captions
            if img["html_width"]:
                assert int(el.get("width")) == img["html_width"]
            assert image_spec(*path_of(img["url"]))[:2] == (img["width"], img["height"])
            checked += 1
    assert checked > 50
    shows = [i for i in images if i["shows_topic"]]
    assert shows and any(i["alt"] and i["alt"].startswith("wp-content-uploads-") for i in images)
    assert any(i["alt"] is None for i in images) and any(i["html_width"] is None for i in images)


def test_truth_is_written_beside_the_web_and_never_served(web, tmp_path):
    info = write_truth(web, tmp_path)
    assert info["pages"] == len(web.truth()[0])
    assert (tmp_path / "truth_pages.tsv.gz").stat().st_size > 0
    host = web.by_kind["topic"][0]
    for path in ("/truth_pages.tsv.gz", "/web.json", "/truth_images.tsv.gz"):
        assert respond(web, host, path).status == 404


def test_other_topics_use_captions_mentioning_them(pool):
    dogs = TestWeb(pool, "dog", 3, SMALL)
    _, images = dogs.truth()
    on = [i for i in images if i["shows_topic"]]
    assert on and all(re.search(r"\bdogs?\b", p.captions[0], re.I)
                      for p in pool.photos for i in on if p.key == i["photo"])
    assert any(i["alt_describes"] and re.search(r"\bdogs?\b", i["alt"], re.I) for i in on)
    assert dogs.hosts[dogs.by_kind["topic"][0]].name.startswith("dogs-")


def test_traps_are_infinite_but_cheap(web):
    cal = web.by_kind["trap-calendar"][0]
    url, seen = f"http://{cal}/calendar/2015/3/", set()
    for _ in range(30):
        seen.add(url)
        doc = lxml_html.fromstring(fetch(web, url).body)
        url = f"http://{cal}" + doc.xpath("//a[text()='next']/@href")[0]
    assert len(seen) == 30
    shop = web.by_kind["trap-session"][0]
    first = lxml_html.fromstring(fetch(web, f"http://{shop}/item/1?sid=start").body).xpath("//a[contains(@href,'sid=')]/@href")
    second = lxml_html.fromstring(fetch(web, f"http://{shop}{first[0]}").body).xpath("//a[contains(@href,'sid=')]/@href")
    assert set(first).isdisjoint(second)


def test_http_behaviours(web):
    hosts = list(web.hosts.values())
    robots = {h.robots: respond(web, h.name, "/robots.txt") for h in hosts}
    assert robots["standard"].status == 200 and b"Disallow: /private/" in robots["standard"].body
    topic = web.hosts[web.by_kind["topic"][0]]
    go = respond(web, topic.name, "/go/2")
    assert go.status == 301 and go.headers["Location"] == web.article(topic.name, 2).url
    assert respond(web, topic.name, f"/post/{topic.n_articles + 7}-removed.html").status == 404
    assert respond(web, "nowhere.test", "/").status == 404
    w, h, fmt = image_spec(topic.name, "/wp-content/uploads/2015/02/img_1234.jpg")
    from io import BytesIO

    from PIL import Image
    img = Image.open(BytesIO(image_bytes(w, h, fmt)))
    assert img.size == (w, h) and img.format == "JPEG"
    assert len(image_bytes(w, h, fmt)) < 40_000  # small in bytes at the true size


def test_heldout_web_never_shows_the_reserved_photos(pool):
    from focuscrawl.testweb.web import heldout_photos

    reserved = {p.key for p in heldout_photos(pool, "cat")}
    assert reserved and len(reserved) < len(pool.topic_photos("cat"))
    web = TestWeb(pool, "cat", 7, WebConfig(scale=0.15, heldout=True))
    shown = {i["photo"] for i in web.truth()[1]}
    assert shown and not shown & reserved
    assert {p.key for p in web.topic_photos} == {p.key for p in pool.topic_photos("cat")} - reserved


def test_cli_generate_and_heldout_corpus(tmp_path, capsys):
    import json

    from focuscrawl.cli import main
    from focuscrawl.testweb.textpool import TextPool
    from focuscrawl.testweb.web import heldout_photos

    assert main(["testweb", "generate", "--data", "bundled", "--scale", "0.05", "--seed", "3",
                 "-o", str(tmp_path / "web")]) == 0
    info = json.loads((tmp_path / "web" / "web.json").read_text())
    assert info["seed"] == 3 and info["pages"] > 100 and info["on_topic_pages"] > 0
    capsys.readouterr()
    assert main(["testweb", "heldout-corpus", "--data", "bundled", "-o", str(tmp_path / "corpus")]) == 0
    captions = (tmp_path / "corpus" / "positive" / "captions.txt").read_text().splitlines()
    out = capsys.readouterr().out.splitlines()  # a summary for people, not a JSON line
    assert out[0] == f"held-out corpus of 'cat' in {tmp_path / 'corpus'}:"
    assert out[1].startswith(f"  positive: {len(captions)} held-out captions (")
    assert main(["testweb", "heldout-corpus", "--data", "bundled", "-o", str(tmp_path / "corpus"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["captions"] == len(captions)
    reserved = {c for p in heldout_photos(TextPool.from_bundle(), "cat") for c in p.captions}
    assert captions and set(captions) <= reserved
    assert (tmp_path / "corpus" / "lm_sentences.txt").stat().st_size > 0
    assert len(list((tmp_path / "corpus" / "neutral").iterdir())) >= 10


@pytest.mark.parametrize("command", [["testweb", "generate"], ["testweb", "heldout-corpus"], ["eval", "run"]])
def test_data_is_required_not_defaulted_to_the_development_layout(tmp_path, capsys, command):
    """--data defaulted to ../shared/data, which exists only beside this repository."""
    from focuscrawl.cli import main

    assert main([*command, "-o", str(tmp_path / "out")]) == 2
    assert "--data is required: shared data folder (captions/, wiki/, cleaneval/), or 'bundled'" in \
        capsys.readouterr().err


def test_tennis_has_the_look_alike_neighbour_baseball():
    """A third topic whose decoy shares most of its words: tennis against baseball (players,
    balls, swings), hard profile; the truth and the neighbour's pages follow the pair."""
    web = TestWeb(sports_pool(), "tennis", 2, web_config("hard", scale=0.3))
    assert web.neighbour == "baseball" and NEIGHBOURS["baseball"] == "tennis"
    pages, images = web.truth()
    labels = Counter(p["label"] for p in pages if p["kind"] == "article")
    assert labels["tennis"] and labels["baseball"] > labels["tennis"]  # the decoy is the bigger region
    on = {i["photo"] for i in images if i["shows_topic"]}
    assert on and all(k.startswith("tennis:") for k in on)
    neighbour = web.by_kind["neighbour"][0]
    body = respond(web, neighbour, "/").body.decode()
    assert re.search(r"\bbaseball\b", body, re.I) and not re.search(r"\btennis\b", body, re.I)
    baseball_words = {w for c in BASEBALL_CAPTIONS for w in re.findall(r"[a-z]+", c.lower())}
    tennis_words = [w for c in TENNIS_CAPTIONS for w in re.findall(r"[a-z]+", c.lower())]
    assert sum(w in baseball_words for w in tennis_words) / len(tennis_words) > 0.5
