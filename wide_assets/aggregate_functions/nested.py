"""nested_update and nested_partial_update: arrays of rows merged by their nested key, and the
element types of such columns."""

from __future__ import annotations

import re

from wide_assets.aggregate_functions.base import Aggregator, Operands
from wide_assets.errors import InvalidOptionError
from wide_assets.java_text import java_list, nested_parts, type_name
from wide_assets.schema import Column, FieldFunction
from wide_assets.sql import fail, quote, string_literal

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
