"""The convergence check generated from a wide table's declaration: the rows its sources say it must
hold, computed from their applied CDC records without the merge, compared with the table.

Per source, by op time (arrival breaks ties, as a sequence field's `>=` does; without an op time,
arrival alone): a source keyed by the table gives each key its latest record's fed columns, NULL
where that record is a retraction (`-U`/`-D`), except the op-time column, which keeps the
retraction's time, as a sequence group's does (P10). Its declared `deletes` decide the rest:
`remove-row` drops a key whose latest record is a `-D`, `ignore` leaves deletes out altogether. A source
keyed apart from the table (`key_columns`, e.g. reviews of a product) gives each of its table keys
the declared `aggregates` over the latest record of each of its rows, and its fed op-time column the
newest op time of any of its records. First-row tables keep each key's first record by arrival.
The expected table is the left join of those per-source rows onto every key any source mentioned:
the N-way join the wide table replaces.

Nothing here runs the merge or reads its options beyond the engine's name, so a table whose options
do not mean what its sources' declarations say fails the check, naming the keys and columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import dagster as dg

from wide_assets.pipelines.checks import applied_records, keyed_diff, table_check
from wide_assets.pipelines.declarations import SourceSpec, WideTableSpec
from wide_assets.pipelines.locate import LakeLocator
from wide_assets.sql import quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from wide_assets.table import WideTable

__all__ = ["CONVERGENCE_CHECK", "convergence_check", "convergence_problem", "expected_rows"]

CONVERGENCE_CHECK = "converges_to_source_join"
LIVE = "_row_kind IN ('+I', '+U')"
FIRST_ROW_ENGINES = ("first-row", "first_row")
# Functions under which a column holds its latest record's value, as the oracle assumes.
LATEST_VALUE_FUNCTIONS = ("last_value",)


def _engine(spec: WideTableSpec) -> tuple[str, Mapping[str, str]]:
    """The merge engine's name and each column's aggregate function, as the table's options parse
    (which also validates them, so a bad option fails here, when definitions load)."""
    from wide_assets.spec import TableSpec

    merge = TableSpec.build(spec.columns, spec.primary_key, spec.options).merge
    return merge.engine, {column: f.name for column, f in merge.functions.items()}


def convergence_problem(spec: WideTableSpec) -> str | None:
    """Why the declaration cannot say what `spec`'s rows must be, or None when it can."""
    engine, functions = _engine(spec)
    if engine == "aggregation":
        return "its merge engine folds every record with aggregate functions; the declaration names no oracle for that"
    if engine in FIRST_ROW_ENGINES and len(spec.sources) != 1:
        return "a first-row table's first record across several sources depends on arrival between sources"
    for column in spec.value_columns:
        feeders = spec.fed_by(column)
        if len(feeders) > 1:
            names = [s.name for s in feeders]
            return f"column {column} is fed by {names}; which of them wins depends on arrival between sources"
        function = functions.get(column)
        if (
            feeders
            and function not in (None, *LATEST_VALUE_FUNCTIONS)
            and column not in feeders[0].aggregates
        ):
            return (
                f"column {column} has the aggregate function {function}, and source {feeders[0].name} declares "
                "no aggregate for it (aggregates are declared for a source keyed apart from the table)"
            )
    return None


def _order(source: SourceSpec, first: bool) -> str:
    if first:
        return "_offset ASC"
    if source.op_time is None:
        return "_offset DESC"
    return f"{quote(source.op_time)} DESC NULLS LAST, _offset DESC"


def _keyed_rows(
    spark: SparkSession, spec: WideTableSpec, source: SourceSpec, records: DataFrame, first: bool
) -> DataFrame:
    """One row per table key: the fed columns of its latest (or first) record, and whether it is removed."""
    wide_key = ", ".join(quote(c) for c in source.wide_key)
    keys = ", ".join(
        f"{quote(s)} AS {quote(w)}" for s, w in zip(source.wide_key, spec.primary_key, strict=True)
    )
    keeps_retractions = not first and source.deletes != "ignore"
    values = []
    for column, wide in source.feeds.items():
        value = quote(column)
        if keeps_retractions and column != source.op_time:
            value = f"CASE WHEN {LIVE} THEN {value} END"
        values.append(f"{value} AS {quote(wide)}")
    removed = "_row_kind = '-D'" if keeps_retractions and source.deletes == "remove-row" else "FALSE"
    where = "" if keeps_retractions else f"WHERE {LIVE}"
    return spark.sql(
        f"SELECT {keys}, {', '.join(values)}, {removed} AS _removed FROM ("
        f"SELECT *, row_number() OVER (PARTITION BY {wide_key} ORDER BY {_order(source, first)}) AS _rank "
        f"FROM {{records}} {where}) WHERE _rank = 1",
        records=records,
    )


def _aggregated_rows(
    spark: SparkSession, spec: WideTableSpec, source: SourceSpec, records: DataFrame
) -> DataFrame:
    """One row per table key the source mentions: its declared aggregates over the latest record of each
    source row now holding that key (a key all of whose rows moved away aggregates one row, not live)."""
    rows = ", ".join(quote(c) for c in source.primary_key)
    wide_key = [quote(c) for c in source.wide_key]
    latest = spark.sql(
        f"SELECT *, {LIVE} AS _live FROM (SELECT *, row_number() OVER (PARTITION BY {rows} "
        f"ORDER BY {_order(source, first=False)}) AS _rank FROM {{records}}) WHERE _rank = 1",
        records=records,
    )
    emptied = ", ".join(
        quote(name) if name in source.wide_key else f"CAST(NULL AS {type_}) AS {quote(name)}"
        for name, type_ in source.columns
    )
    same_key = " AND ".join(f"r.{c} = l.{c}" for c in wide_key)
    considered = spark.sql(
        f"SELECT {', '.join(quote(n) for n in source.column_names)}, _row_kind, _offset, _live FROM {{latest}} "
        f"UNION ALL SELECT {emptied}, CAST(NULL AS STRING) AS _row_kind, CAST(NULL AS BIGINT) AS _offset, "
        f"FALSE AS _live FROM (SELECT DISTINCT r.* FROM (SELECT {', '.join(wide_key)} FROM {{records}}) r "
        f"LEFT ANTI JOIN {{latest}} l ON {same_key})",
        latest=latest,
        records=records,
    )
    wide_types = dict(spec.columns)
    keys = ", ".join(f"{s} AS {quote(w)}" for s, w in zip(wide_key, spec.primary_key, strict=True))
    aggregates = ", ".join(
        f"CAST({expression} AS {wide_types[wide]}) AS {quote(wide)}"
        for wide, expression in source.aggregates.items()
    )
    grouped = spark.sql(
        f"SELECT {keys}, {aggregates}, FALSE AS _removed FROM {{considered}} GROUP BY {', '.join(wide_key)}",
        considered=considered,
    )
    op_target = source.feeds.get(source.op_time or "")
    if op_target is None:
        return grouped
    times = spark.sql(
        f"SELECT {keys}, max({quote(source.op_time or '')}) AS {quote(op_target)} FROM {{records}} "
        f"GROUP BY {', '.join(wide_key)}",
        records=records,
    )
    on = " AND ".join(f"g.{quote(k)} = t.{quote(k)}" for k in spec.primary_key)
    return spark.sql(
        f"SELECT g.*, t.{quote(op_target)} FROM {{g}} g JOIN {{t}} t ON {on}", g=grouped, t=times
    )


def expected_rows(spark: SparkSession, spec: WideTableSpec, applied: Mapping[str, DataFrame]) -> DataFrame:
    """What `spec`'s table must hold after applying `applied` (source name -> its applied CDC records)."""
    problem = convergence_problem(spec)
    if problem:
        raise ValueError(f"table {spec.name}: no convergence oracle: {problem}.")
    engine, _ = _engine(spec)
    first = engine in FIRST_ROW_ENGINES
    # DataFrames by the name the query refers to them with (`{s0}`, `{r0}`, ...).
    frames: dict[str, Any] = {}
    key_selects = []
    for index, source in enumerate(spec.sources):
        records = applied[source.name]
        frames[f"s{index}"] = (
            _aggregated_rows(spark, spec, source, records)
            if source.aggregates
            else _keyed_rows(spark, spec, source, records, first)
        )
        frames[f"r{index}"] = records
        mentioned = f"WHERE {LIVE}" if first or (source.deletes == "ignore" and not source.aggregates) else ""
        key_selects.append(
            "SELECT "
            + ", ".join(
                f"{quote(s)} AS {quote(w)}" for s, w in zip(source.wide_key, spec.primary_key, strict=True)
            )
            + f" FROM {{r{index}}} {mentioned}"
        )
    fed = {
        wide: index for index, source in enumerate(spec.sources) for wide in spec.column_map(source).values()
    }
    types = dict(spec.columns)
    columns = [f"k.{quote(k)}" for k in spec.primary_key] + [
        f"CAST(s{fed[c]}.{quote(c)} AS {types[c]}) AS {quote(c)}"
        if c in fed
        else f"CAST(NULL AS {types[c]}) AS {quote(c)}"
        for c in spec.value_columns
    ]
    joins = " ".join(
        f"LEFT JOIN {{s{i}}} s{i} ON "
        + " AND ".join(f"k.{quote(k)} = s{i}.{quote(k)}" for k in spec.primary_key)
        for i in range(len(spec.sources))
    )
    kept = " AND ".join(f"NOT coalesce(s{i}._removed, FALSE)" for i in range(len(spec.sources)))
    return spark.sql(
        f"WITH k AS (SELECT DISTINCT * FROM ({' UNION ALL '.join(key_selects)})) "
        f"SELECT {', '.join(columns)} FROM k {joins} WHERE {kept}",
        **frames,
    )


def convergence_check(spec: WideTableSpec) -> dg.AssetChecksDefinition:
    """The blocking check that `spec`'s table equals `expected_rows` over what it has applied; refused
    when the table is defined (the declaration cannot say what its rows must be) with the reason."""
    problem = convergence_problem(spec)
    if problem:
        raise ValueError(
            f"table {spec.name}: no convergence check can be generated: {problem}. Turn it off "
            "(checks: convergence: false) and add a check of your own."
        )

    def evaluate(spark: SparkSession, table: WideTable, lake: LakeLocator) -> dg.AssetCheckResult:
        consumed: dict[str, int] = {}
        applied: dict[str, DataFrame] = {}
        for source in spec.sources:
            consumed[source.name], applied[source.name] = applied_records(spark, spec, source, table, lake)
        expected = expected_rows(spark, spec, applied)
        diff = keyed_diff(spark, table.read(), expected, spec.primary_key, spec.value_columns)
        return diff.result(consumed_offsets=consumed, delta_version=table.version)

    return table_check(
        spec,
        name=CONVERGENCE_CHECK,
        description=f"Every row of {spec.name} equals the join of its sources' latest states by op time, "
        "with their declared delete rules.",
        evaluate=evaluate,
    )
