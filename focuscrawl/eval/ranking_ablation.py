"""Ranking ablation: how well each scorer ranks a crawl's images against the test web's truth.

A run is re-ranked under every scorer of a topic bundle without recrawling (the texts
are in the run directory). Per scorer: average precision of the whole ranking (images
without a score last), the share of the run's on-topic images the default cut keeps,
precision at N for N = the number of on-topic images found (the top-N share), and at
100/500. Baselines: SPEC's ranking (weighted perplexity ascending) with its cut [2, 70000]
and without a cut; the oracle (truth first) has AP 1.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from focuscrawl.corpus import CorpusEntry, iter_entries
from focuscrawl.ranking import DEFAULT_SCORE_MAX, DEFAULT_SCORE_MIN

PRECISION_AT = (100, 500)


def unique_entries(run_dir: str | Path, pages: set[str] | None = None) -> list[CorpusEntry]:
    """The run's images, one per URL (first seen), optionally only those of ``pages``."""
    seen: set[str] = set()
    result = []
    for e in sorted(iter_entries(run_dir, with_context=False), key=lambda e: e.first_seen):
        if e.image_url in seen or (pages is not None and e.page_url not in pages):
            continue
        seen.add(e.image_url)
        result.append(e)
    return result


def average_precision(labels: Sequence[bool], order: Sequence[int]) -> float | None:
    """AP of a ranking (``order``: indices best first) of binary ``labels``."""
    total = sum(labels)
    if not total:
        return None
    hits, ap = 0, 0.0
    for rank_no, i in enumerate(order, 1):
        if labels[i]:
            hits += 1
            ap += hits / rank_no
    return ap / total


def ranking_metrics(labels: Sequence[bool], scores: Sequence[float | None], keep: Callable[[float], bool],
                    higher_is_better: bool) -> dict:
    """AP over all images (unscored last, ties in crawl order), the cut's on-topic recall and
    the kept ranking's precision at N (N = on-topic images found: over the kept ones when
    fewer), 100 and 500 (None when fewer images were kept: P@500 of 61 images is no P@500)."""
    n = len(labels)
    sign = -1.0 if higher_is_better else 1.0
    order = sorted(range(n), key=lambda i: (scores[i] is None, sign * scores[i] if scores[i] is not None else 0, i))
    kept = [i for i in order if scores[i] is not None and keep(scores[i])]
    on_topic = sum(labels)

    def precision(k: int) -> float | None:
        top = kept[:k]
        return sum(labels[i] for i in top) / len(top) if top else None

    return {"images": n, "on_topic": on_topic, "average_precision": average_precision(labels, order),
            "kept": len(kept), "kept_on_topic": sum(labels[i] for i in kept),
            "kept_on_topic_share": sum(labels[i] for i in kept) / on_topic if on_topic else None,
            "top_n_share": precision(on_topic) if on_topic else None,
            **{f"p@{k}": precision(k) if len(kept) >= k else None for k in PRECISION_AT}}


def ablation(run_dir: str | Path, labels_of: Callable[[str], bool], bundle: str | Path | None,
             scorers: Sequence[str] | None = None, pages: set[str] | None = None,
             parts: Sequence[str] = ("both",)) -> dict[str, dict]:
    """``{name: ranking_metrics}`` for SPEC's ranking (with and without its cut) and, with a
    bundle, each scorer (cut at the bundle's calibrated probability) and image-part rule."""
    entries = unique_entries(run_dir, pages)
    labels = [labels_of(e.image_url) for e in entries]
    thesis = [e.final_score for e in entries]
    rows = {"thesis (SPEC cut)": ranking_metrics(labels, thesis, lambda s: DEFAULT_SCORE_MIN <= s <= DEFAULT_SCORE_MAX,
                                                 False),
            "thesis (no cut)": ranking_metrics(labels, thesis, lambda s: True, False)}
    if bundle is None:
        return rows
    from focuscrawl.topic.images import image_logit
    from focuscrawl.topic.model import SCORERS, TopicModel, sigmoid
    from focuscrawl.corpus import fill_context

    model = TopicModel(bundle)
    entries = [copy.copy(e) for e in entries]
    fill_context(entries, run_dir)
    cut = model.threshold("cut")
    for scorer in scorers or SCORERS:
        for part in parts:
            logits = [image_logit(model, e, scorer, part) for e in entries]
            probs = [None if v is None else sigmoid(v) for v in logits]
            name = scorer if part == "both" else f"{scorer} ({part} only)"
            rows[name] = ranking_metrics(labels, probs, lambda p: p >= cut, True) | {"cut": cut}
    return rows


def summarize(results: Sequence[dict[str, dict]]) -> dict[str, dict]:
    """Mean and spread (min, max) of each metric per ranking over several runs."""
    names = [n for n in results[0]] if results else []
    keys = ("average_precision", "kept_on_topic_share", "top_n_share", "p@100", "p@500")
    out = {}
    for name in names:
        row = {}
        for k in keys:
            vals = [r[name][k] for r in results if name in r and r[name].get(k) is not None]
            if vals:
                row[k] = {"mean": float(np.mean(vals)), "min": float(min(vals)), "max": float(max(vals)), "n": len(vals)}
        out[name] = row
    return out
