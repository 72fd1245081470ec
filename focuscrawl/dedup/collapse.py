"""Collapse near-duplicate image-text pairs of a ranking, keeping the best-scored one.

Two pairs are near-duplicates if their pictures are the same by perceptual hash
(Hamming distance ≤ ``image_max_distance``) or their context texts are near-identical
by SimHash (distance ≤ ``text_max_distance``). Rows are visited best first (lowest
final score); a row is dropped when it is a near-duplicate of a row already kept,
so every kept row is the best of the rows collapsed into it.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TypeVar

from focuscrawl.dedup.image_hash import IMAGE_MAX_DISTANCE, parse_image_hash
from focuscrawl.dedup.index import SimHashIndex
from focuscrawl.dedup.simhash import text_simhash

Row = TypeVar("Row", bound=Mapping)

TEXT_MAX_DISTANCE = 3


def _score(value: object) -> float:
    """A row's final score as a float; missing or unparsable scores rank last."""
    try:
        score = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(score) else score


def collapse_near_duplicates(
    rows: Iterable[Row],
    *,
    score_key: str = "final_score",
    image_hash_key: str | None = "image_phash",
    text_key: str | None = "context_text",
    image_max_distance: int = IMAGE_MAX_DISTANCE,
    text_max_distance: int = TEXT_MAX_DISTANCE,
    ngrams: str = "3+5",
) -> tuple[list[Row], int]:
    """Return ``(kept rows in ranking order, number of rows collapsed)``.

    ``row[image_hash_key]`` is a 64-bit perceptual hash (int or hex string, empty =
    unknown); ``row[text_key]`` is the raw context text (SimHash of its ``ngrams``).
    Pass ``None`` as a key to ignore that criterion. Ties in score keep input order.
    """
    ranked = sorted(enumerate(rows), key=lambda ir: (_score(ir[1].get(score_key)), ir[0]))
    images = SimHashIndex(image_max_distance, max(4, image_max_distance + 1), merge_threshold=256)
    texts = SimHashIndex(text_max_distance, max(4, text_max_distance + 1), merge_threshold=256)
    kept: list[Row] = []
    collapsed = 0
    for _, row in ranked:
        image_fp = parse_image_hash(row.get(image_hash_key)) if image_hash_key else None
        text = row.get(text_key) if text_key else None
        text_fp = text_simhash(text, ngrams) if isinstance(text, str) and text.strip() else None
        if (image_fp is not None and images.query(image_fp)) or (text_fp is not None and texts.query(text_fp)):
            collapsed += 1
            continue
        kept.append(row)
        if image_fp is not None:
            images.add(image_fp)
        if text_fp is not None:
            texts.add(text_fp)
    return kept, collapsed
