"""Spark SQL type names (`decimal(10,2)`, `array<string>`, `struct<a: int>` ...) checked without Spark.

A declared column type reaches Spark only inside a run, where a typo is a parser error far from the
declaration. Checking the grammar here lets a definition fail when it loads, naming the column and the
closest valid type name.
"""

from __future__ import annotations

import difflib
import re

from wide_assets.schema import NOT_NULL

__all__ = ["SIMPLE_TYPES", "type_problem"]

SIMPLE_TYPES = (
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
    "timestamp_ltz",
    "timestamp_ntz",
    "string",
    "binary",
    "variant",
)
# Types whose parameters are the given number of integers: (min count, max count).
PARAMETERIZED = {"decimal": (0, 2), "dec": (0, 2), "numeric": (0, 2), "char": (1, 1), "varchar": (1, 1)}
NESTED = ("array", "map", "struct")
MAX_DECIMAL_PRECISION = 38
_TOKEN = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>\d+)|(?P<symbol>[<>(),:]))")


class _TypeSyntaxError(ValueError):
    pass


class _Parser:
    """Recursive descent over the tokens of one type text."""

    def __init__(self, text: str) -> None:
        self.tokens: list[str] = []
        position = 0
        stripped = text.rstrip()
        while position < len(stripped):
            match = _TOKEN.match(stripped, position)
            if match is None or match.end() == position:
                raise _TypeSyntaxError(f"unexpected {stripped[position:].strip()[:1]!r}")
            self.tokens.append(match.group(match.lastgroup or "symbol"))
            position = match.end()
        self.index = 0

    def peek(self) -> str | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None:
            raise _TypeSyntaxError(f"it ends where {expected or 'a type'!r} should follow")
        if expected is not None and token != expected:
            raise _TypeSyntaxError(f"{expected!r} expected, found {token!r}")
        self.index += 1
        return token

    def parse_type(self) -> None:
        name = self.take().lower()
        if name in SIMPLE_TYPES:
            return
        if name in PARAMETERIZED:
            self._parameters(name)
        elif name == "array":
            self.take("<")
            self.parse_type()
            self.take(">")
        elif name == "map":
            self.take("<")
            self.parse_type()
            self.take(",")
            self.parse_type()
            self.take(">")
        elif name == "struct":
            self._struct_fields()
        else:
            known = [*SIMPLE_TYPES, *PARAMETERIZED, *NESTED]
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _TypeSyntaxError(f"{name!r} is not a Spark SQL type{hint}")

    def _parameters(self, name: str) -> None:
        low, high = PARAMETERIZED[name]
        numbers: list[int] = []
        if self.peek() == "(":
            self.take("(")
            numbers.append(self._number())
            while self.peek() == ",":
                self.take(",")
                numbers.append(self._number())
            self.take(")")
        if not low <= len(numbers) <= high:
            raise _TypeSyntaxError(f"{name} takes {low}..{high} parameters, not {len(numbers)}")
        if name in ("decimal", "dec", "numeric") and numbers:
            precision, scale = numbers[0], numbers[1] if len(numbers) > 1 else 0
            if not 1 <= precision <= MAX_DECIMAL_PRECISION or scale > precision:
                raise _TypeSyntaxError(
                    f"decimal({precision},{scale}) needs 1 <= precision <= {MAX_DECIMAL_PRECISION} "
                    "and scale <= precision"
                )

    def _number(self) -> int:
        token = self.take()
        if not token.isdigit():
            raise _TypeSyntaxError(f"a number expected, found {token!r}")
        return int(token)

    def _struct_fields(self) -> None:
        self.take("<")
        while True:
            self.take()  # the field name
            if self.peek() == ":":
                self.take(":")
            self.parse_type()
            if self.peek() != ",":
                break
            self.take(",")
        self.take(">")


def type_problem(type_text: str) -> str | None:
    """Why `type_text` (optionally ending in `NOT NULL`) is not a Spark SQL type, or None when it is."""
    text = NOT_NULL.sub("", type_text).strip()
    if not text:
        return "the type is empty"
    try:
        parser = _Parser(text)
        parser.parse_type()
        if parser.peek() is not None:
            return f"unexpected {parser.peek()!r} after the type"
    except _TypeSyntaxError as error:
        return str(error)
    return None
