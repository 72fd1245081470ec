"""Text extraction from HTML, sentence splitting and LM normalisation (SPEC §2)."""

from focuscrawl.text.normalize import (
    MIN_SENTENCE_TOKENS,
    document_sentences,
    normalize,
    split_sentences,
    text_sentences,
)

__all__ = ["MIN_SENTENCE_TOKENS", "document_sentences", "normalize", "split_sentences", "text_sentences"]
