"""What a site says its content may be used for once fetched: Cloudflare's Content Signals
(``Content-Signal: search=yes, ai-train=no``, in the managed robots.txt of millions of sites,
and as a response header) and the IETF AI-preferences vocabulary (``Content-Usage:
train-ai=n``, in robots.txt and as a header). They change no crawl permission; focuscrawl
builds training corpora, so a refusal of AI training keeps the content out of the corpus.
Read strictly: any line or header of ours that refuses training counts."""
from __future__ import annotations

import re

from focuscrawl.rights.directives import MAX_VALUE_CHARS
from focuscrawl.rights.tdmrep import path_pattern, resource_path

#: the preferences that refuse a training corpus, and the values that say no
TRAINING = frozenset({"ai-train", "train-ai", "train-genai"})
NO = frozenset({"no", "n", "?0"})
#: the response headers (and robots.txt fields, lower case) that carry them
HEADERS = ("Content-Signal", "Content-Usage")
_FIELDS = frozenset(h.lower().encode() for h in HEADERS)
_LINE = re.compile(rb"^[ \t]*([A-Za-z][A-Za-z0-9_-]*)[ \t]*:[ \t]*([^#\r\n]*)", re.M)
#: robots.txt read up to here (RFC 9309: at least 500 KiB), and our group's usage lines kept up to here
MAX_ROBOTS_BYTES = 1 << 20
MAX_LINES = 1000


def usage_denial(value: str) -> str:
    """The first preference of one ``Content-Signal`` / ``Content-Usage`` value (``a=b, c=d``)
    that refuses AI training (``ai-train=no``, ``train-ai=n``); "" if none does."""
    for part in value[:MAX_VALUE_CHARS].split(","):
        name, sep, setting = part.partition("=")
        name, setting = name.strip().lower(), setting.strip().strip('"').lower()
        if sep and name in TRAINING and setting in NO:
            return f"{name}={setting}"
    return ""


class UsageRules:
    """A host's robots.txt lines of usage preferences that apply to us and refuse training:
    (path pattern, ``None`` for the whole site; the refusal)."""

    def __init__(self, rules: tuple[tuple[re.Pattern | None, str], ...] = ()) -> None:
        self.rules = rules

    def __bool__(self) -> bool:
        return bool(self.rules)

    @classmethod
    def parse(cls, body: bytes, tokens: frozenset[str]) -> "UsageRules":
        """The lines of the groups that apply to a crawler named by one of ``tokens`` (lower
        case): the groups that name it, else those of ``*`` (as robots.txt's own rules are
        chosen), and lines before any group. A line may start with a path pattern as in
        robots.txt (``Content-Usage: /photos/ train-ai=n``) to apply to those paths only."""
        groups: list[tuple[set[str], list[str]]] = [(set(), [])]  # first: the lines before any group
        in_rules = True  # a User-agent line after a rule line opens a group
        for match in _LINE.finditer(body[:MAX_ROBOTS_BYTES]):
            name = match.group(1).lower()
            if name == b"user-agent":
                if in_rules:
                    groups.append((set(), []))
                    in_rules = False
                groups[-1][0].add(match.group(2).decode("utf-8", "replace").strip().lower())
                continue
            in_rules = True
            if name in _FIELDS and len(groups[-1][1]) < MAX_LINES:
                groups[-1][1].append(match.group(2).decode("utf-8", "replace").strip())
        named = [lines for agents, lines in groups if agents & tokens]
        chosen = named or [lines for agents, lines in groups if "*" in agents]
        chosen += [lines for agents, lines in groups if not agents]
        rules = []
        for value in (v for lines in chosen for v in lines):
            first, _, rest = value.partition(" ")
            pattern = None
            if first.startswith(("/", "*")) and "=" not in first:
                pattern, value = path_pattern(first), rest
            denial = usage_denial(value)
            if denial:
                rules.append((pattern, denial))
        return cls(tuple(rules))

    def denial(self, url: str) -> str:
        """The refusal that covers ``url`` ("" if none)."""
        if not self.rules:
            return ""
        path = resource_path(url)
        return next((denial for pattern, denial in self.rules if pattern is None or pattern.match(path)), "")
