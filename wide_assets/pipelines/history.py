"""A declared wide table's history table as a Dagster asset: the events its sources' applied records
make, the asset keeping the history in step with the table's commits, and its blocking checks.

Every source record the table applied is one event at its op time (`wide_assets.table.history`): it
sets the tracked columns its source feeds (NULL for a retraction, except a fed op-time column, which
keeps the retraction's time, as a sequence group does: P10), a `-D` of a `remove-row` source removes
the row, and a retraction of an `ignore` source is no event; a record of a source whose columns are
computed from its rows (a transform, aggregates) sets no tracked column but writes the row. A record
whose op time is NULL touches nothing (P6) and is no event either. docs/semantics.md section 8 states the rules with an example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import dagster as dg

from wide_assets.pipelines.checks import applied_records, check_result, keyed_diff, not_judged
from wide_assets.pipelines.column_schema import table_schema
from wide_assets.pipelines.convergence import applied_in_commits
from wide_assets.pipelines.locate import (
    LakeLocator,
    SparkProvider,
    asset_key,
    history_key,
    lake_name,
    table_path,
)
from wide_assets.pipelines.specs import HistorySpec, SourceSpec, WideTableSpec
from wide_assets.schema import Column
from wide_assets.sql import quote, string_literal
from wide_assets.table.history import END, HISTORY_SUFFIX, START, HistoryTable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from wide_assets.table import WideTable

__all__ = [
    "NO_OVERLAP_CHECK",
    "OPEN_EQUALS_TABLE_CHECK",
    "history_asset",
    "history_checks",
    "history_problem",
    "history_table",
    "overlaps",
    "source_events",
]

NO_OVERLAP_CHECK = "intervals_never_overlap"
OPEN_EQUALS_TABLE_CHECK = "open_interval_equals_table_row"
LIVE = "_row_kind IN ('+I', '+U')"
# Engines whose rows are not the latest fed values by op time (the first record, a version, a fold).
UNFOLDED_ENGINES = ("first-row", "first_row", "versioned", "aggregation")
LATEST_VALUE_FUNCTIONS = (None, "last_value")
MAX_EXAMPLES = 5


def _history(spec: WideTableSpec) -> HistorySpec:
    if spec.history is None:
        raise ValueError(f"table {spec.name} declares no history.")
    return spec.history


def history_problem(spec: WideTableSpec) -> str | None:
    """Why the table's merge does not keep the tracked columns' latest values by op time (so its
    history cannot be folded from the records), or None."""
    from wide_assets.table_definition import TableDefinition

    merge = TableDefinition.build(spec.columns, spec.primary_key, spec.options).merge
    if merge.engine in UNFOLDED_ENGINES:
        return f"its merge engine {merge.engine} does not keep each column's latest value"
    for column in _history(spec).tracked(spec.value_columns):
        function = merge.functions.get(column)
        if (None if function is None else function.name) not in LATEST_VALUE_FUNCTIONS:
            return f"tracked column {column} has the aggregate function {function and function.name}; leave it out"
    return None


def history_table(spark: SparkSession, spec: WideTableSpec, table_path_: str) -> HistoryTable:
    """The history table beside the wide table at `table_path_`."""
    types = dict(spec.columns)
    return HistoryTable(
        spark,
        table_path_.rstrip("/") + HISTORY_SUFFIX,
        key=[Column.parse(k, types[k]) for k in spec.primary_key],
        tracked=[Column.parse(c, types[c]) for c in _history(spec).tracked(spec.value_columns)],
        validity_type=spec.history_validity_type,
    )


def _events_of(spec: WideTableSpec, source: SourceSpec) -> str:
    """The SQL turning `source`'s applied records (`{r}`, with `_commit`) into history events."""
    op_time = quote(source.op_time or "")
    keys = ", ".join(
        f"{quote(s)} AS {quote(w)}" for s, w in zip(source.wide_key, spec.primary_key, strict=True)
    )
    fed = {wide: column for column, wide in source.feeds.items()}
    values = []
    for index, column in enumerate(_history(spec).tracked(spec.value_columns)):
        value = "NULL"
        if column in fed:
            value = (
                quote(fed[column])
                if fed[column] == source.op_time
                else f"CASE WHEN {LIVE} THEN {quote(fed[column])} END"
            )
        values.append(f"{value} AS _v{index}, {'true' if column in fed else 'false'} AS _sets{index}")
    # A source computed from its rows (a transform, aggregates) writes the row with every record.
    computed = source.transform is not None or bool(source.aggregates)
    live = "true" if computed else LIVE
    removes = "_row_kind = '-D'" if source.deletes == "remove-row" and not computed else "false"
    kept = f"{op_time} IS NOT NULL" + (f" AND {LIVE}" if source.deletes == "ignore" and not computed else "")
    return (
        f"SELECT {keys}, CAST({op_time} AS {spec.history_validity_type}) AS _time, "
        f"{string_literal(source.name)} AS _source, _offset, _commit, {live} AS _live, {removes} AS _removes, "
        f"{', '.join(values)} FROM {{r}} WHERE {kept}"
    )


def source_events(
    spark: SparkSession, spec: WideTableSpec, table: WideTable, lake: LakeLocator
) -> tuple[int, DataFrame]:
    """The last commit of `table` and the history events of every source record it applied up to it."""
    # The commit first: records read after it cover at least its commits; later ones are cut off.
    through = table.last_commit
    events = None
    for source in spec.sources:
        _, records = applied_records(spark, spec, source, table, lake)
        frame = spark.sql(_events_of(spec, source), r=applied_in_commits(spark, table, source.name, records))
        events = frame if events is None else events.unionByName(frame)
    assert events is not None  # a WideTableSpec has a source
    return through, events.where(f"_commit <= {through}")


def history_asset(spec: WideTableSpec, pool: str | None = None) -> dg.AssetsDefinition:
    """The asset keeping `spec`'s history table in step with the table's commits, each once."""
    problem = history_problem(spec)
    if problem:
        raise ValueError(f"table {spec.name}: no history can be kept: {problem}.")
    key = history_key(spec)
    tracked = _history(spec).tracked(spec.value_columns)
    validity = spec.history_validity_type
    kept = tuple((c, t) for c, t in spec.columns if c in spec.primary_key or c in tracked)
    columns = (*kept, (START, validity), (END, validity))
    schema = table_schema(columns, (*spec.primary_key, START))

    @dg.asset(
        key=key,
        group_name=spec.group,
        description=f"History of {spec.name} (SCD type 2): one row per key per interval in which "
        f"{', '.join(tracked)} held one value, from {START} (an op time) to {END} (NULL: open). Not "
        f"materialized in a run where a blocking check of {spec.name} fails: that check's result and an "
        "observation of this asset (`not_materialized`) say so; it catches up in the next run that passes.",
        deps=[asset_key(spec, spec.name)],
        kinds={"spark", "delta"},
        pool=pool or lake_name(key),
        metadata={"dagster/column_schema": schema, "tracked_columns": list(tracked)},
    )
    def _history_asset(
        spark: dg.ResourceParam[SparkProvider], lake: dg.ResourceParam[LakeLocator]
    ) -> dg.MaterializeResult[Any]:
        """The table's commits not in the history yet, applied to it once, however often this runs."""
        from wide_assets.table import WideTable

        session = spark.spark
        table = WideTable.open(session, table_path(lake, spec))
        history = history_table(session, spec, table.path)
        result = history.maintain(lambda: source_events(session, spec, table, lake))
        return dg.MaterializeResult[Any](
            metadata={
                "dagster/row_count": history.rows().count(),
                "delta_version": result.version,
                "applied_through_commit": result.through,
                "commits_consumed": result.commits,
                "interval_rows_changed": result.changed_rows,
                "conflicts": result.conflicts,
                "path": dg.MetadataValue.path(history.path),
                "dagster/column_schema": schema,
            }
        )

    return _history_asset


def overlaps(spark: SparkSession, rows: DataFrame, key: Sequence[str]) -> tuple[int, list[str]]:
    """History `rows` (keyed by `key`) that are empty intervals or begin before the previous interval of
    their key ended (an open interval ends never), with a few examples."""
    keys = ", ".join(quote(k) for k in key)
    start, end = quote(START), quote(END)
    bad = spark.sql(
        f"SELECT {keys}, {start}, {end}, _previous_end, _previous_open FROM ("
        f"SELECT *, lag({end}) OVER (PARTITION BY {keys} ORDER BY {start}) AS _previous_end, "
        f"lag({start}) OVER (PARTITION BY {keys} ORDER BY {start}) IS NOT NULL "
        f"AND lag({end}) OVER (PARTITION BY {keys} ORDER BY {start}) IS NULL AS _previous_open "
        f"FROM {{h}}) WHERE _previous_open OR _previous_end > {start} OR {end} <= {start}",
        h=rows,
    )
    examples = [
        f"({', '.join(f'{k}={row[k]!r}' for k in key)}) [{row[START]}, {row[END]}) after an interval "
        + ("still open" if row._previous_open else f"ending {row._previous_end}")
        for row in bad.limit(MAX_EXAMPLES).collect()
    ]
    return bad.count(), examples


def history_checks(spec: WideTableSpec) -> list[dg.AssetChecksDefinition]:
    """The blocking checks of the history: no two intervals of a key overlap, and the open intervals
    are the table's rows (keys and tracked columns)."""
    key = history_key(spec)

    def opened(spark: SparkSession, lake: LakeLocator) -> tuple[WideTable, HistoryTable]:
        from wide_assets.table import WideTable

        table = WideTable.open(spark, table_path(lake, spec))
        return table, history_table(spark, spec, table.path)

    @dg.asset_check(
        asset=key,
        name=NO_OVERLAP_CHECK,
        blocking=True,
        description="Per key, every interval ends before the next one starts; only the last is open.",
    )
    def _no_overlap(
        spark: dg.ResourceParam[SparkProvider], lake: dg.ResourceParam[LakeLocator]
    ) -> dg.AssetCheckResult:
        """Overlapping intervals would give a key two values at one time."""
        _, history = opened(spark.spark, lake)
        count, examples = overlaps(spark.spark, history.rows(), history.key)
        return check_result(count == 0, examples, overlapping=count)

    @dg.asset_check(
        asset=key,
        name=OPEN_EQUALS_TABLE_CHECK,
        blocking=True,
        description=f"Every row of {spec.name} has one open interval, holding its tracked columns, and "
        "every open interval is a row of the table.",
    )
    def _open_equals_table(
        spark: dg.ResourceParam[SparkProvider], lake: dg.ResourceParam[LakeLocator]
    ) -> dg.AssetCheckResult:
        """The history's present is the table."""
        session = spark.spark
        table, history = opened(session, lake)
        through = history.applied_through()
        if through != table.last_commit:
            return not_judged(
                f"the history holds commit {through} of {spec.name}, which is at commit {table.last_commit}.",
                history_commit=through,
            )
        current = history.rows().where(f"{quote(END)} IS NULL")
        diff = keyed_diff(session, table.read(), current, spec.primary_key, history.tracked)
        return diff.result(history_commit=through)

    return [_no_overlap, _open_equals_table]
