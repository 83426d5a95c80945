"""The wide rows of a source keyed apart from the table, computed from its declared `aggregates`.

Such a source's rows are not the table's (the questions of a product): per fed column it declares a
Spark SQL aggregate over the latest record of each of its rows holding a table key, where `_live` says
whether that record is an insert or update, e.g. `count_if(_live AND status = 'open')`. Without a
`transform`, a run recomputes each table key its pending records name, from every record of the source
up to the last pending one: a row that moved to another key counts for the new key only, and a key
left with no row aggregates one row that is not live. The op-time column it feeds takes the newest op
time of any record that held the key. This is the value the table's convergence check expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from wide_assets.sql import columns, key_join, quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from wide_assets.pipelines.specs import SourceSpec
    from wide_assets.session import SparkSession

__all__ = ["aggregated_changes"]


def aggregated_changes(
    spark: SparkSession,
    source: SourceSpec,
    mapping: Mapping[str, str],
    wide_types: Mapping[str, str],
    pending: DataFrame,
    applied: DataFrame,
) -> DataFrame:
    """One upsert per table key in `pending`: the declared aggregates over `applied`, keyed and named
    by `mapping` (source column -> wide column), typed by `wide_types`, at the key's last pending
    `_offset`."""
    key = source.wide_key
    keys = columns(key)
    order = (
        "_offset DESC" if source.op_time is None else f"{quote(source.op_time)} DESC NULLS LAST, _offset DESC"
    )
    others = [c for c in source.column_names if c not in key]
    live = "coalesce(l._row_kind IN ('+I', '+U'), FALSE) AS _live"
    considered = ", ".join(
        [*(f"t.{quote(c)}" for c in key), *(f"l.{quote(c)}" for c in others), "t._offset", live]
    )
    renamed = ", ".join(f"{quote(c)} AS {quote(mapping[c])}" for c in key)
    values = ", ".join(
        f"CAST({expression} AS {wide_types[wide]}) AS {quote(wide)}"
        for wide, expression in source.aggregates.items()
    )
    query = (
        f"WITH touched AS (SELECT {keys}, max(_offset) AS _offset FROM {{pending}} GROUP BY {keys}), "
        f"latest AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY {columns(source.primary_key)} "
        f"ORDER BY {order}) AS _rank FROM {{applied}}) WHERE _rank = 1), "
        f"considered AS (SELECT {considered} FROM touched t LEFT JOIN latest l ON {key_join(key, 't', 'l')}) "
        f"SELECT {renamed}, {values}, max(_offset) AS _offset FROM considered GROUP BY {keys}"
    )
    grouped = spark.sql(query, pending=pending, applied=applied)
    op_target = source.feeds.get(source.op_time or "")
    if source.op_time is None or op_target is None:
        return grouped
    wide_key = [mapping[c] for c in key]
    times = spark.sql(
        f"SELECT {renamed}, CAST(max({quote(source.op_time)}) AS {wide_types[op_target]}) AS {quote(op_target)} "
        f"FROM {{applied}} a LEFT SEMI JOIN {{pending}} p ON {key_join(key, 'a', 'p')} GROUP BY {keys}",
        applied=applied,
        pending=pending,
    )
    return spark.sql(
        f"SELECT g.*, t.{quote(op_target)} FROM {{g}} g JOIN {{t}} t ON {key_join(wide_key, 'g', 't')}",
        g=grouped,
        t=times,
    )
