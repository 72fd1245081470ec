"""Collapse near-duplicate image-text pairs of a ranking, keeping the best-scored one.

Two pairs are near-duplicates if their pictures are the same by perceptual hash
(Hamming distance ≤ ``image_max_distance``) or their context texts are near-identical
by SimHash (distance ≤ ``text_max_distance``). Rows are visited best first (lowest
final score); a row is dropped when it is a near-duplicate of a row already kept,
so every kept row is the best of the rows collapsed into it.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from focuscrawl.dedup.image_hash import IMAGE_MAX_DISTANCE, parse_image_hash
from focuscrawl.dedup.index import SimHashIndex
from focuscrawl.dedup.simhash import text_simhash


Row = TypeVar("Row")

TEXT_MAX_DISTANCE = 3


def _score(value: object) -> float:
    """A row's final score as a float; missing or unparsable scores rank last."""
    try:
        score = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(score) else score


def _getter(key: str) -> Callable[[Any], Any]:
    return lambda row: row.get(key) if isinstance(row, Mapping) else getattr(row, key, None)


def collapse_near_duplicates(
    rows: Iterable[Row],
    *,
    score: Callable[[Row], Any] = _getter("final_score"),
    image_hash: Callable[[Row], int | str | None] | None = _getter("image_phash"),
    text: Callable[[Row], str | None] | None = _getter("context_text"),
    image_max_distance: int = IMAGE_MAX_DISTANCE,
    text_max_distance: int = TEXT_MAX_DISTANCE,
    ngrams: str = "3+5",
    limit: int | None = None,
) -> tuple[list[Row], int]:
    """Return ``(kept rows, best first, number of rows collapsed)``.

    ``score(row)``: the final score (lower is better; missing ranks last).
    ``image_hash(row)``: a 64-bit perceptual hash, int or hex string (None/'' = unknown).
    ``text(row)``: the raw context text, compared by the SimHash of its ``ngrams``.
    The defaults read ``final_score``, ``image_phash`` and ``context_text`` from a
    mapping or an object; pass ``None`` to ignore a criterion. Ties keep input order.
    ``limit``: stop once that many rows are kept (a top N needs no more; the hashes of the
    rows after it are never computed, and their duplicates are not counted).
    """
    ranked = sorted(enumerate(rows), key=lambda ir: (_score(score(ir[1])), ir[0]))
    images = SimHashIndex(image_max_distance, max(4, image_max_distance + 1), merge_threshold=256)
    texts = SimHashIndex(text_max_distance, max(4, text_max_distance + 1), merge_threshold=256)
    kept: list[Row] = []
    collapsed = 0
    for _, row in ranked:
        if limit is not None and len(kept) >= limit:
            break
        image_fp = parse_image_hash(image_hash(row)) if image_hash else None
        context = text(row) if text else None
        text_fp = text_simhash(context, ngrams) if isinstance(context, str) and context.strip() else None
        if (image_fp is not None and images.query(image_fp)) or (text_fp is not None and texts.query(text_fp)):
            collapsed += 1
            continue
        kept.append(row)
        if image_fp is not None:
            images.add(image_fp)
        if text_fp is not None:
            texts.add(text_fp)
    return kept, collapsed
