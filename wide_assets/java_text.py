"""How Java prints the values that Paimon's and Fluss's messages embed, so our messages print the same:
lists, the iteration order of a `HashSet`, and the two projects' data type names."""

from __future__ import annotations

import re
from collections.abc import Iterable

from wide_assets.schema import Column


def java_list(items: Iterable[object]) -> str:
    """A Java `List`/`Set` as `String.valueOf` prints it: `[a, b]` (no quotes), `[]` when empty."""
    return "[" + ", ".join(str(item) for item in items) + "]"


def java_string_hash(text: str) -> int:
    """`String.hashCode()`: s[0]*31^(n-1) + ... over UTF-16 code units, in 32-bit arithmetic."""
    units = text.encode("utf-16-le")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    return h


def java_hash_order(items: Iterable[str]) -> list[str]:
    """The iteration order of a `java.util.HashSet<String>` the items are added to, in order.

    A HashMap iterates its table by bucket, `(h ^ h >>> 16) & (capacity - 1)`, and a bucket in
    insertion order; the table starts at 16 buckets and doubles once it holds more than 3/4 of its
    capacity, a resize keeping each bucket's relative order. (Buckets of 8+ colliding entries become
    trees and could iterate differently; names never collide that much.)"""
    capacity = 16
    buckets: list[list[str]] = [[] for _ in range(capacity)]
    size = 0

    def spread(text: str) -> int:
        h = java_string_hash(text)
        return h ^ (h >> 16)

    for item in items:
        bucket = buckets[spread(item) & (capacity - 1)]
        if item in bucket:
            continue
        bucket.append(item)
        size += 1
        if size > capacity * 3 // 4:
            capacity *= 2
            resized: list[list[str]] = [[] for _ in range(capacity)]
            for old in buckets:
                for entry in old:
                    resized[spread(entry) & (capacity - 1)].append(entry)
            buckets = resized
    return [item for bucket in buckets for item in bucket]


_SIMPLE_TYPES = {
    "string": "STRING",
    "tinyint": "TINYINT",
    "byte": "TINYINT",
    "smallint": "SMALLINT",
    "short": "SMALLINT",
    "int": "INT",
    "integer": "INT",
    "bigint": "BIGINT",
    "long": "BIGINT",
    "float": "FLOAT",
    "real": "FLOAT",
    "double": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "binary": "BYTES",
    "timestamp_ntz": "TIMESTAMP(6)",
}
# Spark's `timestamp` has a local time zone; Paimon's asSQLString and Fluss's asSummaryString differ.
_LOCAL_TIMESTAMP = {"paimon": "TIMESTAMP(6) WITH LOCAL TIME ZONE", "fluss": "TIMESTAMP_LTZ(6)"}
_PARAMETERIZED = re.compile(r"(\w+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?")
_NESTED = re.compile(r"(\w+)\s*<(.*)>", re.DOTALL)


def _top_level_parts(text: str) -> list[str]:
    """`string, map<int,int>` -> [`string`, `map<int,int>`]: commas outside brackets split."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def nested_parts(type_text: str) -> tuple[str, list[str]] | None:
    """`map<string,struct<a:int>>` -> ("map", ["string", "struct<a:int>"]); None for a type without
    parameters in angle brackets."""
    nested = _NESTED.fullmatch(type_text.strip())
    return None if nested is None else (nested[1].lower(), _top_level_parts(nested[2]))


def _type_name(spark_type: str, dialect: str) -> str:
    text = spark_type.strip().lower()
    nested = _NESTED.fullmatch(text)
    if nested:
        outer, parts = nested[1], _top_level_parts(nested[2])
        if outer == "array" and len(parts) == 1:
            return f"ARRAY<{_type_name(parts[0], dialect)}>"
        if outer == "map" and len(parts) == 2:
            return f"MAP<{_type_name(parts[0], dialect)}, {_type_name(parts[1], dialect)}>"
        return text.upper()
    match = _PARAMETERIZED.fullmatch(text)
    if not match:
        return text.upper()
    name, first, second = match[1], match[2], match[3]
    if name in ("decimal", "dec", "numeric"):
        return f"DECIMAL({first or 10}, {second or 0})"
    if name in ("char", "varchar") and first:
        return f"{name.upper()}({first})"
    if name in ("timestamp", "timestamp_ltz"):
        return _LOCAL_TIMESTAMP[dialect]
    return _SIMPLE_TYPES.get(name, text.upper())


def type_name(column: Column, dialect: str) -> str:
    """A column's type as Paimon (`DataType.asSQLString`) or Fluss (`asSummaryString`) prints it,
    e.g. `DECIMAL(10, 2)`, `MAP<STRING, INT>`, `INT NOT NULL`."""
    return _type_name(column.type, dialect) + ("" if column.nullable else " NOT NULL")
