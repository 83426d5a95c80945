"""What a merge engine's fold step needs to write SQL: column aliases, types, the write's target columns.

The fold runs inside Spark SQL's `aggregate(records, init, (s, r) -> step)`. Inside it, the state `s`
and the record `r` are structs whose fields are positional aliases (`c0`, `c1`, ...), so user column
names never need quoting inside lambdas. Engines return SQL text; nothing here touches Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from wide_assets.aggregate_functions import Aggregator, aggregator
from wide_assets.options.common import MergeOptions
from wide_assets.schema import Column, FieldFunction
from wide_assets.sql import ADDS, RETRACTS, RowKind, kind_in, named_struct
from wide_assets.table_definition import TableDefinition

# An entry's index among the entries of one record (Fluss) or one key (Paimon): 0, or 1 for the +U
# after its -U. An entry's place in its commit is (arrival, index), numbered `entry_offset`.
ENTRY_INDEXES = 2

# A record `r` of the fold by its row kind.
ADD = kind_in("r._kind", ADDS)
RETRACT = kind_in("r._kind", RETRACTS)
DELETE = kind_in("r._kind", [RowKind.DELETE])
UPDATE_BEFORE = kind_in("r._kind", [RowKind.UPDATE_BEFORE])


def any_of(conditions: Sequence[str]) -> str:
    return "(" + " OR ".join(conditions) + ")" if conditions else "false"


def all_of(conditions: Sequence[str]) -> str:
    return "(" + " AND ".join(conditions) + ")" if conditions else "true"


FLOATING = ("float", "double", "real")


def comparable(value: str, type_text: str) -> str:
    """`value` in a form `<=>` accepts on every engine and that is equal only for the same value:
    Spark cannot compare maps, so a map becomes its entries sorted by key; SQL finds -0.0 equal to
    0.0, so a FLOAT or DOUBLE becomes its text ("-0.0", and "NaN" for every NaN)."""
    type_name = type_text.strip().lower()
    if type_name.startswith("map"):
        return f"array_sort(map_entries({value}))"
    if type_name in FLOATING:
        return f"CAST({value} AS STRING)"
    return value


def compared_exactly(type_text: str) -> bool:
    """Whether `comparable` values of this type are equal only for the same value (NaNs aside): a
    value of no map, array or struct type. Spark's `<=>` finds an array holding -0.0 equal to one
    holding 0.0, and a map's entries are compared in key order."""
    return not type_text.strip().lower().startswith(("map", "array", "struct"))


def one_zero(value: str, type_text: str) -> str:
    """`value` with a FLOAT or DOUBLE -0.0 made 0.0 (a value of any other type as it is)."""
    if type_text.strip().lower() in FLOATING:
        return f"CASE WHEN abs({value}) = 0 THEN CAST(0 AS {type_text}) ELSE {value} END"
    return value


def sequence_value(value: str, type_text: str) -> str:
    """`value` as Paimon orders a sequence: a FLOAT or DOUBLE -0.0 ties with 0.0, since its generated
    comparator compares primitives with `<` and `>` (`GenerateUtils.generateCompare`). Sail orders
    -0.0 first (Arrow's total order) and JVM Spark does not, so the zero is made one value first."""
    return one_zero(value, type_text)


def compare_nulls_first(left: str, right: str) -> str:
    """-1/0/1 comparing two values with NULL as the smallest value (Paimon's sequence order)."""
    return (
        f"(CASE WHEN {left} IS NULL AND {right} IS NULL THEN 0 WHEN {left} IS NULL THEN -1 "
        f"WHEN {right} IS NULL THEN 1 WHEN {left} < {right} THEN -1 WHEN {left} > {right} THEN 1 ELSE 0 END)"
    )


def not_before_present(present: str, other: str) -> str:
    """`compare_nulls_first(present, other) >= 0` for a `present` value known not to be NULL: `other`
    is NULL or `present` is not less than it. Shorter SQL that the engine plans and runs faster."""
    return f"({other} IS NULL OR NOT ({present} < {other}))"


def compare_tuples(left: Sequence[str], right: Sequence[str]) -> str:
    """Lexicographic -1/0/1 of two tuples of values, NULL smallest in every position."""
    if len(left) == 1:  # spares every fold step a nullif and a coalesce (a sequence group's one field)
        return compare_nulls_first(left[0], right[0])
    parts = [f"nullif({compare_nulls_first(a, b)}, 0)" for a, b in zip(left, right, strict=True)]
    return f"coalesce({', '.join(parts)}, 0)"


@dataclass(frozen=True)
class MergeContext:
    """A table's definition plus one write's target columns (None = every column written), and whether its
    records carry per-record column sets (`merge.column_sets`)."""

    definition: TableDefinition
    target_columns: tuple[str, ...] | None = None
    column_sets: bool = False

    @property
    def merge(self) -> MergeOptions:
        return self.definition.merge

    @cached_property
    def aliases(self) -> Mapping[str, str]:
        return {name: f"c{i}" for i, name in enumerate(self.definition.column_names)}

    @property
    def values(self) -> tuple[str, ...]:
        """Non-key columns: the ones a merge changes."""
        return self.definition.value_columns

    def ref(self, var: str, column: str) -> str:
        if var == "r" and self.is_map(column):
            return f"map_from_entries(r.{self.aliases[column]})"
        return f"{var}.{self.aliases[column]}"

    def is_map(self, column: str) -> bool:
        """Map values travel through a key's records as their entries: the records are sorted by
        rank, and Spark can only sort structs whose fields are all orderable (maps are not)."""
        return self.fold_type(column).startswith("map<")

    def record_value(self, column: str) -> str:
        """A value as it is stored in a record of the fold (see `is_map`)."""
        alias = self.aliases[column]
        return f"map_entries({alias})" if self.is_map(column) else alias

    def column(self, name: str) -> Column:
        return self.definition.column(name)

    def aggregator(self, column: str) -> Aggregator | None:
        function = self.function(column)
        return None if function is None else aggregator(self.merge.dialect, function.name)

    def fold_type(self, column: str) -> str:
        """The column's type inside the fold (a function may fold another representation)."""
        fn = self.aggregator(column)
        return fn.fold_type(self.column(column)) if fn is not None else self.column(column).type

    def decode(self, value: str, column: str) -> str:
        fn = self.aggregator(column)
        return fn.decode(value, self.column(column)) if fn is not None else value

    def encode(self, value: str, column: str) -> str:
        fn = self.aggregator(column)
        return fn.encode(value, self.column(column)) if fn is not None else value

    def null(self, column: str) -> str:
        return f"CAST(NULL AS {self.fold_type(column)})"

    def function(self, column: str) -> FieldFunction | None:
        return self.merge.functions.get(column)

    def written(self, column: str) -> bool:
        """Whether this write touches `column` (every column unless target columns were declared)."""
        return self.target_columns is None or column in self.target_columns

    @property
    def is_partial_write(self) -> bool:
        return self.target_columns is not None and set(self.values) - set(self.target_columns) != set()

    @property
    def is_key_only_write(self) -> bool:
        return self.target_columns is not None and not set(self.target_columns) & set(self.values)

    def row(self, var: str) -> str:
        """The value columns of a record or state as a struct with the alias names."""
        return named_struct({self.aliases[c]: self.ref(var, c) for c in self.values})

    def stateful_columns(self) -> tuple[str, ...]:
        """Columns whose aggregate function keeps a 'seen a record' flag in the fold state."""
        return tuple(
            c for c, f in self.merge.functions.items() if aggregator(self.merge.dialect, f.name).stateful
        )

    def seen(self, var: str, column: str) -> str:
        return f"{var}.s{self.aliases[column][1:]}"

    def state_fields(self) -> list[tuple[str, str]]:
        """(field, initial value) of the fold state, in order: exists flag, values, 'seen' flags."""
        fields = [("e", "false")]
        fields += [(self.aliases[c], self.null(c)) for c in self.values]
        fields += [(self.seen("s", c).split(".", 1)[1], "false") for c in self.stateful_columns()]
        if self.merge.dialect == "fluss":
            fields.append(("log", f"CAST(array() AS array<{self.log_entry_type}>)"))
        return fields

    @property
    def row_type(self) -> str:
        return "struct<" + ", ".join(f"{self.aliases[c]}:{self.fold_type(c)}" for c in self.values) + ">"

    @property
    def log_entry_type(self) -> str:
        """A per-record CDC entry (Fluss): row kind, the record's arrival, its index, the row image."""
        return f"struct<k:string, a:bigint, i:int, v:{self.row_type}>"

    def state(self, updates: Mapping[str, str], var: str = "s") -> str:
        """A new state struct: `updates` by field name (alias or 'e'), every other field kept from `var`."""
        return named_struct({name: updates.get(name, f"{var}.{name}") for name, _ in self.state_fields()})

    def initial_state(self) -> str:
        return named_struct(dict(self.state_fields()))

    def cleared(self) -> dict[str, str]:
        """State updates that remove the row: later records start again from an empty row."""
        return {name: value for name, value in self.state_fields() if name != "log"}
