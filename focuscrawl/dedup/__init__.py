"""Near-duplicate detection (SPEC §10, seed 004).

- ``simhash``: 64-bit SimHash of term-frequency-weighted word n-grams.
- ``index``: block-permutation index for Hamming-distance search without false negatives.
- ``minhash``: the MinHash / super-shingle baseline of Broder and Fetterly et al.
- ``imagehash``: 64-bit perceptual hashes of image bytes, searchable with the same index.
- ``collapse``: collapsing near-duplicate image-text pairs of a ranking.
"""
from focuscrawl.dedup.index import SimHashIndex, hamming_distances
from focuscrawl.dedup.simhash import NGRAM_MODES, ngram_hashes, parse_ngrams, simhash, text_simhash

__all__ = ["NGRAM_MODES", "SimHashIndex", "hamming_distances", "ngram_hashes", "parse_ngrams",
           "simhash", "text_simhash"]
