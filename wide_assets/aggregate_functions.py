"""Every aggregate function, Paimon's and Fluss's, as SQL templates: `agg(acc, in)` and `retract(acc, in)`.

This is Paimon's FieldAggregator split: a function knows how to combine one column's accumulator with
one incoming value, nothing about rows, keys, ordering or I/O. Adding a function means adding one class
here and registering it under the dialect(s) that name it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from wide_assets.decimals import (
    EXACT_PRODUCT_DIGITS,
    DecimalType,
    decimal_add,
    decimal_multiply,
    decimal_subtract,
)
from wide_assets.errors import ERROR_MARKER, InvalidOptionError
from wide_assets.java_text import java_list, nested_parts, type_name
from wide_assets.schema import Column, FieldFunction
from wide_assets.sketches import SketchKind, union_all
from wide_assets.sql import Value, fail, quote, string_literal

INTEGRAL = ("tinyint", "smallint", "int", "bigint")
NUMERIC = (*INTEGRAL, "float", "double", "decimal")
COMPARABLE = (*NUMERIC, "string", "boolean", "binary", "date", "timestamp", "timestamp_ntz")
# Fluss's max/min take neither BOOLEAN nor BYTES (AggFunctionType.MAX_MIN_TYPES).
FLUSS_COMPARABLE = tuple(t for t in COMPARABLE if t not in ("boolean", "binary"))
INTEGRAL_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
# The Java type of an integral column, as Paimon's overflow messages name it.
JAVA_INTEGRAL = {"tinyint": "byte", "smallint": "short", "int": "int", "bigint": "long"}
# Fluss's DataTypeRoots per function (AggFunctionType.getSupportedDataTypeRoots), as its messages list them.
FLUSS_NUMERIC_ROOTS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
FLUSS_MAX_MIN_ROOTS = (
    "CHAR",
    "STRING",
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
    "DATE",
    "TIME_WITHOUT_TIME_ZONE",
    "TIMESTAMP_WITHOUT_TIME_ZONE",
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE",
)


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
    # Whether folding can fail on the accumulated value (an overflow check): then a record cannot be
    # judged without the stored row, so a write-only table's writers must look it up.
    checks_accumulator = False
    # Paimon's refusal of another column type ({column}, {type} filled in; the function's factory), and
    # the type roots Fluss's refusal lists.
    paimon_type_error = ""
    fluss_roots: tuple[str, ...] = ()
    # The types Fluss accepts, when fewer than `types`.
    fluss_types: tuple[str, ...] | None = None

    def check_type(self, column: Column, name: str, dialect: str) -> None:
        """Refuse a column type the function cannot fold, as Paimon (when the merge function is built)
        or Fluss (in the Flink DDL) does; `name` is the function name as configured."""
        types = (self.fluss_types or self.types) if dialect == "fluss" else self.types
        if types is None or column.base_type in types:
            return
        if dialect == "fluss":
            raise InvalidOptionError(
                f"Invalid aggregation function configuration for column '{column.name}': "
                f"Data type for {name} column must be part of {java_list(self.fluss_roots)} "
                f"but was '{type_name(column, 'fluss')}'."
            )
        raise InvalidOptionError(
            self.paimon_type_error.format(column=column.name, type=type_name(column, "paimon"))
        )

    def check_options(self, function: FieldFunction, column: Column) -> None:
        """Refuse function options that do not fit the column, as the function's factory does."""

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


def overflow(x: Operands, operation: str, left: str | None, right: str) -> str:
    """The error an overflowing integral `left <operation> right` raises: Paimon's message
    (FieldSumAgg/FieldProductAgg: Java's `Math.*Exact` and their byte/short variants), with the
    operands' values, e.g. `int overflow: 2147483647 + 1` or `byte overflow: 127 + 1 = 128`;
    `left` None is a negation (`int overflow: --2147483648`)."""
    symbol = ARITHMETIC[operation]
    java = JAVA_INTEGRAL[x.column.base_type]
    if left is None:
        parts: list[str | Value] = [f"{java} overflow: -", Value(right)]
        exact = f"-CAST({right} AS INT)"
    else:
        parts = [f"{java} overflow: ", Value(left), f" {symbol} ", Value(right)]
        exact = f"CAST({left} AS INT) {symbol} CAST({right} AS INT)"
    if java in ("byte", "short"):  # the result, computed as an int, is printed too
        parts += [" = ", Value(exact)]
    return fail(*parts)


def decimal_arithmetic(x: Operands, operation: str, left: str, right: str, decimal: DecimalType) -> str:
    """`left <operation> right` as Paimon's and Fluss's decimal arithmetic has it: exact, rounded
    HALF_UP to the column's scale, NULL on overflow (docs/semantics.md, DECIMAL arithmetic)."""
    if operation == "add":
        return decimal_add(left, right, decimal)
    if operation == "subtract":
        return decimal_subtract(left, right, decimal)
    too_wide = fail(
        f"DECIMAL product in column {x.column.name} ({x.column.type}) of ",
        Value(left),
        " and ",
        Value(right),
        f": Spark SQL multiplies DECIMAL operands of more than {EXACT_PRODUCT_DIGITS} digits only "
        f"approximately, so the product is refused; declare the column with precision "
        f"{EXACT_PRODUCT_DIGITS} or less to multiply these values",
    )
    return decimal_multiply(left, right, decimal, too_wide)


def checked(x: Operands, operation: str, left: str | None, right: str) -> str:
    """`left <operation> right` (`0 - right` for `left` None) in the column type; integral overflow
    is an error, decimal overflow NULL (Paimon)."""
    lhs = "0" if left is None else left
    if x.column.base_type in ("float", "double"):
        return f"CAST({lhs} {ARITHMETIC[operation]} {right} AS {x.column.type})"
    decimal = DecimalType.parse(x.column.type)
    if decimal is not None:
        return decimal_arithmetic(x, operation, lhs, right, decimal)
    message = overflow(x, operation, left, right)
    if x.column.base_type in ("tinyint", "smallint"):
        # Sail's try_* take no TINYINT/SMALLINT; in INT the result is exact and try_cast range-checks it.
        lhs, right = f"CAST({lhs} AS INT)", f"CAST({right} AS INT)"
    return f"coalesce(try_cast(try_{operation}({lhs}, {right}) AS {x.column.type}), {message})"


def wrapped(x: Operands, operation: str) -> str:
    """`acc <operation> in` with two's-complement wrap-around, as Java arithmetic in Fluss does;
    decimals as in Paimon (Fluss's `DecimalUtils` is Paimon's)."""
    decimal = DecimalType.parse(x.column.type)
    if decimal is not None:
        return decimal_arithmetic(x, operation, x.acc, x.inp, decimal)
    bits = INTEGRAL_BITS.get(x.column.base_type)
    if bits is None:
        return f"CAST({x.acc} {ARITHMETIC[operation]} {x.inp} AS {x.column.type})"
    half = 2 ** (bits - 1)
    exact = f"CAST({x.acc} AS DECIMAL(38,0)) {ARITHMETIC[operation]} CAST({x.inp} AS DECIMAL(38,0))"
    return f"CAST(pmod({exact} + {half}, {2 * half}) - {half} AS {x.column.type})"


class Sum(Aggregator):
    name = "sum"
    types = NUMERIC
    paimon_type_error = "Data type for sum column must be 'NumericType' but was '{type}'."
    fluss_roots = FLUSS_NUMERIC_ROOTS
    checks_accumulator = True

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, checked(x, "add", x.acc, x.inp))

    def retract(self, x: Operands) -> str:
        return (
            f"(CASE WHEN {x.inp} IS NULL THEN {x.acc} WHEN {x.acc} IS NULL THEN {checked(x, 'subtract', None, x.inp)} "
            f"ELSE {checked(x, 'subtract', x.acc, x.inp)} END)"
        )


class WrappingSum(Sum):
    """Fluss `sum`: integral overflow wraps around (no check)."""

    checks_accumulator = False

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, wrapped(x, "add"))


class Product(Aggregator):
    name = "product"
    types = NUMERIC
    paimon_type_error = "Data type for product column must be 'NumericType' but was '{type}'."
    fluss_roots = FLUSS_NUMERIC_ROOTS
    checks_accumulator = True

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, checked(x, "multiply", x.acc, x.inp))

    def retract(self, x: Operands) -> str:
        quotient = f"{x.acc} div {x.inp}" if x.column.base_type in INTEGRAL else f"{x.acc} / {x.inp}"
        return f"(CASE WHEN {x.acc} IS NULL OR {x.inp} IS NULL THEN {x.acc} ELSE CAST({quotient} AS {x.column.type}) END)"


class WrappingProduct(Product):
    checks_accumulator = False

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, wrapped(x, "multiply"))


def ordered_before(left: str, right: str, column: Column) -> str:
    """`left < right` as Paimon's max/min compare values (FieldMaxAgg/FieldMinAgg through
    InternalRowUtils.compare): FLOAT and DOUBLE in the order of Java's Float/Double.compare, which
    puts -0.0 before 0.0 and NaN after every other value (+Infinity included), where SQL's `<` finds
    the zeros equal and engines disagree on NaN."""
    if column.base_type not in ("float", "double"):
        return f"{left} < {right}"
    negative_zero = "({v} = 0 AND CAST({v} AS STRING) LIKE '-%')"
    zeros = f"({negative_zero.format(v=left)} AND NOT {negative_zero.format(v=right)})"
    return (
        f"(CASE WHEN isnan({left}) THEN false WHEN isnan({right}) THEN true "
        f"WHEN {left} < {right} THEN true WHEN {left} > {right} THEN false ELSE {zeros} END)"
    )


class Max(Aggregator):
    name = "max"
    types = COMPARABLE
    paimon_type_error = "Data type for max column '{column}' must be comparable but was '{type}'."
    fluss_roots = FLUSS_MAX_MIN_ROOTS
    fluss_types = FLUSS_COMPARABLE

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(
            x, f"(CASE WHEN {ordered_before(x.acc, x.inp, x.column)} THEN {x.inp} ELSE {x.acc} END)"
        )


class Min(Aggregator):
    name = "min"
    types = COMPARABLE
    paimon_type_error = "Data type for min column '{column}' must be comparable but was '{type}'."
    fluss_roots = FLUSS_MAX_MIN_ROOTS
    fluss_types = FLUSS_COMPARABLE

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(
            x, f"(CASE WHEN {ordered_before(x.inp, x.acc, x.column)} THEN {x.inp} ELSE {x.acc} END)"
        )


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


# Java's `Character.isWhitespace`, which Paimon's `StringUtils.isBlank` tests every character with:
# the space separators (Zs, Zl, Zp) except the no-break spaces U+00A0, U+2007 and U+202F, plus
# U+0009-U+000D and U+001C-U+001F. No supplementary code point is whitespace.
JAVA_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
    "\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)
# A regex class of every other character. `\uXXXX` means the same in Java's regex syntax (JVM Spark)
# and Rust's (Sail), and has no braces, which `spark.sql(text, df=...)` would read as placeholders.
NOT_JAVA_WHITESPACE = "[^" + "".join(f"\\u{ord(c):04X}" for c in JAVA_WHITESPACE) + "]"


def blank(value: str) -> str:
    """SQL: `value` is NULL or blank as Paimon's `StringUtils.isBlank` has it: empty, or made only of
    Java whitespace."""
    return f"({value} IS NULL OR NOT ({value} RLIKE {string_literal(NOT_JAVA_WHITESPACE)}))"


class ListAgg(Aggregator):
    """Paimon `listagg` (FieldListaggAgg): a NULL or blank input leaves the accumulator, a non-blank
    input onto a NULL or blank accumulator replaces it verbatim, otherwise `acc + delimiter + input`.
    With `distinct`, the input's tokens (split on the whole delimiter, or on a space when the
    delimiter is empty) are appended except blank ones and ones already seen in the accumulator or
    earlier in the input."""

    name = "listagg"
    types = ("string",)
    paimon_type_error = "Data type for list agg column must be 'VarCharType' but was '{type}'."

    def agg(self, x: Operands) -> str:
        delimiter = string_literal(x.function.delimiter)
        if not x.function.distinct:
            appended = f"concat({x.acc}, {delimiter}, {x.inp})"
        else:
            pattern = string_literal(literal_regex(x.function.delimiter or " "))
            existing = f"split({x.acc}, {pattern})"
            new_tokens = (
                f"array_distinct(filter(split({x.inp}, {pattern}), "
                f"t -> NOT {blank('t')} AND NOT array_contains({existing}, t)))"
            )
            appended = (
                f"(CASE WHEN size({new_tokens}) = 0 THEN {x.acc} "
                f"ELSE concat({x.acc}, {delimiter}, array_join({new_tokens}, {delimiter})) END)"
            )
        return f"(CASE WHEN {blank(x.inp)} THEN {x.acc} WHEN {blank(x.acc)} THEN {x.inp} ELSE {appended} END)"


class FlussListAgg(Aggregator):
    """Fluss `listagg`/`string_agg`: NULL skipped, blank strings kept, no distinct."""

    name = "listagg"
    types = ("string",)
    fluss_roots = ("STRING", "CHAR")

    def agg(self, x: Operands) -> str:
        delimiter = string_literal(x.function.delimiter)
        return ignoring_nulls(x, f"concat({x.acc}, {delimiter}, {x.inp})")


class BoolAnd(Aggregator):
    name = "bool_and"
    types = ("boolean",)
    paimon_type_error = "Data type for bool and column must be 'BooleanType' but was '{type}'."
    fluss_roots = ("BOOLEAN",)

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"({x.acc} AND {x.inp})")


class BoolOr(Aggregator):
    name = "bool_or"
    types = ("boolean",)
    paimon_type_error = "Data type for bool or column must be 'BooleanType' but was '{type}'."
    fluss_roots = ("BOOLEAN",)

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"({x.acc} OR {x.inp})")


class Collect(Aggregator):
    """Paimon `collect`: concatenated arrays (`distinct` keeps each element once); retraction removes
    one occurrence per retracted element."""

    name = "collect"
    types = ("array",)
    paimon_type_error = "Data type for collect column must be 'Array' but was '{type}'."

    def agg(self, x: Operands) -> str:
        if not x.function.distinct:
            return ignoring_nulls(x, f"concat({x.acc}, {x.inp})")
        empty = f"CAST(array() AS {x.column.type})"
        both = f"array_distinct(concat(coalesce({x.acc}, {empty}), coalesce({x.inp}, {empty})))"
        return f"(CASE WHEN {x.acc} IS NULL AND {x.inp} IS NULL THEN {x.acc} ELSE {both} END)"

    def decode(self, value: str, column: Column) -> str:
        # Rebuilt in SQL: a list read from Delta names its element field `element`, one SQL builds
        # `item`, and Sail refuses a struct (the fold state) mixing the two ("Child type mismatch").
        return f"transform({value}, e -> e)"

    def retract(self, x: Operands) -> str:
        # Keep the i-th element while its occurrences so far outnumber its retracted occurrences.
        occurrences = f"size(filter(slice({x.acc}, 1, i + 1), y -> y <=> e))"
        retracted = f"size(filter({x.inp}, y -> y <=> e))"
        kept = f"filter(transform({x.acc}, (e, i) -> named_struct('e', e, 'keep', {occurrences} > {retracted})), t -> t.keep)"
        return f"(CASE WHEN {x.acc} IS NULL OR {x.inp} IS NULL THEN {x.acc} ELSE transform({kept}, t -> t.e) END)"


# Paimon's CoreOptions.NestedKeyNullStrategy values, and the error of its ERROR strategy.
NESTED_KEY_NULL_STRATEGIES = ("merge", "ignore", "error")
NESTED_KEY_NULL = "Nested key contains null values. Primary key fields must not be null."


class NestedUpdate(Aggregator):
    """Paimon `nested_update` (FieldNestedUpdateAgg) on ARRAY<STRUCT>: without `nested-key` the input's
    non-NULL rows are appended while fewer than `count-limit`; with it, a row replaces the row of its
    key (only when not older by `nested-sequence-field`, NULLs first) and a new key is added while the
    array holds fewer than `count-limit` rows. A retraction removes the rows of the retracted keys (or
    the rows equal to the retracted ones). A row whose key has a NULL field is merged, dropped or refused
    (`nested-key-null-strategy`). Paimon keeps keyed rows in a HashMap, so its order is none in
    particular; here kept rows keep their place and new ones follow in input order."""

    name = "nested_update"
    types = ("array",)
    paimon_type_error = "Data type for nested table column must be 'Array<Row>' but was '{type}'."

    def check_type(self, column: Column, name: str, dialect: str) -> None:
        if not column.type.replace(" ", "").startswith("array<struct<"):
            raise InvalidOptionError(self.paimon_type_error.format(type=type_name(column, dialect)))

    def check_options(self, function: FieldFunction, column: Column) -> None:
        # FieldNestedUpdateAggFactory.checkOptionDependencies, in its order.
        for option, configured in (
            ("nested-key-null-strategy", function.nested_key_nulls is not None),
            ("nested-sequence-field", bool(function.nested_sequence)),
        ):
            if configured and not function.nested_key:
                raise InvalidOptionError(
                    f"Option 'fields.<field-name>.{option}' requires 'fields.<field-name>.nested-key' to be "
                    "configured."
                )
        names = [name for name, _ in element_fields(column)]
        for option, fields in (
            ("nested-key", function.nested_key),
            ("nested-sequence-field", function.nested_sequence),
        ):
            for field in fields:
                if field not in names:  # Paimon fails building its projection, without a message
                    raise InvalidOptionError(
                        f"Option 'fields.{column.name}.{option}' names '{field}', which is not a field of "
                        f"the rows of column '{column.name}': {java_list(names)}."
                    )

    @staticmethod
    def _non_null(array: str) -> str:
        return f"filter({array}, nu_x -> nu_x IS NOT NULL)"

    def _keyed_rows(self, array: str, fn: FieldFunction) -> str:
        """The non-NULL rows of `array` as `fields.<f>.nested-key-null-strategy` lets them be merged:
        all (merge), those whose key has no NULL field (ignore), or all unless one has (error)."""
        rows = self._non_null(array)
        null_key = "(" + " OR ".join(f"nk_x.{quote(f)} IS NULL" for f in fn.nested_key) + ")"
        if fn.nested_key_nulls == "ignore":
            return f"filter({rows}, nk_x -> NOT {null_key})"
        if fn.nested_key_nulls == "error":
            return (
                f"(CASE WHEN exists({rows}, nk_x -> {null_key}) THEN {fail(NESTED_KEY_NULL)} ELSE {rows} END)"
            )
        return rows

    @staticmethod
    def _key(row: str, fields: tuple[str, ...]) -> str:
        return "named_struct(" + ", ".join(f"{string_literal(f)}, {row}.{quote(f)}" for f in fields) + ")"

    @staticmethod
    def _not_older(new: str, old: str, fields: tuple[str, ...]) -> str:
        """`new` >= `old` by the sequence fields, compared in turn with NULLs first."""
        if not fields:
            return "true"
        a, b = f"{new}.{quote(fields[0])}", f"{old}.{quote(fields[0])}"
        greater = f"({a} IS NOT NULL AND ({b} IS NULL OR {a} > {b}))"
        return f"({greater} OR ({a} <=> {b} AND {NestedUpdate._not_older(new, old, fields[1:])}))"

    def agg(self, x: Operands) -> str:
        fn, limit = x.function, x.function.count_limit
        if not fn.nested_key:
            appended = (
                f"CASE WHEN {x.acc} IS NULL THEN slice({self._non_null(x.inp)}, 1, {limit}) "
                f"WHEN size({x.acc}) >= {limit} THEN {x.acc} "
                f"ELSE concat({self._non_null(x.acc)}, slice({self._non_null(x.inp)}, 1, {limit} - size({x.acc}))) END"
            )
            return f"(CASE WHEN {x.inp} IS NULL THEN {x.acc} ELSE {appended} END)"
        key = fn.nested_key
        same = f"{self._key('nu_y', key)} <=> {self._key('nu_e', key)}"
        newer = self._not_older("nu_e", "nu_y", fn.nested_sequence)

        def put(limited: bool) -> str:
            full = f"WHEN size(nu_m) >= {limit} THEN nu_m " if limited else ""
            return (
                f"CASE WHEN exists(nu_m, nu_y -> {same}) "
                f"THEN transform(nu_m, nu_y -> CASE WHEN {same} AND {newer} THEN nu_e ELSE nu_y END) "
                f"{full}ELSE concat(nu_m, array(nu_e)) END"
            )

        empty = f"CAST(array() AS {x.column.type})"
        kept = f"aggregate({self._keyed_rows(f'coalesce({x.acc}, {empty})', fn)}, {empty}, (nu_m, nu_e) -> {put(False)})"
        merged = f"aggregate({self._keyed_rows(x.inp, fn)}, {kept}, (nu_m, nu_e) -> {put(True)})"
        return f"(CASE WHEN {x.inp} IS NULL THEN {x.acc} ELSE {merged} END)"

    def retract(self, x: Operands) -> str | None:
        fn, key = x.function, x.function.nested_key
        if key:
            same = f"{self._key('nu_y', key)} <=> {self._key('nu_r', key)}"
            acc, retracted = self._keyed_rows(x.acc, fn), self._keyed_rows(x.inp, fn)
        else:
            same, acc, retracted = "nu_y <=> nu_r", self._non_null(x.acc), self._non_null(x.inp)
        kept = f"filter({acc}, nu_y -> NOT exists({retracted}, nu_r -> {same}))"
        return f"(CASE WHEN {x.acc} IS NULL OR {x.inp} IS NULL THEN {x.acc} ELSE {kept} END)"


class NestedPartialUpdate(NestedUpdate):
    """Paimon `nested_partial_update` (FieldNestedPartialUpdateAgg) on ARRAY<STRUCT> with a required
    `nested-key`: the stored rows, then the input's, are grouped by key, and each field of a key's row
    is the last non-NULL value its rows hold (a partial update inside the array). Paimon returns its
    HashMap's order; here keys keep their first appearance. Retraction is not supported."""

    name = "nested_partial_update"

    def check_options(self, function: FieldFunction, column: Column) -> None:
        if not function.nested_key:  # Paimon's `checkArgument(!nestedKey.isEmpty())` has no message
            raise InvalidOptionError(
                f"Function 'nested_partial_update' of column '{column.name}' needs the nested key its rows "
                f"are merged by: set 'fields.{column.name}.nested-key' to the row fields forming it."
            )
        super().check_options(function, column)

    def agg(self, x: Operands) -> str:
        fields = [name for name, _ in element_fields(x.column)]
        empty = f"CAST(array() AS {x.column.type})"
        fn, key = x.function, x.function.nested_key
        rows = f"concat({self._keyed_rows(f'coalesce({x.acc}, {empty})', fn)}, {self._keyed_rows(x.inp, fn)})"
        updated = (
            "named_struct("
            + ", ".join(f"{string_literal(f)}, coalesce(np_r.{quote(f)}, np_a.{quote(f)})" for f in fields)
            + ")"
        )
        of_key = f"filter({rows}, np_r -> {self._key('np_r', key)} <=> np_k)"
        merged = (
            f"transform(array_distinct(transform({rows}, np_r -> {self._key('np_r', key)})), "
            f"np_k -> aggregate({of_key}, CAST(NULL AS {element_type(x.column)}), "
            f"(np_a, np_r) -> {updated}))"
        )
        return f"(CASE WHEN {x.inp} IS NULL THEN {x.acc} ELSE {merged} END)"

    def retract(self, x: Operands) -> str | None:
        return None


def element_type(column: Column) -> str:
    """The element type of an ARRAY column ("" for any other type)."""
    parts = nested_parts(column.type)
    return parts[1][0] if parts is not None and parts[0] == "array" else ""


def element_fields(column: Column) -> list[tuple[str, str]]:
    """The fields of an ARRAY<STRUCT> column's rows; none for any other type."""
    return struct_fields(element_type(column)) or []


def struct_fields(type_text: str) -> list[tuple[str, str]] | None:
    """`struct<a:int,b:string>` -> [("a", "int"), ("b", "string")]; None for any other type."""
    parts = nested_parts(type_text)
    if parts is None or parts[0] != "struct":
        return None
    fields = [re.split(r"\s*:\s*|\s+", part, maxsplit=1) for part in parts[1]]
    return [(field[0].strip("`"), field[1] if len(field) > 1 else "") for field in fields]


class MergeMapWithKeyTime(Aggregator):
    """Paimon `merge_map_with_keytime` (FieldMergeMapWithKeyTimeAgg) on MAP<K, ROW>: an incoming entry
    replaces the key's entry when its time (`fields.<f>.ts-field`, default the ROW's last field,
    compared as strings) is greater, or the stored one has none; an entry without a time is skipped;
    a NULL ROW removes the key. Retraction is not supported."""

    name = "merge_map_with_keytime"
    types = ("map",)

    def _value_type(self, column: Column) -> tuple[str, list[tuple[str, str]] | None]:
        parts = nested_parts(column.type)
        value = parts[1][1] if parts is not None and len(parts[1]) == 2 else ""
        return value, struct_fields(value)

    def check_type(self, column: Column, name: str, dialect: str) -> None:
        if column.base_type != "map":
            raise InvalidOptionError(
                f"Data type for field '{column.name}' must be 'MAP' but was '{type_name(column, dialect)}'"
            )
        value, fields = self._value_type(column)
        if fields is None:
            raise InvalidOptionError(
                f"Value type of MAP for field '{column.name}' must be ROW but was "
                f"'{type_name(Column(column.name, value), dialect)}'"
            )
        if len(fields) < 2:
            raise InvalidOptionError(
                f"ROW type for field '{column.name}' must have at least 2 fields, but found {len(fields)}"
            )

    def check_options(self, function: FieldFunction, column: Column) -> None:
        names = [name for name, _ in self._value_type(column)[1] or []]
        if function.ts_field is not None and function.ts_field not in names:
            raise InvalidOptionError(
                f"Timestamp field '{function.ts_field}' not found in ROW type for field '{column.name}'. "
                f"Available fields: {java_list(names)}"
            )

    def agg(self, x: Operands) -> str:
        value_type, fields = self._value_type(x.column)
        ts = quote(x.function.ts_field or (fields or [("", "")])[-1][0])
        existing = (
            f"aggregate(map_entries({x.acc}), CAST(NULL AS {value_type}), "
            "(mk_f, mk_e) -> CASE WHEN mk_e.key = mk_k THEN mk_e.value ELSE mk_f END)"
        )
        newer = (
            f"mk_v IS NOT NULL AND mk_v.{ts} IS NOT NULL AND ({existing} IS NULL OR "
            f"{existing}.{ts} IS NULL OR mk_v.{ts} > {existing}.{ts})"
        )
        winners = f"map_filter({x.inp}, (mk_k, mk_v) -> {newer})"
        removed = f"map_keys(map_filter({x.inp}, (mk_k, mk_v) -> mk_v IS NULL))"
        kept = (
            f"map_filter({x.acc}, (mk_k, mk_v) -> NOT array_contains({removed}, mk_k) "
            f"AND NOT array_contains(map_keys({winners}), mk_k))"
        )
        return f"(CASE WHEN {x.acc} IS NULL THEN {x.inp} WHEN {x.inp} IS NULL THEN {x.acc} ELSE map_concat({kept}, {winners}) END)"


class MergeMap(Aggregator):
    """Paimon `merge_map`: maps merged, incoming keys win; retraction removes the retracted keys."""

    name = "merge_map"
    types = ("map",)
    paimon_type_error = "Data type for merge map column must be 'MAP' but was '{type}'"

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
    A RoaringBitmap32 holds unsigned 32-bit values (up to 2^32 - 1), so both widths fold BIGINTs.
    """

    types = ("binary",)
    paimon_type_error = "Data type for roaring bitmap column must be 'VarBinaryType' but was '{type}'."
    fluss_roots = ("BYTES",)

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.name = f"rbm{bits}"

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"array_sort(array_union({x.acc}, {x.inp}))")

    def fold_type(self, column: Column) -> str:
        return "array<bigint>"

    def decode(self, value: str, column: Column) -> str:
        return f"wide_assets_{self.name}_decode({value})"

    def encode(self, value: str, column: Column) -> str:
        return f"wide_assets_{self.name}_encode({value})"

    def prepare(self, spark: Any) -> None:
        from pyroaring import BitMap, BitMap64

        bitmap = BitMap if self.bits == 32 else BitMap64

        def decode(values: Any) -> Any:
            return values.map(lambda b: None if b is None else list(bitmap.deserialize(bytes(b))))

        def encode(values: Any) -> Any:
            return values.map(lambda v: None if v is None else bitmap(list(v)).serialize())

        register_series_function(spark, f"wide_assets_{self.name}_decode", decode, "array<bigint>")
        register_series_function(spark, f"wide_assets_{self.name}_encode", encode, "binary")


class Sketch(Aggregator):
    """Paimon `hll_sketch`/`theta_sketch` (FieldHllSketchAgg, FieldThetaSketchAgg): serialized
    DataSketches HLL or Theta sketches in a BINARY column, merged by Paimon's union (wide_assets.sketches).

    Spark SQL cannot union sketches, so inside the fold a value is the list of sketches still to be
    merged, in the order Paimon merges them; the list is merged once, on the way out of the fold."""

    types = ("binary",)

    def __init__(self, kind: SketchKind) -> None:
        self.kind = kind
        self.name = f"{kind}_sketch"
        self.paimon_type_error = (
            f"Data type for {kind} sketch column must be 'VarBinaryType' but was '{{type}}'."
        )

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, f"concat({x.acc}, {x.inp})")

    def fold_type(self, column: Column) -> str:
        return "array<binary>"

    def decode(self, value: str, column: Column) -> str:
        return f"(CASE WHEN {value} IS NULL THEN CAST(NULL AS array<binary>) ELSE array({value}) END)"

    def encode(self, value: str, column: Column) -> str:
        return f"wide_assets_{self.name}_union({value}, {string_literal(column.name)})"

    def prepare(self, spark: Any) -> None:
        kind = self.kind

        def merged(sketches: Any, column: str) -> bytes:
            try:
                return union_all(kind, [bytes(s) for s in sketches])
            except (RuntimeError, ValueError) as error:  # what the library raises for other bytes
                raise ValueError(
                    f"{ERROR_MARKER}Column {column} ({kind}_sketch) holds a value that is not a serialized "
                    f"DataSketches {kind.upper()} sketch (datasketches: {error}); write sketches serialized "
                    "by a DataSketches library (e.g. Java's toCompactByteArray/toByteArray, Python's "
                    "serialize_compact/serialize)."
                ) from None

        def union_lists(lists: Any, columns: Any) -> Any:
            return lists.combine(columns, lambda s, c: None if s is None else merged(s, c))

        register_series_function(spark, f"wide_assets_{self.name}_union", union_lists, "binary")


def register_series_function(spark: Any, name: str, function: Callable[..., Any], result_type: str) -> None:
    """Register `function` (pandas Series in, one per argument, a Series out) as the SQL function `name`."""
    import inspect

    import pandas as pd
    from pyspark.sql.pandas.functions import pandas_udf

    # pandas_udf reads the hints as objects; this module's postponed annotations are strings.
    function.__annotations__ = {p: pd.Series for p in inspect.signature(function).parameters} | {
        "return": pd.Series
    }
    # Without pandas' type information no overload of pandas_udf matches these Series functions.
    vectorized: Any = pandas_udf
    spark.udf.register(name, vectorized(function, result_type))


PAIMON_FUNCTIONS: dict[str, Aggregator] = {
    "sum": Sum(),
    "product": Product(),
    "max": Max(),
    "min": Min(),
    "last_value": LastValue(),
    "last_non_null_value": LastNonNullValue(),
    "first_value": FirstValue(),
    "first_non_null_value": FirstNonNullValue(),
    # Paimon's legacy name of the same function (FieldFirstNonNullValueAggLegacyFactory).
    "first_not_null_value": FirstNonNullValue(),
    "listagg": ListAgg(),
    "bool_and": BoolAnd(),
    "bool_or": BoolOr(),
    "rbm32": RoaringBitmap(32),
    "rbm64": RoaringBitmap(64),
    "hll_sketch": Sketch("hll"),
    "theta_sketch": Sketch("theta"),
    "collect": Collect(),
    "merge_map": MergeMap(),
    "nested_update": NestedUpdate(),
    "nested_partial_update": NestedPartialUpdate(),
    "merge_map_with_keytime": MergeMapWithKeyTime(),
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


def retraction_unsupported(function: str) -> str:
    """Paimon's refusal of a retraction (FieldAggregator.retract), `function` named as configured.
    Paimon never fills in `${field_name}`, so neither do we."""
    return fail(
        f"Aggregate function '{function}' does not support retraction, If you allow this function to ignore "
        "retraction messages, you can configure 'fields.${field_name}.ignore-retract'='true'."
    )
