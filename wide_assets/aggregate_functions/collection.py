"""collect (with distinct), merge_map and merge_map_with_keytime."""

from __future__ import annotations

from wide_assets.aggregate_functions.base import Aggregator, Operands, ignoring_nulls
from wide_assets.aggregate_functions.nested import struct_fields
from wide_assets.errors import InvalidOptionError
from wide_assets.java_text import java_list, nested_parts, type_name
from wide_assets.schema import Column, FieldFunction
from wide_assets.sql import quote


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
