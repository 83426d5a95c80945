"""Every aggregate function, Paimon's and Fluss's, as SQL templates: `agg(acc, in)` and `retract(acc, in)`.

This is Paimon's FieldAggregator split: a function knows how to combine one column's accumulator with
one incoming value, nothing about rows, keys, ordering or I/O. Adding a function means adding one class
here and registering it under the dialect(s) that name it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from wide_assets.errors import InvalidOptionError
from wide_assets.schema import Column, FieldFunction
from wide_assets.sql import fail, string_literal

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

    # A function whose storage format has no SQL counterpart folds a SQL representation instead:
    # `decode` on the way into the fold, `encode` on the way out, both SQL over one column value.
    def fold_type(self, column: Column) -> str:
        return column.type

    def decode(self, value: str, column: Column) -> str:
        return value

    def encode(self, value: str, column: Column) -> str:
        return value

    def prepare(self, spark: Any) -> None:
        """Register what the SQL of `decode`/`encode` calls (once per session)."""


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
        delimiter = string_literal(x.function.delimiter)
        blank_inp = f"({x.inp} IS NULL OR trim({x.inp}) = '')"
        blank_acc = f"({x.acc} IS NULL OR trim({x.acc}) = '')"
        if not x.function.distinct:
            appended = f"concat({x.acc}, {delimiter}, {x.inp})"
        else:
            pattern = string_literal(literal_regex(x.function.delimiter))
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
        delimiter = string_literal(x.function.delimiter)
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


class Collect(Aggregator):
    """Paimon `collect`: concatenated arrays (`distinct` keeps each element once); retraction removes
    one occurrence per retracted element."""

    name = "collect"
    types = ("array",)

    def agg(self, x: Operands) -> str:
        if not x.function.distinct:
            return ignoring_nulls(x, f"concat({x.acc}, {x.inp})")
        empty = f"CAST(array() AS {x.column.type})"
        both = f"array_distinct(concat(coalesce({x.acc}, {empty}), coalesce({x.inp}, {empty})))"
        return f"(CASE WHEN {x.acc} IS NULL AND {x.inp} IS NULL THEN {x.acc} ELSE {both} END)"

    def retract(self, x: Operands) -> str:
        # Keep the i-th element while its occurrences so far outnumber its retracted occurrences.
        occurrences = f"size(filter(slice({x.acc}, 1, i + 1), y -> y <=> e))"
        retracted = f"size(filter({x.inp}, y -> y <=> e))"
        kept = f"filter(transform({x.acc}, (e, i) -> named_struct('e', e, 'keep', {occurrences} > {retracted})), t -> t.keep)"
        return f"(CASE WHEN {x.acc} IS NULL OR {x.inp} IS NULL THEN {x.acc} ELSE transform({kept}, t -> t.e) END)"


class MergeMap(Aggregator):
    """Paimon `merge_map`: maps merged, incoming keys win; retraction removes the retracted keys."""

    name = "merge_map"
    types = ("map",)

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"map_concat({self._without_keys_of(x.acc, x.inp)}, {x.inp})")

    def retract(self, x: Operands) -> str:
        return f"(CASE WHEN {x.acc} IS NULL OR {x.inp} IS NULL THEN {x.acc} ELSE {self._without_keys_of(x.acc, x.inp)} END)"

    @staticmethod
    def _without_keys_of(target: str, keys_of: str) -> str:
        # map_concat rejects duplicate keys by default, so drop the overridden ones first.
        return f"map_filter({target}, (k, v) -> NOT array_contains(map_keys({keys_of}), k))"


class RoaringBitmap(Aggregator):
    """`rbm32`/`rbm64`: OR of RoaringBitmaps stored as BINARY in the portable serialized format.

    Spark SQL has no RoaringBitmap type, so inside the fold a bitmap is its sorted array of values
    (OR = array_union); vectorized (pandas) UDFs decode and encode with pyroaring at the boundary.
    """

    types = ("binary",)

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.name = f"rbm{bits}"
        self.element = "int" if bits == 32 else "bigint"

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"array_sort(array_union({x.acc}, {x.inp}))")

    def fold_type(self, column: Column) -> str:
        return f"array<{self.element}>"

    def decode(self, value: str, column: Column) -> str:
        return f"wide_assets_{self.name}_decode({value})"

    def encode(self, value: str, column: Column) -> str:
        return f"wide_assets_{self.name}_encode({value})"

    def prepare(self, spark: Any) -> None:
        import pandas as pd
        from pyroaring import BitMap, BitMap64
        from pyspark.sql.pandas.functions import pandas_udf

        bitmap = BitMap if self.bits == 32 else BitMap64

        def decode(values: pd.Series) -> pd.Series:
            return values.map(lambda b: None if b is None else list(bitmap.deserialize(bytes(b))))

        def encode(values: pd.Series) -> pd.Series:
            return values.map(lambda v: None if v is None else bitmap(list(v)).serialize())

        # pandas_udf reads the hints as objects; this module's postponed annotations are strings.
        for udf in (decode, encode):
            udf.__annotations__ = {"values": pd.Series, "return": pd.Series}

        # Without pandas' type information no overload of pandas_udf matches these Series functions.
        vectorized: Any = pandas_udf
        spark.udf.register(f"wide_assets_{self.name}_decode", vectorized(decode, f"array<{self.element}>"))
        spark.udf.register(f"wide_assets_{self.name}_encode", vectorized(encode, "binary"))


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
    "rbm32": RoaringBitmap(32),
    "rbm64": RoaringBitmap(64),
    "collect": Collect(),
    "merge_map": MergeMap(),
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
    "rbm32": PAIMON_FUNCTIONS["rbm32"],
    "rbm64": PAIMON_FUNCTIONS["rbm64"],
}


def aggregator(dialect: str, name: str) -> Aggregator:
    return (FLUSS_FUNCTIONS if dialect == "fluss" else PAIMON_FUNCTIONS)[name]


def retraction_unsupported(column: str, function: str) -> str:
    return fail(
        f"Aggregate function '{function}' does not support retraction, If you allow this function to ignore "
        f"retraction messages, you can configure 'fields.{column}.ignore-retract'='true'. "
    )
