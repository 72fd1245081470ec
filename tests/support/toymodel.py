"""The tests' one toy language model and keyword list (no shared/ data needed).

A bigram ARPA (KenLM needs order >= 2) whose perplexities are easy to compute by hand:
PP = 10^(-(Σ log10 p)/(tokens+1)), ``</s>`` = -0.5, no back-off weights (an unseen
bigram scores its unigram).

* unigrams: ``cat`` -0.5, ``kitten`` -1.0, ``tabby`` -1.0, ``dog`` -1.0, ``spam`` -7.0,
  any unknown word (``<unk>``) -5.0; bigrams: ``cat cat`` -0.1, ``cat dog`` -0.4.
* ``Cat!`` -> 10^(1.0/2); ``cat dog`` -> 10^(1.4/3); ``zebra`` -> 10^(5.5/2).
* The crawl buckets (``ON_TOPIC`` … ``OFF_TOPIC``) are four five-word sentences:
  ``cat cat cat cat cat`` -> 1.71 (high); ``cat qqq qqq qqq qqq`` -> 10^(21/6) = 3162
  (normal); ``qqq qqq qqq qqq qqq`` -> 10^(25.5/6) = 17783 (low);
  ``spam spam spam spam spam`` -> 10^(35.5/6) = 8.25e5 (razored).
"""
from __future__ import annotations

from pathlib import Path

TOY_ARPA = """\\data\\
ngram 1=8
ngram 2=2

\\1-grams:
-5.0\t<unk>\t0
-99\t<s>\t0
-0.5\t</s>\t0
-0.5\tcat\t0
-1.0\tkitten\t0
-1.0\ttabby\t0
-1.0\tdog\t0
-7.0\tspam\t0

\\2-grams:
-0.1\tcat cat
-0.4\tcat dog

\\end\\
"""
# total weight 1000: "tabby" alone scores 0.85 (link score 1), "kitten" 0.1
TOY_KEYWORDS = "tabby;850\nkitten;100\ncat;50\n"

ON_TOPIC = "cat cat cat cat cat."  # PP 1.71 (high)
NORMAL = "cat qqq qqq qqq qqq."  # PP 3162 (normal)
LOW = "qqq qqq qqq qqq qqq."  # PP 17783 (low)
OFF_TOPIC = "spam spam spam spam spam."  # PP 8.25e5 (razored)


def write_arpa(folder: Path) -> Path:
    """``TOY_ARPA`` as ``folder/toy.arpa``."""
    path = folder / "toy.arpa"
    path.write_text(TOY_ARPA)
    return path


def write_model(folder: Path) -> tuple[Path, Path]:
    """``TOY_ARPA`` and ``TOY_KEYWORDS`` as files in ``folder``: (model, keywords)."""
    keywords = folder / "toy.keywords.txt"
    keywords.write_text(TOY_KEYWORDS)
    return write_arpa(folder), keywords


def write_topic_corpora(folder: Path) -> tuple[Path, Path]:
    """Cat captions (positive) and other captions (neutral) of the demo pool shipped in the
    package, as ``folder/pos.txt`` and ``folder/neu.txt``: a topic bundle builds from them in seconds."""
    from focuscrawl.lm.demo_corpus import topic_pattern
    from focuscrawl.testweb.textpool import TextPool

    pool = TextPool.from_bundle()
    cat = topic_pattern("cat")
    positive = [c for p in pool.topic_photos("cat") for c in p.captions if cat.search(c)]
    neutral = [c for p in pool.other_photos("cat", "dog") for c in p.captions][:1500]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pos.txt").write_text("\n".join(positive) + "\n")
    (folder / "neu.txt").write_text("\n".join(neutral) + "\n")
    return folder / "pos.txt", folder / "neu.txt"


def build_topic_bundle(corpora: tuple[Path, Path], out: Path, order: int = 2) -> Path:
    """A topic bundle at ``out`` from ``write_topic_corpora``'s files: LMs as ARPA (tests read and
    rescale their text), background order 2, the neutral side the neutral file alone, in seconds."""
    from focuscrawl.topic.build import build_bundle

    build_bundle([corpora[0]], [corpora[1]], out, order=order, background_order=2, progress=lambda *_: None,
                 binary=False, background=False)
    return out
