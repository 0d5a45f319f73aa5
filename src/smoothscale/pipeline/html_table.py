"""HTML tables for the reports: rows of dicts, values in plain words (numbers with separators, lists
joined, missing as '-'), everything escaped."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    if not rows:
        return "<p><em>none</em></p>"
    names = list(columns if columns is not None else rows[0])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in names)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell(row.get(c)))}</td>" for c in names) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"
