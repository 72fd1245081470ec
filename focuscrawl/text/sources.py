"""Read text corpora from files (text, HTML, gzip) or URLs, politely."""
from __future__ import annotations

import gzip
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterable
from urllib.parse import urlsplit

from protego import Protego

from focuscrawl.text.extractors import get_extractor
from focuscrawl.text.html import decode_html
from focuscrawl.text.normalize import document_sentences

USER_AGENT = "focuscrawl/0.1 (+https://github.com/focuscrawl/focuscrawl)"
_HTML_SNIFF = (b"<!doctype html", b"<html", b"<head", b"<body", b"<p>", b"<div")


def is_url(src: str) -> bool:
    return urlsplit(src).scheme in ("http", "https")


def read_bytes(path: str | Path) -> bytes:
    """File content, transparently gunzipped for ``.gz`` names."""
    path = Path(path)
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def looks_like_html(data: bytes) -> bool:
    head = data[:2048].lstrip().lower()
    return any(marker in head for marker in _HTML_SNIFF)


def bytes_to_text(data: bytes, extractor: str = "fulltext", content_type: str | None = None) -> str:
    """Plain text of a document: HTML goes through ``extractor``, text is decoded."""
    if looks_like_html(data) or (content_type and "html" in content_type):
        return get_extractor(extractor)(decode_html(data, content_type))
    return decode_html(data, content_type or "text/plain")


class PoliteFetcher:
    """Fetches a few URLs honouring robots.txt and a per-host delay."""

    def __init__(self, user_agent: str = USER_AGENT, delay: float = 1.0, timeout: float = 30.0,
                 max_bytes: int = 20 * 1024 * 1024) -> None:
        self.user_agent, self.delay, self.timeout, self.max_bytes = user_agent, delay, timeout, max_bytes
        self._robots: dict[str, Protego] = {}
        self._last: dict[str, float] = {}

    def _get(self, url: str) -> tuple[bytes, str | None]:
        host = urlsplit(url).netloc
        last = self._last.get(host)  # monotonic time of the host's last request, None before the first
        wait = last + self.delay - time.monotonic() if last is not None else 0.0
        if wait > 0:
            time.sleep(wait)
        req = urllib.request.Request(url, headers={"User-Agent": self.user_agent})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                data = resp.read(self.max_bytes + 1)
                ctype = resp.headers.get("Content-Type")
        except urllib.error.HTTPError as exc:
            raise ValueError(f"{url}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise ValueError(f"{url}: cannot fetch: {getattr(exc, 'reason', exc)}") from None
        finally:
            self._last[host] = time.monotonic()
        if len(data) > self.max_bytes:
            raise ValueError(f"{url}: larger than {self.max_bytes} bytes")
        return data, ctype

    def allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        base = f"{parts.scheme}://{parts.netloc}"
        if base not in self._robots:
            try:
                body, _ = self._get(base + "/robots.txt")
                self._robots[base] = Protego.parse(body.decode("utf-8", "replace"))
            except Exception:  # no robots.txt (404, error): everything allowed
                self._robots[base] = Protego.parse("")
        return self._robots[base].can_fetch(url, self.user_agent)

    def fetch(self, url: str) -> tuple[bytes, str | None]:
        if not self.allowed(url):
            raise ValueError(f"{url}: disallowed by robots.txt")
        return self._get(url)


def load_source_text(src: str, extractor: str = "fulltext", fetcher: PoliteFetcher | None = None) -> str:
    """Text of one corpus source: a URL, an HTML file or a text file."""
    if is_url(src):
        data, ctype = (fetcher or PoliteFetcher()).fetch(src)
        return bytes_to_text(data, extractor, ctype)
    return bytes_to_text(read_bytes(src), extractor)


def corpus_tokens(sources: Iterable[str | Path], extractor: str = "fulltext",
                  fetcher: PoliteFetcher | None = None) -> list[list[str]]:
    """One token list per source (its normalised sentences of 5+ tokens): the documents
    whose document frequencies keyword learning counts."""
    fetcher = fetcher or PoliteFetcher()
    return [[tok for s in document_sentences(load_source_text(str(src), extractor, fetcher)) for tok in s.split()]
            for src in sources]
