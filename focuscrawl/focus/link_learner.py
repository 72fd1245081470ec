"""Online link learning for crawl mode ``learning`` (after ACHE's online link classifier).

The link that led to each judged page is a training example for a logistic model on hashed
link features (``SGDClassifier.partial_fit``: constant memory, no vocabulary). A link's score
blends the model with a prior from the thesis's link score and the target host's harvest,
and is trusted only as far as it has ranked the recent judged links better than the thesis's
score did, so the crawl keeps the thesis's order where that already finds the topic. Pure
and deterministic; ``version`` grows with every update so a frontier can re-rank. The
method: docs/CRAWL.md "Mode learning".
"""
from __future__ import annotations

import math
import pickle
import re
import sys
from array import array
from bisect import bisect_left
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from operator import mul
from pathlib import Path
from typing import Iterable, Sequence

import mmh3
import numpy as np

from focuscrawl import settings as defaults
from focuscrawl.output.files import atomic_write_bytes, job_state_dir

_WORD = re.compile(r"[a-z0-9]+")
#: learned scores in [0, 1] map to Scrapy priorities 0 .. PRIORITY_STEPS (seeds above)
PRIORITY_STEPS = 1_000  # Scrapy keeps one queue per priority: few distinct values


def _bin(value: float | None, edges: Sequence[float]) -> str:
    """How many of the (ascending) ``edges`` ``value`` exceeds, as a token."""
    if value is None:
        return "none"
    return str(bisect_left(edges, value))


TOPICALITY_EDGES = (0.1, 0.3, 0.5, 0.7, 0.9)


#: The feature groups of ``link_features`` and their token prefixes (``FOCUSCRAWL_LEARNING_FEATURES``);
#: ``context``: the words around the anchor in its block, ``block``: the block's kind (tag, id,
#: class: ``ul.nav``; both ``focuscrawl.analysis.LinkContext``).
FEATURE_GROUPS = {"anchor": "a", "url": "u", "host": "x", "parent": "p", "grandparent": "g", "thesis": "t",
                  "context": "c", "block": "k"}
#: Groups that are terms of the learner's score, not tokens (``FOCUSCRAWL_LEARNING_FEATURES``):
#: ``siblings``, the judged outcomes of the links already followed from the same page and
#: block (``LinkLearner.sibling_shift``); ``hubs``, delayed labels: a link to an off-topic
#: page that led on to an on-topic one becomes a positive example (``LinkLearner.observe``).
LEARNER_TERMS = ("siblings", "hubs")


def feature_prefixes(groups: list[str]) -> frozenset[str]:
    """The token prefixes of the named feature groups (an ablation leaves groups out)."""
    unknown = sorted(set(groups) - set(FEATURE_GROUPS) - set(LEARNER_TERMS))
    if unknown:
        raise ValueError(f"FOCUSCRAWL_LEARNING_FEATURES: unknown group(s) {', '.join(unknown)}; "
                         f"choose from {', '.join([*FEATURE_GROUPS, *LEARNER_TERMS])}")
    return frozenset(FEATURE_GROUPS[g] for g in groups if g in FEATURE_GROUPS)


def link_features(anchor: str, url: str, parent_url: str, parent_topicality: float | None,
                  grandparent_topicality: float | None, thesis_score: float | None,
                  prefixes: frozenset[str] | None = None, context: str = "", block: str = "") -> list[str]:
    """The tokens the model sees for one link (also logged in ``links.tsv``); only the
    groups with ``prefixes`` when given. ``context``: the words around the anchor,
    ``block``: the kind of its block."""
    feats = _all_features(anchor, url, parent_url, parent_topicality, grandparent_topicality, thesis_score, context,
                          block)
    if prefixes is None or prefixes >= _ALL_PREFIXES or (not context and not block and prefixes >= _BASE_PREFIXES):
        return feats
    return [f for f in feats if f.split(":", 1)[0] in prefixes]


_ALL_PREFIXES = frozenset(FEATURE_GROUPS.values())
#: the prefixes of the groups every link has (``context`` and ``block`` only with a ``LinkContext``)
_BASE_PREFIXES = _ALL_PREFIXES - {FEATURE_GROUPS["context"], FEATURE_GROUPS["block"]}


def _words(text: str) -> list[str]:
    """Lower-cased words of a URL or text, without one-letter words and numbers."""
    return [w for w in _WORD.findall(text.lower()) if len(w) > 1 and not w.isdigit()]


def _all_features(anchor: str, url: str, parent_url: str, parent_topicality: float | None,
                  grandparent_topicality: float | None, thesis_score: float | None,
                  context: str = "", block: str = "") -> list[str]:
    feats = list(_anchor_tokens(anchor))
    feats += [f"u:{w}" for w in _words(url.split("://", 1)[-1])]
    if context:
        feats += [f"c:{w}" for w in dict.fromkeys(_words(context))]
    if block:
        feats.append(f"k:{block}")
    parent_host, parent_tokens = _page_tokens(parent_url, parent_topicality, grandparent_topicality)
    feats.append("x:same-host" if url_host(url) == parent_host else "x:other-host")
    feats += parent_tokens
    if thesis_score is not None:  # decades of the thesis's perplexity-like score
        feats.append(f"t:{min(8, int(math.log10(max(thesis_score, 1.0)) * 2))}")
    return feats


@lru_cache(maxsize=4096)
def _anchor_tokens(anchor: str) -> tuple[str, ...]:
    """An anchor's tokens (navigation anchors repeat on every page of a site)."""
    return tuple(f"a:{w}" for w in _WORD.findall(anchor.lower())) or ("a:<none>",)


@lru_cache(maxsize=256)
def _page_tokens(parent_url: str, parent_topicality: float | None,
                 grandparent_topicality: float | None) -> tuple[str, tuple[str, str]]:
    """The host and the tokens every link of one page shares (its ~20 links in a row)."""
    return url_host(parent_url), (f"p:{_bin(parent_topicality, TOPICALITY_EDGES)}",
                                  f"g:{_bin(grandparent_topicality, TOPICALITY_EDGES)}")


def url_host(url: str) -> str:
    """The lower-cased host of an absolute URL, without user, password and port (an IPv6
    literal without its brackets): ``urlsplit(url).hostname``, cheaply (every new link and
    every re-ranked request)."""
    netloc = url.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1]
    if netloc.startswith("["):
        end = netloc.find("]")
        return (netloc[1:end] if end > 0 else netloc[1:]).lower()
    return netloc.split(":", 1)[0].lower()


def prior_probability(thesis_score: float | None, reference: float) -> float:
    """A monotone map of the thesis's link score (lower = better) to (0, 1)."""
    if thesis_score is None:
        return 0.5
    return reference / (reference + max(thesis_score, 0.0))


@dataclass
class HostHarvest:
    """Pages judged and on-topic pages per host, with a Beta prior and a UCB bonus."""

    prior_on: float = 0.5
    prior_off: float = 2.0
    exploration: float = defaults.FOCUSCRAWL_LEARNING_EXPLORATION
    judged: dict[str, int] = field(default_factory=dict)
    on_topic: dict[str, int] = field(default_factory=dict)
    total: int = 0

    def add(self, host: str, on_topic: bool) -> None:
        self.judged[host] = self.judged.get(host, 0) + 1
        self.on_topic[host] = self.on_topic.get(host, 0) + int(on_topic)
        self.total += 1

    def score(self, host: str) -> float:
        """Posterior mean plus ``exploration * sqrt(ln(N + 1) / (n + 1))``, in (0, 1)."""
        n, k = self.judged.get(host, 0), self.on_topic.get(host, 0)
        mean = (k + self.prior_on) / (n + self.prior_on + self.prior_off)
        bonus = self.exploration * math.sqrt(math.log(self.total + 1) / (n + 1))
        return min(0.99, mean + bonus)


@contextmanager
def _pandas_unimportable():
    """While scikit-learn is imported: pandas cannot be (``None`` in ``sys.modules``, Python's
    way to block an import). scikit-learn imports pandas when it is installed (the project
    needs it elsewhere), for DataFrame input, and works without it; the learner gives it
    arrays only. Kept for the crawl process's memory and start-up (measured by
    benchmarks/learner_update.py); ``tests/test_link_learning.py`` pins that scikit-learn
    still imports pandas. An interpreter that has pandas already keeps it."""
    if "pandas" in sys.modules:
        yield
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("pandas", False) is None:
            del sys.modules["pandas"]


_threadpools = None


def _one_thread():
    """A context in which BLAS/OpenMP use one thread (threadpoolctl, a scikit-learn dependency)."""
    global _threadpools
    if _threadpools is None:
        from threadpoolctl import ThreadpoolController

        _threadpools = ThreadpoolController()
    return _threadpools.limit(limits=1)


_CLASSES = np.array([0, 1])


def _tokens(features: list[str]) -> list[str]:
    """The analyzer: a link's features are its tokens (module-level: the learner pickles)."""
    return features


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``values``, ties given their average (``scipy.stats.rankdata``'s default,
    without its ~0.2 ms of checks and conversions a call: the trust is measured at every
    model update)."""
    order = np.argsort(values, kind="mergesort")
    inverse = np.empty(len(order), dtype=np.intp)
    inverse[order] = np.arange(len(order))
    ordered = values[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    dense = np.cumsum(first)[inverse]
    bounds = np.concatenate((np.flatnonzero(first), [len(first)]))
    return 0.5 * (bounds[dense] + bounds[dense - 1] + 1)


def ranking_auc(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """Area under the ROC curve (Mann-Whitney, ties count half); ``None`` with one class only."""
    labels = np.asarray(labels, dtype=bool)
    positives = int(np.count_nonzero(labels))
    negatives = len(labels) - positives
    if not positives or not negatives:
        return None
    ranks = average_ranks(np.asarray(scores, dtype=np.float64))
    # ranks are multiples of 1/2 far below 2^52: their sum is exact in any order
    rank_sum = float(ranks[labels].sum())
    return float((rank_sum - positives * (positives + 1) / 2) / (positives * negatives))


def trust_from_auc(learned_auc: float | None, thesis_auc: float | None, previous: float) -> float:
    """The learned score's weight: its ranking skill above chance as a share of both scores'
    (``previous`` while either AUC is unknown; one half when neither ranks better than chance)."""
    if learned_auc is None or thesis_auc is None:
        return previous
    learned, thesis = max(learned_auc - 0.5, 0.0), max(thesis_auc - 0.5, 0.0)
    return learned / (learned + thesis) if learned + thesis > 0 else 0.5


#: FOCUSCRAWL_LEARNING_TRUST_RULE: ``trust_from_auc`` or ``best_blend_trust``
TRUST_RULES = ("auc-share", "best-blend")
#: the blend weights ``best_blend_trust`` tries
BLEND_GRID = tuple(i / 10 for i in range(11))


def best_blend_trust(thesis: Sequence[float], learned: Sequence[float], labels: Sequence[int],
                     previous: float) -> float:
    """The learned score's weight whose blend ``w`` x learned + (1 - w) x thesis (log-odds)
    ranked the judged links best (AUC; of equal ones the nearest to ``previous``, which
    stays while the links hold one class only)."""
    if not any(labels) or all(labels):
        return previous
    t, l = np.asarray(thesis, dtype=float), np.asarray(learned, dtype=float)
    best = max(BLEND_GRID, key=lambda w: (ranking_auc(t + w * (l - t), labels), -abs(w - previous)))
    return best


#: pages and blocks whose siblings are counted, off-topic pages kept as possible hubs: the
#: oldest are forgotten first beyond this many (bounded memory on a long crawl)
MAX_REMEMBERED = 200_000


def _bounded_put(d: dict, key, value):
    """``d[key] = value``, first forgetting ``d``'s oldest key when it holds ``MAX_REMEMBERED``."""
    if len(d) >= MAX_REMEMBERED:
        del d[next(iter(d))]
    d[key] = value
    return value


#: the learner's state for the ``siblings`` and ``hubs`` terms (``save`` leaves it out while empty)
_TERM_STATE = ("sibling_weight", "sibling_pages", "sibling_blocks", "hubs", "hub_candidates", "hub_examples")


class LinkLearner:
    """The online model, host harvests and the score of a link (docs/CRAWL.md "Mode learning")."""

    def __init__(self, retrain_every: int = defaults.FOCUSCRAWL_LEARNING_RETRAIN_EVERY, n_features: int = 2 ** 16,
                 alpha: float = 1e-4, prior_pages: int = defaults.FOCUSCRAWL_LEARNING_PRIOR_PAGES,
                 prior_reference: float = defaults.FOCUSCRAWL_LEARNING_PRIOR_PP,
                 host_weight: float = defaults.FOCUSCRAWL_LEARNING_HOST_WEIGHT,
                 host_prior: tuple[float, float] = (0.5, 2.0),
                 exploration: float = defaults.FOCUSCRAWL_LEARNING_EXPLORATION,
                 trust_window: int = defaults.FOCUSCRAWL_LEARNING_TRUST_WINDOW,
                 trust_rule: str = defaults.FOCUSCRAWL_LEARNING_TRUST_RULE,
                 thesis_steps_per_decade: int = defaults.FOCUSCRAWL_PRIORITY_STEPS_PER_DECADE,
                 random_state: int = 0, siblings: bool = False, hubs: bool = False,
                 sibling_weight: float = defaults.FOCUSCRAWL_LEARNING_SIBLING_WEIGHT) -> None:
        from scipy.sparse import csr_matrix  # imported with the model, not at the first update

        with _pandas_unimportable():
            from sklearn import config_context
            from sklearn.feature_extraction.text import HashingVectorizer
            from sklearn.linear_model import SGDClassifier

        self._csr_matrix, self._sklearn_config = csr_matrix, config_context
        # scikit-learn and SciPy add ~100 MB of long-lived objects: frozen with the rest of the
        # heap at spider_opened (focuscrawl.extensions.collector)

        self.vectorizer = HashingVectorizer(analyzer=_tokens, n_features=n_features,
                                            alternate_sign=False, norm="l2")
        self.model = SGDClassifier(loss="log_loss", alpha=alpha, random_state=random_state)
        self.retrain_every = max(1, retrain_every)
        self.prior_pages = prior_pages
        self.prior_reference = prior_reference
        self.host_weight = host_weight
        self.hosts = HostHarvest(host_prior[0], host_prior[1], exploration)
        self.n_features = n_features
        self.batch: list[tuple[list[str], int]] = []
        self.positives = self.negatives = 0
        self.trained = False
        self.version = 0
        self._index: dict[str, int] = {}  # token -> hashed column (anchors and URL words repeat)
        #: the model's coefficients as a ``memoryview`` of ``coef_`` (a list in a save): item
        #: access as fast as a list's, without copying 65,536 floats at every update (~0.9 ms)
        self._coef: Sequence[float] = []
        self._intercept = 0.0
        self._host_cache: tuple = (-1, {}, 0.0)
        self._thesis_logits: dict[float | None, float] = {}  # thesis score -> _thesis_logit (scores repeat)
        #: (thesis log-odds, learned log-odds, on topic) of recently judged links, scored before
        #: they taught anything; ``trust`` is the learned score's weight (docs/CRAWL.md "Mode learning", step 4)
        self.judged_scores: deque = deque(maxlen=max(1, trust_window))
        self.trust = 0.0
        self.trust_rule = trust_rule
        #: the thesis's score in the steps of the keywords mode's priorities, so that with
        #: no trust the crawl is in the keywords mode's order (FIFO among equal steps)
        self.thesis_steps_per_decade = thesis_steps_per_decade
        #: ``siblings``: judged / on-topic children per page and per (page, block) (``sibling_shift``)
        self.sibling_weight = sibling_weight if siblings else 0.0
        self.sibling_pages: dict[str, list[int]] = {}
        self.sibling_blocks: dict[tuple[str, int], list[int]] = {}
        #: ``hubs``: off-topic pages not yet credited, with the vector and thesis score of the
        #: link that led to each; ``hub_examples`` counts the delayed positive examples
        self.hubs = hubs
        self.hub_candidates: dict[str, tuple] = {}
        self.hub_examples = 0

    #: tokens whose column ``_column`` remembers before it starts again: URL words are mostly
    #: new (ids, slugs), and a million of them held ~120 MB of a 50,000-page crawl's PSS, while
    #: hashing one again costs ~0.2 us
    TOKEN_MEMO_SIZE = 100_000

    def _column(self, token: str) -> int:
        """The ``HashingVectorizer``'s column of ``token``: ``|murmurhash3_32(utf-8)| mod n_features``
        (``mmh3.hash`` is scikit-learn's signed hash; ``transform`` costs ~0.4 ms per new token,
        and a real crawl meets new URL words on every page)."""
        col = self._index.get(token)
        if col is None:
            if len(self._index) >= self.TOKEN_MEMO_SIZE:  # bounded memory on a long crawl
                self._index.clear()
            col = self._index[token] = abs(mmh3.hash(token)) % self.n_features
        return col

    def vector(self, features: list[str]) -> tuple[array, array]:
        """The ``HashingVectorizer`` row of ``features`` (counts, L2-normalised): columns and
        values as two compact arrays (a request keeps it in its meta: few objects per request)."""
        index, counts = self._index, {}
        for token in features:
            col = index.get(token)
            if col is None:
                col = self._column(token)
            counts[col] = counts.get(col, 0) + 1
        if len(counts) == len(features):  # the usual case, every count 1: the same values, made faster
            return array("l", counts), array("d", (1 / (math.sqrt(len(counts)) or 1.0),)) * len(counts)
        norm = math.sqrt(sum(c * c for c in counts.values())) or 1.0
        return array("l", counts), array("d", [c / norm for c in counts.values()])

    def _matrix(self, vectors: list[tuple[array, array]]):
        indptr, indices, data = [0], [], []
        for cols, vals in vectors:
            indices += cols
            data += vals
            indptr.append(len(indices))
        return self._csr_matrix((data, indices, indptr), shape=(len(vectors), self.n_features))

    # -- learning -----------------------------------------------------------------------
    def observe(self, features: list[str] | None, host: str, on_topic: bool, vector=None,
                thesis_score: float | None = None, *, url: str = "",
                origin: tuple[str, int] | None = None) -> bool:
        """A judged page: ``features`` (or their ``vector``) and ``thesis_score`` of the link
        that led to it (no link for a seed), the page's ``url`` and the link's ``origin``
        (the page and block it was found in). Returns True when the model was updated
        (``version`` grew)."""
        if vector is None and features is None:
            self.hosts.add(host, on_topic)
            return False
        vector = vector if vector is not None else self.vector(features)
        self.judged_scores.append((self._thesis_logit(thesis_score),
                                   self._learned_logit(vector, thesis_score, host, origin=origin), int(on_topic)))
        self.hosts.add(host, on_topic)
        if self.sibling_weight and origin is not None:
            for counts, key in ((self.sibling_pages, origin[0]), (self.sibling_blocks, origin)):
                seen = counts.get(key) or _bounded_put(counts, key, [0, 0])
                seen[0] += 1
                seen[1] += int(on_topic)
        self._example(vector, on_topic)
        if self.hubs:
            self._delayed_label(vector, thesis_score, url, on_topic, origin)
        if len(self.batch) >= self.retrain_every:
            return self.update()
        return False

    def _example(self, vector, on_topic: bool) -> None:
        self.batch.append((vector, int(on_topic)))
        if on_topic:
            self.positives += 1
        else:
            self.negatives += 1

    def _delayed_label(self, vector, thesis_score: float | None, url: str, on_topic: bool,
                       origin: tuple[str, int] | None) -> None:
        """ACHE's delayed label: an off-topic page is a hub once a page linked from it is
        judged on topic; the link that led to the hub then teaches the model a positive
        example (its anchor, URL and host lead toward the topic), once."""
        if on_topic and origin is not None:
            hub = self.hub_candidates.pop(origin[0], None)
            if hub is not None:
                self._example(hub, True)
                self.hub_examples += 1
        elif not on_topic and url:
            _bounded_put(self.hub_candidates, url, vector)

    def update(self) -> bool:
        """``partial_fit`` on the pending examples, classes weighted by their counts so far."""
        if not self.batch:
            return False
        X = self._matrix([f for f, _ in self.batch])
        y = np.array([label for _, label in self.batch])
        total = self.positives + self.negatives
        weight = {1: total / (2.0 * max(self.positives, 1)), 0: total / (2.0 * max(self.negatives, 1))}
        # one OpenMP thread (on a loaded machine 2 ms per update instead of 30); our own inputs
        # need no parameter or finiteness checks (another 3 ms)
        with _one_thread(), self._sklearn_config(skip_parameter_validation=True, assume_finite=True):
            self.model.partial_fit(X, y, classes=_CLASSES, sample_weight=np.array([weight[v] for v in y]))
        self.batch.clear()
        self._coef = memoryview(self.model.coef_[0])  # Python floats, ~5x faster than numpy scalars
        self._intercept = float(self.model.intercept_[0])
        self.trained = True
        self.trust = self._measured_trust()
        self.version += 1
        return True

    def _measured_trust(self) -> float:
        # one pass in C over the window's (thesis, learned, label) triples, not zip's 6,000 objects
        judged = np.fromiter(chain.from_iterable(self.judged_scores), dtype=np.float64,
                             count=3 * len(self.judged_scores)).reshape(-1, 3)
        thesis, learned, labels = judged[:, 0], judged[:, 1], judged[:, 2].astype(np.int64)
        if self.trust_rule == "best-blend":
            return best_blend_trust(thesis, learned, labels, self.trust)
        return trust_from_auc(ranking_auc(learned, labels), ranking_auc(thesis, labels), self.trust)

    # -- scoring ------------------------------------------------------------------------
    def model_probability(self, features: list[str] | None, vector=None) -> float | None:
        """The model's P(target on topic), ``None`` before the first update."""
        if not self.trained:
            return None
        cols, vals = vector if vector is not None else self.vector(features)  # predict_proba: ~0.3 ms a link
        z = self._intercept + sum(map(mul, map(self._coef.__getitem__, cols), vals))
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def model_probabilities(self, vectors: Sequence[tuple[array, array]]) -> list[float] | None:
        """``model_probability`` of many vectors, the same values: the dot products in a few
        numpy passes (a padded matrix summed column by column, in the order the single link's
        ``sum`` adds; a frontier's re-rank scores hundreds of links at once)."""
        if not self.trained:
            return None
        lengths = np.fromiter(map(len, (cols for cols, _ in vectors)), dtype=np.int64, count=len(vectors))
        total = int(lengths.sum())
        cols = np.fromiter(chain.from_iterable(cols for cols, _ in vectors), dtype=np.int64, count=total)
        vals = np.fromiter(chain.from_iterable(vals for _, vals in vectors), dtype=np.float64, count=total)
        rows = np.repeat(np.arange(len(vectors)), lengths)
        starts = np.cumsum(lengths) - lengths
        terms = np.zeros((len(vectors), int(lengths.max(initial=0))))
        terms[rows, np.arange(total) - np.repeat(starts, lengths)] = np.asarray(self._coef)[cols] * vals
        z = np.zeros(len(vectors))
        for column in terms.T:  # x + 0.0 == x: the padding changes no sum
            z += column
        exp = math.exp
        return [1.0 / (1.0 + exp(-max(-50.0, min(50.0, self._intercept + s)))) for s in z.tolist()]

    def link_probability(self, features: list[str] | None, thesis_score: float | None, vector=None,
                         model_p: float | None = None) -> float:
        """Model probability (``model_p`` if known) blended with the thesis prior while few
        positives are known."""
        prior = prior_probability(thesis_score, self.prior_reference)
        p = self.model_probability(features, vector) if model_p is None else model_p
        if p is None:
            return prior
        w = self.positives / (self.positives + self.prior_pages)
        return w * p + (1 - w) * prior

    def score(self, features: list[str] | None, thesis_score: float | None, host: str, vector=None,
              origin: tuple[str, int] | None = None, model_p: float | None = None) -> float:
        """The link's score in (0, 1): the learned score (link probability shifted by the
        host's harvest and, with ``siblings``, by its ``origin``'s) blended with the thesis
        prior by ``trust`` in log-odds (``vector``: the features' ``vector()``, if known;
        ``model_p``: its ``model_probability``, if known)."""
        z = self._thesis_logit(thesis_score)
        if self.trust > 0:
            z += self.trust * (self._learned_logit(vector, thesis_score, host, features, origin, model_p) - z)
        return 1.0 / (1.0 + math.exp(-z))

    def scores(self, links: Sequence[tuple[float | None, str, tuple[array, array], tuple[str, int] | None]]
               ) -> list[float]:
        """``score`` of many ``(thesis_score, host, vector, origin)`` links, the same values,
        with their model probabilities from one ``model_probabilities``."""
        # no trust: no learned score is needed; no model yet: ``score`` finds it has none
        probabilities = self.model_probabilities([link[2] for link in links]) if self.trust > 0 else None
        if probabilities is None:
            return [self.score(None, thesis, host, vector, origin) for thesis, host, vector, origin in links]
        return [self.score(None, thesis, host, vector, origin, p)
                for (thesis, host, vector, origin), p in zip(links, probabilities)]

    def _thesis_logit(self, thesis_score: float | None) -> float:
        z = self._thesis_logits.get(thesis_score)
        if z is None:
            if len(self._thesis_logits) > 100_000:  # bounded memory on a long crawl
                self._thesis_logits.clear()
            z = self._thesis_logits[thesis_score] = self._thesis_logit_of(thesis_score)
        return z

    def _thesis_logit_of(self, thesis_score: float | None) -> float:
        k = self.thesis_steps_per_decade
        if thesis_score is not None and k > 0:  # the upper end of its step, as bucket_priority
            thesis_score = 10 ** (math.ceil(k * math.log10(max(thesis_score, 1.0)) - 1e-9) / k)
        return _logit(prior_probability(thesis_score, self.prior_reference))

    def _learned_logit(self, vector, thesis_score: float | None, host: str, features=None,
                       origin: tuple[str, int] | None = None, model_p: float | None = None) -> float:
        """Log-odds of the learned link probability plus the host's and siblings' shifts."""
        z = _logit(self.link_probability(features, thesis_score, vector, model_p)) + self._host_shift(host)
        if self.sibling_weight and origin is not None:
            z += self.sibling_shift(origin)
        return z

    def sibling_shift(self, origin: tuple[str, int]) -> float:
        """``sibling_weight`` × (log-odds of the on-topic rate of the links already judged from
        the same page and block − those of no sibling judged yet): the block's rate under a
        Beta prior whose mean is the page's rate (under the host prior); a block of links
        to on-topic pages lifts its other links, a block of misses sinks them."""
        a, b = self.hosts.prior_on, self.hosts.prior_off
        n_page, k_page = self.sibling_pages.get(origin[0], (0, 0))
        n_block, k_block = self.sibling_blocks.get(origin, (0, 0))
        page_rate = (k_page + a) / (n_page + a + b)
        block_rate = (k_block + (a + b) * page_rate) / (n_block + a + b)
        return self.sibling_weight * (_logit(block_rate) - _logit(a / (a + b)))

    def _host_shift(self, host: str) -> float:
        """``host_weight`` × (log-odds of the host's harvest − those of a host not seen yet),
        cached until the next judged page."""
        if self._host_cache[0] != self.hosts.total:
            self._host_cache = (self.hosts.total, {}, _logit(self.hosts.score("")))
        _, cache, unseen = self._host_cache
        shift = cache.get(host)
        if shift is None:
            shift = cache[host] = self.host_weight * (_logit(self.hosts.score(host)) - unseen)
        return shift

    @staticmethod
    def priority(score: float) -> int:
        return int(round(score * PRIORITY_STEPS))

    # -- persistence: JOBDIR resume, and explain() in scrapy shell -----------------------------
    def save(self, path: str | Path) -> None:
        """Pickle the learner (model, host harvests, pending examples) atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        state = dict(self.__dict__, _index={}, _host_cache=(-1, {}, 0.0),  # caches are rebuilt on use
                     _coef=list(self._coef))  # (a memoryview does not pickle; the file keeps its list)
        del state["_thesis_logits"]  # (not saved at all: the file stays as it was before this cache)
        if state["trust_rule"] == "auc-share":  # the default: a save stays what it was before the rule
            del state["trust_rule"]
        for name in _TERM_STATE:  # the state of terms that are off is not saved: a save stays
            if not state[name]:   # what it was before they existed (``load_state`` keeps its own)
                del state[name]
        atomic_write_bytes(path, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))

    @classmethod
    def load(cls, path: str | Path) -> "LinkLearner":
        """A learner saved by ``save`` (a crawl writes ``link_learner.pkl`` into its run directory)."""
        learner = cls()  # today's defaults for what an older save lacks (e.g. ``trust``, added later)
        learner.load_state(path)
        return learner

    def load_state(self, path: str | Path) -> None:
        """Go on from a learner saved by ``save``, in place (what it lacks keeps this one's value)."""
        with open(path, "rb") as fh:
            self.__dict__.update(pickle.load(fh))
        self._thesis_logits = {}  # of this learner's settings before (an older save has none)


def learner_from_settings(settings) -> LinkLearner:
    s = settings
    groups = s.getlist("FOCUSCRAWL_LEARNING_FEATURES")
    feature_prefixes(groups)  # unknown groups: ValueError before the crawl
    trust_rule = s.get("FOCUSCRAWL_LEARNING_TRUST_RULE")
    if trust_rule not in TRUST_RULES:
        raise ValueError(f"FOCUSCRAWL_LEARNING_TRUST_RULE must be one of {', '.join(TRUST_RULES)}, not {trust_rule!r}")
    return LinkLearner(
        retrain_every=s.getint("FOCUSCRAWL_LEARNING_RETRAIN_EVERY"),
        prior_pages=s.getint("FOCUSCRAWL_LEARNING_PRIOR_PAGES"),
        prior_reference=s.getfloat("FOCUSCRAWL_LEARNING_PRIOR_PP"),
        host_weight=s.getfloat("FOCUSCRAWL_LEARNING_HOST_WEIGHT"),
        exploration=s.getfloat("FOCUSCRAWL_LEARNING_EXPLORATION"),
        trust_window=s.getint("FOCUSCRAWL_LEARNING_TRUST_WINDOW"),
        trust_rule=trust_rule,
        thesis_steps_per_decade=s.getint("FOCUSCRAWL_PRIORITY_STEPS_PER_DECADE"),
        siblings="siblings" in groups, hubs="hubs" in groups,
        sibling_weight=s.getfloat("FOCUSCRAWL_LEARNING_SIBLING_WEIGHT"),
    )


LEARNER_FILE = "link_learner.pkl"


def learner_state_path(settings) -> Path | None:
    """``JOBDIR/focuscrawl/link_learner.pkl``: a resumed crawl goes on with what it had learnt."""
    state_dir = job_state_dir(settings.get("JOBDIR"))
    return state_dir / LEARNER_FILE if state_dir else None


class LearnerState:
    """The crawl's link learner as a resumable state (``focuscrawl.output.run.Checkpointed``,
    registered with ``RunState`` by the link middleware, with or without a run directory):
    ``restore`` goes on with what a crawl resumed from JOBDIR had learnt (into the same
    learner object, which the link rule and the re-ranking queue hold already); the learner
    is saved whole (``atomic_write_bytes``) at ``close``, a clean stop, to JOBDIR and the run
    directory (``explain``). Between checkpoints there is nothing to write: after a kill a
    resume learns again from the learner of the last clean stop."""

    def __init__(self, learner: LinkLearner, restore_from: Path | None = None, save_to: Iterable[Path] = ()) -> None:
        self.learner = learner
        self.restore_from = restore_from
        self.save_to = list(save_to)

    def restore(self) -> None:
        if self.restore_from is not None and self.restore_from.exists():
            self.learner.load_state(self.restore_from)

    def checkpoint(self) -> None:
        """Nothing between clean stops (see the class docstring)."""

    def close(self) -> None:
        for path in self.save_to:
            self.learner.save(path)
