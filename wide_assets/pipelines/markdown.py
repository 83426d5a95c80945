"""Small Markdown tables for Dagster metadata (rendered in the asset and run pages of the UI)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["markdown_table"]


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """`rows` under a header of `columns`; NULLs show as NULL, binary as its size, pipes are escaped."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes | bytearray):
        # Raw bytes (e.g. serialized bitmaps) mean nothing in a table cell; their size does.
        return f"<{len(value)} bytes>"
    return str(value).replace("|", "\\|").replace("\n", " ")
