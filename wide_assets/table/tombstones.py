"""Durable tombstones (`wide-assets.tombstone-retention`, ours): each key's latest delete time, kept in
the commit log beside the commit that deleted it, and the records too old to bring the key back.

A tombstone is a row of the commit log (origin `tombstone`: the key and the delete's sequence fields)
that the deleting commit logs in the same atomic log commit as its changelog: it exists exactly when
that commit does, once, whichever writer made it, and compaction never touches the log. A commit
drops, before merging, every insert or update whose time (the greatest of its sequence fields) is not
newer than the latest tombstone of its key (a NULL time never is): of an earlier commit written within the retention before
this one, or of this commit's own deletes. docs/semantics.md 7.2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from wide_assets.batch import PreparedBatch
from wide_assets.merge.plan import kind_filter
from wide_assets.options.common import MergeOptions
from wide_assets.options.tombstones import tombstone_time_columns
from wide_assets.queries import select
from wide_assets.sql import RowKind, kind_in, quote
from wide_assets.table.log import CommitInfo, Origin
from wide_assets.table.log_frames import log_frame
from wide_assets.table.storage import Storage
from wide_assets.table_definition import TableDefinition

if TYPE_CHECKING:
    from wide_assets.session import SparkSession


def delete_time_columns(merge: MergeOptions) -> tuple[str, ...]:
    """The sequence fields whose value is a delete's time: those of the group whose `-D` removes the
    row (`partial-update.remove-record-on-sequence-group`), else every time column."""
    return merge.remove_record_on_sequence_group or tombstone_time_columns(merge)


def _time(columns: tuple[str, ...], prefix: str = "") -> str:
    """The greatest non-NULL value of `columns` (NULL when all are)."""
    values = [f"{prefix}{quote(c)}" for c in columns]
    return values[0] if len(values) == 1 else f"greatest({', '.join(values)})"


def tombstone_rows(spark: SparkSession, batch: PreparedBatch) -> DataFrame:
    """The tombstones `batch` makes: its `-D` records that reach the merge with a time, as log entries
    holding their key and delete-time columns."""
    spec = batch.context.definition
    kept = {*spec.primary_key, *delete_time_columns(spec.merge)}
    columns = ", ".join(
        quote(c) if c in kept else f"CAST(NULL AS {spec.column(c).type}) AS {quote(c)}"
        for c in spec.column_names
    )
    deletes = kind_in("_row_kind", [RowKind.DELETE])
    return select(
        spark,
        f"SELECT _row_kind, {columns}, _offset FROM {{frame}} "
        f"WHERE {deletes} AND {kind_filter(batch.context)} AND {_time(delete_time_columns(spec.merge))} IS NOT NULL",
        frame=batch.frame,
    )


def first_live_commit(commits: Sequence[CommitInfo], written_at: str, retention_s: float) -> int:
    """The first commit whose tombstones a commit written at `written_at` still honours."""
    cutoff = datetime.fromisoformat(written_at) - timedelta(seconds=retention_s)
    live = [c.commit for c in commits if datetime.fromisoformat(c.written_at) >= cutoff]
    return live[0] if live else commits[-1].commit + 1 if commits else 1


def without_tombstoned(
    storage: Storage, batch: PreparedBatch, info: CommitInfo, commits: Sequence[CommitInfo]
) -> PreparedBatch:
    """`batch` without its inserts and updates not newer than their key's latest live tombstone."""
    spec: TableDefinition = storage.definition
    retention = spec.merge.tombstone_retention_s
    assert retention is not None, "only tables with tombstones drop records"
    spark = storage.spark
    keys = ", ".join(quote(k) for k in spec.primary_key)
    first = first_live_commit(commits, info.written_at, retention)
    deleted = _time(delete_time_columns(spec.merge))
    latest = select(
        spark,
        f"SELECT {keys}, max(_deleted) AS _tombstone FROM ("
        f"SELECT {keys}, {deleted} AS _deleted FROM {{log}} "
        f"WHERE _origin = '{Origin.TOMBSTONE}' AND _commit >= {first} AND _commit < {info.commit} "
        f"UNION ALL SELECT {keys}, {deleted} AS _deleted FROM {{deletes}}) GROUP BY {keys}",
        log=log_frame(storage, first, info.commit - 1, Origin.TOMBSTONE),
        deletes=tombstone_rows(spark, batch),
    )
    join = " AND ".join(f"b.{quote(k)} = t.{quote(k)}" for k in spec.primary_key)
    time = _time(tombstone_time_columns(spec.merge), "b.")
    frame = select(
        spark,
        f"SELECT b.* FROM {{frame}} b LEFT JOIN {{latest}} t ON {join} "
        # A NULL time is the smallest (P6): never newer than a tombstone.
        f"WHERE t._tombstone IS NULL OR {kind_in('b._row_kind', [RowKind.DELETE])} OR {time} > t._tombstone",
        frame=batch.frame,
        latest=latest,
    )
    return replace(batch, frame=frame)
