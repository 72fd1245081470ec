"""Writes small run directories in the format of docs/ARCHITECTURE.md for tests."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from PIL import Image

TSV_COLUMNS = ["image_url", "page_url", "first_seen", "final_score", "final_context", "image_path",
               "record_path", "alt", "title", "src_guess", "alt_perplexity", "alt_weighted",
               "title_weighted", "parent-1_weighted"]


def make_run_dir(root: Path, rows: list[dict], image_size=(40, 30)) -> Path:
    """Write images.tsv, one info record and one PNG per row. Row keys: url, score, alt, ...

    A row with ``image=False`` has no downloaded file; ``context`` is the parent-1 text.
    """
    root.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(TSV_COLUMNS)]
    for i, row in enumerate(rows):
        url = row["url"]
        sha1 = hashlib.sha1(url.encode()).hexdigest()
        image_path = ""
        if row.get("image", True):
            image_path = f"images/{sha1}.png"
            (root / "images").mkdir(exist_ok=True)
            colour = (i * 37 % 256, i * 91 % 256, 200)
            Image.new("RGB", image_size, colour).save(root / image_path)
        record_path = f"records/{sha1[:2]}/{sha1}.json"
        (root / record_path).parent.mkdir(parents=True, exist_ok=True)
        record = {"image_url": url, "page_url": row.get("page", "http://example.org/p"),
                  "alt": row.get("alt", ""), "title": row.get("title", ""),
                  "contexts": [{"kind": "parent", "level": 0, "text": "short"},
                               {"kind": "parent", "level": 1, "text": row.get("context", f"context of {url}")}]}
        (root / record_path).write_text(json.dumps(record))
        score = row.get("score")
        cells = [url, row.get("page", "http://example.org/p"), str(row.get("first_seen", i)),
                 "" if score is None else repr(float(score)), "parent-1", image_path, record_path,
                 row.get("alt", ""), row.get("title", ""), "example org cat", "123.5",
                 "" if score is None else repr(float(score)), "", "17.25"]
        if not row.get("raw"):
            cells = [" ".join(c.split()) for c in cells]  # writers keep one row per line
        lines.append("\t".join(cells))
    (root / "images.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root
