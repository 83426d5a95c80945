"""The functions that keep one of the values: max and min in Java's order (FieldMaxAgg, FieldMinAgg),
last_value, last_non_null_value, first_value and first_non_null_value."""

from __future__ import annotations

from wide_assets.aggregate_functions.base import (
    COMPARABLE,
    FLUSS_COMPARABLE,
    FLUSS_MAX_MIN_ROOTS,
    Aggregator,
    Operands,
    ignoring_nulls,
)
from wide_assets.schema import Column


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
