"""A changelog in the encodings downstream sinks take (Flink's dynamic tables): append-only, retract, upsert, and as
Flink changelog JSON or Debezium-style envelopes.

Every function takes a changelog DataFrame as `WideTable.changelog()` returns it (`_row_kind`, the
table's columns, `_commit`, `_offset`) and returns a DataFrame ordered by (`_commit`, `_offset`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pyspark.sql import DataFrame

from wide_assets.errors import InvalidInputError
from wide_assets.sql import ADDS, RETRACTS, RowKind, columns, key_join, kind_in, named_struct, quote
from wide_assets.table_definition import TableDefinition

if TYPE_CHECKING:
    from wide_assets.session import SparkSession

DEBEZIUM_OPS = {RowKind.INSERT: "c", RowKind.UPDATE_AFTER: "u", RowKind.DELETE: "d"}
IS_INSERT = kind_in("_row_kind", [RowKind.INSERT])
IS_UPDATE_BEFORE = kind_in("_row_kind", [RowKind.UPDATE_BEFORE])
IS_UPDATE_AFTER = kind_in("_row_kind", [RowKind.UPDATE_AFTER])
IS_DELETE = kind_in("_row_kind", [RowKind.DELETE])
Encoding = Literal["append", "retract", "upsert", "flink-json", "debezium"]


def _columns(spec: TableDefinition) -> str:
    return columns(spec.column_names)


def _row_struct(spec: TableDefinition, prefix: str = "") -> str:
    return named_struct({c: f"{prefix}{quote(c)}" for c in spec.column_names})


def append_only(spark: SparkSession, spec: TableDefinition, changelog: DataFrame) -> DataFrame:
    """The inserts, for sinks that accept nothing else; any update or delete is an error."""
    others = changelog.where(f"NOT {IS_INSERT}").limit(1).collect()
    if others:
        raise InvalidInputError(
            f"The changelog is not append-only: it holds {others[0]['_row_kind']} entries "
            f"(commit {others[0]['_commit']}); use the retract or upsert encoding."
        )
    return spark.sql(
        f"SELECT {_columns(spec)}, _commit, _offset FROM {{log}} ORDER BY _commit, _offset", log=changelog
    )


def retract(spark: SparkSession, spec: TableDefinition, changelog: DataFrame) -> DataFrame:
    """Every entry as an add (`+I`/`+U`) or a retraction (`-U`/`-D`) of a whole row."""
    return spark.sql(
        f"SELECT _row_kind, {kind_in('_row_kind', RETRACTS)} AS retraction, {_columns(spec)}, _commit, _offset "
        "FROM {log} ORDER BY _commit, _offset",
        log=changelog,
    )


def upsert(spark: SparkSession, spec: TableDefinition, changelog: DataFrame) -> DataFrame:
    """Key + latest value per entry; `-U` is dropped and a delete is a tombstone (`value` NULL)."""
    keys = columns(spec.primary_key)
    return spark.sql(
        f"SELECT {keys}, CASE WHEN {IS_DELETE} THEN NULL ELSE {_row_struct(spec)} END AS value, "
        f"_commit, _offset FROM {{log}} WHERE NOT {IS_UPDATE_BEFORE} ORDER BY _commit, _offset",
        log=changelog,
    )


def flink_json(spark: SparkSession, spec: TableDefinition, changelog: DataFrame) -> DataFrame:
    """One JSON object per entry, Flink changelog-json style: `{"rowkind": "+U", <columns>}`."""
    fields = ", ".join(f"'{c}', {quote(c)}" for c in spec.column_names)
    return spark.sql(
        f"SELECT to_json(named_struct('rowkind', _row_kind, {fields})) AS json, _commit, _offset "
        "FROM {log} ORDER BY _commit, _offset",
        log=changelog,
    )


def debezium(spark: SparkSession, spec: TableDefinition, changelog: DataFrame) -> DataFrame:
    """Debezium-style envelopes: `{"before", "after", "op"}`; a -U/+U pair becomes one `u` event."""
    keys = columns(spec.primary_key)
    row = _row_struct(spec)
    return spark.sql(
        f"""SELECT to_json(named_struct(
                   'before', CASE WHEN {IS_DELETE} THEN {row} WHEN {IS_UPDATE_AFTER} THEN _before END,
                   'after', CASE WHEN {kind_in("_row_kind", ADDS)} THEN {row} END,
                   'op', CASE _row_kind {" ".join(f"WHEN '{k}' THEN '{v}'" for k, v in DEBEZIUM_OPS.items())} END
               )) AS json, _commit, _offset
            FROM (SELECT *, lag(CASE WHEN {IS_UPDATE_BEFORE} THEN {row} END)
                            OVER (PARTITION BY _commit, {keys} ORDER BY _offset) AS _before FROM {{log}})
            WHERE NOT {IS_UPDATE_BEFORE} ORDER BY _commit, _offset""",
        log=changelog,
    )


def apply_upserts(spark: SparkSession, spec: TableDefinition, upserts: DataFrame) -> DataFrame:
    """What an upsert sink holds after consuming `upserts` from empty: the last value per key."""
    keys = columns(spec.primary_key)
    unpacked = ", ".join(f"_last.value.{quote(c)} AS {quote(c)}" for c in spec.column_names)
    return spark.sql(
        f"SELECT {unpacked} FROM (SELECT {keys}, max_by(named_struct('value', value), "
        f"named_struct('c', _commit, 'o', _offset)) AS _last FROM {{upserts}} GROUP BY {keys}) "
        "WHERE _last.value IS NOT NULL",
        upserts=upserts,
    )


def snapshot_diff(spark: SparkSession, spec: TableDefinition, old: DataFrame, new: DataFrame) -> DataFrame:
    """The changelog that turns snapshot `old` into `new`: +I, -D, and -U/+U for changed rows only."""
    on = key_join(spec.primary_key, "o", "n", null_safe=True)
    old_row, new_row = _row_struct(spec, "o."), _row_struct(spec, "n.")
    present = f"n.{quote(spec.primary_key[0])} IS NOT NULL"
    existed = f"o.{quote(spec.primary_key[0])} IS NOT NULL"
    changed = " OR ".join(f"NOT (o.{quote(c)} <=> n.{quote(c)})" for c in spec.value_columns) or "false"
    entries = f"""CASE
        WHEN NOT {existed} THEN array(named_struct('k', '+I', 'v', {new_row}))
        WHEN NOT {present} THEN array(named_struct('k', '-D', 'v', {old_row}))
        WHEN {changed} THEN array(named_struct('k', '-U', 'v', {old_row}), named_struct('k', '+U', 'v', {new_row}))
        ELSE CAST(array() AS array<struct<k:string, v:struct<{", ".join(f"{quote(c.name)}:{c.type}" for c in spec.columns)}>>>)
    END"""
    unpacked = ", ".join(f"e.v.{quote(c)} AS {quote(c)}" for c in spec.column_names)
    return spark.sql(
        f"SELECT e.k AS _row_kind, {unpacked} FROM (SELECT {entries} AS entries FROM {{old}} o FULL OUTER JOIN "
        f"{{new}} n ON {on}) LATERAL VIEW inline(entries) e",
        old=old,
        new=new,
    )


ENCODINGS = {
    "append": append_only,
    "retract": retract,
    "upsert": upsert,
    "flink-json": flink_json,
    "debezium": debezium,
}
