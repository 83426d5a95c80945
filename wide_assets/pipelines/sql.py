"""Quoting for the SQL text the pipelines build (engine-neutral: plain Spark SQL, no `functions`)."""

from __future__ import annotations

__all__ = ["ident", "string"]


def ident(name: str) -> str:
    """A column name as a back-quoted identifier."""
    return "`" + name.replace("`", "``") + "`"


def string(text: str) -> str:
    """A Spark SQL string literal; Spark unescapes backslashes inside literals, so they are escaped too."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
