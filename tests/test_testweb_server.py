"""The test-web server: one 127.0.0.1 server for every host, reached as an HTTP proxy."""
from __future__ import annotations

import http.client
import socket
import urllib.error
import urllib.request
from io import BytesIO

import pytest
from PIL import Image

from focuscrawl.eval.crawls import run_crawl
from focuscrawl.testweb.server import TestWebServer
from focuscrawl.testweb.web import TestWeb, WebConfig
from tests.support.testweb_pool import small_pool


@pytest.fixture(scope="module")
def web():
    return TestWeb(small_pool(), "cat", 5, WebConfig(scale=0.15))


@pytest.fixture
def server(web):
    with TestWebServer(web, slow_factor=0) as s:
        yield s


def opener(server):
    return urllib.request.build_opener(urllib.request.ProxyHandler({"http": server.proxy}))


def test_answers_for_every_host_through_the_proxy(web, server):
    op = opener(server)
    for host in list(web.hosts)[:8]:
        spec = web.hosts[host]
        if not spec.n_articles:
            continue
        with op.open(f"http://{host}/") as r:
            assert spec.site_name.encode() in r.read()
    with pytest.raises(urllib.error.HTTPError) as err:
        op.open("http://not-in-the-web.test/")
    assert err.value.code == 404  # no retry, no ERROR line in a crawl (a 502 is retried)
    assert server.hosts["not-in-the-web.test"] == 1


def test_robots_txt_per_host(web, server):
    op = opener(server)
    kinds = {}
    for host in web.hosts.values():
        kinds.setdefault(host.robots, host.name)
    with op.open(f"http://{kinds['standard']}/robots.txt") as r:
        assert b"Disallow: /private/" in r.read()
    for kind, code in (("none", 404), ("error", 500)):
        if kind in kinds:
            with pytest.raises(urllib.error.HTTPError) as err:
                op.open(f"http://{kinds[kind]}/robots.txt")
            assert err.value.code == code
    op.open(f"http://{kinds['standard']}/private/login").read()
    assert server.robots_violations == [f"http://{kinds['standard']}/private/login"]


def test_images_redirects_and_plain_host_header(web, server):
    host = web.by_kind["topic"][0]
    img = next(i for a in (web.article(host, k) for k in range(20)) for i in a.images)
    with opener(server).open(img.url) as r:
        picture = Image.open(BytesIO(r.read()))
    assert picture.size == img.size
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", "/go/1", headers={"Host": host})  # no proxy: the Host header names the site
    r = conn.getresponse()
    assert r.status == 301 and r.getheader("Location") == web.article(host, 1).url
    r.read()
    conn.request("HEAD", "/", headers={"Host": host})  # keep-alive: same connection
    r = conn.getresponse()
    assert r.status == 200 and int(r.getheader("Content-Length")) > 0 and r.read() == b""
    conn.close()


def test_stops_cleanly(web):
    server = TestWebServer(web).start()
    port = server.port
    opener(server).open(f"http://{web.by_kind['topic'][0]}/").read()
    server.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1)


def test_scrapy_crawls_it_through_http_proxy_env(web, server, tmp_path):
    """The real focused spider: robots.txt per host first, several hosts, nothing disallowed fetched."""
    run_crawl("keywords", web.seeds(), tmp_path / "run", 40, proxy=server.proxy)
    pages = [h for h in server.hosts if h in web.hosts]
    assert len(pages) >= 3
    assert server.statuses[200] >= 40
    assert server.robots_violations == []


def test_a_host_outside_the_web_is_not_retried_and_logs_no_error(web, server, tmp_path):
    """A link out of the closed test web (the demo's ``ads.example.invalid``): the proxy answered
    502, which the crawl retried and then logged at ERROR ("Gave up retrying <GET
    http://ads.example.invalid/robots.txt>"), in the demo's log too. Not found now: its
    robots.txt, tdmrep.json and page are asked once each, and the log has no ERROR line."""
    run_crawl("keywords", [*web.seeds()[:1], "http://ads.example.invalid/"], tmp_path / "run", 5, proxy=server.proxy)
    log = (tmp_path / "run" / "crawl.log").read_text()
    assert not [line for line in log.splitlines() if " ERROR" in line], log[-3000:]
    assert server.hosts["ads.example.invalid"] == 3  # robots.txt, tdmrep.json and the page, once each
