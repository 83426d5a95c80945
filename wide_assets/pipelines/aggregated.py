"""The wide rows of a source keyed apart from the table, computed from its declared `aggregates`.

Such a source's rows are not the table's (the questions of a product): per fed column it declares a
Spark SQL aggregate over the latest record of each of its rows holding a table key, where `_live` says
whether that record is an insert or update, e.g. `count_if(_live AND status = 'open')`. Without a
`transform`, a run recomputes each table key its pending records name, from every record of the source
up to the last pending one: a row that moved to another key counts for the new key only, and a key
left with no row aggregates one row that is not live. A row's move reaches its old key through the
`-U` a changelog carries there. The op-time column it feeds takes the newest op time of any record
that named the key. This is the value the table's convergence check expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from wide_assets.sql import ADDS, columns, key_join, kind_in, quote

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
    key, rows = source.wide_key, source.primary_key
    keys = columns(key)
    order = (
        "_offset DESC" if source.op_time is None else f"{quote(source.op_time)} DESC NULLS LAST, _offset DESC"
    )
    others = [c for c in source.column_names if c not in key]
    live = f"coalesce({kind_in('l._row_kind', ADDS)}, FALSE) AS _live"
    considered = ", ".join(
        [*(f"t.{quote(c)}" for c in key), *(f"l.{quote(c)}" for c in others), "t._offset", live]
    )
    values = ", ".join(
        f"CAST({expression} AS {wide_types[wide]}) AS {quote(wide)}"
        for wide, expression in source.aggregates.items()
    )
    selected = [f"g.{quote(c)} AS {quote(mapping[c])}" for c in key] + [
        f"g.{quote(w)}" for w in source.aggregates
    ]
    newest, joined = "", ""
    op_target = source.feeds.get(source.op_time or "")
    if source.op_time is not None and op_target is not None:
        # The newest op time of any record that named the key, the row moved away or not.
        newest = (
            f", times AS (SELECT {keys}, max({quote(source.op_time)}) AS _newest FROM named GROUP BY {keys})"
        )
        joined = f" JOIN times n ON {key_join(key, 'g', 'n')}"
        selected.append(f"CAST(n._newest AS {wide_types[op_target]}) AS {quote(op_target)}")
    # Only the source rows that ever named a touched key can hold one now: the latest record is
    # ranked among theirs, not among every row of the source.
    query = (
        f"WITH touched AS (SELECT {keys}, max(_offset) AS _offset FROM {{pending}} GROUP BY {keys}), "
        f"named AS (SELECT a.* FROM {{applied}} a LEFT SEMI JOIN touched t ON {key_join(key, 'a', 't')}), "
        f"relevant AS (SELECT a.* FROM {{applied}} a LEFT SEMI JOIN named r ON {key_join(rows, 'a', 'r')}), "
        f"latest AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY {columns(rows)} "
        f"ORDER BY {order}) AS _rank FROM relevant) WHERE _rank = 1), "
        f"considered AS (SELECT {considered} FROM touched t LEFT JOIN latest l ON {key_join(key, 't', 'l')}), "
        f"grouped AS (SELECT {keys}, {values}, max(_offset) AS _offset FROM considered GROUP BY {keys})"
        f"{newest} SELECT {', '.join(selected)}, g._offset FROM grouped g{joined}"
    )
    return spark.sql(query, pending=pending, applied=applied)
