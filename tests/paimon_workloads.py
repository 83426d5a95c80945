"""A seeded generator of random Paimon table definitions and CDC workloads for the differential run
against Paimon itself (`tests/test_paimon_differential.py`). Values come from small pools, so that ties
and repeats happen, and now and then are one of their type's edges (`_EDGES`).

Paimon's batching-dependent quirks (`docs/semantics.md` §1.9) are excluded by construction:
- Q1 (a removing `-D` restarts the merge from its own values): on a table with a removing option
  (`partial-update.remove-record-on-delete`, `partial-update.remove-record-on-sequence-group`,
  `aggregation.remove-record-on-delete`) a `-D` is the last record of its key in its commit; the oracle
  fully compacts after every commit, so the next commit starts from the stored state; and such a table
  has no `sequence.field`, which could sort the `-D` before the stored row.
- Q2 (aggregation retractions of a key with no row): an aggregation table retracts only keys that
  hold a row, stored or inserted earlier in the same commit.
- Q3 (`first_value` remembers within one merge): the oracle's per-commit compaction merges the stored
  row first, as §0.1 does.
- Q4 (`sequence.field.sort-order=descending` holds across commits only), and Q6 where a commit's fold
  meets the stored row in `sequence.field` order: a table with a descending order, and a partial-update
  or aggregation table with a `sequence.field`, gets at most one record per key in a commit; so does
  a table with a DECIMAL `product` (every step rounds to the scale, so a commit's fold rounds
  otherwise than the records applied in turn).
- Q5 (a partial-update merge starts from its first record, whatever its kind): under sequence groups a
  key without a row starts with a `+I` whose every group sequence is set; without groups a retraction
  follows another record of its key in its commit, and a table with a `sequence.field` (where a
  retraction could sort before the stored row) gets no retraction that is merged.
- Q7 (a NaN sequence equals every value): no sequence column, `sequence.field` or group sequence,
  holds NaN.
- Q9 (a key's lone record passes through Paimon's merge unfolded): a distinct `collect` column's
  array never repeats an element, and a `nested_update` or `nested_partial_update` column with a
  `nested-key` never repeats a key, in one record.
- Q6 (a commit's records of a key are folded together before they meet the stored row): where a
  retraction reaches a function or a group (sequence groups, aggregation, unless `ignore-delete`), a
  retraction is the only record of its key in its commit; a function inside a sequence group is one
  the fold cannot change (`sum`, `max`, `min`), never `last_non_null_value` and the like.
- Q10 (a FLOAT or DOUBLE -0.0 sorts apart from 0.0 in a commit, and a key's respells the row's key): the
  primary key is an INT, and no sequence column holds -0.0.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from paimon_oracle import Workload
from pyroaring import BitMap

# Spark type -> the pool its values are drawn from (small, so ties and repeats happen).
_TYPES = (
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "decimal(10,2)",
    "decimal(38,10)",
    "float",
    "double",
    "string",
    "date",
    "timestamp_ntz",
)
# Nested types: plain value columns, or aggregated by their functions (collect, merge_map, nested_update).
_NESTED_TYPES = ("array<int>", "map<string,int>", "struct<a:int,b:string>", "array<struct<id:int,v:string>>")
_VALUE_TYPES = (*_TYPES, *_NESTED_TYPES)
_SEQUENCE_TYPES = ("int", "bigint", "decimal(10,2)", "double", "date", "timestamp_ntz")
_NUMERIC = ("int", "bigint", "decimal(10,2)", "decimal(38,10)", "float", "double")
_PRODUCERS = ("input", "lookup", "lookup", "full-compaction")
_ENGINES = ("deduplicate", "partial-update", "partial-update-groups", "aggregation", "first-row")
# An aggregation table's columns may also be BOOLEAN (for bool_and / bool_or).
_AGGREGATED_TYPES = (*_VALUE_TYPES, "boolean", "binary")
# Per type: the aggregate functions an aggregation column draws from (sum weighted up: its retraction
# is the most used); every one takes any record order of a commit (Q6) except listagg, whose fold
# concatenates in arrival order, as the merge with the stored row does.
_ANY_TYPE_FUNCTIONS = (
    "max",
    "min",
    "last_non_null_value",
    "last_value",
    "first_value",
    "first_non_null_value",
)
_FUNCTIONS: dict[str, tuple[str, ...]] = {
    **{t: (*_ANY_TYPE_FUNCTIONS, "sum", "sum", "sum", "product") for t in _NUMERIC},
    # No product: a few records of 6 leave a byte or a short, where Paimon 1.4.2 wraps around and its
    # current code (multiplyExactByte, multiplyExactShort), which we follow, raises.
    **{t: (*_ANY_TYPE_FUNCTIONS, "sum", "sum", "sum") for t in ("tinyint", "smallint")},
    "string": (*_ANY_TYPE_FUNCTIONS, "listagg", "listagg"),
    "date": _ANY_TYPE_FUNCTIONS,
    "timestamp_ntz": _ANY_TYPE_FUNCTIONS,
    "boolean": ("bool_and", "bool_or", "bool_and", "bool_or", "last_value", "first_non_null_value"),
    "array<int>": ("collect", "collect", "last_value", "last_non_null_value", "first_non_null_value"),
    "map<string,int>": ("merge_map", "merge_map", "last_value"),
    "struct<a:int,b:string>": ("last_value", "first_value", "last_non_null_value"),
    "array<struct<id:int,v:string>>": ("nested_update", "nested_update", "collect", "nested_partial_update"),
    "binary": ("rbm32", "rbm32", "last_value"),  # a serialized RoaringBitmap32
}
# Functions that refuse a retraction unless `ignore-retract` (docs/semantics.md 1.6).
_NOT_RETRACTING = (
    "max",
    "min",
    "first_value",
    "first_non_null_value",
    "listagg",
    "bool_and",
    "bool_or",
    "rbm32",
    "nested_partial_update",
)


# Now and then a value is one of its type's edges instead: the extremes of its range and, for doubles,
# NaN, the infinities and both zeros (Paimon orders them as Java's Double.compare does, and -0.0
# replacing 0.0 is a change), the smallest denormal and the largest finite value.
_EDGE_RATE = 0.08
_EDGES: dict[str, tuple[Any, ...]] = {
    "tinyint": (127, -128),
    "smallint": (2**15 - 1, -(2**15)),
    "int": (2**31 - 1, -(2**31)),
    "bigint": (2**63 - 1, -(2**63)),
    "decimal(10,2)": (Decimal("99999999.99"), Decimal("-99999999.99")),
    "decimal(38,10)": (Decimal("9" * 28 + "." + "9" * 10), Decimal("-" + "9" * 28 + "." + "9" * 10)),
    "float": (math.nan, math.inf, -math.inf, -0.0, 0.0, 1.401298464324817e-45, 3.4028234663852886e38),
    "double": (math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, sys.float_info.max),
    "string": (" ", "\t"),
    "date": (date(1, 1, 1), date(9999, 12, 31)),
    "timestamp_ntz": (datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59, 999999)),
    "boolean": (),
    **{t: () for t in _NESTED_TYPES},
    "binary": (),
}


# A summed column never holds an edge value: its overflow is where Paimon 1.4.2 (the pinned oracle)
# differs from Paimon's current FieldSumAgg, which we follow (docs/semantics.md 1.6.1) - 1.4.2 wraps an
# integer sum around (plain `+`, where the current code calls Math.addExact) and keeps a DECIMAL sum of
# precision <= 18 past its precision (its fast path on unscaled longs) - or where a sum, no longer
# associative (a DECIMAL overflow is NULL and starts again, a DOUBLE one is infinite), depends on
# Paimon folding a commit's records of a key before they meet the stored row (Q6).


# A listagg column never holds a blank string (empty or whitespace only): Paimon 1.4.2 (the pinned
# oracle) skips only empty inputs and keeps a lone blank one, where Paimon's current FieldListaggAgg.agg
# (apache/paimon#8480, in 2.0), which we follow, skips every blank input (docs/semantics.md section 5).
_NON_BLANK = ("a", "b", "ab", "Zz", "é")


def _value(
    rng: random.Random,
    spark_type: str,
    null_rate: float = 0.2,
    top: int = 6,
    edges: bool = True,
    sequence: bool = False,
    blank: bool = True,
) -> Any:
    """A value of `spark_type`; a `sequence` column's edges hold neither NaN (Q7) nor -0.0 (Q10)."""
    if rng.random() < null_rate:
        return None
    if spark_type in (*_NESTED_TYPES, "binary"):
        return _nested_value(rng, spark_type)
    if not blank and spark_type == "string":
        return rng.choice(_NON_BLANK)
    if edges and _EDGES[spark_type] and rng.random() < _EDGE_RATE:
        return rng.choice(
            [
                e
                for e in _EDGES[spark_type]
                if not (
                    sequence
                    and isinstance(e, float)
                    and (math.isnan(e) or (e == 0 and math.copysign(1, e) < 0))
                )
            ]
        )
    n = rng.randint(-3, top)
    if spark_type in ("tinyint", "smallint", "int", "bigint"):
        return n
    if spark_type == "decimal(10,2)":
        return Decimal(n) / 4
    if spark_type == "decimal(38,10)":
        return Decimal(n) / 8
    if spark_type in ("float", "double"):
        return n / 2
    if spark_type == "string":
        return rng.choice(["", *_NON_BLANK])
    if spark_type == "boolean":
        return n % 2 == 0
    if spark_type == "date":
        return date(2024, 1, 1) + timedelta(days=n)
    return datetime(2024, 1, 1) + timedelta(seconds=n, microseconds=rng.choice([0, 1]))


def _nested_value(rng: random.Random, spark_type: str) -> Any:
    """A short array, map, struct or bitmap of values from tiny pools (so that elements, keys and
    nested keys repeat), now and then holding a NULL."""

    def small() -> int | None:
        return None if rng.random() < 0.1 else rng.randint(-1, 3)

    def text() -> str | None:
        return None if rng.random() < 0.1 else rng.choice(("x", "y", "z"))

    count = rng.randint(0, 3)
    if spark_type == "binary":
        # Values at and above 2^31 too: a RoaringBitmap32 holds unsigned 32-bit values.
        return BitMap(rng.choice((0, 1, 2, 5, 2**31, 2**32 - 1)) for _ in range(count)).serialize()
    if spark_type == "array<int>":
        return [small() for _ in range(count)]
    if spark_type == "map<string,int>":
        return {rng.choice(("a", "b", "c")): small() for _ in range(count)}
    if spark_type == "struct<a:int,b:string>":
        return (small(), text())
    return [(rng.randint(0, 2), text()) for _ in range(count)]


def _first_of_each(elements: list[Any], identity: Callable[[Any], Any]) -> list[Any]:
    """The elements in order, each identity's first only."""
    firsts: dict[Any, Any] = {}
    for element in elements:
        firsts.setdefault(identity(element), element)
    return list(firsts.values())


class _Table:
    """A random definition: columns, options, and what records its workload may hold."""

    def __init__(self, rng: random.Random, function: str | None = None) -> None:
        self.rng = rng
        # A table of one aggregate function (`aggregated_by`) is an aggregation table.
        self.function = function
        self.engine = "aggregation" if function else rng.choice(_ENGINES)
        self.columns: list[tuple[str, str]] = [("k", "int")]
        self.options: dict[str, str] = {}
        self.retractions = True  # whether -U / -D records are written
        self.removing = False  # a -D may remove the row (Q1)
        self.aggregating = False  # retractions only of live keys (Q2)
        self.one_per_commit = False  # one record per key in a commit (Q4)
        self.groups: list[str] = []  # sequence fields a new key's first record sets (Q5)
        self.retraction_follows = False  # a retraction follows a record of its key in its commit (Q5)
        self.without_edges: set[str] = set()  # columns whose values are never edges
        self.without_blanks: set[str] = set()  # string columns that never hold a blank string
        # Array columns whose every value holds an element (distinct collect) or a nested key
        # (nested_update with a nested-key) at most once (Q9), by what identifies it.
        self.without_repeats: dict[str, Callable[[Any], Any]] = {}
        getattr(self, "_" + self.engine.replace("-", "_"))()
        self._changelog_producer()
        # A retraction alone in its commit for its key (Q6).
        self.lone_retractions = (
            bool(self.groups) or self.aggregating
        ) and "ignore-delete" not in self.options

    def _add(self, prefix: str, types: tuple[str, ...] = _VALUE_TYPES) -> str:
        name = f"{prefix}{len(self.columns)}"
        self.columns.append((name, self.rng.choice(types)))
        return name

    def _restrict_values(self, column: str, function: str) -> None:
        """Keep out of `column` the values (edges, blanks) on which `function` depends on Paimon's version or
        on the fold order of a commit (Q6): see the comments above `_value`. A DECIMAL product rounds
        at every step, so its table gets one record per key in a commit (Q6)."""
        if function in ("sum", "product"):
            self.without_edges.add(column)
        if function == "product" and dict(self.columns)[column].startswith("decimal"):
            self.one_per_commit = True
        if function == "listagg":
            self.without_blanks.add(column)

    def _values(self, count: int) -> None:
        for _ in range(count):
            self._add("v")

    def _sequence_field(self, chance: float) -> None:
        if self.rng.random() < chance:
            self.options["sequence.field"] = self._add("s", _SEQUENCE_TYPES)
            if self.rng.random() < 0.3:
                self.options["sequence.field.sort-order"] = "descending"
                self.one_per_commit = True

    def _changelog_producer(self) -> None:
        """Half the tables produce a changelog, compared commit by commit; first-row takes only
        `lookup` (F3), and Paimon's refusal of the others is an outcome too."""
        if self.rng.random() < 0.5:
            return
        producer = self.rng.choice(_PRODUCERS)
        self.options["changelog-producer"] = producer
        if producer != "input" and self.rng.random() < 0.3:
            self.options["changelog-producer.row-deduplicate"] = "true"

    def _deduplicate(self) -> None:
        self.options["merge-engine"] = "deduplicate"
        self._values(self.rng.randint(1, 3))
        self._sequence_field(0.5)
        if self.rng.random() < 0.3:
            self.options["ignore-delete"] = "true"

    def _first_row(self) -> None:
        self.options["merge-engine"] = "first-row"
        self._values(self.rng.randint(1, 3))
        # Retractions are refused unless dropped (F2): a refusal is one kind of outcome among many.
        self.retractions = self.rng.random() < 0.6
        if self.retractions and self.rng.random() < 0.8:
            self.options["ignore-delete"] = "true"

    def _partial_update(self) -> None:
        self.options["merge-engine"] = "partial-update"
        self._values(self.rng.randint(2, 4))
        self._sequence_field(0.4)
        self.one_per_commit = "sequence.field" in self.options
        modes = (
            ["ignore-delete", "none"]
            if self.one_per_commit
            else ["ignore-delete", "remove-record-on-delete", "refuse", "none"]
        )
        mode = self.rng.choice(modes)
        self.retractions = mode != "none"
        self.retraction_follows = True
        if mode == "ignore-delete":
            self.options["ignore-delete"] = "true"
        elif mode == "remove-record-on-delete":
            self.options["partial-update.remove-record-on-delete"] = "true"
            self.removing = True

    def _partial_update_groups(self) -> None:
        self.options["merge-engine"] = "partial-update"
        groups = self.groups
        for _ in range(self.rng.randint(1, 2)):
            sequence = self._add("g", _SEQUENCE_TYPES)
            protected = [self._add("p") for _ in range(self.rng.randint(1, 2))]
            self.options[f"fields.{sequence}.sequence-group"] = ",".join(protected)
            groups.append(sequence)
            numeric = [p for p in protected if dict(self.columns)[p] in _NUMERIC]
            if numeric and self.rng.random() < 0.6:
                function = self.rng.choice(["sum", "max", "min"])  # not order-sensitive (Q6)
                self.options[f"fields.{numeric[0]}.aggregate-function"] = function
                self._restrict_values(numeric[0], function)
                if function in ("max", "min") and self.rng.random() < 0.8:
                    self.options[f"fields.{numeric[0]}.ignore-retract"] = "true"
        self._values(self.rng.randint(0, 2))
        choice = self.rng.random()
        if choice < 0.2:
            self.options["ignore-delete"] = "true"
        elif choice < 0.45:
            self.options["partial-update.remove-record-on-sequence-group"] = self.rng.choice(groups)
            self.removing = True

    def _aggregation(self) -> None:
        self.options["merge-engine"] = "aggregation"
        self.aggregating = True
        for _ in range(self.rng.randint(1, 4)):
            types = [t for t in _AGGREGATED_TYPES if self.function in (None, *_FUNCTIONS[t])]
            name = self._add("a", tuple(types))
            function = self.function or self.rng.choice(_FUNCTIONS[dict(self.columns)[name]])
            if function != "last_non_null_value" or self.rng.random() < 0.5:
                self.options[f"fields.{name}.aggregate-function"] = function
            self._restrict_values(name, function)
            if function in _NOT_RETRACTING and self.rng.random() < 0.8:
                self.options[f"fields.{name}.ignore-retract"] = "true"
            if function == "collect" and "struct" in dict(self.columns)[name]:
                # Paimon fails to retract a row from a collect of rows: `FieldCollectAgg.equals` calls
                # `equals` of a row read from a file ("ColumnarRowData do not support equals").
                self.options[f"fields.{name}.ignore-retract"] = "true"
            if function == "listagg" and self.rng.random() < 0.3:
                self.options[f"fields.{name}.list-agg-delimiter"] = self.rng.choice([";", " | "])
            if function in ("listagg", "collect") and self.rng.random() < 0.4:
                self.options[f"fields.{name}.distinct"] = "true"
                if function == "collect":
                    self.without_repeats[name] = repr
            if function == "nested_partial_update" or (
                function == "nested_update" and self.rng.random() < 0.6
            ):
                self.options[f"fields.{name}.nested-key"] = "id"
                self.without_repeats[name] = lambda element: element[0]
            elif function == "nested_update" and self.rng.random() < 0.3:
                # At least a record's longest array (3 rows): Paimon applies no limit to a lone record
                # (Q9). Not with a nested-key: there 1.4.2 drops updates of existing keys at the limit,
                # which Paimon's current code (#8272), which we follow, no longer does.
                self.options[f"fields.{name}.count-limit"] = self.rng.choice(["3", "4"])
        self._sequence_field(0.3)
        self.one_per_commit |= "sequence.field" in self.options
        choice = self.rng.random()
        if choice < 0.2:
            self.options["ignore-delete"] = "true"
        elif choice < 0.45 and "sequence.field" not in self.options:
            self.options["aggregation.remove-record-on-delete"] = "true"
            self.removing = True

    def record(self, key: int, kind: str, first: bool = False) -> tuple[str, tuple[Any, ...]]:
        # Sequences from a narrower range, so that ties are common.
        values = (
            _value(
                self.rng,
                t,
                0.0 if first and name in self.groups else 0.2,
                0 if name in self.groups else 6,
                name not in self.without_edges,
                name in (*self.groups, self.options.get("sequence.field")),
                name not in self.without_blanks,
            )
            for name, t in self.columns[1:]
        )
        values = (
            _first_of_each(v, self.without_repeats[name]) if name in self.without_repeats and v else v
            for (name, _), v in zip(self.columns[1:], values, strict=True)
        )
        return kind, (key, *values)


def aggregated_by() -> tuple[str, ...]:
    """Every aggregate function the generator draws from."""
    return tuple(sorted({f for functions in _FUNCTIONS.values() for f in functions}))


def workload(
    rng: random.Random,
    keys: int = 5,
    max_commits: int = 4,
    max_records: int | None = None,
    function: str | None = None,
) -> Workload:
    """One random table and its commits: inserts, updates with before-images, deletes, duplicate keys
    inside a commit, out-of-order sequences and NULLs. A commit holds up to `max_records` records
    (twice the keys unless given), so that keys repeat at any scale. With `function`, an aggregation
    table whose every value column aggregates with it."""
    table = _Table(rng, function)
    live: set[int] = set()  # keys holding a row as far as the generator can tell (for Q2)
    commits = []
    for _ in range(rng.randint(1, max_commits)):
        records: list[tuple[str, tuple[Any, ...]]] = []
        closed: set[int] = set()  # keys whose records in this commit are complete (Q1, Q4, Q6)
        touched: set[int] = set()
        for _ in range(rng.randint(1, max_records or 2 * keys)):
            key = rng.choice([k for k in range(keys) if k not in closed] or [None])
            if key is None:
                break
            first = bool(table.groups) and key not in live
            kinds = ["+I", "+I", "+U"]
            lone = table.lone_retractions and key in touched
            leads = table.retraction_follows and key not in touched
            if table.retractions and (not table.aggregating or key in live) and not (first or lone or leads):
                kinds += ["-U", "-D"]
            kind = "+I" if first else rng.choice(kinds)
            touched.add(key)
            if kind in ("-U", "-D") and table.lone_retractions:
                closed.add(key)
            elif kind == "-U" and rng.random() < 0.7 and not table.one_per_commit:
                records.append(table.record(key, "-U"))
                kind = "+U"
            records.append(table.record(key, kind, first))
            if table.one_per_commit:
                closed.add(key)
            if kind == "-D" and table.removing:
                closed.add(key)
                live.discard(key)
            elif kind in ("+I", "+U"):
                live.add(key)
        commits.append(tuple(records))
    return Workload(tuple(table.columns), ("k",), dict(table.options), tuple(commits))
