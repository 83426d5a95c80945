"""Every aggregate function, Paimon's and Fluss's, as SQL templates: `agg(acc, in)` and `retract(acc, in)`.

This is Paimon's FieldAggregator split: a function knows how to combine one column's accumulator with
one incoming value, nothing about rows, keys, ordering or I/O. Each family of functions is a module
(`base` holds the contract they share); this one registers them under the names each dialect uses.
Adding a function means adding one class to its family's module and registering it here.
"""

from __future__ import annotations

from wide_assets.aggregate_functions.arithmetic import Product, Sum, WrappingProduct, WrappingSum
from wide_assets.aggregate_functions.base import Aggregator, Operands, retraction_unsupported
from wide_assets.aggregate_functions.bitmap import RoaringBitmap
from wide_assets.aggregate_functions.boolean import BoolAnd, BoolOr
from wide_assets.aggregate_functions.collection import Collect, MergeMap, MergeMapWithKeyTime
from wide_assets.aggregate_functions.nested import (
    NESTED_KEY_NULL_STRATEGIES,
    NestedPartialUpdate,
    NestedUpdate,
)
from wide_assets.aggregate_functions.sketch import Sketch
from wide_assets.aggregate_functions.text import FlussListAgg, ListAgg
from wide_assets.aggregate_functions.value import (
    FirstNonNullValue,
    FirstValue,
    LastNonNullValue,
    LastValue,
    Max,
    Min,
)

__all__ = [
    "FLUSS_FUNCTIONS",
    "NESTED_KEY_NULL_STRATEGIES",
    "PAIMON_FUNCTIONS",
    "Aggregator",
    "Operands",
    "aggregator",
    "retraction_unsupported",
]


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
