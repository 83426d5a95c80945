"""Small Markdown tables for Dagster metadata (rendered in the asset and run pages of the UI)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["markdown_table"]


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """`rows` under a header of `columns`; NULLs show as NULL and pipes in values are escaped."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _cell(value: object) -> str:
    return "NULL" if value is None else str(value).replace("|", "\\|").replace("\n", " ")
