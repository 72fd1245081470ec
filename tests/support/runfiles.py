"""Read a crawl's TSV files back in tests, checking their shape on the way."""
from __future__ import annotations

import json
from pathlib import Path


def read_tsv(path: Path) -> list[dict]:
    """Rows of a TSV with a header line as dicts; asserts every line has the header's width."""
    lines = path.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    assert all(len(line.split("\t")) == len(head) for line in lines), f"ragged rows in {path}"
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]]


# columns that depend on the order pages happened to be fetched in, not on their content
ORDER_DEPENDENT = {"first_seen", "fetched_at", "depth", "page_depth"}


def keyed_rows(path: Path, key: str) -> dict[str, dict]:
    """A run's TSV rows by their ``key`` column, without the ``ORDER_DEPENDENT`` columns
    (two runs of one site compare equal whatever their fetch order)."""
    return {r[key]: {k: v for k, v in r.items() if k not in ORDER_DEPENDENT} for r in read_tsv(path)}


def sightings(run_dir: Path) -> dict[str, list[str]]:
    """Each image record's sightings (sorted JSON, without ``ORDER_DEPENDENT`` fields) by image URL."""
    result = {}
    for path in (run_dir / "records").glob("*/*.json"):
        rec = json.loads(path.read_text())
        result[rec["image_url"]] = sorted(json.dumps({k: v for k, v in s.items() if k not in ORDER_DEPENDENT},
                                                     sort_keys=True, ensure_ascii=False) for s in rec["sightings"])
    return result
