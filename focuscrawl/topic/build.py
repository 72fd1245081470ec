"""``focuscrawl topic build``: a topic bundle from a positive and a neutral corpus.

One folder (``bundle.json`` lists its files)::

    topic.binary       5-gram Kneser-Ney LM of the positive texts (focuscrawl train-lm,
                       in a memory budget), KenLM binary; topic.arpa.gz without build_binary
    background.binary  the same of the neutral texts (Moore-Lewis background)
    keywords.txt       SPEC §4 keyword list (token;score)
    classifier.*.npy   hashed n-gram logistic regression (focuscrawl.topic.classifier)
    calibration.json   per scorer: Platt log-odds a, b and the score quantiles of
                       held-out positive and neutral sentences, ALT-like texts, anchors

Every sentence is assigned to training (4/5) or calibration (1/5) by a stable hash, so
the calibration measures texts no part of the bundle learnt from. The bundled
general-English background (``focuscrawl.topic.background``) is the neutral corpus when none
is given, and is kept beside a user's English neutral corpus (``background=False``: left
out): a small or narrow neutral corpus alone teaches the models its own style, not the
topic, and every web page then looks on topic. Its sentences that contain one of the
topic's three strongest keywords are dropped (a background is "not about the topic").

Pages are calibrated apart from sentences (``page_calibration``): a page's log-odds sums the
evidence of many sentences, so the sentence calibration calls nearly any page of a topic's
style on topic. The bundle keeps the page log-odds of *pseudo-pages* made of held-out
sentences (topic sentences with general-English ones among them; neutral ones;
general-English ones), and the crawl's page judge calls a page on topic only when it scores
like the topic's own pages (``TopicModel.page_quantile``, ``PageJudge``).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from focuscrawl.lm.keywords import KEYWORD_LISTS_DIFFER, KEYWORD_WEIGHT, learn_keywords, write_keywords
from focuscrawl.text.language import corpus_language
from focuscrawl.text.normalize import text_sentences
from focuscrawl.topic.model import BUNDLE_FILE, BUNDLE_FORMAT, CALIBRATION_FILE, KINDS, SCORERS, TopicModel

HELDOUT_SHARE = 5  # one sentence in 5 is held out for calibration
MIN_TOKENS = 3  # shorter lines (headings, list items) are not training sentences
#: the bundled general-English background in ``focuscrawl.models`` (``focuscrawl.topic.background`` builds it)
BACKGROUND_FILE = "background.txt.gz"
DOC_SENTENCES = 10  # keyword learning counts documents of this many consecutive sentences
BACKGROUND_FILTER_KEYWORDS = 3
#: the background LM's order: measured to rank as well as order 5 at a fifth of the size
#: (docs/EVALUATION.md)
BACKGROUND_ORDER = 3
QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
#: the ranking cut keeps images whose probability is at least this quantile of the held-out
#: positive ALT-like texts' probabilities ... capped at 0.5: it removes what looks like the
#: background, never what the calibration calls on topic
CUT_POSITIVE_QUANTILE = 0.02
#: a bundle's own calibration must separate held-out topic sentences from neutral ones at least
#: this far from chance to 1 (average precision of the default scorer; ``check_separation``)
MIN_SEPARATION = 0.5
#: the bundle's language is the most frequent one of this many positive sentences
LANGUAGE_SAMPLE = 2000
#: the bundled background's language (it is kept beside a neutral corpus of this language only)
BACKGROUND_LANGUAGE = "en"
#: pseudo-pages per side of the page calibration, and how many sentences each has (uniform)
PAGE_SAMPLES = 400
PAGE_SENTENCES = (3, 20)
#: the share of a topic pseudo-page's sentences that are general-English, not topic, text (a
#: topic page's headings, captions of other things, boilerplate); chosen leave-one-topic-out
#: on hard test webs with FOCUSCRAWL_LEARNING_PAGE_QUANTILE (benchmarks/results/eval_judge_user_corpora.md)
PAGE_DILUTION = 0.5
#: a neutral corpus of fewer sentences is too small to calibrate pages alone (``neutral_advice``)
MIN_NEUTRAL_SENTENCES = 2000
#: the topic's strongest keywords learnt against the user's neutral corpus alone: when
#: more than this share of general-English sentences hold one of them, that corpus is too
#: narrow (its keywords are words of any text, not of the topic; ``neutral_advice``)
NARROW_KEYWORDS = 10
NARROW_GENERAL_SHARE = 0.15


def stable_fraction(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")


def source_sentences(sources: Iterable[str | Path]) -> list[str]:
    """Normalised sentences (≥ ``MIN_TOKENS`` tokens, first occurrence only) of text/HTML files or URLs."""
    from focuscrawl.text.sources import PoliteFetcher, load_source_text

    fetcher = PoliteFetcher()
    return unique_sentences(line for src in sources
                            for line in load_source_text(str(src), "fulltext", fetcher).splitlines())


def unique_sentences(lines: Iterable[str]) -> list[str]:
    """The normalised sentences of ``lines`` with ≥ ``MIN_TOKENS`` tokens, first occurrence only."""
    seen: dict[str, None] = {}
    for line in lines:
        for s in text_sentences(line):
            if len(s.split()) >= MIN_TOKENS:
                seen.setdefault(s, None)
    return list(seen)


def background_sentences() -> list[str]:
    """The bundled background's normalised sentences (≥ ``MIN_TOKENS`` tokens), first occurrence only."""
    ref = resources.files("focuscrawl.models").joinpath(BACKGROUND_FILE)
    return unique_sentences(gzip.decompress(ref.read_bytes()).decode("utf-8").splitlines())


def _source_name(src: str | Path) -> str:
    """A URL as it is, a file by its name (the bundle can move; its folder is not its provenance)."""
    from focuscrawl.text.sources import is_url

    return str(src) if is_url(str(src)) else Path(src).name


def split_heldout(sentences: Sequence[str]) -> tuple[list[str], list[str]]:
    train, held = [], []
    for s in sentences:
        (held if stable_fraction(s) % HELDOUT_SHARE == 0 else train).append(s)
    return train, held


def short_forms(sentence: str) -> dict[str, str]:
    """The ALT-like (3-8 tokens) and anchor-like (2-4 tokens) prefix of a sentence."""
    toks = sentence.split()
    h = stable_fraction("short:" + sentence)
    return {"sentence": sentence, "alt": " ".join(toks[:3 + h % 6]), "anchor": " ".join(toks[:2 + (h // 7) % 3])}


def _docs(sentences: Sequence[str]) -> list[list[str]]:
    return [[t for s in sentences[i:i + DOC_SENTENCES] for t in s.split()]
            for i in range(0, len(sentences), DOC_SENTENCES)]


def _train_lm(sentences: Sequence[str], folder: Path, stem: str, order: int, binary: bool) -> str:
    """Train an LM into ``folder`` within train-lm's memory budget; returns its file name:
    ``STEM.binary`` (KenLM's binary format, loads fast) when ``binary`` and KenLM's
    build_binary is installed, else ``STEM.arpa.gz`` (KenLM reads it; a third of the size)."""
    import shutil

    from focuscrawl.lm.binary import find_build_binary, write_binary
    from focuscrawl.lm.external import estimate_to_arpa

    plain = folder / f"{stem}.arpa"
    estimate_to_arpa(sentences, plain, order)
    try:
        if binary and find_build_binary():
            write_binary(plain, folder / f"{stem}.binary")
            return f"{stem}.binary"
        with open(plain, "rb") as src, gzip.GzipFile(folder / f"{stem}.arpa.gz", "wb", compresslevel=6,
                                                      mtime=0) as dst:
            shutil.copyfileobj(src, dst)
        return f"{stem}.arpa.gz"
    finally:
        plain.unlink()


def fit_platt(positive: np.ndarray, neutral: np.ndarray) -> tuple[float, float]:
    """Log-odds ``a * raw + b`` of "positive" fitted on the two samples, classes weighted equally."""
    from sklearn.linear_model import LogisticRegression

    x = np.r_[positive, neutral].reshape(-1, 1)
    y = np.r_[np.ones(len(positive)), np.zeros(len(neutral))]
    model = LogisticRegression(C=1e4, class_weight="balanced", max_iter=1000).fit(x, y)
    return float(model.coef_[0, 0]), float(model.intercept_[0])


def average_precision(labels: Sequence[bool], scores: Sequence[float]) -> float:
    from sklearn.metrics import average_precision_score

    # clamped: a perfect ranking can sum to 1.0000000000000002, which a calibration may not hold
    return min(1.0, float(average_precision_score(np.asarray(labels, bool), np.asarray(scores, float))))


def calibrate(model: TopicModel, positive: Sequence[str], neutral: Sequence[str]) -> dict:
    """Fit every scorer's ``a, b`` on held-out texts (all kinds together); quantiles per kind."""
    texts = {side: [short_forms(s) for s in sents] for side, sents in (("positive", positive), ("neutral", neutral))}
    model.calibration = {}
    raws = {side: {kind: [model.raw(f[kind]) for f in forms] for kind in KINDS} for side, forms in texts.items()}
    result: dict = {"scorers": {}, "texts": {side: len(v) for side, v in texts.items()}}
    order = [s for s in SCORERS if s != "combined"] + ["combined"]  # combined reads the others' a, b
    for scorer in order:
        if scorer == "combined":
            model.calibration = result
            model.raw.cache_clear()
            raws = {side: {kind: [model.raw(f[kind]) for f in forms] for kind in KINDS}
                    for side, forms in texts.items()}
        values = {side: {kind: np.array([r[scorer] for r in raws[side][kind] if r is not None]) for kind in KINDS}
                  for side in raws}
        pos = np.concatenate([values["positive"][k] for k in KINDS])
        neu = np.concatenate([values["neutral"][k] for k in KINDS])
        a, b = fit_platt(pos, neu)
        entry = {"a": a, "b": b,
                 "average_precision": {k: average_precision(
                     [1] * len(values["positive"][k]) + [0] * len(values["neutral"][k]),
                     np.r_[values["positive"][k], values["neutral"][k]]) for k in KINDS},
                 "quantiles": {side: {k: [float(a * q + b) for q in np.quantile(values[side][k], QUANTILES)]
                                      for k in KINDS} for side in values}}
        result["scorers"][scorer] = entry
    result["quantile_levels"] = list(QUANTILES)
    result["quantiles_are"] = "calibrated log-odds"
    model.calibration = result
    model.raw.cache_clear()
    result["thresholds"] = {scorer: thresholds(result, scorer) for scorer in SCORERS}
    return result


def thresholds(calibration: dict, scorer: str) -> dict[str, float]:
    """A scorer's probability thresholds from its calibration (docs/CORPUS.md):

    * ``cut`` (ranking): the 5% quantile of held-out positive ALT-like texts, at most 0.5;
    * ``razor`` (crawl): the 1% quantile of held-out neutral sentences (links from pages less
      topical than 99% of general text are dropped), at most ``cut``.
    """
    from focuscrawl.topic.model import sigmoid

    q = calibration["scorers"][scorer]["quantiles"]
    levels = list(calibration.get("quantile_levels", QUANTILES))
    cut = min(0.5, sigmoid(q["positive"]["alt"][levels.index(0.05)]))
    razor = min(cut, sigmoid(q["neutral"]["sentence"][levels.index(0.01)]))
    return {"cut": cut, "razor": razor}


def check_separation(calibration: dict, positive_held: int, neutral_held: int, keywords: int) -> None:
    """Refuse a bundle that cannot tell its own held-out topic sentences from neutral ones: the
    default scorer's average precision must be ``MIN_SEPARATION`` of the way from chance (the
    share of topic sentences) to 1, and the keyword list not empty (a neutral corpus that is
    the positive one, or a positive corpus that is not about anything)."""
    from focuscrawl.topic.model import DEFAULT_SCORER

    ap = calibration["scorers"][DEFAULT_SCORER]["average_precision"]["sentence"]
    chance = positive_held / (positive_held + neutral_held)
    if keywords == 0 or not ap >= chance + MIN_SEPARATION * (1 - chance):
        raise ValueError(f"the bundle cannot tell topic text from neutral text (average precision {ap:.2f} on "
                         f"held-out sentences, chance {chance:.2f}; {keywords} keywords): give a positive corpus "
                         "about the topic and a neutral corpus that is not about it; no bundle written")


def _output_folder(out: Path) -> None:
    """``-o``: a new folder, an empty one, or a bundle to replace; anything else is refused before any work."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"-o {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / BUNDLE_FILE).is_file():
        raise ValueError(f"-o {out}: a folder with files that is not a topic bundle (not overwritten)")


def _replace(folder: Path, out: Path) -> None:
    """Move the complete bundle ``folder`` to ``out`` (an old bundle there is replaced)."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        out.rename(old / out.name)
    folder.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_bundle(positive: Sequence[str | Path], neutral: Sequence[str | Path] | None, out: str | Path,
                 order: int = 5, background_order: int = BACKGROUND_ORDER, name: str | None = None,
                 progress=print, binary: bool = True, background: bool = True) -> dict:
    """Write a topic bundle to ``out``; returns its manifest. ``binary``: LMs in KenLM's
    binary format where build_binary is installed (install.sh builds it), else ARPA.
    ``background``: keep the bundled general-English background beside an English ``neutral``.
    The bundle is built in a temporary folder beside ``out`` and renamed when complete, so a
    refused or failed build leaves no half bundle (and an old bundle at ``out`` untouched)."""
    out = Path(out)
    _output_folder(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    try:
        manifest = _build(positive, neutral, work, order, background_order, name or out.name, progress, binary,
                          background)
        _replace(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    progress(f"topic build: bundle in {out}")
    return manifest


def _build(positive: Sequence[str | Path], neutral: Sequence[str | Path] | None, out: Path, order: int,
           background_order: int, name: str, progress, binary: bool, background: bool = True) -> dict:
    from focuscrawl.topic.classifier import HashedNgramClassifier

    t0 = time.perf_counter()
    pos = source_sentences(positive)
    language = corpus_language(pos[:LANGUAGE_SAMPLE])
    user = source_sentences(neutral) if neutral else []
    general = background_sentences()
    keep_background = not neutral or (background and language == BACKGROUND_LANGUAGE)
    own = set(user)
    neu = user + [s for s in general if s not in own] if neutral and keep_background else user or general
    if neutral:
        neutral_source = [_source_name(n) for n in neutral] + ([BACKGROUND_SOURCE] if keep_background else [])
    else:
        neutral_source = BACKGROUND_SOURCE
    if len(pos) < 20 or len(neu) < 20:
        raise ValueError(f"too little text: {len(pos)} positive and {len(neu)} neutral sentences "
                         "(need at least 20 of each)")
    pos_train, pos_held = split_heldout(pos)
    neu_train, neu_held = split_heldout(neu)
    keywords = learn_keywords(_docs(pos_train), _docs(neu_train))
    dropped = 0
    if keep_background:  # the general background may mention the topic: drop those sentences
        strongest = {tok for tok, _ in keywords[:BACKGROUND_FILTER_KEYWORDS]}
        kept = [s for s in neu_train if s in own or not strongest.intersection(s.split())]
        held = [s for s in neu_held if s in own or not strongest.intersection(s.split())]
        dropped = len(neu_train) + len(neu_held) - len(kept) - len(held)
        neu_train, neu_held = kept, held
        keywords = learn_keywords(_docs(pos_train), _docs(neu_train))
    progress(f"topic build: {len(pos_train)}+{len(pos_held)} positive, {len(neu_train)}+{len(neu_held)} neutral "
             f"sentences (train+held out){' with the bundled general-English background' if neutral and keep_background else ''}; "
             f"{len(keywords)} keywords ({KEYWORD_LISTS_DIFFER})")
    write_keywords(out / "keywords.txt", keywords)
    topic_lm = _train_lm(pos_train, out, "topic", order, binary)
    background_lm = _train_lm(neu_train, out, "background", background_order, binary)
    progress(f"topic build: topic {order}-gram and background {background_order}-gram LMs trained ({time.perf_counter() - t0:.0f}s)")
    train_pos = [f for s in pos_train for f in set(short_forms(s).values())]
    train_neu = [f for s in neu_train for f in set(short_forms(s).values())]
    classifier = HashedNgramClassifier.train(train_pos, train_neu)
    sentences = {"positive_train": len(pos_train), "positive_heldout": len(pos_held),
                 "neutral_train": len(neu_train), "neutral_heldout": len(neu_held),
                 "background_dropped_as_topical": dropped}
    if neutral:
        sentences["neutral_given"] = len(user)
    manifest = {
        "format": BUNDLE_FORMAT, "name": name, "order": order, "background_order": background_order,
        "topic_lm": topic_lm, "background_lm": background_lm, "keywords": "keywords.txt",
        "keyword_weight": KEYWORD_WEIGHT, "classifier": classifier.save(out),
        "calibration": CALIBRATION_FILE,
        # the crawl's default FOCUSCRAWL_LANGUAGES (focuscrawl.text.language)
        "language": language,
        "sources": {"positive": [_source_name(p) for p in positive], "neutral": neutral_source},
        "sentences": sentences,
    }
    if neutral:
        manifest["neutral_check"] = neutral_check(pos_train, user, general, language)
    (out / BUNDLE_FILE).write_text(json.dumps(manifest, indent=1) + "\n")
    model = TopicModel(out, calibrated=False)
    calibration = calibrate(model, pos_held, neu_held)
    check_separation(calibration, len(pos_held), len(neu_held), len(keywords))
    strongest = {tok for tok, _ in keywords[:BACKGROUND_FILTER_KEYWORDS]}
    general_held = [s for s in split_heldout(general)[1] if s not in own and not strongest.intersection(s.split())]
    user_held = [s for s in neu_held if s in own]
    calibration["pages"] = page_calibration(model, pos_held, general_held or neu_held, user_held or neu_held,
                                            general_held, PAGE_DILUTION)
    (out / CALIBRATION_FILE).write_text(json.dumps(calibration, indent=1) + "\n")
    progress(f"topic build: calibrated on held-out texts ({time.perf_counter() - t0:.0f}s)")
    for line in neutral_advice(manifest, calibration):
        progress(f"topic build: {line}")
    return manifest


#: how ``bundle.json`` names the bundled background among the neutral sources
BACKGROUND_SOURCE = "bundled general-English background (models/README.md)"


def pseudo_pages(topic: Sequence[str], others: Sequence[str], samples: int, dilution: float, seed: str
                 ) -> list[list[str]]:
    """``samples`` pages of ``PAGE_SENTENCES`` sentences drawn from ``topic`` (without repeats
    inside a page), a ``dilution`` share of each from ``others``: texts of the length the page
    judge scores, made of held-out sentences. Deterministic (``seed``)."""
    import random

    rng = random.Random(seed)
    lo, hi = PAGE_SENTENCES
    pages = []
    for _ in range(samples):
        n = rng.randint(lo, hi)
        k = int(round(n * dilution)) if others else 0
        page = rng.sample(list(topic), min(len(topic), n - k)) + rng.sample(list(others), min(len(others), k))
        rng.shuffle(page)
        pages.append(page)
    return pages


def page_calibration(model: TopicModel, positive: Sequence[str], dilute_with: Sequence[str], neutral: Sequence[str],
                     general: Sequence[str], dilution: float = PAGE_DILUTION) -> dict:
    """Every scorer's page log-odds (``TopicModel.page_logit``) at ``QUANTILES`` of held-out
    pseudo-pages (``pseudo_pages``): ``positive`` (topic sentences, a ``dilution`` share of
    ``dilute_with`` among them: general text, as a topic page's other text), ``neutral`` (the user's neutral sentences, else the
    background's) and ``general`` (general-English sentences: how a page of any subject
    scores). The crawl's page judge reads ``positive`` (``TopicModel.page_cut``), ``topic
    show`` all three."""
    sides = {"positive": pseudo_pages(positive, dilute_with, PAGE_SAMPLES, dilution, "pages:positive"),
             "neutral": pseudo_pages(neutral, (), PAGE_SAMPLES, 0.0, "pages:neutral"),
             "general": pseudo_pages(general, (), PAGE_SAMPLES, 0.0, "pages:general") if general else []}
    raws = {side: [r for r in (model.page_raw("\n".join(p)) for p in pages) if r is not None]
            for side, pages in sides.items()}
    scorers = {}
    for scorer in SCORERS:
        scorers[scorer] = {side: [float(q) for q in np.quantile([model.calibrated(scorer, r[scorer]) for r in values],
                                                                  QUANTILES)]
                           for side, values in raws.items() if values}
    model.page_raw.cache_clear()
    return {"sentences_per_page": list(PAGE_SENTENCES), "dilution": dilution,
            "pages": {side: len(v) for side, v in raws.items()}, "scorers": scorers}


def neutral_check(positive_train: Sequence[str], user: Sequence[str], general: Sequence[str], language: str) -> dict:
    """How a user's neutral corpus would do alone: its size, and the topic's strongest keywords
    learnt against it with the share of general-English sentences that hold one of them
    (English only: the background is English). A narrow corpus (a few encyclopaedia articles)
    makes words of any text look like the topic's (``sitting``, ``white``, ``front``)."""
    check: dict = {"sentences": len(user)}
    if language != BACKGROUND_LANGUAGE or not user:
        return check
    own = learn_keywords(_docs(positive_train), _docs(split_heldout(user)[0] or list(user)), top_n=NARROW_KEYWORDS)
    words = {tok for tok, _ in own}
    own_set = set(user)
    held = [s for s in split_heldout(general)[1] if s not in own_set]
    topical = {tok for tok, _ in learn_keywords(_docs(positive_train), _docs(general), top_n=BACKGROUND_FILTER_KEYWORDS)}
    held = [s for s in held if not topical.intersection(s.split())]  # general text not about the topic
    share = sum(bool(words.intersection(s.split())) for s in held) / len(held) if held else 0.0
    check.update(keywords_alone=[tok for tok, _ in own], general_share=share)
    return check


def neutral_advice(manifest: dict, calibration: dict) -> list[str]:
    """What ``topic build`` and ``topic show`` say about the neutral corpus: too small or too
    narrow to calibrate pages alone, and what to add (empty: nothing to say)."""
    check = manifest.get("neutral_check")
    if not isinstance(check, dict):
        return []
    lines = []
    kept = BACKGROUND_SOURCE in (manifest.get("sources", {}).get("neutral") or [])
    also = ("the bundled general-English background is kept beside it" if kept else
            "without the bundled background (--no-background) the crawl's page judge may call most pages on topic")
    n = check.get("sentences", 0)
    if isinstance(n, int) and n < MIN_NEUTRAL_SENTENCES:
        lines.append(f"the neutral corpus is small ({n} sentences; at least {MIN_NEUTRAL_SENTENCES:,} calibrate pages "
                     f"alone): {also}. Add general text of the pages you will crawl, not about the topic "
                     "(news, blogs, shops, forums on many subjects).")
    share = check.get("general_share")
    if isinstance(share, (int, float)) and share > NARROW_GENERAL_SHARE:
        words = ", ".join(map(str, check.get("keywords_alone", [])[:NARROW_KEYWORDS]))
        lines.append(f"the neutral corpus is narrow: learnt against it alone, the topic's keywords would be {words}, "
                     f"and {share:.0%} of general-English sentences hold one of them (its text is unlike the "
                     f"topic's in style, not only in subject): {also}. Add neutral text written like the "
                     "positive corpus (the same kind of pages, captions or posts about other subjects).")
    return lines
