"""rbm32 and rbm64: Roaring bitmaps, folded as sorted arrays and stored in the portable serialized format."""

from __future__ import annotations

from typing import Any

from wide_assets.aggregate_functions.base import (
    Aggregator,
    Operands,
    ignoring_nulls,
    register_series_function,
)
from wide_assets.schema import Column


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
        # A 64-bit bitmap holds unsigned values up to 2^64 - 1; the fold's BIGINTs carry those at and
        # above 2^63 as Java's long does, by their two's complement (0 to 2^32 - 1 fit as they are).
        wrap = 2**64 if self.bits == 64 else 0

        def decode(values: Any) -> Any:
            return values.map(
                lambda b: (
                    None
                    if b is None
                    else [v - wrap if v >= 2**63 else v for v in bitmap.deserialize(bytes(b))]
                )
            )

        def encode(values: Any) -> Any:
            return values.map(
                lambda v: (
                    None if v is None else bitmap([int(x) + wrap if x < 0 else int(x) for x in v]).serialize()
                )
            )

        register_series_function(spark, f"wide_assets_{self.name}_decode", decode, "array<bigint>")
        register_series_function(spark, f"wide_assets_{self.name}_encode", encode, "binary")
