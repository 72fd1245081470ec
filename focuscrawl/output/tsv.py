"""TSV cells: one line per row, no tabs or newlines inside, ``None`` as an empty cell.

The one cell formatter of focuscrawl's TSV files (``focuscrawl.output.files.iter_tsv``
reads them back). A float is written exactly (``repr``) unless ``float_digits`` asks
for a short one (``links.tsv``: 6 significant digits); ``squeeze`` collapses every run
of whitespace in a text to one space (the ranked export, read by people).
"""
from __future__ import annotations

from typing import Any, Iterable


def cell(value: Any, *, float_digits: int | None = None, squeeze: bool = False) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value) if float_digits is None else format(value, f".{float_digits}g")
    text = str(value)
    if squeeze:
        return " ".join(text.split())
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def row(values: Iterable[Any], *, float_digits: int | None = None, squeeze: bool = False) -> str:
    if float_digits is None and not squeeze:  # the crawl's logs: one row per page and per image
        return "\t".join([_plain_cell(v) for v in values])
    return "\t".join(cell(v, float_digits=float_digits, squeeze=squeeze) for v in values)


def _plain_cell(value: Any) -> str:
    """``cell(value)`` with the common exact types first (a quarter faster a row)."""
    kind = type(value)
    if kind is str:
        return value.replace("\t", " ").replace("\r", " ").replace("\n", " ")
    if kind is float:
        return repr(value)
    if value is None:
        return ""
    if kind is int:
        return str(value)
    return cell(value)
