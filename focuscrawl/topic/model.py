"""A topic bundle loaded for scoring: topicality of any text as a calibrated probability.

Every scorer gives a raw *topicality* (higher = more on topic) in its own units; the
bundle's ``calibration.json`` maps it to a log-odds ``a * raw + b`` (Platt scaling
fitted on held-out positive and neutral texts), so thresholds are probabilities and
mean the same with any model (a model whose perplexities are 10x higher gets other
``a, b`` and makes the same decisions).

Scorers (``SCORERS``):

* ``wpp``: ``-log10`` of SPEC's weighted perplexity ``PP * (1 - 3 kw)`` (clamped to 1);
* ``perplexity``: ``-log10 PP`` of the topic LM alone;
* ``keywords``: ``-log10 PP + 3 kw``: the keyword weighting in log space, which never
  collapses to a floor (SPEC's factor ``1 - 3 kw`` reaches 0 at kw = 1/3);
* ``xent``: Moore & Lewis (2010) cross-entropy difference, ``H_background - H_topic`` per
  token (log10): "more likely under the topic than under general English";
* ``classifier``: hashed word 1-2-gram logistic regression, positive vs neutral
  (``focuscrawl.topic.classifier``);
* ``combined``: the mean of the calibrated log-odds of ``xent`` and ``classifier``,
  calibrated again.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from focuscrawl.lm.keywords import KEYWORD_WEIGHT, KeywordList
from focuscrawl.text.normalize import text_tokens

BUNDLE_FILE = "bundle.json"
CALIBRATION_FILE = "calibration.json"
SCORERS = ("wpp", "perplexity", "keywords", "xent", "classifier", "combined")
#: chosen by the ablation in docs/EVALUATION.md
DEFAULT_SCORER = "combined"
COMBINED_PARTS = ("xent", "classifier")
LOGIT_LIMIT = 30.0  # probabilities are kept inside [sigmoid(-30), sigmoid(30)]


def sigmoid(x: float) -> float:
    x = max(-LOGIT_LIMIT, min(LOGIT_LIMIT, x))
    return 1.0 / (1.0 + math.exp(-x))


def logit(p: float) -> float:
    p = min(max(p, sigmoid(-LOGIT_LIMIT)), sigmoid(LOGIT_LIMIT))
    return math.log(p / (1.0 - p))


def raw_scores(topic_log10: float, background_log10: float, n: int, keyword_score: float,
               decision: float, keyword_weight: float = KEYWORD_WEIGHT) -> dict[str, float]:
    """The raw topicality of every scorer but ``combined`` from one text's sums.

    ``topic_log10``/``background_log10``: summed log10 probabilities of its sentences
    (with ``</s>``), ``n`` the scored tokens, ``decision`` the classifier's w·x + b.
    """
    log_pp = -topic_log10 / n
    weighted = (10.0 ** log_pp) * (1.0 - keyword_weight * keyword_score)
    return {"wpp": -math.log10(weighted) if weighted > 1.0 else 0.0,
            "perplexity": -log_pp,
            "keywords": -log_pp + keyword_weight * keyword_score,
            "xent": (topic_log10 - background_log10) / n,
            "classifier": decision}


def read_manifest(folder: str | Path) -> dict:
    """A bundle's ``bundle.json``, with a clear error for a folder that is not a bundle."""
    path = Path(folder) / BUNDLE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"not a topic bundle (no {BUNDLE_FILE}): {folder}")
    try:
        manifest = json.loads(path.read_text())
        for key in ("topic_lm", "background_lm", "keywords", "classifier"):
            manifest[key]
    except (ValueError, KeyError) as exc:
        raise ValueError(f"{path}: not a valid topic bundle manifest ({exc})") from None
    return manifest


class TopicModel:
    """A topic bundle folder, loaded: ``probability(text)``, ``logit(text)``, ``raw(text)``.

    Picklable (it pickles as its folder and reloads), so a process pool can score too.
    """

    def __init__(self, folder: str | Path, scorer: str = DEFAULT_SCORER, cache_size: int = 100_000) -> None:
        from focuscrawl.lm.scorer import load_kenlm
        from focuscrawl.topic.classifier import HashedNgramClassifier

        self.folder = Path(folder)
        if scorer not in SCORERS:
            raise ValueError(f"unknown topic scorer {scorer!r} (choose from {', '.join(SCORERS)})")
        self.scorer = scorer
        self.manifest = read_manifest(self.folder)
        self.calibration = json.loads((self.folder / CALIBRATION_FILE).read_text()) \
            if (self.folder / CALIBRATION_FILE).is_file() else {}
        self.topic_lm = load_kenlm(self.folder / self.manifest["topic_lm"])
        self.background_lm = load_kenlm(self.folder / self.manifest["background_lm"])
        self.keywords = KeywordList.load(self.folder / self.manifest["keywords"])
        self.classifier = HashedNgramClassifier.load(self.folder, self.manifest["classifier"])
        self.keyword_weight = float(self.manifest.get("keyword_weight", KEYWORD_WEIGHT))
        self._cache_size = cache_size
        self.raw = lru_cache(maxsize=cache_size)(self._raw)

    def __reduce__(self):
        return (TopicModel, (str(self.folder), self.scorer, self._cache_size))

    @property
    def topic_model_path(self) -> Path:
        return self.folder / self.manifest["topic_lm"]

    @property
    def keywords_path(self) -> Path:
        return self.folder / self.manifest["keywords"]

    # -- raw scores ----------------------------------------------------------------
    def _raw(self, text: str) -> dict[str, float] | None:
        """Raw topicality of every scorer (``None`` for a text without words)."""
        tokens = text_tokens(text or "")
        if not tokens:
            return None
        sentences = [" ".join(t) for t in tokens]
        n = sum(map(len, tokens)) + len(tokens)
        topic = sum(self.topic_lm.score(s, bos=True, eos=True) for s in sentences)
        background = sum(self.background_lm.score(s, bos=True, eos=True) for s in sentences)
        kw = self.keywords.score_tokens(t for toks in tokens for t in toks)
        decision = self.classifier.decision(" ".join(sentences))
        raw = raw_scores(topic, background, n, kw, decision, self.keyword_weight)
        raw["combined"] = sum(self.calibrated(name, raw[name]) for name in COMBINED_PARTS) / len(COMBINED_PARTS)
        return raw

    # -- calibrated ----------------------------------------------------------------
    def calibrated(self, scorer: str, raw: float) -> float:
        """Log-odds ``a * raw + b`` of a raw score (uncalibrated bundle: the raw score itself)."""
        cal = self.calibration.get("scorers", {}).get(scorer)
        if not cal:
            return raw
        return cal["a"] * raw + cal["b"]

    def logit(self, text: str, scorer: str | None = None) -> float | None:
        raw = self.raw(text)
        if raw is None:
            return None
        name = scorer or self.scorer
        return self.calibrated(name, raw[name])

    def probability(self, text: str, scorer: str | None = None) -> float | None:
        """P(on topic | text) under the bundle's calibration; ``None`` for a text without words."""
        value = self.logit(text, scorer)
        return None if value is None else sigmoid(value)

    def scores(self, text: str) -> dict[str, float] | None:
        """Every scorer's calibrated probability of ``text`` (for logs and ``explain``)."""
        raw = self.raw(text)
        if raw is None:
            return None
        return {name: sigmoid(self.calibrated(name, raw[name])) for name in SCORERS}

    # -- thresholds ------------------------------------------------------------------
    def threshold(self, name: str, scorer: str | None = None) -> float:
        """A scorer's probability threshold from ``calibration.json`` (``cut``, ``razor``)."""
        by_scorer = self.calibration.get("thresholds", {}).get(scorer or self.scorer, {})
        return float(by_scorer.get(name, DEFAULT_THRESHOLDS[name]))

    def image_logit(self, description: str | None, context: str | None, scorer: str | None = None
                    ) -> float | None:
        """Log-odds that an image is on topic from its description (ALT, else title) and its
        context: the mean of the parts' log-odds (the thesis's geometric mean of perplexities,
        in log-odds)."""
        parts = [v for v in (self.logit(description, scorer) if description else None,
                             self.logit(context, scorer) if context else None) if v is not None]
        if not parts:
            return None
        return sum(parts) / len(parts)


#: probability thresholds used when a bundle's calibration does not name them
DEFAULT_THRESHOLDS = {"cut": 0.5, "razor": 0.0}
