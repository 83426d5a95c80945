"""The contract every aggregate function fulfils (Operands, Aggregator, the SQL of one fold step), the
column types the functions accept, and what they share: NULL handling, Paimon's retraction refusal,
the registration of vectorized functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from wide_assets.errors import InvalidOptionError
from wide_assets.java_text import java_list, type_name
from wide_assets.schema import Column, FieldFunction
from wide_assets.sql import fail

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


def ignoring_nulls(x: Operands, combined: str) -> str:
    return f"(CASE WHEN {x.acc} IS NULL THEN {x.inp} WHEN {x.inp} IS NULL THEN {x.acc} ELSE {combined} END)"


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


def retraction_unsupported(function: str) -> str:
    """Paimon's refusal of a retraction (FieldAggregator.retract), `function` named as configured.
    Paimon never fills in `${field_name}`, so neither do we."""
    return fail(
        f"Aggregate function '{function}' does not support retraction, If you allow this function to ignore "
        "retraction messages, you can configure 'fields.${field_name}.ignore-retract'='true'."
    )
