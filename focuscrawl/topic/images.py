"""Image scores from a topic bundle: P(on topic) of an image from its ALT (else title) and context.

Used by ``focuscrawl rank --topic`` (and the eval's ranking ablation) on a run's logged
texts, so a run is re-ranked under any bundle or scorer without recrawling.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from focuscrawl.corpus import CorpusEntry, fill_context
from focuscrawl.topic.model import TopicModel, sigmoid

#: how an image's parts are combined: both (mean log-odds), the description with the context
#: only as a fallback, description only, context only
PARTS = ("both", "fallback", "description", "context")


def image_logit(model: TopicModel, entry: CorpusEntry, scorer: str | None = None, parts: str = "both"
                ) -> float | None:
    description = entry.alt or entry.title
    if parts == "description":
        return model.logit(description, scorer) if description else None
    if parts == "fallback":
        return model.logit(description, scorer) if description and model.raw(description) is not None \
            else (model.logit(entry.context_text, scorer) if entry.context_text else None)
    if parts == "context":
        return model.logit(entry.context_text, scorer) if entry.context_text else None
    return model.image_logit(description, entry.context_text, scorer)


#: the entry score ``rescore`` keeps the crawl's final score (images.tsv's ``final_score``) in
THESIS_FINAL = "thesis_final"


def rescored_score_names(scorer: str) -> list[str]:
    """The score names ``rescore`` adds to every entry."""
    return [THESIS_FINAL, f"topic_{scorer}"]


def rescore(entries: Iterable[CorpusEntry], model: TopicModel, run_dir: str | Path, scorer: str | None = None,
            parts: str = "both") -> list[CorpusEntry]:
    """The entries with ``final_score`` = P(on topic) under ``model`` (``None``: no words to score),
    the crawl's (thesis) final score kept in ``scores["thesis_final"]``, the new one in
    ``scores["topic_<scorer>"]``."""
    entries = list(entries)
    fill_context(entries, run_dir)
    name = scorer or model.scorer
    thesis_name, topic_name = rescored_score_names(name)
    for entry in entries:
        value = image_logit(model, entry, name, parts)
        entry.scores[thesis_name] = entry.final_score
        entry.final_score = None if value is None else sigmoid(value)
        entry.scores[topic_name] = entry.final_score
    return entries


def item_logit(model: TopicModel, item, scorer: str | None = None) -> float | None:
    """Log-odds of a crawled ``ImageItem`` (or its dict): ALT (else title) and parent-1 (else
    parent-0) text, as ``rescore`` reads them from a run."""
    contexts = {(c.get("kind"), c.get("level")): c.get("text") or "" for c in item.get("contexts") or []}
    context = contexts.get(("parent", 1)) or contexts.get(("parent", 0)) or ""
    return model.image_logit(item.get("alt") or item.get("title") or "", context, scorer)
