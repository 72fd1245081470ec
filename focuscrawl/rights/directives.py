"""Robots directives (meta robots, ``X-Robots-Tag``, the crawler's own ``<meta name>``) and
TDMRep's ``tdm-reservation`` (meta and header), read the strict way: every directive that
applies to us counts, whatever else a page says (a conflicting ``index`` never undoes a
``noindex``)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

#: what each directive withholds (``none`` = ``noindex, nofollow``)
NOFOLLOW = frozenset({"nofollow", "none"})
NO_TEXT = frozenset({"noindex", "none", "noai"})
NO_IMAGES = frozenset({"noindex", "none", "noai", "noimageindex", "noimageai"})

#: the opt-out sources, each switched by ``FOCUSCRAWL_OPTOUTS`` (stat and reason names)
META_ROBOTS = "meta_robots"
X_ROBOTS_TAG = "x_robots_tag"
TDMREP = "tdmrep"
ROBOTS_AI = "robots_ai"
IMAGE_METADATA = "image_metadata"
CONTENT_SIGNALS = "content_signals"
SOURCES = (META_ROBOTS, X_ROBOTS_TAG, TDMREP, ROBOTS_AI, IMAGE_METADATA, CONTENT_SIGNALS)

#: a directive value longer than this is cut (a hostile page cannot make the crawl parse megabytes)
MAX_VALUE_CHARS = 4096
_TOKEN = re.compile(r"[a-z][a-z0-9_\-]*")
_SCOPED = re.compile(r"\s*([A-Za-z][A-Za-z0-9_.\-]*)\s*:\s*(.*)$", re.DOTALL)
#: directives that take a value after a colon (``max-snippet: 20``), never user-agent names
_VALUED = frozenset({"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"})


def parse_directives(value: str) -> set[str]:
    """The lower-case directive tokens of one comma-separated value (``noindex, NoFollow``)."""
    found = set()
    for part in value[:MAX_VALUE_CHARS].lower().split(","):
        match = _TOKEN.match(part.strip())
        if match:
            found.add(match.group())
    return found


def header_directives(values: Iterable[str], agents: frozenset[str]) -> set[str]:
    """Directives of ``X-Robots-Tag`` header values that apply to a crawler named by one of
    ``agents`` (lower case): unscoped ones and those scoped ``agent: ...`` to us
    (``googlebot: noindex`` is another crawler's)."""
    found: set[str] = set()
    for value in values:
        value = value[:MAX_VALUE_CHARS]
        scoped = _SCOPED.match(value)
        if scoped and scoped.group(1).lower() not in _VALUED:
            if scoped.group(1).lower() in agents:
                found |= parse_directives(scoped.group(2))
            continue
        found |= parse_directives(value)
    return found


def agent_header_directives(values: Iterable[str], agents: frozenset[str]) -> set[str]:
    """``agent:directive`` of the ``X-Robots-Tag`` values scoped to one of ``agents`` (lower
    case): ``GPTBot: noai`` is ``gptbot:noai``; unscoped values are not theirs alone."""
    found: set[str] = set()
    for value in values:
        scoped = _SCOPED.match(value[:MAX_VALUE_CHARS])
        if scoped and scoped.group(1).lower() in agents:
            found |= {f"{scoped.group(1).lower()}:{d}" for d in parse_directives(scoped.group(2))}
    return found


def tdm_reserved(value: str | None) -> bool:
    """``tdm-reservation`` says 1 (rights reserved). Anything but an explicit 0 that is
    not a 1 (garbage) is read as no reservation declared."""
    return (value or "").strip()[:16] == "1"


@dataclass(frozen=True)
class PageSignals:
    """What a page's markup says (read by the page analysis from its ``<meta>`` elements).

    ``robots``: directives of ``<meta name="robots">`` and of ``<meta name=AGENT>`` for our
    own tokens; ``tdm``: a ``tdm-reservation`` meta said 1; ``tdm_policy``: its policy URL;
    ``ai_robots``: ``agent:directive`` of the ``<meta name=AGENT>`` of AI-training crawlers
    that withhold something (``gptbot:noindex``)."""

    robots: frozenset[str] = frozenset()
    tdm: bool = False
    tdm_policy: str = ""
    ai_robots: frozenset[str] = frozenset()


@dataclass
class OptOut:
    """The decision for one page: why its links, text or images are withheld (``source:directive``)."""

    nofollow: list[str] = field(default_factory=list)
    no_text: list[str] = field(default_factory=list)
    no_images: list[str] = field(default_factory=list)
    tdm_policy: str = ""

    @property
    def reason(self) -> str:
        """The first reason nothing (or not everything) of the page enters the corpus."""
        return (self.no_text or self.no_images or [""])[0]

    def add(self, source: str, directives: Iterable[str]) -> None:
        for d in sorted(set(directives)):
            if d in NOFOLLOW:
                self.nofollow.append(f"{source}:{d}")
            if d in NO_TEXT:
                self.no_text.append(f"{source}:{d}")
            if d in NO_IMAGES:
                self.no_images.append(f"{source}:{d}")

    def add_agents(self, source: str, scoped: Iterable[str]) -> None:
        """Directives addressed to AI-training crawlers (``agent:directive``): their ``noindex``,
        ``none`` or ``noai`` withholds the page from a training corpus as their robots.txt group
        does (``source:agent``), ``noimageindex``/``noimageai`` its images."""
        for item in sorted(set(scoped)):
            agent, _, directive = item.partition(":")
            reason = f"{source}:{agent}"
            if directive in NO_TEXT and reason not in self.no_text:
                self.no_text.append(reason)
            if directive in NO_IMAGES and reason not in self.no_images:
                self.no_images.append(reason)

    def reserve(self, source: str, policy: str = "") -> None:
        """A TDM reservation (or an AI-crawler robots.txt group): neither text nor images."""
        self.no_text.append(source)
        self.no_images.append(source)
        self.tdm_policy = self.tdm_policy or policy


def image_response_reason(headers: dict[str, list[str]], agents: frozenset[str], sources: frozenset[str],
                          ai_agents: frozenset[str] = frozenset()) -> str:
    """Why an image response may not enter the corpus ("" = it may): ``X-Robots-Tag``
    ``noindex``/``none``/``noai``/``noimageindex``/``noimageai`` (img2dataset's rule), for us or
    scoped to an AI-training crawler of ``ai_agents``, or a ``tdm-reservation: 1`` header.
    ``headers``: lower-case name -> values."""
    if X_ROBOTS_TAG in sources:
        hit = header_directives(headers.get("x-robots-tag", ()), agents) & NO_IMAGES
        if hit:
            return f"{X_ROBOTS_TAG}:{min(hit)}"
    if ROBOTS_AI in sources and ai_agents:
        scoped = sorted(item for item in agent_header_directives(headers.get("x-robots-tag", ()), ai_agents)
                        if item.partition(":")[2] in NO_IMAGES)
        if scoped:
            return f"{ROBOTS_AI}:{scoped[0].partition(':')[0]}"
    if TDMREP in sources and any(tdm_reserved(v) for v in headers.get("tdm-reservation", ())):
        return f"{TDMREP}:header"
    return ""


def image_file_reason(mining: dict[str, str], sources: frozenset[str]) -> str:
    """Why an image file's own XMP keeps it out of the corpus ("" = it may): IPTC's "Data
    Mining" property (``plus:DataMining``) with any of PLUS's ``DMI-PROHIBITED…`` values (a
    training corpus is data mining, so "except search engine indexing" forbids it too), or
    TDMRep's ``tdm:reservation`` 1. ``mining``: ``FileMetadata.mining``."""
    if IMAGE_METADATA in sources:
        token = mining.get("DataMining", "")[:MAX_VALUE_CHARS].strip().rstrip("/").rsplit("/", 1)[-1].upper()
        if token.startswith("DMI-PROHIBITED"):
            return f"{IMAGE_METADATA}:{token.lower()}"
    if TDMREP in sources and tdm_reserved(mining.get("tdm:reservation")):
        return f"{TDMREP}:xmp"
    return ""


_USER_AGENT_LINE = re.compile(rb"^[ \t]*user-agent[ \t]*:[ \t]*([^#\r\n]*)", re.I | re.M)


def robots_named_agents(body: bytes, agents: Iterable[str]) -> tuple[str, ...]:
    """Those of ``agents`` that a robots.txt names in a ``User-agent`` line (its own group:
    a path that group disallows is an opt-out addressed to that crawler)."""
    named = {m.group(1).strip().lower() for m in _USER_AGENT_LINE.finditer(body[:1 << 20])}
    return tuple(a for a in agents if a.lower().encode("utf-8", "ignore") in named)
