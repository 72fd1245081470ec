"""URL scope and crawler-trap rules as pure functions (SPEC §5 scope, brief standard 5).

SURT (Sort-friendly URI Reordering Transform, as in Heritrix) writes the host
reversed, so one prefix covers a domain and all its subdomains:
``https://en.wikipedia.org/wiki/Cat`` -> ``(org,wikipedia,en,)/wiki/Cat``. The scheme
is left out: a rule applies to http and https alike.
"""
from __future__ import annotations

import ipaddress
import re
from collections import Counter, OrderedDict
from functools import lru_cache
from typing import Iterable
from urllib.parse import ParseResult, SplitResult, urlsplit

from w3lib.url import safe_url_string


def host_surt(host: str) -> str:
    """``en.wikipedia.org`` -> ``(org,wikipedia,en,``; port and trailing dot dropped."""
    host = host.lower().rstrip(".").split(":")[0]
    return "(" + ",".join(reversed(host.split("."))) + ","


def surt(url: "str | SplitResult | ParseResult") -> str:
    """SURT form of ``url`` (or its parsed parts) without scheme: ``(org,wikipedia,en,)/wiki/Cat?q``."""
    parts = urlsplit(url) if isinstance(url, str) else url
    path = parts.path or "/"
    query = f"?{parts.query}" if parts.query else ""
    return f"{host_surt(parts.hostname or '')}){path}{query}"


def surt_prefix(rule: str) -> str:
    """A reject rule as SURT prefix: a SURT prefix (``http://(org,wikipedia,`` or
    ``(org,wikipedia,``) is kept (scheme dropped), a domain (``wikipedia.org``) converted."""
    rule = rule.strip()
    if "://" in rule:
        rule = rule.split("://", 1)[1]
    if rule.startswith("("):
        return rule.lower()
    return host_surt(rule)


class SurtRules:
    """Matches URLs against a list of SURT prefixes (or domains).

    The host decides most rules, and a crawl checks every link it finds: what the rules
    say about a host is worked out once and kept for the last ``hosts_cached`` hosts."""

    #: Default number of hosts whose rule outcome is kept.
    HOSTS_CACHED = 10_000

    def __init__(self, rules: Iterable[str], hosts_cached: int = HOSTS_CACHED) -> None:
        self.prefixes = tuple(sorted({surt_prefix(r) for r in rules if r and r.strip()}))
        self._for_host = lru_cache(maxsize=hosts_cached)(self._host_rules)

    def _host_rules(self, hostname: str) -> tuple[bool, bool]:
        """(a prefix matches the host's whole SURT, a prefix goes on into the path of this host).

        The SURT is ``HOST)`` + path: a prefix no longer than ``HOST`` matches it exactly
        when it matches ``HOST``; a longer one can only match if it starts with ``HOST)``."""
        host = host_surt(hostname)
        if host.startswith(self.prefixes):
            return True, False
        return False, any(p.startswith(host + ")") for p in self.prefixes)

    def matches(self, url: "str | SplitResult | ParseResult") -> bool:
        """``url`` as a string or parsed (e.g. Scrapy's ``urlparse_cached(request)``)."""
        if not self.prefixes:
            return False
        parts = urlsplit(url) if isinstance(url, str) else url
        by_host, by_path = self._for_host(parts.hostname or "")
        return by_host or (by_path and surt(parts).startswith(self.prefixes))


@lru_cache(maxsize=1)
def _public_suffixes():
    """tldextract with the Public Suffix List snapshot bundled in its package (private suffixes
    such as github.io included): no download (``suffix_list_urls=()``), no cache folder."""
    import tldextract

    return tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), include_psl_private_domains=True)


@lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The registered domain of a host name, public-suffix aware (``a.b.example.co.uk`` ->
    ``example.co.uk``, ``x.github.io`` itself); a name under no known suffix (``.test``,
    ``localhost``) -> its last two labels; an IP address -> itself."""
    host = host.lower().strip(".").strip("[]")
    domain = _public_suffixes()(host).top_domain_under_public_suffix
    if domain:
        return domain
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        return ".".join(host.split(".")[-2:])


def domain_allowed(host: str, allowed: Iterable[str]) -> bool:
    """``host`` is one of ``allowed`` or a subdomain of one (empty ``allowed`` = all)."""
    allowed = tuple(allowed)
    if not allowed:
        return True
    host = (host or "").lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in (a.lower().lstrip(".") for a in allowed))


def repeated_path_segment(url: "str | SplitResult | ParseResult", max_repeats: int) -> str | None:
    """A path segment occurring more than ``max_repeats`` times (a calendar or
    relative-link loop such as ``/a/b/a/b/a/b``), or ``None``; 0 disables the check."""
    if max_repeats <= 0:
        return None
    path = (urlsplit(url) if isinstance(url, str) else url).path
    if path.count("/") <= max_repeats:  # too few segments to repeat
        return None
    counts = Counter(s for s in path.split("/") if s)
    for segment, n in counts.items():
        if n > max_repeats:
            return segment
    return None


def too_many_path_segments(url: "str | SplitResult | ParseResult", max_segments: int) -> bool:
    """More than ``max_segments`` path segments (Heritrix's TooManyPathSegmentsDecideRule):
    paths that grow without repeating a segment (``/a1/b2/c3/...``) escape
    ``repeated_path_segment``; 0 disables the check."""
    if max_segments <= 0:
        return False
    path = (urlsplit(url) if isinstance(url, str) else url).path
    return path.count("/") > max_segments and len([s for s in path.split("/") if s]) > max_segments


#: the kinds of trap-like URL ``trap_kind`` names (stats ``focuscrawl/scope/trap_*/<kind>``)
TRAP_KINDS = ("calendar", "repeats", "deep", "query")
#: a path that ends in a date, year and month at least (/2026/03/, /cal/2026/3/15, /2026-03):
#: a calendar's or a date archive's page; a dated post (/2026/03/a-title) does not end in one
_DATE_TAIL = re.compile(r"(?:^|/)(?:1[89]|2[01])\d\d[/-](?:0?[1-9]|1[0-2])(?:[/-](?:0?[1-9]|[12]\d|3[01]))?/?$")


#: a query parameter that names a session (each visit another URL for one page)
_SESSION_PARAMETER = re.compile(r"(?:^|[&;])(?:sid|sess|session|sessionid|session_id|jsessionid|phpsessid|aspsessionid"
                                r"|cfid|cftoken|s)=", re.IGNORECASE)


def trap_kind(url: "str | SplitResult | ParseResult", deep_segments: int, query_variant: bool = False) -> str | None:
    """Which kind of trap-like URL ``url`` is, or ``None``: ``calendar`` (its path ends in a
    date), ``repeats`` (a path segment twice), ``deep`` (more than ``deep_segments`` path
    segments; 0: not checked), ``query`` (``query_variant``: another query string of a path
    already seen; or a session-id parameter). Such URLs are crawled, only so many per host: the
    hard limits (``repeated_path_segment``, ``too_many_path_segments``, ``QueryVariantLimit``)
    drop the rest."""
    parts = urlsplit(url) if isinstance(url, str) else url
    path = parts.path
    if _DATE_TAIL.search(path):
        return "calendar"
    segments = [s for s in path.split("/") if s]
    if len(set(segments)) < len(segments):
        return "repeats"
    if 0 < deep_segments < len(segments):
        return "deep"
    if parts.query and (query_variant or _SESSION_PARAMETER.search(parts.query)):
        return "query"
    return None


class QueryVariantLimit:
    """Admits at most ``limit`` distinct query strings per host+path (faceted search,
    session ids, endless calendars).

    Memory is bounded: at most ``limit`` query hashes for each of at most ``max_paths``
    host+path keys (the least recently used key is forgotten first; a forgotten path
    starts counting again, so a trap reached again after ``max_paths`` other query
    paths can get another ``limit`` variants)."""

    #: Default number of host+path keys kept (~100 bytes each plus ``limit`` hashes).
    MAX_PATHS = 100_000

    def __init__(self, limit: int, max_paths: int = MAX_PATHS) -> None:
        self.limit = limit
        self.max_paths = max_paths
        self._seen: OrderedDict[tuple[str, str], set[int]] = OrderedDict()
        #: the distinct query strings of the path ``admit`` was last asked about, itself included
        #: (0: no query, or the limit is off)
        self.last_variants = 0

    def admit(self, url: "str | SplitResult | ParseResult") -> bool:
        self.last_variants = 0
        if self.limit <= 0:
            return True
        parts = urlsplit(url) if isinstance(url, str) else url
        if not parts.query:
            return True
        path_key = (parts.netloc.lower(), parts.path)
        seen = self._seen.get(path_key)
        if seen is None:
            seen = self._seen[path_key] = set()
            if len(self._seen) > self.max_paths:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(path_key)
        key = hash(parts.query)
        self.last_variants = len(seen) + (key not in seen)
        if key in seen:
            return True
        if len(seen) >= self.limit:
            return False
        seen.add(key)
        return True


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be requested (``"bad port"``, ``"invalid IPv6 host"``, ...), or
    ``None`` for a usable absolute http(s) URL. The checks are the ones that make
    ``urlsplit``, Scrapy's ``Request`` or w3lib's ``safe_url_string`` raise later, in a
    place where one bad URL would end the whole crawl."""
    from w3lib.url import safe_url_string  # w3lib is Scrapy's; imported lazily like Scrapy does

    if not isinstance(url, str) or not url:
        return "empty URL"
    if any(c in url for c in "\x00\r\n"):
        return "control character in the URL"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
        safe_url_string(url)
    except ValueError as exc:
        return str(exc) or type(exc).__name__
    if parts.scheme not in ("http", "https"):
        return f"not an http(s) URL (scheme {parts.scheme!r})" if parts.scheme else "not an absolute URL"
    if not parts.hostname:
        return "no host"
    if parts.port == 0:
        return "port 0"
    return None


def excerpt(value: "str | bytes", limit: int = 80) -> str:
    """A short, escaped, single-line quote of untrusted input for a log line."""
    text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
    short = text[:limit]
    quoted = short.encode("unicode_escape").decode("ascii")
    return quoted + (f"... ({len(text)} chars)" if len(text) > limit else "")


#: an http(s) URL that ``safe_url_string`` returns unchanged: a lower-case host name (not all
#: digits and dots: w3lib rewrites IPv4 forms), no port, user or fragment, a path of
#: characters it keeps (well-formed ``%XX`` escapes) without ``.``/``..`` segments, an optional
#: non-empty query without ``'`` (escaped in a query)
_SAFE_URL = re.compile(r"https?://(?![0-9.]*(?:/|$))(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z](?:[a-z0-9-]*[a-z0-9])?"
                       r"(?:/(?:[A-Za-z0-9_~!$&()*+,;=:@-]|%[0-9A-Fa-f]{2}|\.(?![./?]|$))*)+"
                       r"(?:\?(?:[A-Za-z0-9_~!$&()*+,;=:@/?.-]|%[0-9A-Fa-f]{2})+)?")


@lru_cache(maxsize=1 << 14)
def _safe_url(url: str) -> str:
    return safe_url_string(url)


def request_url(url: str) -> str:
    """The URL a Scrapy ``Request(url)`` names (w3lib's ``safe_url_string``): ``url`` itself
    when it is safe already (most links: a regular expression instead of w3lib's parse, ~6x
    less), else w3lib's, memoised (a site's navigation links recur on its pages)."""
    return url if _SAFE_URL.fullmatch(url) else _safe_url(url)
