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

from focuscrawl import settings as defaults
from focuscrawl.text.extractors import get_extractor
from focuscrawl.text.html import decode_html
from focuscrawl.text.normalize import document_sentences

_HTML_SNIFF = (b"<!doctype html", b"<html", b"<head", b"<body", b"<p>", b"<div")


def is_url(src: str) -> bool:
    return urlsplit(src).scheme in ("http", "https")


def read_bytes(path: str | Path) -> bytes:
    """A corpus file's content, transparently gunzipped for ``.gz`` names; ``ValueError`` with
    one clear line for a folder, an unreadable or broken file, or binary data (a text or HTML
    corpus is expected: random bytes would train an LM and keywords of noise)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder: give the text or HTML files in it")
    try:
        data = path.read_bytes()
        data = gzip.decompress(data) if path.suffix == ".gz" else data
    except FileNotFoundError:
        raise
    except (OSError, EOFError) as exc:  # permissions, a broken gzip, ...
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    if looks_binary(data):
        raise ValueError(f"{path} holds binary data, not text or HTML")
    return data


def looks_binary(data: bytes) -> bool:
    """NUL bytes (in a file without a UTF-16/32 byte order mark) or over 10% control bytes in the
    first 8 KiB."""
    head = data[:8192]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    controls = sum(b < 32 and b not in (9, 10, 12, 13) for b in head)
    return b"\0" in head or controls > len(head) / 10


def looks_like_html(data: bytes) -> bool:
    head = data[:2048].lstrip().lower()
    return any(marker in head for marker in _HTML_SNIFF)


def bytes_to_text(data: bytes, extractor: str = "fulltext", content_type: str | None = None) -> str:
    """Plain text of a document: HTML goes through ``extractor``, text is decoded."""
    if looks_like_html(data) or (content_type and "html" in content_type):
        return get_extractor(extractor)(decode_html(data, content_type))
    return decode_html(data, content_type or "text/plain")


class PoliteFetcher:
    """Fetches a few URLs honouring robots.txt and a per-host delay, as the crawl's User-Agent."""

    def __init__(self, user_agent: str = defaults.USER_AGENT, delay: float = 1.0, timeout: float = 30.0,
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
