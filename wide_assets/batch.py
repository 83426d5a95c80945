"""One write's records: validated and normalized, merged against stored rows, as DataFrames.

Engine-neutral: only `spark.sql` text and DataFrame methods that take strings, so the same code runs
on Sail (Spark Connect) and on classic JVM Spark. Delta I/O lives in `table.py`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from wide_assets.errors import InvalidInputError, MergeError
from wide_assets.merge import MergeContext, engine_for, merge_query
from wide_assets.merge.context import comparable
from wide_assets.merge.plan import kind_filter, quote
from wide_assets.spec import TableSpec

ROW_KINDS = ("+I", "-U", "+U", "-D")
ERROR_MARKER = "[wide_assets] "
EXAMPLES = 3


@dataclass(frozen=True)
class PreparedBatch:
    """A validated batch: every table column (cast), `_row_kind` and a unique arrival `_offset`."""

    frame: DataFrame
    context: MergeContext
    records: int | None = None  # counted while validating, when known


def prepare_batch(
    spark: SparkSession,
    spec: TableSpec,
    changes: DataFrame,
    target_columns: Sequence[str] | None = None,
) -> PreparedBatch:
    """Validate `changes` against the table and normalize it; raises InvalidInputError, commits nothing."""
    given = list(changes.columns)
    unknown = [c for c in given if c not in spec.column_names and c not in ("_row_kind", "_offset")]
    if unknown:
        raise InvalidInputError(
            f"Columns {unknown} are not columns of the table; its columns are {list(spec.column_names)}."
        )
    if spec.merge.auto_increment in given or spec.merge.auto_increment in (target_columns or ()):
        raise InvalidInputError(
            f"Explicitly specifying values for the auto-increment column {spec.merge.auto_increment} "
            "is not allowed: the table assigns them."
        )
    targets = _target_columns(spec, given, target_columns)
    context = MergeContext(spec, targets)
    engine_for(spec.merge).check_write(context)
    records = _check_values(spark, spec, changes, given, targets)
    return PreparedBatch(_normalized(spark, spec, changes, given), context, records)


def _target_columns(
    spec: TableSpec, given: list[str], target_columns: Sequence[str] | None
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
            f"The target write columns {targets} must contain the primary key columns {list(spec.primary_key)}."
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


def _normalized(spark: SparkSession, spec: TableSpec, changes: DataFrame, given: list[str]) -> DataFrame:
    columns = []
    for column in spec.columns:
        source = f"try_cast({quote(column.name)} AS {column.type})" if column.name in given else "NULL"
        columns.append(f"CAST({source} AS {column.type}) AS {quote(column.name)}")
    kind = "_row_kind" if "_row_kind" in given else "'+I'"
    offset = "CAST(_offset AS BIGINT)" if "_offset" in given else "monotonically_increasing_id()"
    return spark.sql(
        f"SELECT {', '.join(columns)}, {kind} AS _row_kind, {offset} AS _offset FROM {{changes}}",
        changes=changes,
    )


def _check_values(
    spark: SparkSession,
    spec: TableSpec,
    changes: DataFrame,
    given: list[str],
    targets: tuple[str, ...] | None,
) -> int:
    """One aggregate pass over the raw changes counting every kind of bad record; raise with examples.
    Returns the number of records."""

    def cast(column: str) -> str:
        name = quote(column)
        return f"try_cast({name} AS {spec.column(column).type})" if column in given else "NULL"

    kind = "_row_kind" if "_row_kind" in given else "'+I'"
    checks: dict[str, tuple[str, str]] = {}
    for key in spec.primary_key:
        checks[f"NULL primary key {key}"] = (f"{quote(key)} IS NULL", quote(key))
    checks["unknown _row_kind"] = (f"{kind} IS NULL OR {kind} NOT IN ('+I', '-U', '+U', '-D')", kind)
    if "_offset" in given:
        checks["NULL _offset"] = ("_offset IS NULL", "_offset")
    for column in spec.columns:
        name = quote(column.name)
        if column.name in given:
            checks[f"value that cannot be cast to {column.type} in column {column.name}"] = (
                f"{name} IS NOT NULL AND {cast(column.name)} IS NULL",
                name,
            )
        written = targets is None or column.name in targets
        if not column.nullable and column.name not in spec.primary_key and written:
            checks[f"NULL in NOT NULL column {column.name}"] = (
                f"{kind} IN ('+I', '+U') AND {cast(column.name)} IS NULL",
                name if column.name in given else "NULL",
            )
    merge = spec.merge
    if merge.dialect == "fluss" and merge.delete_behavior == "disable" and not merge.ignore_delete:
        checks[
            "a delete (Delete operations are disabled for this table. "
            "The table.delete.behavior is set to 'disable'.)"
        ] = (f"{kind} = '-D'", kind)
    counts = [f"count_if({condition}) AS `{i}`" for i, (condition, _) in enumerate(checks.values())]
    counts.append("count(*) AS records")
    if "_offset" in given:
        counts.append("count(_offset) - count(DISTINCT _offset) AS duplicate_offsets")
    try:
        result = spark.sql(f"SELECT {', '.join(counts)} FROM {{changes}}", changes=changes).collect()[0]
    except Exception as error:  # an incompatible type fails analysis, before any data is read
        raise InvalidInputError(
            f"The changes do not fit the table's column types: {first_line(error)}"
        ) from error
    problems = []
    for i, (name, (condition, shown)) in enumerate(checks.items()):
        if result[str(i)]:
            examples = spark.sql(
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
    return int(result["records"])


def assign_auto_increment(
    spark: SparkSession, batch: PreparedBatch, stored: DataFrame, next_id: int
) -> tuple[PreparedBatch, int]:
    """Give each key first seen in this batch the next dense id, in arrival order; returns the new
    batch and the next unused id. Stored keys keep theirs: the column is never a target column."""
    spec = batch.context.spec
    column = spec.merge.auto_increment
    assert column is not None
    keys = [quote(k) for k in spec.primary_key]
    joined = " AND ".join(f"b.{k} <=> n.{k}" for k in keys)
    stored_match = " AND ".join(f"t.{k} = b.{k}" for k in keys)
    new_keys = spark.sql(
        f"SELECT {', '.join(keys)}, CAST({next_id} - 1 + row_number() OVER (ORDER BY _first) AS "
        f"{spec.column(column).type}) AS _id FROM (SELECT {', '.join(f'b.{k}' for k in keys)}, min(b._offset) AS _first "
        f"FROM {{frame}} b WHERE b._row_kind IN ('+I', '+U') "
        f"AND NOT EXISTS (SELECT 1 FROM {{stored}} t WHERE {stored_match}) GROUP BY {', '.join(f'b.{k}' for k in keys)})",
        frame=batch.frame,
        stored=stored,
    )
    assigned = new_keys.count()
    columns = ", ".join(
        f"n._id AS {quote(c)}" if c == column else f"b.{quote(c)}"
        for c in [*spec.column_names, "_row_kind", "_offset"]
    )
    frame = spark.sql(
        f"SELECT {columns} FROM {{frame}} b LEFT JOIN {{ids}} n ON {joined}", frame=batch.frame, ids=new_keys
    )
    return PreparedBatch(frame, batch.context, batch.records), next_id + assigned


def merge_batch(
    spark: SparkSession, batch: PreparedBatch, stored: DataFrame, segmented: bool = False
) -> DataFrame:
    """This commit's changelog entries: `_row_kind`, the table's columns, `_offset` (order in the commit).
    `segmented`: the batch holds several commits' records, told apart by `_segment` (see merge_query)."""
    spec = batch.context.spec
    for column in spec.merge.functions:
        batch.context.aggregator(column).prepare(spark)
    entries = spark.sql(merge_query(batch.context, segmented), batch=batch.frame, stored=stored)
    columns = ", ".join(quote(c) for c in spec.column_names)
    return spark.sql(
        f"SELECT _row_kind, {columns}, "
        "CAST(row_number() OVER (ORDER BY _order_a, _order_i) - 1 AS BIGINT) AS _offset FROM {entries}",
        entries=entries,
    )


def input_changelog(spark: SparkSession, batch: PreparedBatch) -> DataFrame:
    """C2: the `input` producer's changelog: the records as written, after the row-kind filter."""
    spec = batch.context.spec
    columns = ", ".join(quote(c) for c in spec.column_names)
    return spark.sql(
        f"SELECT _row_kind, {columns}, CAST(row_number() OVER (ORDER BY _offset) - 1 AS BIGINT) AS _offset "
        f"FROM {{frame}} WHERE {kind_filter(batch.context)}",
        frame=batch.frame,
    )


def _first_and_last(spec: TableSpec, across_commits: bool = False) -> str:
    """Per key of a commit's entries (or several commits'): its first and last entry (row kind, image,
    comparable image)."""
    keys = ", ".join(quote(k) for k in spec.primary_key)
    image = "named_struct(" + ", ".join(f"'{c}', {quote(c)}" for c in spec.value_columns) + ")"
    compared = (
        "named_struct("
        + ", ".join(f"'{c}', {comparable(quote(c), spec.column(c).type)}" for c in spec.value_columns)
        + ")"
    )
    entry = f"named_struct('k', _row_kind, 'v', {image}, 'c', {compared})"
    # Window ranks in both directions pick each key's first and last entry: no max_by/min_by over
    # structs (slow on Sail), no ordering of the values (maps have none), no map lookups (wrong on
    # Sail 0.7.2 past 16,384 groups) and no lambdas (Sail mis-types some struct lambda variables).
    order = "_commit, _offset" if across_commits else "_offset"
    descending = "_commit DESC, _offset DESC" if across_commits else "_offset DESC"
    on = " AND ".join(f"f.{quote(k)} = l.{quote(k)}" for k in spec.primary_key)
    return (
        f"SELECT {', '.join(f'f.{quote(k)}' for k in spec.primary_key)}, f.e AS _first, l.e AS _last FROM "
        f"(SELECT {keys}, {entry} AS e, row_number() OVER (PARTITION BY {keys} ORDER BY {order}) AS n "
        f"FROM {{entries}}) f JOIN "
        f"(SELECT {keys}, {entry} AS e, row_number() OVER (PARTITION BY {keys} ORDER BY {descending}) AS n "
        f"FROM {{entries}}) l ON {on} AND f.n = 1 AND l.n = 1"
    )


UNCHANGED = "(_first.k = '-U' AND _last.k = '+U' AND _first.c <=> _last.c)"
EXISTED = "_first.k IN ('-U', '-D')"
EXISTS = "_last.k IN ('+I', '+U')"


def final_images(
    spark: SparkSession, spec: TableSpec, entries: DataFrame, across_commits: bool = False
) -> DataFrame:
    """Per key whose row changed: its last changelog image (`_row_kind` '-D' = delete) to apply."""
    keys = ", ".join(quote(k) for k in spec.primary_key)
    values = "".join(f", _last.v.{quote(c)} AS {quote(c)}" for c in spec.value_columns)
    return spark.sql(
        f"SELECT {keys}, _last.k AS _row_kind{values} FROM ({_first_and_last(spec, across_commits)}) "
        f"WHERE NOT {UNCHANGED}",
        entries=entries,
    )


def collapsed_transitions(spark: SparkSession, spec: TableSpec, entries: DataFrame) -> DataFrame:
    """C3 over several commits: one transition per key from its first image to its last, as a
    lookup changelog produced at compaction shows them (intermediate states are not visible)."""
    keys = ", ".join(quote(k) for k in spec.primary_key)
    merge = spec.merge
    ignored = set(merge.row_deduplicate_ignore_fields) if merge.row_deduplicate else set()
    same = " AND ".join(
        f"_first.c.{quote(c)} <=> _last.c.{quote(c)}" for c in spec.value_columns if c not in ignored
    )
    update = f"NOT ({same or 'true'})" if merge.row_deduplicate else "true"
    value_type = ", ".join(f"{quote(c)}:{spec.column(c).type}" for c in spec.value_columns)

    def entry(kind: str, index: int, side: str) -> str:
        return f"named_struct('_k', '{kind}', '_i', {index}, '_v', {side}.v)"

    transitions = f"""CASE
      WHEN NOT {EXISTED} AND {EXISTS} THEN array({entry("+I", 0, "_last")})
      WHEN {EXISTED} AND NOT {EXISTS} THEN array({entry("-D", 0, "_first")})
      WHEN {EXISTED} AND {EXISTS} AND {update} THEN array({entry("-U", 0, "_first")}, {entry("+U", 1, "_last")})
      ELSE CAST(array() AS array<struct<_k:string, _i:int, _v:struct<{value_type}>>>)
    END"""
    values = "".join(f", t._v.{quote(c)} AS {quote(c)}" for c in spec.value_columns)
    return spark.sql(
        f"SELECT t._k AS _row_kind, {keys}{values}, "
        f"CAST(row_number() OVER (ORDER BY {keys}, t._i) - 1 AS BIGINT) AS _offset "
        f"FROM ({_first_and_last(spec, across_commits=True)}) LATERAL VIEW inline({transitions}) t",
        entries=entries,
    )


def transition_counts(spark: SparkSession, spec: TableSpec, entries: DataFrame) -> dict[str, int]:
    """Keys inserted, updated, unchanged (touched, same values) and deleted by a commit's entries."""
    row = spark.sql(
        f"SELECT count_if(NOT {EXISTED} AND {EXISTS}) AS inserted, "
        f"count_if({EXISTED} AND {EXISTS} AND NOT {UNCHANGED}) AS updated, "
        f"count_if({UNCHANGED}) AS unchanged, count_if({EXISTED} AND NOT {EXISTS}) AS deleted "
        f"FROM ({_first_and_last(spec)})",
        entries=entries,
    ).collect()[0]
    return {name: int(row[name]) for name in ("inserted", "updated", "unchanged", "deleted")}


def without_ignored_updates(spark: SparkSession, spec: TableSpec, entries: DataFrame) -> DataFrame:
    """Drop -U/+U pairs equal but for `changelog-producer.row-deduplicate-ignore-fields`."""
    ignored = set(spec.merge.row_deduplicate_ignore_fields)
    compared = [c for c in spec.value_columns if c not in ignored]
    image = (
        "named_struct("
        + ", ".join(f"'{c}', {comparable(quote(c), spec.column(c).type)}" for c in compared)
        + ")"
        if compared
        else "true"
    )
    window = "PARTITION BY _commit, " + ", ".join(quote(k) for k in spec.primary_key)
    pair = (
        f"max(CASE WHEN _row_kind = '-U' THEN {image} END) OVER ({window}) <=> "
        f"max(CASE WHEN _row_kind = '+U' THEN {image} END) OVER ({window})"
    )
    columns = ", ".join(quote(c) for c in entries.columns)
    return spark.sql(
        f"SELECT {columns} FROM (SELECT *, _row_kind IN ('-U', '+U') AND {pair} AS _ignored FROM {{entries}}) "
        "WHERE NOT _ignored",
        entries=entries,
    )


def apply_images(spark: SparkSession, spec: TableSpec, stored: DataFrame, images: DataFrame) -> DataFrame:
    """The stored rows with `images` applied: the in-memory equivalent of the Delta MERGE."""
    keys = " AND ".join(f"s.{quote(k)} = i.{quote(k)}" for k in spec.primary_key)
    columns = ", ".join(quote(c) for c in spec.column_names)
    return spark.sql(
        f"SELECT {columns} FROM {{stored}} s WHERE NOT EXISTS (SELECT 1 FROM {{images}} i WHERE {keys}) "
        f"UNION ALL SELECT {columns} FROM {{images}} WHERE _row_kind <> '-D'",
        stored=stored,
        images=images,
    )


def first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


@contextlib.contextmanager
def merge_errors() -> Iterator[None]:
    """Raise the MergeError a failed query carried (a `raise_error` in the merge), else the error."""
    try:
        yield
    except Exception as error:
        raise (merge_error(error) or error) from error


def merge_error(error: BaseException) -> MergeError | None:
    """The MergeError that a `raise_error` in the merge query carried, if that is what failed."""
    text = str(error)
    start = text.find(ERROR_MARKER)
    if start < 0:
        return None
    message = text[start + len(ERROR_MARKER) :].splitlines()[0].strip()
    return MergeError(message)
