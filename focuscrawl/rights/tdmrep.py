"""TDMRep's host-wide declaration, ``/.well-known/tdmrep.json`` (W3C TDM Reservation
Protocol): a JSON array of ``{"location": PATTERN, "tdm-reservation": 0|1, "tdm-policy": URL}``.
A location is a path pattern as in robots.txt (``*`` any characters, a final ``$`` the end).
Read strictly: a resource is reserved when any rule that matches it reserves it."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

PATH = "/.well-known/tdmrep.json"
#: rules read from one file (a huge file is read up to here, the rest ignored and counted)
MAX_RULES = 10_000
MAX_PATTERN_CHARS = 2048


@dataclass(frozen=True)
class TdmRule:
    pattern: re.Pattern
    reserved: bool
    policy: str


def path_pattern(location: str) -> re.Pattern:
    """A path pattern as in robots.txt (``*`` any characters, a final ``$`` the end; a full
    URL stands for its path), matched from the start of ``resource_path``."""
    location = location.strip()[:MAX_PATTERN_CHARS]
    if "://" in location:  # a full URL: its path (and query) is the pattern
        parts = urlsplit(location)
        location = parts.path + (f"?{parts.query}" if parts.query else "")
    if not location.startswith(("/", "*")):
        location = "/" + location
    anchored = location.endswith("$")
    body = re.escape(location[:-1] if anchored else location).replace(r"\*", ".*")
    return re.compile(body + ("$" if anchored else ""), re.DOTALL)


class TdmRules:
    """One host's rules; ``problems`` counts entries that were not understood (skipped)."""

    def __init__(self, rules: list[TdmRule], problems: int = 0, readable: bool = True) -> None:
        self.rules, self.problems, self.readable = rules, problems, readable

    @classmethod
    def parse(cls, body: bytes) -> "TdmRules":
        """Rules of a tdmrep.json body; a file that is not JSON declares nothing (``readable`` false)."""
        try:
            data = json.loads(body.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return cls([], 0, readable=False)
        if isinstance(data, dict):  # a single declaration instead of the array
            data = [data]
        if not isinstance(data, list):
            return cls([], 0, readable=False)
        rules, problems = [], 0
        for entry in data[:MAX_RULES]:
            if not isinstance(entry, dict) or not isinstance(entry.get("location"), str):
                problems += 1
                continue
            reservation = entry.get("tdm-reservation")
            if reservation not in (0, 1, "0", "1", True, False):
                problems += 1
                reservation = 1 if str(reservation).strip().startswith("1") else 0
            policy = entry.get("tdm-policy")
            rules.append(TdmRule(path_pattern(entry["location"]), str(int(reservation)) == "1",
                                 policy if isinstance(policy, str) else ""))
        return cls(rules, problems + max(0, len(data) - MAX_RULES))

    def reservation(self, url: str) -> tuple[bool, str]:
        """(reserved, policy) for ``url``: reserved if any matching rule reserves it."""
        path = resource_path(url)
        reserved, policy = False, ""
        for rule in self.rules:
            if rule.pattern.match(path):
                if rule.reserved:
                    return True, rule.policy or policy
                policy = policy or rule.policy
        return reserved, policy


def resource_path(url: str) -> str:
    """What a ``path_pattern`` is matched against: the URL's path and query."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
