"""Writes small run directories for tests with the crawl's own writer functions.

The images.tsv header and rows, the info records and the image paths come from
``focuscrawl.output.images`` (the code a crawl uses), so these fixtures change
together with the real format.
"""
from __future__ import annotations

import json

from pathlib import Path

import numpy as np
from PIL import Image

from focuscrawl.images.final import final_score
from focuscrawl.images.inspect import FORMAT_EXTENSIONS
from focuscrawl.output.images import IMAGE_FIELDS, image_columns, image_row, sighting_of
from focuscrawl.output.records import record_path, url_sha1
from focuscrawl.output.tsv import row as tsv_row

MAX_PARENTS = MAX_SIBLINGS = 2


def _scores(weighted: float | None, perplexity: float | None = None) -> dict | None:
    if weighted is None:
        return None
    return {"perplexity": perplexity if perplexity is not None else weighted * 2, "keyword_score": 0.0,
            "weighted": weighted, "tokens": 4}


def image_item(url: str, score: float | None, alt: str = "", page: str = "http://example.org/p",
               context: str | None = None, first_seen: int = 0, image_path: str = "",
               size=(40, 30)) -> dict:
    """An ImageItem as dict whose final score (ALT and parent-1 weighted PP equal) is ``score``."""
    contexts = [{"kind": "parent", "level": 0, "tag": "p", "text": "short", "length": 5, "distance": 0,
                 "scores": _scores(None)},
                {"kind": "parent", "level": 1, "tag": "div", "text": context or f"context of {url}",
                 "length": 20, "distance": 500, "scores": _scores(score, 17.25)}]
    item = {"image_url": url, "page_url": page, "page_depth": 1, "page_perplexity": 100.0, "alt": alt,
            "title": "", "src_guess": "example org cat", "alt_scores": _scores(score, 123.5),
            "title_scores": None, "src_scores": _scores(50.0), "html_width": 600, "html_height": 400,
            "css_class": "", "style": "", "extension": "png", "contexts": contexts, "extra_contexts": {},
            "first_seen": first_seen, "record_path": record_path(url), "image_path": image_path,
            "width": size[0] if image_path else None, "height": size[1] if image_path else None,
            "image_format": "PNG" if image_path else None, "image_size": None, "image_sha1": None,
            "near_duplicate_page": False}
    item["final_score"], item["final_context"] = final_score(item["alt_scores"], None, contexts)
    return item


def make_run_dir(root: Path, rows: list[dict], image_size=(40, 30), stats: dict | None = None) -> Path:
    """Write images.tsv, one info record and one picture per row, and stats.json (``stats``, default
    a crawl without a topic bundle). Row keys: url, score, alt, page, context, image (False = not
    downloaded; bytes = the file's content), format (Pillow's name, default PNG), size (default
    ``image_size``), raw (True = write the ALT unescaped, as a broken writer would)."""
    root.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(image_columns(MAX_PARENTS, MAX_SIBLINGS))]
    for i, r in enumerate(rows):
        url = r["url"]
        size = r.get("size", image_size)
        image_path = ""
        if r.get("image", True) is not False:
            fmt = r.get("format", "PNG")
            image_path = f"images/{url_sha1(url)}.{FORMAT_EXTENSIONS[fmt]}"  # named as the crawl names them
            (root / "images").mkdir(exist_ok=True)
            if isinstance(r.get("image"), bytes):
                (root / image_path).write_bytes(r["image"])
            else:
                noise = np.random.default_rng(i).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
                Image.fromarray(noise, "RGB").save(root / image_path, fmt)  # distinct pictures (perceptual hash)
        item = image_item(url, r.get("score"), r.get("alt", ""), r.get("page", "http://example.org/p"),
                          r.get("context"), r.get("first_seen", i), image_path, size)
        if image_path:  # the bytes the crawl wrote
            item["image_size"] = (root / image_path).stat().st_size
        record = {f: item.get(f) for f in IMAGE_FIELDS}
        record["sightings"] = [sighting_of(item)]
        (root / item["record_path"]).parent.mkdir(parents=True, exist_ok=True)
        (root / item["record_path"]).write_text(json.dumps(record))
        line = tsv_row(image_row(item, MAX_PARENTS, MAX_SIBLINGS))
        if r.get("raw"):
            line = line.replace(item["alt"].replace("\t", " "), item["alt"])
        lines.append(line)
    (root / "images.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "stats.json").write_text(json.dumps(stats if stats is not None else {"finish_reason": "finished"}))
    return root
