"""hll_sketch and theta_sketch: unions of serialized Apache DataSketches."""

from __future__ import annotations

from typing import Any

from wide_assets.aggregate_functions.base import (
    Aggregator,
    Operands,
    ignoring_nulls,
    register_series_function,
)
from wide_assets.errors import ERROR_MARKER
from wide_assets.schema import Column
from wide_assets.sketches import SketchKind, union_all
from wide_assets.sql import string_literal


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
