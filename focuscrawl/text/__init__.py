"""Text extraction from HTML, sentence splitting and LM normalisation (SPEC §2)."""

from focuscrawl.text.normalize import (
    MIN_SENTENCE_TOKENS,
    document_sentences,
    document_tokens,
    normalize,
    split_sentences,
    text_sentences,
    text_tokens,
)

__all__ = ["MIN_SENTENCE_TOKENS", "document_sentences", "document_tokens", "normalize", "split_sentences",
           "text_sentences", "text_tokens"]
