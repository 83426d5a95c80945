"""Every aggregate function, Paimon's and Fluss's, as SQL templates: `agg(acc, in)` and `retract(acc, in)`.

This is Paimon's FieldAggregator split: a function knows how to combine one column's accumulator with
one incoming value, nothing about rows, keys, ordering or I/O. Adding a function means adding one class
here and registering it under the dialect(s) that name it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from wide_assets.errors import InvalidOptionError
from wide_assets.merge.context import fail, sql_string
from wide_assets.spec import Column, FieldFunction

INTEGRAL = ("tinyint", "smallint", "int", "bigint")
NUMERIC = (*INTEGRAL, "float", "double", "decimal")
COMPARABLE = (*NUMERIC, "string", "boolean", "binary", "date", "timestamp", "timestamp_ntz")
INTEGRAL_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}


@dataclass(frozen=True)
class Operands:
    """One application of a function: SQL for the accumulator, the incoming value and the column."""

    acc: str
    inp: str
    column: Column
    function: FieldFunction
    seen: str = "false"

    def swapped(self) -> Operands:
        return replace(self, acc=self.inp, inp=self.acc)


class Aggregator:
    """Base of all functions; `retract` returns None when the function cannot retract."""

    name: str = ""
    types: tuple[str, ...] | None = None
    stateful = False

    def check_type(self, column: Column, name: str) -> None:
        if self.types is not None and column.base_type not in self.types:
            raise InvalidOptionError(
                f"Aggregate function '{name}' does not support column {column.name} of type {column.type}; "
                f"supported types: {list(self.types)}."
            )

    def agg(self, x: Operands) -> str:
        raise NotImplementedError

    def agg_reversed(self, x: Operands) -> str:
        """Merging a record older than the accumulator (Paimon sequence groups): agg(in, acc)."""
        return self.agg(x.swapped())

    def retract(self, x: Operands) -> str | None:
        return None


REGEX_META = set("\\.^$|?*+()[]{}")


def literal_regex(text: str) -> str:
    """A regex matching `text` literally, valid in Java's (Spark) and Rust's (Sail) regex syntax."""
    return "".join("\\" + ch if ch in REGEX_META else ch for ch in text)


def ignoring_nulls(x: Operands, combined: str) -> str:
    return f"(CASE WHEN {x.acc} IS NULL THEN {x.inp} WHEN {x.inp} IS NULL THEN {x.acc} ELSE {combined} END)"


ARITHMETIC = {"add": "+", "subtract": "-", "multiply": "*"}


def checked(x: Operands, operation: str, left: str, right: str) -> str:
    """`left <operation> right` in the column type; integral/decimal overflow is an error (Paimon)."""
    if x.column.base_type in ("float", "double"):
        return f"CAST({left} {ARITHMETIC[operation]} {right} AS {x.column.type})"
    message = fail(f"{operation} overflow in column {x.column.name} ({x.column.type})")
    return f"coalesce(try_cast(try_{operation}({left}, {right}) AS {x.column.type}), {message})"


def wrapped(x: Operands, operation: str) -> str:
    """`acc <operation> in` with two's-complement wrap-around, as Java arithmetic in Fluss does."""
    bits = INTEGRAL_BITS.get(x.column.base_type)
    if bits is None:
        return f"CAST({x.acc} {ARITHMETIC[operation]} {x.inp} AS {x.column.type})"
    half = 2 ** (bits - 1)
    exact = f"CAST({x.acc} AS DECIMAL(38,0)) {ARITHMETIC[operation]} CAST({x.inp} AS DECIMAL(38,0))"
    return f"CAST(pmod({exact} + {half}, {2 * half}) - {half} AS {x.column.type})"


class Sum(Aggregator):
    name = "sum"
    types = NUMERIC

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, checked(x, "add", x.acc, x.inp))

    def retract(self, x: Operands) -> str:
        return (
            f"(CASE WHEN {x.inp} IS NULL THEN {x.acc} WHEN {x.acc} IS NULL THEN {checked(x, 'subtract', '0', x.inp)} "
            f"ELSE {checked(x, 'subtract', x.acc, x.inp)} END)"
        )


class WrappingSum(Sum):
    """Fluss `sum`: integral overflow wraps around (no check)."""

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, wrapped(x, "add"))


class Product(Aggregator):
    name = "product"
    types = NUMERIC

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, checked(x, "multiply", x.acc, x.inp))

    def retract(self, x: Operands) -> str:
        quotient = f"{x.acc} div {x.inp}" if x.column.base_type in INTEGRAL else f"{x.acc} / {x.inp}"
        return f"(CASE WHEN {x.acc} IS NULL OR {x.inp} IS NULL THEN {x.acc} ELSE CAST({quotient} AS {x.column.type}) END)"


class WrappingProduct(Product):
    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, wrapped(x, "multiply"))


class Max(Aggregator):
    name = "max"
    types = COMPARABLE

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"(CASE WHEN {x.inp} > {x.acc} THEN {x.inp} ELSE {x.acc} END)")


class Min(Aggregator):
    name = "min"
    types = COMPARABLE

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"(CASE WHEN {x.inp} < {x.acc} THEN {x.inp} ELSE {x.acc} END)")


class LastValue(Aggregator):
    """The newest value, NULL included; a retraction clears it."""

    name = "last_value"

    def agg(self, x: Operands) -> str:
        return x.inp

    def retract(self, x: Operands) -> str:
        return f"CAST(NULL AS {x.column.type})"


class LastNonNullValue(Aggregator):
    """The newest non-NULL value (Paimon's default); retracting a non-NULL value clears it."""

    name = "last_non_null_value"

    def agg(self, x: Operands) -> str:
        return f"coalesce({x.inp}, {x.acc})"

    def retract(self, x: Operands) -> str:
        return f"(CASE WHEN {x.inp} IS NOT NULL THEN CAST(NULL AS {x.column.type}) ELSE {x.acc} END)"


class FirstValue(Aggregator):
    """Paimon: the value of the first record of the merge, even NULL; needs a 'seen' flag."""

    name = "first_value"
    stateful = True

    def agg(self, x: Operands) -> str:
        return f"(CASE WHEN {x.seen} THEN {x.acc} ELSE {x.inp} END)"

    def agg_reversed(self, x: Operands) -> str:
        return f"(CASE WHEN {x.seen} THEN {x.inp} ELSE {x.acc} END)"


class FirstNonNullValue(Aggregator):
    """The first non-NULL value; an older record's non-NULL value takes precedence when merged late."""

    name = "first_non_null_value"

    def agg(self, x: Operands) -> str:
        return f"coalesce({x.acc}, {x.inp})"


class ListAgg(Aggregator):
    """Paimon `listagg`: concatenation skipping NULL and blank strings, optional token `distinct`."""

    name = "listagg"
    types = ("string",)

    def agg(self, x: Operands) -> str:
        delimiter = sql_string(x.function.delimiter)
        blank_inp = f"({x.inp} IS NULL OR trim({x.inp}) = '')"
        blank_acc = f"({x.acc} IS NULL OR trim({x.acc}) = '')"
        if not x.function.distinct:
            appended = f"concat({x.acc}, {delimiter}, {x.inp})"
        else:
            pattern = sql_string(literal_regex(x.function.delimiter))
            existing = f"split({x.acc}, {pattern})"
            new_tokens = (
                f"array_distinct(filter(split({x.inp}, {pattern}), "
                f"t -> trim(t) <> '' AND NOT array_contains({existing}, t)))"
            )
            appended = (
                f"(CASE WHEN size({new_tokens}) = 0 THEN {x.acc} "
                f"ELSE concat({x.acc}, {delimiter}, array_join({new_tokens}, {delimiter})) END)"
            )
        return f"(CASE WHEN {blank_inp} THEN {x.acc} WHEN {blank_acc} THEN {x.inp} ELSE {appended} END)"


class FlussListAgg(Aggregator):
    """Fluss `listagg`/`string_agg`: NULL skipped, blank strings kept, no distinct."""

    name = "listagg"
    types = ("string",)

    def agg(self, x: Operands) -> str:
        delimiter = sql_string(x.function.delimiter)
        return ignoring_nulls(x, f"concat({x.acc}, {delimiter}, {x.inp})")


class BoolAnd(Aggregator):
    name = "bool_and"
    types = ("boolean",)

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"({x.acc} AND {x.inp})")


class BoolOr(Aggregator):
    name = "bool_or"
    types = ("boolean",)

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"({x.acc} OR {x.inp})")


PAIMON_FUNCTIONS: dict[str, Aggregator] = {
    "sum": Sum(),
    "product": Product(),
    "max": Max(),
    "min": Min(),
    "last_value": LastValue(),
    "last_non_null_value": LastNonNullValue(),
    "first_value": FirstValue(),
    "first_non_null_value": FirstNonNullValue(),
    "listagg": ListAgg(),
    "bool_and": BoolAnd(),
    "bool_or": BoolOr(),
}

FLUSS_FUNCTIONS: dict[str, Aggregator] = {
    "sum": WrappingSum(),
    "product": WrappingProduct(),
    "max": Max(),
    "min": Min(),
    "last_value": LastValue(),
    "last_value_ignore_nulls": LastNonNullValue(),
    # Fluss's code replaces a stored NULL with the next value (its docs say otherwise).
    "first_value": FirstNonNullValue(),
    "first_value_ignore_nulls": FirstNonNullValue(),
    "listagg": FlussListAgg(),
    "string_agg": FlussListAgg(),
    "bool_and": BoolAnd(),
    "bool_or": BoolOr(),
}


def aggregator(dialect: str, name: str) -> Aggregator:
    return (FLUSS_FUNCTIONS if dialect == "fluss" else PAIMON_FUNCTIONS)[name]


def retraction_unsupported(column: str, function: str) -> str:
    return fail(
        f"Aggregate function '{function}' does not support retraction, If you allow this function to ignore "
        f"retraction messages, you can configure 'fields.{column}.ignore-retract'='true'. "
    )
