"""Checks a column's Spark SQL type name without an engine, so a typo fails at `create` naming the column,
the type and the closest valid name, instead of surfacing later as the engine's SQL parser error."""

from __future__ import annotations

import re

from wide_assets.errors import InvalidOptionError, did_you_mean
from wide_assets.schema import Column

# Spark's primitive type names (DataTypeAstBuilder), aliases included.
PLAIN_TYPES = frozenset(
    {
        "boolean",
        "tinyint",
        "byte",
        "smallint",
        "short",
        "int",
        "integer",
        "bigint",
        "long",
        "float",
        "real",
        "double",
        "date",
        "timestamp",
        "timestamp_ntz",
        "timestamp_ltz",
        "string",
        "binary",
    }
)
SIZED_TYPES = frozenset({"char", "character", "varchar"})  # need (length)
DECIMAL_TYPES = frozenset({"decimal", "dec", "numeric"})  # optional (precision[, scale])
NESTED_TYPES = frozenset({"array", "map", "struct"})
TYPE_NAMES = sorted(PLAIN_TYPES | SIZED_TYPES | DECIMAL_TYPES | NESTED_TYPES)
_TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|'(?:[^']|'')*'|\w+|[<>(),:]|\S)")


class _TypeError(Exception):
    """Where a type text stops making sense; turned into the column's InvalidOptionError."""


class _Reader:
    """A recursive-descent reader of Spark's type grammar over the tokens of one type text."""

    def __init__(self, text: str) -> None:
        self.tokens = [m.group(1) for m in _TOKEN.finditer(text)]
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at].lower() if self.at < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if expected is not None and token != expected:
            raise _TypeError(f"expected '{expected}' but found '{token or 'the end'}'")
        self.at += 1
        return token

    def data_type(self) -> None:
        name = self.take()
        if name in PLAIN_TYPES:
            return
        if name in SIZED_TYPES:
            self.numbers(1, 1)
        elif name in DECIMAL_TYPES:
            if self.peek() == "(":
                self.numbers(1, 2)
        elif name == "array":
            self.take("<")
            self.data_type()
            self.take(">")
        elif name == "map":
            self.take("<")
            self.data_type()
            self.take(",")
            self.data_type()
            self.take(">")
        elif name == "struct":
            self.take("<")
            while self.peek() != ">":
                self.struct_field()
                if self.peek() != ">":
                    self.take(",")
            self.take(">")
        else:
            raise _TypeError(f"unknown type name '{name}'{did_you_mean(name, TYPE_NAMES)}")

    def struct_field(self) -> None:
        self.take()  # the field name
        if self.peek() == ":":
            self.take()
        self.data_type()
        if self.peek() == "not":
            self.take()
            self.take("null")
        if self.peek() == "comment":
            self.take()
            if not self.take().startswith("'"):
                raise _TypeError("a struct field's COMMENT needs a quoted string")

    def numbers(self, least: int, most: int) -> None:
        self.take("(")
        count = 0
        while True:
            if not self.take().isdigit():
                raise _TypeError("type parameters are whole numbers")
            count += 1
            if self.peek() != ",":
                break
            self.take()
        self.take(")")
        if not least <= count <= most:
            raise _TypeError(f"expected {least} to {most} parameters, found {count}")


def type_problem(type_text: str) -> str | None:
    """Why `type_text` (optionally ending in `NOT NULL`) is not a Spark SQL type, or None when it is."""
    reader = _Reader(Column.parse("column", type_text).type)
    try:
        reader.data_type()
        if reader.peek():
            raise _TypeError(f"unexpected '{reader.peek()}' after the type")
    except _TypeError as error:
        return str(error)
    return None


def check_type(column: Column) -> None:
    """Raise InvalidOptionError naming the column when its type is not a Spark SQL type."""
    problem = type_problem(column.type)
    if problem is not None:
        raise InvalidOptionError(
            f"Column '{column.name}' has type '{column.type}', which is not a Spark SQL type: {problem}."
        )
