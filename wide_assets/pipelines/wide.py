"""Sources' CDC tables -> the wide table: each source's new records as one partial-update commit.

A source's progress is the `_offset` up to which it was applied, stored in the wide table's own commit
log as the commit's transaction id (app_id = source name, version = last applied `_offset`). Reading
it back from there, rather than from a separate cursor, makes a write and its progress one atomic
commit: a re-run after a crash or without new data applies nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wide_assets.errors import TableStateError
from wide_assets.pipelines.markdown import markdown_table
from wide_assets.pipelines.specs import WideTableSpec
from wide_assets.pipelines.sql import ident

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from wide_assets.table import WideTable, WriteResult

__all__ = [
    "KeyReport",
    "SourceApplied",
    "apply_sources",
    "changelog_preview",
    "consumed_offsets",
    "key_report",
    "open_wide_table",
]

PREVIEW_ROWS = 20
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class SourceApplied:
    """What one source contributed to a run: the `_offset` range applied and the commit it made, if any."""

    source: str
    from_offset: int
    to_offset: int
    result: WriteResult | None


def open_wide_table(spark: SparkSession, spec: WideTableSpec, path: str) -> WideTable:
    """Create the wide table from its spec, or open it when the same definition already exists."""
    from wide_assets.table import WideTable

    return WideTable.create(
        spark, path, columns=list(spec.columns), primary_key=spec.primary_key, options=dict(spec.options)
    )


def consumed_offsets(table: WideTable) -> dict[str, int]:
    """Per source (commit app_id): the largest `_offset` already applied."""
    consumed: dict[str, int] = {}
    for commit in table.commits():
        if commit.txn is not None:
            consumed[commit.txn.app_id] = max(consumed.get(commit.txn.app_id, 0), commit.txn.version)
    return consumed


def apply_sources(
    spark: SparkSession, spec: WideTableSpec, table: WideTable, source_paths: Mapping[str, str]
) -> list[SourceApplied]:
    """Write each source's records past its consumed `_offset`, one commit per source, in spec order."""
    from deltalake import DeltaTable

    consumed = consumed_offsets(table)
    applied = []
    for source in spec.sources:
        path = source_paths[source.name]
        if not DeltaTable.is_deltatable(path):
            raise TableStateError(f"Source {source.name} has no CDC table at {path}; materialize it first.")
        rows = spark.read.format("delta").load(path)
        last = consumed.get(source.name, 0)
        upto = (
            spark.sql(f"SELECT max(_offset) AS m FROM {{rows}} WHERE _offset > {last}", rows=rows)
            .collect()[0]
            .m
        )
        if upto is None:
            applied.append(SourceApplied(source.name, last, last, None))
            continue
        mapping = spec.column_map(source)
        selected = ", ".join(f"{ident(s)} AS {ident(w)}" for s, w in mapping.items())
        # Bounded by `upto` so the commit holds exactly the records its transaction id claims, even
        # if the source appends while this runs.
        changes = spark.sql(
            f"SELECT {selected}, _row_kind, _offset FROM {{rows}} WHERE _offset > {last} AND _offset <= {upto}",
            rows=rows,
        )
        result = table.write(changes, target_columns=list(mapping.values()), txn=(source.name, int(upto)))
        # Skipped: a concurrent run committed this range first, so this run made no commit.
        applied.append(SourceApplied(source.name, last, int(upto), None if result.skipped else result))
    return applied


def changelog_preview(spark: SparkSession, table: WideTable, start_commit: int) -> str:
    """Markdown: the number of changelog rows per kind from `start_commit` on, and the first of them."""
    entries = table.changelog(start_commit=start_commit)
    kinds = spark.sql(
        "SELECT _row_kind, count(*) AS n FROM {e} GROUP BY _row_kind ORDER BY _row_kind", e=entries
    ).collect()
    if not kinds:
        return "No changelog rows: nothing new was applied in this run."
    columns = ["_commit", "_row_kind", *table.spec.column_names]
    rows = entries.orderBy("_commit", "_offset").limit(PREVIEW_ROWS).collect()
    total = sum(int(k.n) for k in kinds)
    parts = [
        "Changelog rows by kind: " + ", ".join(f"`{k._row_kind}` {k.n}" for k in kinds),
        markdown_table(columns, ([row[c] for c in columns] for row in rows)),
    ]
    if total > len(rows):
        parts.append(f"{total - len(rows)} more row(s) not shown.")
    return "\n\n".join(parts)


@dataclass(frozen=True)
class KeyReport:
    """Primary-key health of a table's rows."""

    rows: int
    null_keys: int
    duplicate_keys: int
    duplicate_rows: int
    examples: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return self.null_keys == 0 and self.duplicate_keys == 0


def key_report(spark: SparkSession, rows: DataFrame, primary_key: Sequence[str]) -> KeyReport:
    """Count rows with a NULL key part and keys held by more than one row, with a few examples."""
    keys = ", ".join(ident(k) for k in primary_key)
    null_key = " OR ".join(f"{ident(k)} IS NULL" for k in primary_key)
    per_key = spark.sql(
        f"SELECT {keys}, {null_key} AS null_key, count(*) AS n FROM {{rows}} GROUP BY {keys}", rows=rows
    )
    totals = spark.sql(
        "SELECT coalesce(sum(n), 0) AS rows, coalesce(sum(CASE WHEN null_key THEN n END), 0) AS null_keys, "
        "count_if(n > 1 AND NOT null_key) AS duplicate_keys, "
        "coalesce(sum(CASE WHEN n > 1 AND NOT null_key THEN n END), 0) AS duplicate_rows FROM {k}",
        k=per_key,
    ).collect()[0]
    bad = spark.sql(
        f"SELECT {keys}, null_key, n FROM {{k}} WHERE null_key OR n > 1 ORDER BY n DESC, {keys} LIMIT {MAX_EXAMPLES}",
        k=per_key,
    ).collect()
    examples = tuple(
        ("NULL key part: " if r.null_key else f"{r.n} rows: ")
        + ", ".join(f"{k}={r[k]!r}" for k in primary_key)
        for r in bad
    )
    return KeyReport(
        rows=int(totals.rows),
        null_keys=int(totals.null_keys),
        duplicate_keys=int(totals.duplicate_keys),
        duplicate_rows=int(totals.duplicate_rows),
        examples=examples,
    )
