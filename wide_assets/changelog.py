"""Changelog algebra over changelog entries: final images, collapsed transitions, counts, filters.

A commit's entries (`_row_kind`, the table's columns, `_offset`, and `_commit` across commits) are
enough to apply it, re-apply it, count it and re-shape it; everything here is SQL over them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from wide_assets.batch import PreparedBatch
from wide_assets.merge.context import comparable
from wide_assets.merge.plan import kind_filter
from wide_assets.queries import select
from wide_assets.sql import ADDS, RETRACTS, RowKind, columns, key_join, kind_in, quote
from wide_assets.table_definition import TableDefinition

if TYPE_CHECKING:
    from wide_assets.session import SparkSession


def input_changelog(spark: SparkSession, batch: PreparedBatch) -> DataFrame:
    """C2: the `input` producer's changelog: the records as written, after the row-kind filter."""
    spec = batch.context.definition
    return select(
        spark,
        f"SELECT _row_kind, {columns(spec.column_names)}, CAST(row_number() OVER (ORDER BY _offset) - 1 AS BIGINT) AS _offset "
        f"FROM {{frame}} WHERE {kind_filter(batch.context)}",
        frame=batch.frame,
    )


def _first_and_last(spec: TableDefinition, across_commits: bool = False) -> str:
    """Per key of a commit's entries (or several commits'): its first and last entry (row kind, image,
    comparable image)."""
    keys = columns(spec.primary_key)
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
    on = key_join(spec.primary_key, "f", "l")
    return (
        f"SELECT {', '.join(f'f.{quote(k)}' for k in spec.primary_key)}, f.e AS _first, l.e AS _last FROM "
        f"(SELECT {keys}, {entry} AS e, row_number() OVER (PARTITION BY {keys} ORDER BY {order}) AS n "
        f"FROM {{entries}}) f JOIN "
        f"(SELECT {keys}, {entry} AS e, row_number() OVER (PARTITION BY {keys} ORDER BY {descending}) AS n "
        f"FROM {{entries}}) l ON {on} AND f.n = 1 AND l.n = 1"
    )


# Over a key's first and last entry: the key existed before, exists after, or was updated to equal values.
EXISTED = kind_in("_first.k", RETRACTS)
EXISTS = kind_in("_last.k", ADDS)
UNCHANGED = (
    f"({kind_in('_first.k', [RowKind.UPDATE_BEFORE])} AND {kind_in('_last.k', [RowKind.UPDATE_AFTER])} "
    "AND _first.c <=> _last.c)"
)


def final_images(
    spark: SparkSession, spec: TableDefinition, entries: DataFrame, across_commits: bool = False
) -> DataFrame:
    """Per key whose row changed: its last changelog image (`_row_kind` '-D' = delete) to apply."""
    keys = columns(spec.primary_key)
    values = "".join(f", _last.v.{quote(c)} AS {quote(c)}" for c in spec.value_columns)
    return select(
        spark,
        f"SELECT {keys}, _last.k AS _row_kind{values} FROM ({_first_and_last(spec, across_commits)}) "
        f"WHERE NOT {UNCHANGED}",
        entries=entries,
    )


def collapsed_transitions(spark: SparkSession, spec: TableDefinition, entries: DataFrame) -> DataFrame:
    """C3 over several commits: one transition per key from its first image to its last, as a
    lookup changelog produced at compaction shows them (intermediate states are not visible)."""
    keys = columns(spec.primary_key)
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
    return select(
        spark,
        f"SELECT t._k AS _row_kind, {keys}{values}, "
        f"CAST(row_number() OVER (ORDER BY {keys}, t._i) - 1 AS BIGINT) AS _offset "
        f"FROM ({_first_and_last(spec, across_commits=True)}) LATERAL VIEW inline({transitions}) t",
        entries=entries,
    )


def transition_counts(spark: SparkSession, spec: TableDefinition, entries: DataFrame) -> dict[str, int]:
    """Keys inserted, updated, unchanged (touched, same values) and deleted by a commit's entries."""
    row = select(
        spark,
        f"SELECT count_if(NOT {EXISTED} AND {EXISTS}) AS inserted, "
        f"count_if({EXISTED} AND {EXISTS} AND NOT {UNCHANGED}) AS updated, "
        f"count_if({UNCHANGED}) AS unchanged, count_if({EXISTED} AND NOT {EXISTS}) AS deleted "
        f"FROM ({_first_and_last(spec)})",
        entries=entries,
    ).collect()[0]
    return {name: int(row[name]) for name in ("inserted", "updated", "unchanged", "deleted")}


def kind_counts(spark: SparkSession, entries: DataFrame) -> dict[str, int]:
    """`transition_counts` of one commit of an engine that logs exactly one transition per key (+I,
    -D or a -U/+U pair) and no unchanged key: one aggregate of row kinds, no ranking. Also counts
    the entries (`changelog_rows`)."""
    row = select(
        spark,
        f"SELECT count_if({kind_in('_row_kind', [RowKind.INSERT])}) AS inserted, "
        f"count_if({kind_in('_row_kind', [RowKind.UPDATE_AFTER])}) AS updated, "
        f"count_if({kind_in('_row_kind', [RowKind.DELETE])}) AS deleted, count(*) AS changelog_rows "
        "FROM {entries}",
        entries=entries,
    ).collect()[0]
    return {
        "unchanged": 0,
        **{name: int(row[name]) for name in ("inserted", "updated", "deleted", "changelog_rows")},
    }


def without_before_images(entries: DataFrame) -> DataFrame:
    """The entries without their -U rows: the images, when `entries` hold one transition per key."""
    return entries.where(f"NOT {kind_in('_row_kind', [RowKind.UPDATE_BEFORE])}")


def without_ignored_updates(spark: SparkSession, spec: TableDefinition, entries: DataFrame) -> DataFrame:
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
    window = "PARTITION BY _commit, " + columns(spec.primary_key)
    pair = (
        f"max(CASE WHEN {kind_in('_row_kind', [RowKind.UPDATE_BEFORE])} THEN {image} END) OVER ({window}) <=> "
        f"max(CASE WHEN {kind_in('_row_kind', [RowKind.UPDATE_AFTER])} THEN {image} END) OVER ({window})"
    )
    return select(
        spark,
        f"SELECT {columns(entries.columns)} FROM (SELECT *, {kind_in('_row_kind', [RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER])} "
        f"AND {pair} AS _ignored FROM {{entries}}) "
        "WHERE NOT _ignored",
        entries=entries,
    )


def apply_images(
    spark: SparkSession, spec: TableDefinition, stored: DataFrame, images: DataFrame
) -> DataFrame:
    """The stored rows with `images` applied: the in-memory equivalent of the Delta MERGE. One outer
    join, so `images` (often a merge itself) is computed once. The images come first: the engine
    builds its hash table from the join's first side, and the stored rows are the large one (with
    them first, a union read of 10M rows peaked at 4.0 GB instead of 0.54 GB)."""
    keys = key_join(spec.primary_key, "s", "i")
    applied = ", ".join(
        f"CASE WHEN i._image THEN i.{quote(c)} ELSE s.{quote(c)} END AS {quote(c)}" for c in spec.column_names
    )
    return select(
        spark,
        f"SELECT {applied} FROM (SELECT *, true AS _image FROM {{images}}) i "
        f"FULL OUTER JOIN {{stored}} s ON {keys} "
        f"WHERE i._image IS NULL OR NOT {kind_in('i._row_kind', [RowKind.DELETE])}",
        stored=stored,
        images=images,
    )
