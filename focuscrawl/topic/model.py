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

import hashlib
import json
import math
from collections import OrderedDict
from functools import partial
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from focuscrawl.lm.keywords import KEYWORD_WEIGHT, KeywordList
from focuscrawl.resources import default_topic_path
from focuscrawl.text.language import UNKNOWN
from focuscrawl.text.normalize import text_tokens
from focuscrawl.urls import excerpt

if TYPE_CHECKING:
    from focuscrawl.lm.scorer import TextScore

BUNDLE_FILE = "bundle.json"
CALIBRATION_FILE = "calibration.json"
SCORERS = ("wpp", "perplexity", "keywords", "xent", "classifier", "combined")
#: chosen by the ablation in docs/EVALUATION.md
DEFAULT_SCORER = "combined"
COMBINED_PARTS = ("xent", "classifier")
LOGIT_LIMIT = 30.0  # probabilities are kept inside [sigmoid(-30), sigmoid(30)]
#: the held-out text kinds a calibration measures (sentences, ALT-like and anchor-like prefixes)
KINDS = ("sentence", "alt", "anchor")
#: the pseudo-pages whose log-odds a calibration's ``pages`` entry keeps (``topic.build.page_calibration``)
PAGE_SIDES = ("positive", "neutral", "general")
#: the files ``bundle.json`` names (the classifier's are in its own entry)
FILE_KEYS = ("topic_lm", "background_lm", "keywords")


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


def bundle_file(folder: str | Path, name: object) -> Path:
    """``name`` (from ``bundle.json``) as a path inside the bundle folder. A bundle is shared like
    a model: a name that leaves the folder (absolute, ``..``, a symlink to elsewhere) is refused,
    so that loading one never reads another file (nor shows a line of it in an error)."""
    root = Path(folder).resolve()
    if not isinstance(name, str) or not name or "\0" in name:
        raise ValueError(f"{folder}: not a valid topic bundle (a file name in {BUNDLE_FILE} is "
                         f"{excerpt(repr(name), 40)})")
    path = (root / name).resolve()
    if root not in path.parents:
        raise ValueError(f"{folder}: not a valid topic bundle ({BUNDLE_FILE} names {excerpt(name, 60)!r}, "
                         "which is outside the bundle folder: refused)")
    return path


#: The newest bundle format this code reads (``bundle.json``'s ``format``; ``topic build`` writes it).
BUNDLE_FORMAT = 1


def read_manifest(folder: str | Path) -> dict:
    """A bundle's ``bundle.json``, checked: every file it names is inside the folder (``bundle_file``);
    a clear error for a folder that is not a bundle."""
    path = Path(folder) / BUNDLE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"not a topic bundle (no {BUNDLE_FILE}): {folder}")
    bundle_file(folder, BUNDLE_FILE)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        names = [manifest[key] for key in FILE_KEYS]
        classifier = manifest["classifier"]
        names += [classifier["indices"], classifier["weights"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a valid topic bundle manifest ({type(exc).__name__}: "
                         f"{excerpt(str(exc), 80)})") from None
    for name in names:
        bundle_file(folder, name)
    version = manifest.get("format", BUNDLE_FORMAT)
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= BUNDLE_FORMAT:
        raise ValueError(f"{path}: a topic bundle of format {excerpt(repr(version), 20)}, this focuscrawl reads "
                         f"formats 1 to {BUNDLE_FORMAT}: rebuild it with `focuscrawl topic build` (or a newer focuscrawl)")
    for key in ("order", "background_order"):
        order = manifest.get(key, 2)  # (KenLM loads no unigram-only model: `topic build` refuses one)
        if isinstance(order, bool) or not isinstance(order, int) or order < 2:
            raise ValueError(f"{path}: not a valid topic bundle manifest ({key} is {excerpt(repr(order), 20)}, "
                             f"not an n-gram order of at least 2)")
    return manifest


def default_model_path() -> Path:
    """The bundled cats topic LM."""
    folder = default_topic_path()
    return folder / read_manifest(folder)["topic_lm"]


def default_keywords_path() -> Path:
    """The bundled cats keywords."""
    folder = default_topic_path()
    return folder / read_manifest(folder)["keywords"]


def bundle_language(bundle: str | Path | None) -> str:
    """The ``language`` a topic bundle's manifest records (``""``: none, or a bundle built
    without a language)."""
    if bundle is None:
        return UNKNOWN
    return str(read_manifest(bundle).get("language") or UNKNOWN)


def _number(value: object, what: str, where: str, low: float = -math.inf, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{where}: not a valid calibration ({what} is {excerpt(repr(value), 40)}, not a "
                         f"number{f' in [{low:g}, {high:g}]' if math.isfinite(low) else ''}); rebuild the "
                         "bundle with `focuscrawl topic build`")
    return float(value)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def check_calibration(calibration: object, where: str) -> dict:
    """A bundle's calibration with every value the scorers, thresholds and ``topic show`` read
    checked (finite numbers, probabilities in [0, 1], quantile lists of the right length);
    ``ValueError`` naming the first bad one (a list, strings, ``{}``, NaN...)."""
    def entry(parent: object, key: str, what: str, kind: type = dict):
        value = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(value, kind):
            raise ValueError(f"{where}: not a valid calibration ({what} missing or not a "
                             f"{'list' if kind is list else 'JSON object'}); rebuild the bundle with "
                             "`focuscrawl topic build`")
        return value

    levels = entry(calibration, "quantile_levels", "quantile_levels", list)
    for level in levels:
        _number(level, "a quantile level", where, 0.0, 1.0)
    scorers = entry(calibration, "scorers", "scorers")
    for name in SCORERS:
        cal = entry(scorers, name, f"scorer {name}")
        _number(cal.get("a"), f"{name} a", where)
        _number(cal.get("b"), f"{name} b", where)
        for kind in KINDS:
            _number(entry(cal, "average_precision", f"{name} average_precision").get(kind),
                    f"{name} average precision ({kind})", where, 0.0, 1.0)
            for side in ("positive", "neutral"):
                values = entry(entry(entry(cal, "quantiles", f"{name} quantiles"), side, f"{name} {side} quantiles"),
                               kind, f"{name} {side} {kind} quantiles", list)
                if len(values) != len(levels):
                    raise ValueError(f"{where}: not a valid calibration ({name} {side} {kind} quantiles: "
                                     f"{len(values)} values for {len(levels)} levels)")
                for value in values:
                    _number(value, f"a {name} quantile", where)
        limits = entry(entry(calibration, "thresholds", "thresholds"), name, f"{name} thresholds")
        for key in DEFAULT_THRESHOLDS:
            _number(limits.get(key), f"{name} threshold {key}", where, 0.0, 1.0)
    if "pages" in calibration:  # (a bundle built before pages were calibrated has none)
        pages = entry(entry(calibration, "pages", "pages"), "scorers", "pages scorers")
        for name in SCORERS:
            for side, values in entry(pages, name, f"pages {name}").items():
                if side not in PAGE_SIDES or not isinstance(values, list) or len(values) != len(levels):
                    raise ValueError(f"{where}: not a valid calibration (pages {name} {excerpt(str(side), 20)}: "
                                     f"not {len(levels)} quantiles of {'/'.join(PAGE_SIDES)} pages)")
                for value in values:
                    _number(value, f"a page quantile of {name}", where)
    return calibration


class TextMemo:
    """``function(text)`` remembered for up to ``size`` texts, a long text by its 16-byte digest:
    ``lru_cache`` keyed by the text itself held every page's whole text (~15 KB a real page,
    up to 100,000 of them in each analysis worker of a long crawl). The least recently used
    result is forgotten first, as ``lru_cache``'s (an ``OrderedDict``: O(1) both ways; a plain
    dict's first key is found past every key deleted before it)."""

    #: texts up to this many characters are their own key (a digest costs more than it saves)
    KEY_CHARS = 64

    def __init__(self, function: Callable[[str], Any], size: int) -> None:
        self.function = function
        self.size = max(1, size)
        self.results: OrderedDict[str | bytes, Any] = OrderedDict()

    def __call__(self, text: str, *args: Any) -> Any:
        """``function(text, *args)``, remembered by ``text`` (``args`` must follow from it)."""
        key = text if len(text) <= self.KEY_CHARS else \
            hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        try:
            value = self.results[key]
        except KeyError:
            value = self.function(text, *args)
            if len(self.results) >= self.size:
                self.results.popitem(last=False)
            self.results[key] = value
        else:
            self.results.move_to_end(key)
        return value

    def cache_clear(self) -> None:
        """Forget every result (``lru_cache``'s name: the calibration changed)."""
        self.results.clear()


class TopicModel:
    """A topic bundle folder, loaded: ``probability(text)``, ``logit(text)``, ``raw(text)``.

    Picklable (it pickles as its folder and reloads), so a process pool can score too.
    """

    def __init__(self, folder: str | Path, scorer: str = DEFAULT_SCORER, cache_size: int = 100_000,
                 calibrated: bool = True) -> None:
        from focuscrawl.lm.scorer import load_kenlm
        from focuscrawl.topic.classifier import HashedNgramClassifier

        self.folder = Path(folder)
        if scorer not in SCORERS:
            raise ValueError(f"unknown topic scorer {scorer!r} (choose from {', '.join(SCORERS)})")
        self.scorer = scorer
        self.manifest = read_manifest(self.folder)
        self.calibration = self._read_calibration() if calibrated else {}
        self.topic_lm = load_kenlm(self.folder / self.manifest["topic_lm"])
        self.background_lm = load_kenlm(self.folder / self.manifest["background_lm"])
        self.keywords = KeywordList.load(self.folder / self.manifest["keywords"])
        self.classifier = HashedNgramClassifier.load(self.folder, self.manifest["classifier"])
        self.keyword_weight = float(self.manifest.get("keyword_weight", KEYWORD_WEIGHT))
        self._cache_size = cache_size
        self.raw = TextMemo(self._raw, cache_size)
        self.page_raw = TextMemo(self._page_raw, cache_size)

    def _read_calibration(self) -> dict:
        """``calibration.json``, checked (``check_calibration``); a bundle without one is refused:
        its scores would be raw numbers read as log-odds."""
        path = self.folder / CALIBRATION_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{self.folder}: the topic bundle has no {CALIBRATION_FILE}; rebuild it "
                                    "with `focuscrawl topic build`")
        bundle_file(self.folder, CALIBRATION_FILE)
        try:
            calibration = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a valid calibration ({excerpt(str(exc), 80)})") from None
        return check_calibration(calibration, str(path))

    def __reduce__(self):
        return (TopicModel, (str(self.folder), self.scorer, self._cache_size))

    @property
    def topic_model_path(self) -> Path:
        return self.folder / self.manifest["topic_lm"]

    @property
    def keywords_path(self) -> Path:
        return self.folder / self.manifest["keywords"]

    def uses_files(self, model: str | Path, keywords: str | Path) -> bool:
        """A scorer of ``model`` and ``keywords`` scores with this bundle's topic LM and keyword
        list (the crawl's scorer with no ``FOCUSCRAWL_MODEL``/``FOCUSCRAWL_KEYWORDS``: its page
        scores are the judge's own, ``page_logit``'s ``known``)."""
        return (bool(model) and bool(keywords) and Path(model).resolve() == self.topic_model_path.resolve()
                and Path(keywords).resolve() == self.keywords_path.resolve())

    # -- raw scores ----------------------------------------------------------------
    def _raw(self, text: str) -> dict[str, float] | None:
        """Raw topicality of every scorer (``None`` for a text without words)."""
        tokens = text_tokens(text or "")
        return self._raw_of(list(map(" ".join, tokens)), list(chain.from_iterable(tokens))) if tokens else None

    def _page_raw(self, text: str, known: TextScore | None = None) -> dict[str, float] | None:
        """``_raw`` of normalised sentences joined by line breaks (``page_logit``'s key), read
        as they are: normalising them again gives the same tokens (tested for every code point)."""
        return self._raw_of(text.split("\n"), text.split(), known)

    def _raw_of(self, sentences: list[str], tokens: list[str], known: TextScore | None = None
                ) -> dict[str, float] | None:
        """Raw topicality of normalised ``sentences`` whose words, in order, are ``tokens``;
        ``known``: their summed topic-LM log10 and keyword score, already computed by a scorer
        with this bundle's topic LM and keywords (``page_logit``)."""
        if not tokens:
            return None
        n = len(tokens) + len(sentences)
        if known is not None:
            topic, kw = known.log10, known.keyword_score
        else:
            topic = sum(map(partial(self.topic_lm.score, bos=True, eos=True), sentences))
            kw = self.keywords.score_tokens(tokens)
        background = sum(map(partial(self.background_lm.score, bos=True, eos=True), sentences))
        decision = self.classifier.decision_tokens(tokens)
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

    def page_logit(self, sentences: list[str], scorer: str | None = None, known: TextScore | None = None
                   ) -> float | None:
        """``logit("\\n".join(sentences))`` of a page's normalised sentences (``analyse_page``'s,
        the judge of mode ``learning``), without normalising its text again (~0.1 ms a long page).
        ``known``: the crawl scorer's ``TextScore`` of the same sentences when the crawl scores
        with this bundle's topic LM and keywords (``uses_files``; the default): their log10 sum
        and keyword score are taken from it, not computed again (~60% of the judge on a long page)."""
        raw = self.page_raw("\n".join(sentences), known)
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

    def page_quantile(self, side: str, level: float, scorer: str | None = None) -> float | None:
        """The log-odds (``page_logit``) below which a ``level`` share of the bundle's held-out
        pseudo-pages of ``side`` (``PAGE_SIDES``) score, interpolated between the stored
        quantiles; ``None`` for a bundle without page calibration."""
        values = self.calibration.get("pages", {}).get("scorers", {}).get(scorer or self.scorer, {}).get(side)
        levels = self.calibration.get("quantile_levels")
        if not values or not levels:
            return None
        return float(np.interp(level, levels, values))

    def page_share_above(self, side: str, cut: float, scorer: str | None = None) -> float | None:
        """The share of the held-out pseudo-pages of ``side`` whose log-odds reach ``cut``
        (from the stored quantiles; ``None`` without them)."""
        values = self.calibration.get("pages", {}).get("scorers", {}).get(scorer or self.scorer, {}).get(side)
        levels = self.calibration.get("quantile_levels")
        if not values or not levels:
            return None
        return float(1.0 - np.interp(cut, values, levels, left=0.0, right=1.0))

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
