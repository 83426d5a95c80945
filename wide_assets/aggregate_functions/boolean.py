"""bool_and and bool_or."""

from __future__ import annotations

from wide_assets.aggregate_functions.base import Aggregator, Operands, ignoring_nulls


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
