"""One write's records: validated, normalized and merged against the stored rows they touch.

Engine-neutral: only `spark.sql` text and DataFrame methods that take strings, so the same code runs
on Sail (Spark Connect) and on classic JVM Spark. Delta I/O lives in `wide_assets.table.storage`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from wide_assets.errors import InvalidInputError, MergeError, first_line, merge_errors
from wide_assets.java_text import java_list
from wide_assets.merge import (
    ARRIVAL_BOUND,
    MergeContext,
    engine_for,
    entry_offset,
    folded_into_query,
    merge_query,
    refusal_query,
)
from wide_assets.merge.column_sets import SET_COLUMNS, column_sets_refused
from wide_assets.queries import select
from wide_assets.sql import ADDS, RETRACTS, RowKind, columns, key_join, kind_in, quote, string_literal
from wide_assets.table_definition import TableDefinition

if TYPE_CHECKING:
    from wide_assets.session import SparkSession

EXAMPLES = 3  # bad records quoted per kind of problem

# Generated arrivals (`monotonically_increasing_id()`, no `_offset` given): the engine numbers a record
# `partition << 33 | its row in the partition` (Spark's layout, and Sail's, checked), so they lie here
# for fewer than 2^29 partitions, and `entry_offset` raises where one does not. Their exact bounds are
# not counted: the id is computed in one task over every column of the changes (0.16 s of a 0.22 s
# validation of 1M records on Sail).
GENERATED_ARRIVALS = (0, ARRIVAL_BOUND)

# Spark's other names for a type, as `DataType.simpleString` names it.
TYPE_ALIASES = {
    "long": "bigint",
    "integer": "int",
    "short": "smallint",
    "byte": "tinyint",
    "real": "float",
    "timestamp_ltz": "timestamp",
    "dec": "decimal",
    "numeric": "decimal",
}


@dataclass(frozen=True)
class PreparedBatch:
    """A validated batch: every table column (cast), `_row_kind` and a unique arrival `_offset`."""

    frame: DataFrame
    context: MergeContext
    records: int | None = None  # counted while validating, when known
    retractions: int | None = None  # -U and -D records, counted with `records`
    key_only_deletes: int | None = None  # -D records carrying only the key, counted with `records`
    one_record_per_key: bool = False  # known: no two records share a key (counted with `records`)
    arrivals: tuple[int, int] | None = None  # the least and greatest `_offset`, counted with `records`

    @property
    def adds_only(self) -> bool:
        """Known to hold no retraction: the merge may take its faster shape (see `merge_query`)."""
        return self.retractions == 0


def prepare_batch(
    spark: SparkSession,
    spec: TableDefinition,
    changes: DataFrame,
    target_columns: Sequence[str] | None = None,
) -> PreparedBatch:
    """Validate `changes` against the table and normalize it; raises InvalidInputError, commits nothing."""
    given = list(changes.columns)
    unknown = [
        c for c in given if c not in spec.column_names and c not in ("_row_kind", "_offset", SET_COLUMNS)
    ]
    if unknown:
        raise InvalidInputError(
            f"Columns {unknown} are not columns of the table; its columns are {list(spec.column_names)}."
        )
    auto_increment = spec.merge.auto_increment
    if auto_increment is not None and (auto_increment in given or auto_increment in (target_columns or ())):
        # Fluss's UpsertWriterImpl: one wording for a write of every column, one for target columns.
        if target_columns is None and set(spec.value_columns) <= set(given):
            raise InvalidInputError(
                f"This table has auto increment column {java_list([auto_increment])}. Explicitly specifying "
                "values for an auto increment column is not allowed. Please specify non-auto-increment "
                "columns as target columns using partialUpdate first."
            )
        raise InvalidInputError(
            f"Explicitly specifying values for the auto increment column {auto_increment} is not allowed."
        )
    targets = _target_columns(spec, given, target_columns)
    column_sets = SET_COLUMNS in given
    if column_sets:
        _check_column_sets(spark, spec, changes, targets)
        # A listed column is written as given, NULL included: as by a write of target columns.
        targets = targets or spec.column_names
    context = MergeContext(spec, targets, column_sets)
    engine = engine_for(spec.merge)
    engine.check_write(context)
    # A write of only the key can delete whole rows, but its upserts are partial writes.
    refused_upserts = (
        engine.partial_write_refused
        if context.is_key_only_write and not engine.accepts_partial_write
        else None
    )
    counts = _check_values(spark, spec, changes, given, targets, refused_upserts)
    return PreparedBatch(
        _normalized(spark, spec, changes, given),
        context,
        counts.records,
        counts.retractions,
        counts.key_only_deletes,
        one_record_per_key=counts.distinct_keys == counts.records,
        arrivals=counts.arrivals,
    )


def _check_column_sets(
    spark: SparkSession, spec: TableDefinition, changes: DataFrame, targets: tuple[str, ...] | None
) -> None:
    """Refuse column sets the table cannot take, or records whose set names a column the write does
    not have (docs/semantics.md 7.1)."""
    refused = column_sets_refused(spec)
    if refused is not None:
        raise InvalidInputError(f"The changes carry {SET_COLUMNS}, but {refused}.")
    written = list(targets or spec.column_names)
    known = ", ".join(string_literal(c) for c in written)
    # No lambda: Sail 0.7.2 fails on one over a column computed by the caller ("No field named").
    strange = f"array_except({SET_COLUMNS}, CAST(array({known}) AS array<string>))"
    try:
        key = ", ".join(f"CAST({quote(k)} AS STRING)" for k in spec.primary_key)
        bad = select(
            spark,
            f"SELECT key, names FROM (SELECT concat_ws(', ', {key}) AS key, {strange} AS names "
            f"FROM {{changes}}) WHERE size(names) > 0 LIMIT {EXAMPLES}",
            changes=changes,
        ).collect()
    except Exception as error:  # not an array of strings: analysis fails before any data is read
        raise InvalidInputError(
            f"{SET_COLUMNS} must be an array of column names (array<string>): {first_line(error)}"
        ) from error
    if bad:
        examples = "; ".join(f"the record of key ({row.key}) names {list(row.names)}" for row in bad)
        raise InvalidInputError(
            f"Invalid changes, nothing was written: {SET_COLUMNS} may only name the columns this write "
            f"writes {written} (e.g. {examples}); fix the record's list of the columns it sets."
        )


def _target_columns(
    spec: TableDefinition, given: list[str], target_columns: Sequence[str] | None
) -> tuple[str, ...] | None:
    """The columns this write declares: explicit, or (Fluss dialect) the columns the changes carry."""
    if target_columns is None:
        missing_keys = [k for k in spec.primary_key if k not in given]
        if missing_keys:
            raise InvalidInputError(
                f"The changes must contain every primary key column {list(spec.primary_key)}; "
                f"missing {missing_keys}."
            )
        if spec.merge.dialect == "fluss" and set(spec.value_columns) - set(given):
            return tuple(c for c in spec.column_names if c in given)
        return None
    targets = list(dict.fromkeys(target_columns))
    unknown = [c for c in targets if c not in spec.column_names]
    if unknown:
        raise InvalidInputError(
            f"Target columns {unknown} are not columns of the table {list(spec.column_names)}."
        )
    if not set(spec.primary_key) <= set(targets):
        raise InvalidInputError(
            f"The target write columns {java_list(targets)} must contain the primary key columns "
            f"{java_list(spec.primary_key)}."
        )
    absent = [c for c in targets if c not in given]
    if absent:
        raise InvalidInputError(f"Target columns {absent} are missing from the changes.")
    not_nullable = [c.name for c in spec.columns if c.name not in targets and not c.nullable]
    if not_nullable:
        raise InvalidInputError(
            "Partial Update requires all columns except primary key to be nullable, "
            f"but column {not_nullable[0]} is NOT NULL."
        )
    return tuple(c for c in spec.column_names if c in targets)


def _normalized(
    spark: SparkSession, spec: TableDefinition, changes: DataFrame, given: list[str]
) -> DataFrame:
    columns = []
    for column in spec.columns:
        source = f"try_cast({quote(column.name)} AS {column.type})" if column.name in given else "NULL"
        columns.append(f"CAST({source} AS {column.type}) AS {quote(column.name)}")
    kind = "_row_kind" if "_row_kind" in given else string_literal(RowKind.INSERT)
    # A record's arrival order: given, or the engine's numbering of the records (GENERATED_ARRIVALS).
    arrival = "CAST(_offset AS BIGINT)" if "_offset" in given else "monotonically_increasing_id()"
    if SET_COLUMNS in given:
        columns.append(f"CAST({SET_COLUMNS} AS array<string>) AS {SET_COLUMNS}")
    return select(
        spark,
        f"SELECT {', '.join(columns)}, {kind} AS _row_kind, {arrival} AS _offset FROM {{changes}}",
        changes=changes,
    )


@dataclass(frozen=True)
class _Counts:
    """What validating a batch counted."""

    records: int
    retractions: int  # -U and -D records
    key_only_deletes: int  # -D records whose written value columns are all NULL or absent
    # None where a key is a floating-point number: whether -0.0 and NaN count apart as the merge's
    # grouping would is not the engine's promise.
    distinct_keys: int | None
    arrivals: tuple[int, int] | None  # the least and greatest arrival; None without records


def _check_values(
    spark: SparkSession,
    spec: TableDefinition,
    changes: DataFrame,
    given: list[str],
    targets: tuple[str, ...] | None,
    refused_upserts: str | None,
) -> _Counts:
    """One aggregate pass over the raw changes counting every kind of bad record; raise with examples.
    `refused_upserts`: the engine's refusal of +I/+U records (a key-only write to an engine that takes
    whole rows only)."""

    def cast(column: str) -> str:
        name = quote(column)
        return f"try_cast({name} AS {spec.column(column).type})" if column in given else "NULL"

    kind = "_row_kind" if "_row_kind" in given else string_literal(RowKind.INSERT)
    exact = _exactly_typed(spec, changes, given)
    checks: dict[str, tuple[str, str]] = {}
    for key in spec.primary_key:
        checks[f"NULL primary key {key}"] = (f"{quote(key)} IS NULL", quote(key))
    checks["unknown _row_kind"] = (f"{kind} IS NULL OR NOT {kind_in(kind, RowKind)}", kind)
    if "_offset" in given:
        checks["NULL _offset"] = ("_offset IS NULL", "_offset")
    for column in spec.columns:
        name = quote(column.name)
        if column.name in given and column.name not in exact:
            checks[f"value that cannot be cast to {column.type} in column {column.name}"] = (
                f"{name} IS NOT NULL AND {cast(column.name)} IS NULL",
                name,
            )
        written = targets is None or column.name in targets
        if not column.nullable and column.name not in spec.primary_key and written:
            checks[f"NULL in NOT NULL column {column.name}"] = (
                f"{kind_in(kind, ADDS)} AND {cast(column.name)} IS NULL",
                name if column.name in given else "NULL",
            )
    if refused_upserts is not None:
        problem = (
            f"an upsert of only the key columns ({refused_upserts} A write of only the key can only delete.)"
        )
        checks[problem] = (kind_in(kind, ADDS), kind)
    merge = spec.merge
    if merge.dialect == "fluss" and merge.delete_behavior == "disable" and not merge.ignore_delete:
        checks[
            "a delete (Delete operations are disabled for this table. "
            "The table.delete.behavior is set to 'disable'.)"
        ] = (kind_in(kind, [RowKind.DELETE]), kind)
    counts = [f"count_if({condition}) AS `{i}`" for i, (condition, _) in enumerate(checks.values())]
    counts.append("count(*) AS records")
    counts.append(f"count_if({kind_in(kind, RETRACTS)}) AS retractions")
    written_values = [
        quote(c) for c in spec.value_columns if c in given and (targets is None or c in targets)
    ]
    key_only = " AND ".join([kind_in(kind, [RowKind.DELETE]), *(f"{c} IS NULL" for c in written_values)])
    counts.append(f"count_if({key_only}) AS key_only_deletes")
    if "_offset" in given:
        counts += [
            "count(_offset) - count(DISTINCT _offset) AS duplicate_offsets",
            "min(CAST(_offset AS BIGINT)) AS first_arrival",
            "max(CAST(_offset AS BIGINT)) AS last_arrival",
        ]
    exact_keys = not any(spec.column(k).type.lower() in ("float", "double") for k in spec.primary_key)
    if exact_keys:
        counts.append(f"count(DISTINCT {', '.join(cast(k) for k in spec.primary_key)}) AS distinct_keys")
    try:
        result = select(spark, f"SELECT {', '.join(counts)} FROM {{changes}}", changes=changes).collect()[0]
    except Exception as error:  # an incompatible type fails analysis, before any data is read
        raise InvalidInputError(
            f"The changes do not fit the table's column types: {first_line(error)}"
        ) from error
    problems = []
    for i, (name, (condition, shown)) in enumerate(checks.items()):
        if result[str(i)]:
            examples = select(
                spark,
                f"SELECT CAST({shown} AS STRING) AS v FROM {{changes}} WHERE {condition} LIMIT {EXAMPLES}",
                changes=changes,
            ).collect()
            problems.append(f"{result[str(i)]} record(s) with {name} (e.g. {[r.v for r in examples]})")
    if "_offset" in given and result["duplicate_offsets"]:
        problems.append(
            f"{result['duplicate_offsets']} duplicate _offset value(s): the arrival order is ambiguous"
        )
    if problems:
        raise InvalidInputError("Invalid changes, nothing was written: " + "; ".join(problems) + ".")
    records = int(result["records"])
    if "_offset" in given:
        first, last = result["first_arrival"], result["last_arrival"]
        arrivals = None if first is None else (int(first), int(last))
    else:
        arrivals = GENERATED_ARRIVALS if records else None
    return _Counts(
        records=records,
        retractions=int(result["retractions"]),
        key_only_deletes=int(result["key_only_deletes"]),
        distinct_keys=int(result["distinct_keys"]) if exact_keys else None,
        arrivals=arrivals,
    )


def _exactly_typed(spec: TableDefinition, changes: DataFrame, given: list[str]) -> set[str]:
    """The table columns `changes` carries with the table's own type: none of their values can fail
    the cast, so validation need not read them for it (a type spelled in a way `_spelled` does not
    know is checked as before)."""
    types = {field.name: field.dataType.simpleString() for field in changes.schema.fields}
    return {c.name for c in spec.columns if c.name in given and types.get(c.name) == _spelled(c.type)}


def _spelled(type_text: str) -> str:
    """A column's type as `DataType.simpleString` spells it, for the names with aliases: `long` ->
    `bigint`, `decimal` -> `decimal(10,0)`, `numeric(5, 2)` -> `decimal(5,2)`."""
    text = re.sub(r"\s+", "", type_text.lower())
    named = re.fullmatch(r"([a-z_]+)(\(.*\))?", text)
    if named is None:  # a nested type, spelled as given
        return text
    name, parameters = TYPE_ALIASES.get(named[1], named[1]), named[2] or ""
    if name == "decimal":
        precision, _, scale = parameters.strip("()").partition(",")
        parameters = f"({precision or 10},{scale or 0})"
    return name + parameters


def assign_auto_increment(
    spark: SparkSession, batch: PreparedBatch, stored: DataFrame, next_id: int
) -> tuple[PreparedBatch, int]:
    """Give each key first seen in this batch the next dense id, in arrival order; returns the new
    batch and the next unused id. Stored keys keep theirs: the column is never a target column."""
    spec = batch.context.definition
    column = spec.merge.auto_increment
    assert column is not None
    keys, batch_keys = columns(spec.primary_key), columns(spec.primary_key, "b.")
    joined = key_join(spec.primary_key, "b", "n", null_safe=True)
    stored_match = key_join(spec.primary_key, "t", "b")
    new_keys = select(
        spark,
        f"SELECT {keys}, CAST({next_id} - 1 + row_number() OVER (ORDER BY _first) AS "
        f"{spec.column(column).type}) AS _id FROM (SELECT {batch_keys}, min(b._offset) AS _first "
        f"FROM {{frame}} b WHERE {kind_in('b._row_kind', ADDS)} "
        f"AND NOT EXISTS (SELECT 1 FROM {{stored}} t WHERE {stored_match}) GROUP BY {batch_keys})",
        frame=batch.frame,
        stored=stored,
    )
    assigned = new_keys.count()
    with_ids = ", ".join(
        f"n._id AS {quote(c)}" if c == column else f"b.{quote(c)}"
        for c in [
            *spec.column_names,
            "_row_kind",
            "_offset",
            *([SET_COLUMNS] if batch.context.column_sets else []),
        ]
    )
    frame = select(
        spark,
        f"SELECT {with_ids} FROM {{frame}} b LEFT JOIN {{ids}} n ON {joined}",
        frame=batch.frame,
        ids=new_keys,
    )
    return replace(batch, frame=frame), next_id + assigned


def merge_batch(
    spark: SparkSession,
    batch: PreparedBatch,
    stored: DataFrame,
    segmented: bool = False,
    nothing_stored: bool = False,
) -> DataFrame:
    """This commit's changelog entries: `_row_kind`, the table's columns, `_offset` (order in the commit).
    `segmented`: the batch holds several commits' records, told apart by `_segment`; `nothing_stored`:
    `stored` is known to hold no row (see merge_query)."""
    spec = batch.context.definition
    _ready_to_merge(spark, batch, stored, segmented)
    query = merge_query(batch.context, segmented, batch.adds_only, batch.one_record_per_key, nothing_stored)
    entries = select(spark, query, batch=batch.frame, stored=stored)
    return select(
        spark,
        f"SELECT _row_kind, {columns(spec.column_names)}, {entry_offset(batch.arrivals)} AS _offset "
        "FROM {entries}",
        entries=entries,
    )


def merge_failure(
    spark: SparkSession, batch: PreparedBatch, stored: DataFrame, nothing_stored: bool = False
) -> MergeError | None:
    """The error the batch's merge against `stored` fails with, if it does, every entry's every column
    computed (a count of each column's values: no projection leaves a failing value out, and the
    engine hashes no nested type, so `hash(...)` of them all cannot do it)."""
    spec = batch.context.definition
    counts = ", ".join(f"count({quote(c)})" for c in ("_row_kind", *spec.column_names, "_offset"))
    try:
        with merge_errors():
            entries = merge_batch(spark, batch, stored, nothing_stored=nothing_stored)
            select(spark, f"SELECT {counts} FROM {{e}}", e=entries).collect()
    except MergeError as error:
        return error
    return None


def first_failing_key_error(
    spark: SparkSession,
    batch: PreparedBatch,
    stored: DataFrame,
    error: MergeError,
    nothing_stored: bool = False,
) -> MergeError:
    """The error of the batch's first key, in key order, whose merge fails, after the whole batch's
    merge failed with `error`. Paimon merges a commit's keys in key order and stops at the first error
    (each record's fields in order), where the engine reports whichever failing key it computed
    first: with two kinds of error in one batch, the message differed from Paimon's. Found by
    bisecting the keys (about log2 of their number merges, only ever on this failure path); `error`
    itself when only the last key fails."""
    spec = batch.context.definition
    keys = columns(spec.primary_key)
    ranked = select(
        spark,
        f"SELECT b.*, r._key_rank FROM {{frame}} b JOIN (SELECT {keys}, dense_rank() OVER (ORDER BY {keys}) "
        f"AS _key_rank FROM (SELECT DISTINCT {keys} FROM {{frame}})) r ON {key_join(spec.primary_key, 'b', 'r')}",
        frame=batch.frame,
    )
    low, high = 1, int(select(spark, "SELECT max(_key_rank) FROM {r}", r=ranked).collect()[0][0])
    found = error
    while low < high:
        middle = (low + high) // 2
        first_keys = replace(batch, frame=ranked.where(f"_key_rank <= {middle}").drop("_key_rank"))
        failed = merge_failure(spark, first_keys, stored, nothing_stored)
        if failed is None:
            low = middle + 1
        else:
            high, found = middle, failed
    return found


def folded_into(
    spark: SparkSession, batch: PreparedBatch, stored: DataFrame, segmented: bool = False
) -> DataFrame:
    """`stored` with the batch folded in (`folded_into_query`): the rows applying `merge_batch`'s
    entries gives. Only for engines with one transition per key (not `per_record`)."""
    _ready_to_merge(spark, batch, stored, segmented)
    return select(
        spark, folded_into_query(batch.context, segmented, batch.adds_only), batch=batch.frame, stored=stored
    )


def _ready_to_merge(spark: SparkSession, batch: PreparedBatch, stored: DataFrame, segmented: bool) -> None:
    """Register what the table's functions call, and raise the engine's refusal of the batch, if any."""
    for column in batch.context.definition.merge.functions:
        function = batch.context.aggregator(column)
        if function is not None:
            function.prepare(spark)
    refusal = None if batch.adds_only else refusal_query(batch.context, segmented)
    if refusal is not None and select(spark, refusal[0], batch=batch.frame, stored=stored).take(1):
        raise MergeError(refusal[1])
