"""Shared helpers of the LM benchmarks: real sentences from shared/data, finding lmplz.

Not a benchmark itself. Sentences are normalised exactly like training and scoring
(``focuscrawl.text.normalize``): captions whole (short texts), Wikipedia leads and
CLEANEVAL gold texts as documents (5-token rule).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from focuscrawl.text.normalize import document_sentences, text_sentences
from focuscrawl.text.sources import bytes_to_text, read_bytes

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data"
KENLM_BUILD_BIN = Path("/work/kenlm-build/kenlm-0.3.0/build/bin")


def caption_sentences(data: Path) -> list[str]:
    coco = json.loads((data / "captions" / "coco_captions_val2017.json").read_text())
    out = [s for a in coco["annotations"] for s in text_sentences(a["caption"])]
    with open(data / "captions" / "flickr8k.token.txt", encoding="utf-8") as fh:
        for line in fh:
            out.extend(text_sentences(line.rstrip("\n").partition("\t")[2]))
    return out


def wiki_sentences(data: Path) -> list[str]:
    leads = json.loads((data / "wiki" / "animal_leads.json").read_text())["animals"]
    return [s for a in leads for s in document_sentences(a["content"])]


def cleaneval_sentences(data: Path) -> list[str]:
    out = []
    for split in ("final", "dev"):
        for path in sorted((data / "cleaneval" / split / "gold").glob("*.txt")):
            out.extend(document_sentences(bytes_to_text(read_bytes(path))))
    return out


def real_sentences(data: Path) -> dict[str, list[str]]:
    """Normalised sentences per source (captions, wiki leads, CLEANEVAL gold)."""
    return {"captions": caption_sentences(data), "wiki": wiki_sentences(data),
            "cleaneval": cleaneval_sentences(data)}


def find_binary(name: str, env: str) -> str | None:
    """``$env``, then PATH, then the KenLM build used on the development machine."""
    if os.environ.get(env):
        return os.environ[env]
    found = shutil.which(name)
    if found:
        return found
    built = KENLM_BUILD_BIN / name
    return str(built) if built.is_file() else None


def find_lmplz() -> str | None:
    return find_binary("lmplz", "LMPLZ")


def run_lmplz(lmplz: str, order: int, text: Path, arpa: Path, memory: str = "1G") -> float:
    """Run lmplz with its default estimation settings; returns wall seconds.

    ``-S`` only limits lmplz's sort memory (default: 80% of RAM, which would starve a
    shared machine); ``--discount_fallback`` only matters when the closed-form
    discounts fail, where lmplz otherwise aborts. Neither changes the estimates.
    """
    t0 = time.perf_counter()
    with open(text, "rb") as fin, open(arpa, "wb") as fout:
        subprocess.run([lmplz, "-o", str(order), "-S", memory, "-T", str(arpa.parent),
                        "--discount_fallback"], stdin=fin, stdout=fout,
                       stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def read_arpa(path: Path) -> tuple[list[str], dict[str, tuple[float, float | None]]]:
    """The ``ngram k=n`` header lines and ``{ngram: (log10 p, log10 backoff or None)}``."""
    header, entries, in_grams = [], {}, False
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("ngram "):
            header.append(line)
        elif line.startswith("\\") and line.endswith("-grams:"):
            in_grams = True
        elif in_grams and line.strip() and not line.startswith("\\"):
            parts = line.split("\t")
            entries[parts[1]] = (float(parts[0]), float(parts[2]) if len(parts) > 2 else None)
    return header, entries
