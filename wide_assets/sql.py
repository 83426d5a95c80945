"""Spark SQL text shared by every module: quoting, literals, row kinds, key joins and query aborts.

Everything the project runs is `spark.sql` text (engine-neutral: the same on Sail and JVM Spark), so
the spelling of identifiers, literals and row-kind predicates lives here once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from wide_assets.errors import ERROR_MARKER
from wide_assets.schema import Column


class RowKind(StrEnum):
    """A changelog row kind, as Flink, Paimon and Fluss print it."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"


ADDS = (RowKind.INSERT, RowKind.UPDATE_AFTER)
RETRACTS = (RowKind.UPDATE_BEFORE, RowKind.DELETE)


def quote(name: str) -> str:
    """A column or table name as a back-quoted identifier."""
    return "`" + name.replace("`", "``") + "`"


def as_declared(declared: Iterable[Column]) -> list[str]:
    """Select expressions for stored columns, each nested one cast to its declared type. Sail 0.7.2
    reads a Parquet list with its element field named `element` where every cast or written list
    names it `item`, and a merge that puts a stored list and a written one in one struct then fails
    (`Child type mismatch ... List(Int32, field: 'element')`); the cast gives them one name."""
    return [
        f"CAST({quote(c.name)} AS {c.type}) AS {quote(c.name)}" if "<" in c.type else quote(c.name)
        for c in declared
    ]


def columns(names: Iterable[str], prefix: str = "") -> str:
    """`a`, `b`, ... (each optionally qualified, e.g. `t.`)."""
    return ", ".join(prefix + quote(n) for n in names)


# Escapes Spark (and Sail) unescape inside a string literal. A newline is spelled `\n`, and braces as
# unicode escapes: queries run with DataFrame arguments (`spark.sql(text, df=...)`) are `str.format`
# templates, where a literal's `{` would be taken for a placeholder.
_LITERAL_ESCAPES = str.maketrans({"\\": "\\\\", "'": "\\'", "\n": "\\n", "{": "\\u007B", "}": "\\u007D"})


def string_literal(text: str) -> str:
    """A SQL string literal for `text`, safe in a `spark.sql` format template as well."""
    return "'" + text.translate(_LITERAL_ESCAPES) + "'"


def named_struct(fields: Mapping[str, str]) -> str:
    """`named_struct` of field name -> SQL expression, in the mapping's order."""
    return "named_struct(" + ", ".join(f"{string_literal(n)}, {v}" for n, v in fields.items()) + ")"


def value_literal(value: Any) -> str:
    """A Python key value as a SQL literal (numbers as is, everything else as a string literal)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return repr(value)
    return string_literal(str(value))


def kind_in(expression: str, kinds: Iterable[RowKind]) -> str:
    """`expression IN ('+I', ...)`: whether a row kind is one of `kinds`."""
    return f"{expression} IN ({', '.join(string_literal(k) for k in kinds)})"


def key_join(keys: Sequence[str], left: str, right: str, null_safe: bool = False) -> str:
    """`left.k1 = right.k1 AND ...` over the key columns (`<=>` when NULL keys must match)."""
    equals = "<=>" if null_safe else "="
    return " AND ".join(f"{left}.{quote(k)} {equals} {right}.{quote(k)}" for k in keys)


@dataclass(frozen=True)
class Value:
    """A SQL expression whose value, as text, is part of a message `fail` builds at run time."""

    sql: str


def fail(*parts: str | Value) -> str:
    """An expression that aborts the query with the message `parts` spell: text, and the values of
    `Value` expressions, concatenated. The commit the query feeds never happens."""
    if all(isinstance(part, str) for part in parts):
        return f"raise_error({string_literal(ERROR_MARKER + ''.join(map(str, parts)))})"
    pieces = [ERROR_MARKER, *parts]
    texts = [f"CAST({p.sql} AS STRING)" if isinstance(p, Value) else string_literal(p) for p in pieces]
    return f"raise_error(concat({', '.join(texts)}))"
