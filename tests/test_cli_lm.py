"""``focuscrawl score`` and ``focuscrawl keywords`` end to end; URL sources come from a
real HTTP server on 127.0.0.1 whose robots.txt disallows one page."""
from __future__ import annotations

import io
import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from focuscrawl.cli import main
from focuscrawl.lm.keywords import KeywordList, learn_keywords
from focuscrawl.lm.scorer import TopicScorer
from focuscrawl.topic.model import default_keywords_path, default_model_path
from focuscrawl.text.normalize import document_sentences

PAGES = {
    "cat1.html": "<html><body><p>The cat sleeps on the warm mat all day.</p>"
                 "<p>A cat and her kittens purr on the sofa.</p></body></html>",
    "cat2.html": "<html><body><p>Every kitten plays with the cat and the ball.</p>"
                 "<p>The cat hunts a mouse in the garden at night.</p></body></html>",
    "car.html": "<html><body><p>The car drives on the road all day long.</p>"
                "<p>A car needs fuel and the engine needs oil.</p></body></html>",
    "city.html": "<html><body><p>The city has a big road and the river.</p>"
                 "<p>People in the city take the train at night.</p></body></html>",
    "private.html": "<html><body><p>The cat secrets must never be fetched by a polite crawler.</p></body></html>",
    "robots.txt": "User-agent: *\nDisallow: /private.html\n",
}


class RecordingHandler(SimpleHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server API)
        self.server.paths.append(self.path)
        super().do_GET()

    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    for name, body in PAGES.items():
        (root / name).write_text(body, encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(RecordingHandler, directory=str(root)))
    server.paths = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield base, server, root
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _tokens(html: str) -> list[str]:
    from focuscrawl.text.sources import bytes_to_text
    return [t for s in document_sentences(bytes_to_text(html.encode())) for t in s.split()]


def test_keywords_from_urls(site, tmp_path, capsys):
    base, server, root = site
    out = tmp_path / "kw.txt"
    code = main(["keywords", "--positive", f"{base}/cat1.html", f"{base}/cat2.html",
                 "--neutral", f"{base}/car.html", f"{base}/city.html", "-n", "5", "--delay", "0",
                 "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    # why `topic build` gives another list for the same corpora is said where the list is written
    assert "`focuscrawl keywords` counts one document per source" in err and "topic build" in err
    kw = KeywordList.load(out)
    expected = learn_keywords([_tokens(PAGES["cat1.html"]), _tokens(PAGES["cat2.html"])],
                              [_tokens(PAGES["car.html"]), _tokens(PAGES["city.html"])], 5)
    assert list(kw.weights) == [t for t, _ in expected]
    assert next(iter(kw.weights)) == "cat"  # 5 occurrences, never on the neutral side
    assert "the" not in kw.weights and "car" not in kw.weights
    # robots.txt fetched once per host, before any page
    assert server.paths[0] == "/robots.txt" and server.paths.count("/robots.txt") == 1
    # the same sources as files give the same list
    files = []
    for name in ("cat1.html", "cat2.html", "car.html", "city.html"):
        files.append(str(root / name))
    out2 = tmp_path / "kw2.txt"
    assert main(["keywords", "--positive", *files[:2], "--neutral", *files[2:], "-n", "5", "-o", str(out2)]) == 0
    assert out2.read_text() == out.read_text()


def test_keywords_refuses_url_disallowed_by_robots(site, tmp_path, capsys):
    base, server, _ = site
    out = tmp_path / "kw.txt"
    code = main(["keywords", "--positive", f"{base}/cat1.html", f"{base}/private.html",
                 "--neutral", f"{base}/car.html", "--delay", "0", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{base}/private.html: disallowed by robots.txt" in err
    assert "Traceback" not in err
    assert "/private.html" not in server.paths
    assert not out.exists()


def test_keywords_unreachable_source_is_a_clear_error(site, tmp_path, capsys):
    base, _, _ = site
    code = main(["keywords", "--positive", f"{base}/missing.html", "--neutral", f"{base}/car.html",
                 "--delay", "0", "-o", str(tmp_path / "kw.txt")])
    # an HTTP 404 is reported on one line, no traceback
    err = capsys.readouterr().err
    assert code == 2 and f"{base}/missing.html: HTTP 404" in err and "Traceback" not in err


def test_score_json_with_bundled_model(capsys):
    text = "The cat sat on the mat and purred at her kittens"
    assert main(["score", "--json", text]) == 0
    captured = capsys.readouterr()
    got = json.loads(captured.out)
    expected = TopicScorer.from_files(default_model_path(), default_keywords_path()).score(text)
    assert got == {"model": str(default_model_path()), "keywords": str(default_keywords_path()), "topic": None,
                   "perplexity": pytest.approx(expected.perplexity), "keyword_score": pytest.approx(expected.keyword_score),
                   "weighted_perplexity": pytest.approx(expected.weighted), "tokens": 11}
    # the model is named, and that it is the bundled cats one for want of --topic
    assert "no --topic or --model: scored with the bundled cats model" in captured.err
    assert got["keyword_score"] > 0 and got["weighted_perplexity"] < got["perplexity"]
    # an off-topic text scores worse
    assert main(["score", "--json", "The parliament passed the budget law after a long debate"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert off["perplexity"] > got["perplexity"]


def test_score_json_custom_model_and_stdin(toy_arpa, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("Cat!"))
    assert main(["score", "--json", "--model", str(toy_arpa), "-"]) == 0
    got = json.loads(capsys.readouterr().out)
    # the toy ARPA (tests/support/toymodel.py): log10 p(cat) = -.5, p(</s>) = -.5
    named = {"model": str(toy_arpa), "keywords": None, "topic": None}
    assert got == {**named, "perplexity": pytest.approx(10 ** .5), "keyword_score": 0.0,
                   "weighted_perplexity": pytest.approx(10 ** .5), "tokens": 1}
    assert main(["score", "--json", "--model", str(toy_arpa), "123 !!!"]) == 0
    assert json.loads(capsys.readouterr().out) == {**named, "perplexity": None, "keyword_score": 0.0,
                                                   "weighted_perplexity": None, "tokens": 0}


def test_score_bad_model_is_a_clear_error(tmp_path, capsys):
    assert main(["score", "--model", str(tmp_path / "nope.arpa"), "cat"]) == 2
    err = capsys.readouterr().err
    assert "language model not found" in err and "Traceback" not in err


def test_polite_fetcher_waits_between_requests_not_before_the_first(site, monkeypatch):
    """The per-host delay counts from the host's previous request: the first request to a
    host never waits (it once waited until ``delay`` seconds after boot)."""
    from focuscrawl.text import sources

    base, server, _ = site
    slept = []
    monkeypatch.setattr(sources.time, "sleep", slept.append)  # record instead of waiting an hour
    fetcher = sources.PoliteFetcher(delay=1e12)
    data, _ = fetcher.fetch(f"{base}/cat1.html")  # robots.txt first: the host's first request
    assert b"warm mat" in data
    assert len(slept) == 1 and slept[0] > 1e11  # only the page waited, after robots.txt
    assert server.paths == ["/robots.txt", "/cat1.html"]
