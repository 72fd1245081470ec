"""TSV cells: one line per row, no tabs or newlines inside, ``None`` as an empty cell."""
from __future__ import annotations

from typing import Any, Iterable


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value).replace("\t", " ").replace("\r", " ").replace("\n", " ")


def row(values: Iterable[Any]) -> str:
    return "\t".join(cell(v) for v in values)
