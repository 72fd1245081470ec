"""The bundled general-English background corpus (``models/background.txt.gz``).

Used by ``focuscrawl topic build`` when no ``--neutral`` corpus is given: the neutral side
of keywords and classifier and the training text of the background LM. Built from
public data (provenance and licences in models/README.md)::

    python -m focuscrawl.topic.background --data ../shared/data -o models/background.txt.gz

* image captions (COCO 2017 val, CC BY 4.0; Flickr8k) of the photos in the *background
  reserve* (``focuscrawl.testweb.web.is_background_reserve``, one photo in 16): a
  ``heldout`` test web never shows them, so a bundle built with this background has
  not seen the test web's off-topic ALT texts;
* the first ``LEAD_CHARS`` characters of every Wikipedia lead of ``wiki/animal_leads.json``
  (CC BY-SA; the same texts the existing held-out models used as neutral).
"""
from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from focuscrawl.text.normalize import split_sentences
from focuscrawl.topic.build import MIN_TOKENS

LEAD_CHARS = 1500


def build_background(data: str | Path, out: str | Path) -> dict[str, int]:
    """Write the background corpus (one raw sentence per line, gzip) from the shared data."""
    from focuscrawl.testweb.textpool import TextPool
    from focuscrawl.testweb.web import is_background_reserve

    pool = TextPool.from_data(data, max_documents=0)
    captions = [c for p in pool.photos if is_background_reserve(p) for c in p.captions]
    lead_sentences = [s for _, text in sorted(pool.leads.items()) for s in split_sentences(text[:LEAD_CHARS])]
    lines = [" ".join(t.split()) for t in captions + lead_sentences if len(t.split()) >= MIN_TOKENS]
    raw = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), 9, mtime=0)
    Path(out).write_bytes(raw)
    return {"captions": len(captions), "lead_sentences": len(lead_sentences), "lines": len(lines), "bytes": len(raw)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the shared data folder (captions/, wiki/)")
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    print(json.dumps(build_background(args.data, args.output)))


if __name__ == "__main__":
    main()
