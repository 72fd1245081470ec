"""Which opt-outs a crawl obeys (``FOCUSCRAWL_OPTOUTS``) and the decision for one page."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

from focuscrawl.rights.directives import (CONTENT_SIGNALS, META_ROBOTS, ROBOTS_AI, SOURCES, TDMREP, X_ROBOTS_TAG,
                                          OptOut, PageSignals, agent_header_directives, header_directives,
                                          image_file_reason, image_response_reason, tdm_reserved)
from focuscrawl.rights.usage import HEADERS as USAGE_HEADERS, usage_denial

logger = logging.getLogger(__name__)

#: ``request.meta`` key where the downloader middlewares leave a host's opt-outs for a URL
#: (robots.txt AI groups, ``/.well-known/tdmrep.json``): reason -> TDM policy URL ("")
SITE_OPTOUT_META = "site_optout"
#: a host's policy files (fetched by the robots.txt and TDMRep middlewares): not pages
POLICY_FILES = frozenset({"/robots.txt", "/.well-known/tdmrep.json"})
#: our own robots token besides the User-Agent's product name (``<meta name="focuscrawl">``)
OWN_TOKEN = "focuscrawl"


def robots_tokens(user_agent: str) -> frozenset[str]:
    """Lower-case names a page may address us by: ``focuscrawl`` and the User-Agent's product."""
    product = (user_agent or "").split("/", 1)[0].split()[0].lower() if (user_agent or "").strip() else ""
    return frozenset(t for t in (OWN_TOKEN, product) if t)


def _headers(headers, name: bytes) -> list[str]:
    return [v.decode("latin-1") for v in headers.getlist(name)] if headers is not None else []


def _usage_denial(headers) -> str:
    """The refusal of AI training a response's ``Content-Signal`` / ``Content-Usage`` says ("": none)."""
    return next((denial for name in USAGE_HEADERS for value in _headers(headers, name.encode())
                 if (denial := usage_denial(value))), "")


@dataclass(frozen=True)
class OptOutPolicy:
    """The opt-out sources obeyed, our robots tokens, and the AI crawlers whose robots.txt
    groups count as an opt-out from training corpora."""

    sources: frozenset[str] = frozenset(SOURCES)
    agents: frozenset[str] = frozenset({OWN_TOKEN})
    ai_agents: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings) -> "OptOutPolicy":
        sources = frozenset(s.strip().lower() for s in settings.getlist("FOCUSCRAWL_OPTOUTS") if s.strip())
        unknown = sources - set(SOURCES)
        if unknown:
            raise ValueError(f"FOCUSCRAWL_OPTOUTS: unknown opt-out {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(SOURCES)})")
        return cls(sources, robots_tokens(settings.get("USER_AGENT") or ""),
                   tuple(a.strip() for a in settings.getlist("FOCUSCRAWL_AI_AGENTS") if a.strip()))

    @cached_property
    def ai_tokens(self) -> frozenset[str]:
        """The AI-training crawlers' tokens, lower case (``<meta name>``, scoped ``X-Robots-Tag``);
        none when ``robots_ai`` is not obeyed."""
        return frozenset(a.lower() for a in self.ai_agents) if ROBOTS_AI in self.sources else frozenset()

    def relaxed(self) -> list[str]:
        """The opt-outs this crawl does not obey, in their documented order."""
        return [s for s in SOURCES if s not in self.sources]

    def warn_relaxed(self) -> None:
        for source in self.relaxed():
            logger.warning("opt-outs: %s is not obeyed (FOCUSCRAWL_OPTOUTS): pages and images whose owners "
                           "opted out that way can enter the corpus", source)

    def page(self, headers, signals: PageSignals | None, site: dict[str, str] | None) -> OptOut:
        """The decision for a page from its response ``headers`` (Scrapy ``Headers``), its
        markup's ``signals`` (page analysis) and the host-wide ``site`` opt-outs (meta)."""
        decision = OptOut()
        if signals is not None:
            if META_ROBOTS in self.sources:
                decision.add(META_ROBOTS, signals.robots)
            if TDMREP in self.sources and signals.tdm:
                decision.reserve(f"{TDMREP}:meta", signals.tdm_policy)
            decision.tdm_policy = decision.tdm_policy or signals.tdm_policy
        robots_tag = _headers(headers, b"X-Robots-Tag")
        if X_ROBOTS_TAG in self.sources:
            decision.add(X_ROBOTS_TAG, header_directives(robots_tag, self.agents))
        if self.ai_tokens:
            if signals is not None:
                decision.add_agents(ROBOTS_AI, signals.ai_robots)
            decision.add_agents(ROBOTS_AI, agent_header_directives(robots_tag, self.ai_tokens))
        policy = next(iter(_headers(headers, b"tdm-policy")), "").strip()
        if TDMREP in self.sources and any(tdm_reserved(v) for v in _headers(headers, b"tdm-reservation")):
            decision.reserve(f"{TDMREP}:header", policy)
        decision.tdm_policy = decision.tdm_policy or policy
        if CONTENT_SIGNALS in self.sources:
            denial = _usage_denial(headers)
            if denial:
                decision.reserve(f"{CONTENT_SIGNALS}:{denial}")
        for reason, site_policy in (site or {}).items():
            decision.reserve(reason, site_policy)
        return decision

    def image_response(self, headers, site: dict[str, str] | None) -> str:
        """Why a downloaded image may not enter the corpus ("": it may)."""
        lower = {"x-robots-tag": _headers(headers, b"X-Robots-Tag"),
                 "tdm-reservation": _headers(headers, b"tdm-reservation")}
        reason = image_response_reason(lower, self.agents, self.sources, self.ai_tokens)
        if not reason and CONTENT_SIGNALS in self.sources:
            denial = _usage_denial(headers)
            reason = f"{CONTENT_SIGNALS}:{denial}" if denial else ""
        return reason or next(iter(site or {}), "")

    def image_file(self, mining: dict[str, str]) -> str:
        """Why an image file's own metadata keeps it out of the corpus ("": it may)."""
        return image_file_reason(mining, self.sources)


def source_of(reason: str) -> str:
    """The opt-out source of a reason (``x_robots_tag:noindex`` -> ``x_robots_tag``)."""
    return reason.split(":", 1)[0]


def count_names(decision: OptOut) -> Iterable[str]:
    """Stat names (under ``focuscrawl/optout/``) of one page's decision, each source once a scope."""
    for scope, reasons in (("nofollow_pages", decision.nofollow), ("text_pages", decision.no_text),
                           ("image_pages", decision.no_images)):
        for source in dict.fromkeys(source_of(r) for r in reasons):
            yield f"{scope}/{source}"
