"""The final image score (SPEC §6): geometric mean of ALT and parent-1 weighted perplexity.

Fallbacks **(choice)**: the description is the ALT text's weighted PP, else the
title's (an image may have only a title); the context is parent-1, else parent-0.
With both, the score is their geometric mean; with one, that one alone; with
neither, no score. The label says which were used, e.g. ``alt+parent-1``.

``context_name`` (setting ``FOCUSCRAWL_IMAGE_FINAL_CONTEXT``) other than ``"thesis"``
takes the context from ``extra_contexts[context_name]`` instead of parent-1 (label e.g.
``alt+clus``); when that text has no perplexity (empty) the thesis parents stand in.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence


def _weighted(scores: Mapping[str, Any] | None) -> float | None:
    if not scores:
        return None
    value = scores.get("weighted")
    return float(value) if value is not None else None


def _parent(contexts: Sequence[Mapping[str, Any]] | None, level: int) -> float | None:
    for c in contexts or ():
        if c.get("kind") == "parent" and c.get("level") == level:
            return _weighted(c.get("scores"))
    return None


FINAL_CONTEXT_THESIS = "thesis"


def final_score(alt_scores: Mapping[str, Any] | None, title_scores: Mapping[str, Any] | None,
                contexts: Sequence[Mapping[str, Any]] | None,
                extra_contexts: Mapping[str, Mapping[str, Any]] | None = None,
                context_name: str = FINAL_CONTEXT_THESIS) -> tuple[float | None, str | None]:
    """``(score, label)`` of one image sighting; ``(None, None)`` when nothing is scored."""
    parts: list[tuple[str, float]] = []
    for name, value in (("alt", _weighted(alt_scores)), ("title", _weighted(title_scores))):
        if value is not None:
            parts.append((name, value))
            break
    if context_name != FINAL_CONTEXT_THESIS:
        value = _weighted(((extra_contexts or {}).get(context_name) or {}).get("scores"))
        if value is not None:
            parts.append((context_name, value))
            return math.prod(v for _, v in parts) ** (1.0 / len(parts)), "+".join(n for n, _ in parts)
    for level in (1, 0):
        value = _parent(contexts, level)
        if value is not None:
            parts.append((f"parent-{level}", value))
            break
    if not parts:
        return None, None
    score = math.prod(v for _, v in parts) ** (1.0 / len(parts))
    return score, "+".join(name for name, _ in parts)
