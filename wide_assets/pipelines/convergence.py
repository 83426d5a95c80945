"""The convergence check generated from a wide table's declaration: the rows its sources say it must
hold, computed from their applied CDC records without the merge, compared with the table.

The records are taken in the order the table applied them (the commit each source's transaction id
says applied it, then arrival within it; docs/semantics.md 0.3 says how a run orders them). A
`remove-row` source's `-D` removes the whole row when its op time is not older than every record of
that source since the row was last removed (an older delete, arriving late, is not the source's
latest state); nothing remembers a removed row, so records after it, of any source and of any op
time, build the row again from nothing (P11). The expected rows are thus computed from each key's
records after its last removal, per source, by op time (arrival breaks ties, as a sequence field's
`>=` does; without an op time, arrival alone):
- a source keyed by the table gives each key its latest record's fed columns, NULL where that record
  is a retraction (`-U`/`-D`), except the op-time column, which keeps the retraction's time, as a
  sequence group's does (P10); a fed column with the aggregate function `sum`, `max` or `min` is that
  function over the source's records instead (a retraction subtracts from a `sum` unless the column
  has `ignore-retract`; `max` and `min` take the inserts and updates); a fed column with `listagg`,
  `string_agg`, `rbm32` or `rbm64` replays the function over the source's inserts and updates in the
  order the table applied them, an older one (by op time, in a sequence group) folded in reverse, as
  Paimon's `aggReversed` prepends it; `ignore` leaves its deletes out;
- a source keyed apart from the table (`key_columns`, e.g. reviews of a product) gives each of its
  table keys the declared `aggregates` over the latest record of each of its rows, and its fed
  op-time column the newest op time of any of its records.
First-row tables keep each key's first record by arrival (and have no deletes). The expected table is
the left join of those per-source rows onto every key any source mentioned after its last removal:
the N-way join the wide table replaces.

Nothing here runs the merge or reads its options beyond the engine's name and the columns' aggregate
functions, so a table whose options do not mean what its sources' declarations say fails the check,
naming the keys and columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import dagster as dg

from wide_assets.options.tombstones import TOMBSTONE_RETENTION
from wide_assets.pipelines.apply import retraction_effect
from wide_assets.pipelines.checks import applied_records, keyed_diff, not_judged, table_check
from wide_assets.pipelines.locate import LakeLocator, asset_key
from wide_assets.pipelines.run_order import CLEAR, RETRACT
from wide_assets.pipelines.specs import SourceSpec, WideTableSpec
from wide_assets.sql import columns, key_join, quote
from wide_assets.table.progress import Spans, newly_applied

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from wide_assets.options.common import MergeOptions
    from wide_assets.schema import FieldFunction
    from wide_assets.table import WideTable

__all__ = [
    "CONVERGENCE_CHECK",
    "applied_in_commits",
    "convergence_check",
    "convergence_problem",
    "convergence_refusal",
    "delete_rule_disagreements",
    "expected_rows",
]

CONVERGENCE_CHECK = "converges_to_source_join"
LIVE = "_row_kind IN ('+I', '+U')"
# Functions under which a column holds its latest record's value, as the oracle assumes.
LATEST_VALUE_FUNCTIONS = ("last_value",)
# Functions the oracle folds over a source's records itself: value -> its SQL over the records.
FOLDED_FUNCTIONS = ("sum", "max", "min")
# Functions the oracle replays over a source's records in the order the table applied them, with the
# function's own step: one record's value onto the accumulator, the value semantics being the
# function's (tested against Paimon by themselves), the order being the declaration's.
REPLAYED_FUNCTIONS = ("listagg", "string_agg", "rbm32", "rbm64")
# Of those, the ones whose result depends on that order.
ORDERED_FUNCTIONS = ("listagg", "string_agg")


def _first_record_wins(merge: MergeOptions) -> bool:
    from wide_assets.merge import engine_for

    return engine_for(merge).first_record_wins


def convergence_problem(spec: WideTableSpec) -> str | None:
    """Why the declaration cannot say what `spec`'s rows must be, or None when it can."""
    # Parsing validates the options, so a bad option fails here, when definitions load.
    merge = spec.definition().merge
    functions = merge.functions
    with_sets = [s.name for s in spec.sources if s.has_column_sets]
    if with_sets:
        return (
            f"sources {with_sets} set columns per record (set_columns, ignore_null_updates); the oracle "
            "takes each source's latest record whole"
        )
    if _first_record_wins(merge) and len(spec.sources) != 1:
        return "a first-row table's first record across several sources depends on arrival between sources"
    for column in spec.value_columns:
        feeders = spec.fed_by(column)
        if len(feeders) > 1:
            names = [s.name for s in feeders]
            return f"column {column} is fed by {names}; which of them wins depends on arrival between sources"
        if not feeders or column in feeders[0].aggregates:
            continue
        function = functions.get(column)
        name = None if function is None else function.name
        oracled = ", ".join((*FOLDED_FUNCTIONS, *REPLAYED_FUNCTIONS))
        if merge.engine == "aggregation" and name not in (*FOLDED_FUNCTIONS, *REPLAYED_FUNCTIONS):
            # Its implicit `last_non_null_value` (A1) keeps the last non-NULL value by arrival.
            return (
                f"column {column} of an aggregation table has the function {name or 'last_non_null_value'}; "
                f"the oracle folds {oracled} only"
            )
        if name not in (None, *LATEST_VALUE_FUNCTIONS, *FOLDED_FUNCTIONS, *REPLAYED_FUNCTIONS):
            return (
                f"column {column} has the aggregate function {name}, which the oracle does not fold "
                f"({oracled} only), and source {feeders[0].name} declares no aggregate "
                "for it (aggregates are declared for a source keyed apart from the table)"
            )
        if name in ORDERED_FUNCTIONS and merge.sequence_fields:
            # The merge sorts each commit's records (and the stored row) by the sequence field, so the
            # order a commit meets the stored value in depends on how records were cut into commits.
            return (
                f"column {column} has the order-sensitive function {name} and the table a sequence.field "
                f"{list(merge.sequence_fields)}; its order within a commit depends on how records were "
                "cut into commits"
            )
    return None


def delete_rule_disagreements(spec: WideTableSpec) -> list[str]:
    """Where a source's declared `deletes` and the table's options disagree on what its `-D` does, each
    with the option or the declaration that would make them agree: on a Paimon partial-update table,
    a `-D` of a sequence group clears the group's columns (P10) unless an option removes the row
    (P11), and `ignore-delete` drops it. The check still judges such a table (its options may be the
    mistake); this says why a deleted key then differs."""
    merge = spec.definition().merge
    if merge.dialect != "paimon" or merge.engine != "partial-update":
        return []
    disagreements = []
    for source in spec.sources:
        if source.aggregates or source.deletes == "ignore":
            continue
        if merge.ignore_delete:
            disagreements.append(
                f"source {source.name} declares deletes: {source.deletes}, but the table's option "
                "ignore-delete drops every -D: declare deletes: ignore"
            )
            continue
        if source.op_time is None:
            continue
        sequence = source.feeds.get(source.op_time)
        group = next((g for g in merge.sequence_groups if sequence in g.sequence_fields), None)
        if group is None:
            continue
        # Paimon refuses `partial-update.remove-record-on-delete` on a table with sequence groups.
        removes = bool(set(group.sequence_fields) & set(merge.remove_record_on_sequence_group))
        if source.deletes == "remove-row" and not removes:
            disagreements.append(
                f"source {source.name} declares deletes: remove-row, but the table's -D of sequence group "
                f"{group.option_key} only clears {list(group.protected)}: add {sequence} to the option "
                "partial-update.remove-record-on-sequence-group, or declare deletes: clear-columns"
            )
        elif source.deletes == "clear-columns" and removes:
            disagreements.append(
                f"source {source.name} declares deletes: clear-columns, but the table's option "
                "partial-update.remove-record-on-sequence-group makes its -D remove the row: declare "
                f"deletes: remove-row, or leave {sequence} out of the option"
            )
    return disagreements


def _order(source: SourceSpec, first: bool) -> str:
    if first:
        return "_commit ASC, _offset ASC"
    if source.op_time is None:
        return "_commit DESC, _offset DESC"
    return f"{quote(source.op_time)} DESC NULLS LAST, _commit DESC, _offset DESC"


def _folded(function: FieldFunction, column: str, keeps_retractions: bool) -> str:
    """The SQL aggregate of `function` over a source's records of one key (see the module doc)."""
    value = quote(column)
    if function.name == "sum" and keeps_retractions and not function.ignore_retract:
        return f"sum(CASE WHEN {LIVE} THEN {value} ELSE -{value} END)"
    return f"{function.name}(CASE WHEN {LIVE} THEN {value} END)"


def _replayed(
    spark: SparkSession,
    spec: WideTableSpec,
    source: SourceSpec,
    merge: MergeOptions,
    fed: tuple[str, str],
    window: str,
) -> str:
    """SQL replaying the fed column's (`fed`: source column, wide column) function over `source`'s
    records in `window` (a key's), in the order the table applied them (commit, then `_offset`), as
    a fold state (`acc`, `seq`); its value is in the column's stored representation.

    In a sequence group a record counts only with its op time set (P6); one not older than the newest op
    time before it folds onto the accumulator, an older one in reverse (P8: Paimon's `aggReversed`);
    the group's sequence advances with retractions too (P10), while the function ignores them
    (`ignore-retract`: a function that cannot retract fails the write instead). Outside a group (an
    aggregation table), every insert and update folds on, in the order applied."""
    from wide_assets.aggregate_functions import Operands, aggregator

    column, wide = fed
    function = merge.functions[wide]
    fn = aggregator(merge.dialect, function.name)
    fn.prepare(spark)
    typed = spec.definition().column(wide)
    # The op time orders the fold only in a sequence group (the source's, as the oracle assumes).
    op_time = source.op_time if merge.group_of(wide) is not None else None
    grouped = op_time is not None
    time = quote(op_time) if op_time else "CAST(NULL AS INT)"
    time_type = dict(source.columns)[op_time] if op_time else "int"
    record = (
        f"named_struct('c', _commit, 'o', _offset, 't', {time}, 'live', {LIVE}, "
        f"'v', {fn.decode(quote(column), typed)})"
    )
    operands = Operands("s.acc", "r.v", typed, function)
    active = "(r.t IS NOT NULL)" if grouped else "true"
    newer = "(s.seq IS NULL OR r.t >= s.seq)"
    step = (
        f"named_struct('acc', CASE WHEN NOT (r.live AND {active}) THEN s.acc "
        f"WHEN {newer} THEN {fn.agg(operands)} ELSE {fn.agg_reversed(operands)} END, "
        f"'seq', CASE WHEN {active} AND {newer} THEN r.t ELSE s.seq END)"
    )
    start = f"named_struct('acc', CAST(NULL AS {fn.fold_type(typed)}), 'seq', CAST(NULL AS {time_type}))"
    replay = f"aggregate(array_sort(collect_list({record}) {window}), {start}, (s, r) -> {step}, s -> s.acc)"
    return fn.encode(replay, typed)


def _keyed_rows(
    spark: SparkSession,
    spec: WideTableSpec,
    source: SourceSpec,
    records: DataFrame,
    first: bool,
    merge: MergeOptions,
) -> DataFrame:
    """One row per table key: the fed columns of its latest (or first) record, or their fold."""
    wide_key = columns(source.wide_key)
    keys = _as_wide_key(spec, source)
    keeps_retractions = not first and source.deletes != "ignore"
    types = dict(spec.columns)
    values, folds = [], []
    for column, wide in source.feeds.items():
        function = merge.functions.get(wide)
        if function is not None and function.name in REPLAYED_FUNCTIONS:
            replayed = _replayed(
                spark, spec, source, merge, (column, wide), f"OVER (PARTITION BY {wide_key})"
            )
            folds.append(f"{replayed} AS {quote('_fold_' + wide)}")
            values.append(f"{quote('_fold_' + wide)} AS {quote(wide)}")
            continue
        if function is not None and function.name in FOLDED_FUNCTIONS:
            # try_cast: a fold out of the column's range is NULL, and so differs from the table.
            folds.append(
                f"try_cast({_folded(function, column, keeps_retractions)} OVER (PARTITION BY {wide_key}) "
                f"AS {types[wide]}) AS {quote('_fold_' + wide)}"
            )
            values.append(f"{quote('_fold_' + wide)} AS {quote(wide)}")
            continue
        value = quote(column)
        if keeps_retractions and column != source.op_time:
            value = f"CASE WHEN {LIVE} THEN {value} END"
        values.append(f"{value} AS {quote(wide)}")
    where = "" if keeps_retractions else f"WHERE {LIVE}"
    return spark.sql(
        f"SELECT {keys}, {', '.join(values)} FROM ("
        f"SELECT *, {''.join(f + ', ' for f in folds)}"
        f"row_number() OVER (PARTITION BY {wide_key} ORDER BY {_order(source, first)}) AS _rank "
        f"FROM {{records}} {where}) WHERE _rank = 1",
        records=records,
    )


def _aggregated_rows(
    spark: SparkSession, spec: WideTableSpec, source: SourceSpec, records: DataFrame
) -> DataFrame:
    """One row per table key the source mentions: its declared aggregates over the latest record of each
    source row now holding that key (a key all of whose rows moved away aggregates one row, not live)."""
    rows = columns(source.primary_key)
    wide_key = columns(source.wide_key)
    latest = spark.sql(
        f"SELECT *, {LIVE} AS _live FROM (SELECT *, row_number() OVER (PARTITION BY {rows} "
        f"ORDER BY {_order(source, first=False)}) AS _rank FROM {{records}}) WHERE _rank = 1",
        records=records,
    )
    emptied = ", ".join(
        quote(name) if name in source.wide_key else f"CAST(NULL AS {type_}) AS {quote(name)}"
        for name, type_ in source.columns
    )
    same_key = key_join(source.wide_key, "r", "l")
    considered = spark.sql(
        f"SELECT {columns(source.column_names)}, _row_kind, _offset, _live FROM {{latest}} "
        f"UNION ALL SELECT {emptied}, CAST(NULL AS STRING) AS _row_kind, CAST(NULL AS BIGINT) AS _offset, "
        f"FALSE AS _live FROM (SELECT DISTINCT r.* FROM (SELECT {wide_key} FROM {{records}}) r "
        f"LEFT ANTI JOIN {{latest}} l ON {same_key})",
        latest=latest,
        records=records,
    )
    wide_types = dict(spec.columns)
    keys = _as_wide_key(spec, source)
    aggregates = ", ".join(
        f"CAST({expression} AS {wide_types[wide]}) AS {quote(wide)}"
        for wide, expression in source.aggregates.items()
    )
    grouped = spark.sql(
        f"SELECT {keys}, {aggregates} FROM {{considered}} GROUP BY {wide_key}",
        considered=considered,
    )
    op_target = source.feeds.get(source.op_time or "")
    if op_target is None:
        return grouped
    times = spark.sql(
        f"SELECT {keys}, max({quote(source.op_time or '')}) AS {quote(op_target)} FROM {{records}} "
        f"GROUP BY {wide_key}",
        records=records,
    )
    on = key_join(spec.primary_key, "g", "t")
    return spark.sql(
        f"SELECT g.*, t.{quote(op_target)} FROM {{g}} g JOIN {{t}} t ON {on}", g=grouped, t=times
    )


def applied_in_commits(spark: SparkSession, table: WideTable, source: str, records: DataFrame) -> DataFrame:
    """`records` (`source`'s applied CDC records) with `_commit`: the commit that applied each, as the
    source's transaction ids in the table's commit log say (each covers the offsets its progress holds
    and the one before did not: `table.progress`),
    `_run`: the run whose plan made that commit (NULL when unknown), and `_written_s`: when that commit
    was written (epoch seconds, for tombstones' retention)."""
    bounds: list[tuple[int, int, int, str | None, float]] = []
    previous: tuple[int, Spans] = (0, ())
    for commit in table.commits():
        if commit.txn is not None and commit.txn.app_id == source:
            written = datetime.fromisoformat(commit.written_at).timestamp()
            progress = (commit.txn.offset, commit.txn.ahead)
            for first, last in newly_applied(previous, progress):
                bounds.append((commit.commit, first - 1, last, commit.txn.run, written))
            previous = progress
    ranges = spark.createDataFrame(
        bounds, "_commit bigint, _low bigint, _high bigint, _run string, _written_s double"
    )
    return spark.sql(
        "SELECT r.*, g._commit, g._run, g._written_s FROM {r} r JOIN {g} g "
        "ON r._offset > g._low AND r._offset <= g._high",
        r=records,
        g=ranges,
    )


def _last_removals(spark: SparkSession, spec: WideTableSpec, applied: Mapping[str, DataFrame]) -> DataFrame:
    """Per key removed at least once: the (`_cut_commit`, `_cut_offset`) of its last removal (see the
    module doc), replayed in Python over the records of the keys a `remove-row` source deleted."""
    deleting = [s for s in spec.sources if s.deletes == "remove-row" and not s.aggregates]
    events: list[tuple[int, int, str, tuple[Any, ...], Any, str]] = []
    for source in deleting:
        keys = ", ".join(
            f"r.{quote(s)} AS {quote(w)}" for s, w in zip(source.wide_key, spec.primary_key, strict=True)
        )
        time = f"r.{quote(source.op_time)}" if source.op_time else "NULL"
        same = key_join(source.wide_key, "r", "d", null_safe=True)
        wide_key = columns(source.wide_key)
        rows = spark.sql(
            f"SELECT {keys}, r._commit, r._offset, {time} AS _time, r._row_kind FROM {{r}} r LEFT SEMI JOIN "
            f"(SELECT DISTINCT {wide_key} FROM {{r}} WHERE _row_kind = '-D') d ON {same}",
            r=applied[source.name],
        ).collect()
        events += [
            (r._commit, r._offset, source.name, tuple(r[k] for k in spec.primary_key), r._time, r._row_kind)
            for r in rows
        ]
    timed = {s.name for s in deleting if s.op_time is not None}
    # Per (key, source): the newest op time of the source's records since the key's last removal.
    newest: dict[tuple[tuple[Any, ...], str], Any] = {}
    cuts: dict[tuple[Any, ...], tuple[int, int]] = {}
    for commit, offset, name, key, time, kind in sorted(events, key=lambda e: (e[0], e[1])):
        if name in timed and time is None:
            continue  # P6: a record without its sequence does not touch its group
        seen = newest.get((key, name))
        if kind != "-D":
            newest[(key, name)] = time if seen is None or (name in timed and time > seen) else seen
        elif name not in timed or seen is None or time >= seen:
            cuts[key] = (commit, offset)
            for source in deleting:
                newest.pop((key, source.name), None)
    types = ", ".join(f"{quote(k)} {dict(spec.columns)[k]}" for k in spec.primary_key)
    return spark.createDataFrame(
        [(*key, commit, offset) for key, (commit, offset) in cuts.items()],
        f"{types}, _cut_commit bigint, _cut_offset bigint",
    )


def _without_tombstoned(
    spark: SparkSession, spec: WideTableSpec, applied: Mapping[str, DataFrame]
) -> dict[str, DataFrame]:
    """`applied` without the records a tombstone drops (docs/semantics.md T2): every record but a `-D`
    whose op time is NULL or not newer than a `-D` of a `remove-row` source for its key, applied in the
    same or an earlier commit written within the retention before its own."""
    from wide_assets.options.tombstones import retention_seconds

    retention = retention_seconds(spec.options)
    keys = ", ".join(quote(k) for k in spec.primary_key)
    deletes = [
        f"SELECT {_as_wide_key(spec, s)}, _commit, _written_s, {quote(s.op_time)} AS _deleted FROM {{d{i}}} "
        f"WHERE _row_kind = '-D' AND {quote(s.op_time)} IS NOT NULL"
        for i, s in enumerate(spec.sources)
        if s.deletes == "remove-row" and s.op_time is not None
    ]
    if not deletes:
        return dict(applied)
    frames: dict[str, Any] = {f"d{i}": applied[s.name] for i, s in enumerate(spec.sources)}
    tombstones = spark.sql(" UNION ALL ".join(deletes), **frames).selectExpr(
        keys, "_commit", "_written_s", "_deleted"
    )
    kept = {}
    for source in spec.sources:
        on = _on_wide_key(spec, source, "t")
        time = f"r.{quote(source.op_time)}" if source.op_time else "CAST(NULL AS STRING)"
        dropped = spark.sql(
            f"SELECT r._offset FROM {{r}} r LEFT SEMI JOIN {{t}} t ON {on} AND t._commit <= r._commit "
            f"AND t._written_s >= r._written_s - {retention} AND r._row_kind <> '-D' "
            f"AND ({time} IS NULL OR {time} <= t._deleted)",
            r=applied[source.name],
            t=tombstones,
        )
        kept[source.name] = spark.sql(
            "SELECT r.* FROM {r} r LEFT ANTI JOIN {d} d ON r._offset = d._offset",
            r=applied[source.name],
            d=dropped,
        )
    return kept


def _as_wide_key(spec: WideTableSpec, source: SourceSpec) -> str:
    return ", ".join(
        f"{quote(s)} AS {quote(w)}" for s, w in zip(source.wide_key, spec.primary_key, strict=True)
    )


def _on_wide_key(spec: WideTableSpec, source: SourceSpec, alias: str) -> str:
    """SQL: `source`'s record `r` names the key of `alias`'s row (a frame keyed by the table)."""
    return " AND ".join(
        f"r.{quote(s)} = {alias}.{quote(w)}" for s, w in zip(source.wide_key, spec.primary_key, strict=True)
    )


def _after_removal(
    spark: SparkSession, spec: WideTableSpec, source: SourceSpec, records: DataFrame, cuts: DataFrame
) -> DataFrame:
    """`records` of `source` applied after their key's last removal."""
    on = _on_wide_key(spec, source, "c")
    return spark.sql(
        f"SELECT r.* FROM {{r}} r LEFT JOIN {{c}} c ON {on} WHERE c._cut_commit IS NULL "
        "OR r._commit > c._cut_commit OR (r._commit = c._cut_commit AND r._offset > c._cut_offset)",
        r=records,
        c=cuts,
    )


def _met_their_row(
    spark: SparkSession,
    spec: WideTableSpec,
    source: SourceSpec,
    records: DataFrame,
    made: DataFrame,
    made_in_runs: DataFrame | None,
) -> DataFrame:
    """`records` without the retractions that met no row (P12: lost, even if a later run inserts the
    key; docs/semantics.md 0.3). A run commits a retraction that must retract an aggregate
    (`run_order.RETRACT`) with or after an insert of its key in the same run, so one committed before
    the first commit that made its key's row (since its last removal) met none. One that clears its
    columns (`CLEAR`, given `made_in_runs`) is written as an insert of NULLs when its run inserts the
    key: it met none when committed before that first commit by a run that inserted no row of its key
    (a commit that names no run is taken to have met it, as before runs were recorded)."""
    on = _on_wide_key(spec, source, "m")
    met = "r._row_kind IN ('+I', '+U') OR r._commit >= m._made"
    frames: dict[str, Any] = {"r": records, "m": made}
    joined = ""
    if made_in_runs is not None:
        joined = f" LEFT JOIN {{i}} i ON {_on_wide_key(spec, source, 'i')} AND i._run = r._run"
        met += " OR r._run IS NULL OR i._run IS NOT NULL"
        frames["i"] = made_in_runs
    return spark.sql(f"SELECT r.* FROM {{r}} r JOIN {{m}} m ON {on}{joined} WHERE {met}", **frames)


def expected_rows(spark: SparkSession, spec: WideTableSpec, applied: Mapping[str, DataFrame]) -> DataFrame:
    """What `spec`'s table must hold after applying `applied` (source name -> its applied CDC records,
    with the `_commit` that applied each: `applied_in_commits`)."""
    problem = convergence_problem(spec)
    if problem:
        raise ValueError(f"table {spec.name}: no convergence oracle: {problem}.")
    merge = spec.definition().merge
    first = _first_record_wins(merge)
    if TOMBSTONE_RETENTION in spec.options:
        applied = _without_tombstoned(spark, spec, applied)
    if not first:
        cuts = _last_removals(spark, spec, applied)
        applied = {s.name: _after_removal(spark, spec, s, applied[s.name], cuts) for s in spec.sources}
    # Only an insert or update makes a row (P12: a key whose records since its last removal are
    # retractions has none); a transform's rows are the table's records, whatever their source's.
    makers = []
    for index, source in enumerate(spec.sources):
        fed_as_is = not source.aggregates and (source.deletes == "ignore" or source.transform is None)
        mentioned = f"WHERE {LIVE}" if first or fed_as_is else ""
        makers.append(f"SELECT {_as_wide_key(spec, source)}, _commit, _run FROM {{r{index}}} {mentioned}")
    # Per key with a row: the first commit that made it; and the runs that inserted it.
    by_name: dict[str, Any] = {f"r{i}": applied[s.name] for i, s in enumerate(spec.sources)}
    keys = columns(spec.primary_key)
    inserts = spark.sql(" UNION ALL ".join(makers), **by_name)
    made = spark.sql(f"SELECT {keys}, min(_commit) AS _made FROM {{i}} GROUP BY {keys}", i=inserts)
    made_in_runs = spark.sql(f"SELECT DISTINCT {keys}, _run FROM {{i}} WHERE _run IS NOT NULL", i=inserts)
    # DataFrames by the name the query refers to them with (`{s0}`, `{m}`).
    frames: dict[str, Any] = {"m": made}
    for index, source in enumerate(spec.sources):
        records = applied[source.name]
        keyed = not source.aggregates and source.transform is None
        effect = retraction_effect(spec, source, merge)
        if keyed and not first and effect in (RETRACT, CLEAR):
            records = _met_their_row(
                spark, spec, source, records, made, made_in_runs if effect == CLEAR else None
            )
        frames[f"s{index}"] = (
            _aggregated_rows(spark, spec, source, records)
            if source.aggregates
            else _keyed_rows(spark, spec, source, records, first, merge)
        )
    fed = {
        wide: index for index, source in enumerate(spec.sources) for wide in spec.column_map(source).values()
    }
    types = dict(spec.columns)
    selected = [f"k.{quote(k)}" for k in spec.primary_key] + [
        f"CAST(s{fed[c]}.{quote(c)} AS {types[c]}) AS {quote(c)}"
        if c in fed
        else f"CAST(NULL AS {types[c]}) AS {quote(c)}"
        for c in spec.value_columns
    ]
    joins = " ".join(
        f"LEFT JOIN {{s{i}}} s{i} ON " + key_join(spec.primary_key, "k", f"s{i}")
        for i in range(len(spec.sources))
    )
    return spark.sql(f"SELECT {', '.join(selected)} FROM {{m}} k {joins}", **frames)


def convergence_refusal(spec: WideTableSpec) -> str | None:
    """Why no convergence check can be generated for `spec`, with the way out; None when one can."""
    problem = convergence_problem(spec)
    if problem is None:
        return None
    return (
        f"table {spec.name}: no convergence check can be generated: {problem}. Turn it off "
        "(checks: convergence: false) and add a check of your own."
    )


def convergence_check(spec: WideTableSpec) -> dg.AssetChecksDefinition:
    """The blocking check that `spec`'s table equals `expected_rows` over what it has applied; refused
    when the table is defined (the declaration cannot say what its rows must be) with the reason."""
    refusal = convergence_refusal(spec)
    if refusal:
        raise ValueError(refusal)

    def evaluate(spark: SparkSession, table: WideTable, lake: LakeLocator) -> dg.AssetCheckResult:
        consumed: dict[str, int] = {}
        applied: dict[str, DataFrame] = {}
        for source in spec.sources:
            consumed[source.name], records = applied_records(spark, spec, source, table, lake)
            applied[source.name] = applied_in_commits(spark, table, source.name, records)
        expected = expected_rows(spark, spec, applied)
        diff = keyed_diff(spark, table.read(), expected, spec.primary_key, spec.value_columns)
        if not diff.passed:
            # The likeliest cause first: a declaration that cannot converge whatever was merged.
            diff = replace(diff, examples=(*delete_rule_disagreements(spec), *diff.examples))
        return diff.result(consumed_offsets=consumed, delta_version=table.version)

    return table_check(
        spec,
        name=CONVERGENCE_CHECK,
        description=f"Every row of {spec.name} equals the join of its sources' latest states by op time "
        "since the row was last removed, with their declared delete rules and aggregate functions.",
        evaluate=evaluate,
    )


def convergence_off_check(spec: WideTableSpec) -> dg.AssetChecksDefinition:
    """The convergence check of a table whose declaration turned it off: it judges nothing, and its
    description and result say why, so that the table's Checks tab shows the check is not running
    rather than nothing at all."""
    refusal = convergence_problem(spec)
    reason = (
        f"it cannot run for {spec.name}: {refusal}"
        if refusal
        else f"the declaration of {spec.name} turned it off (checks: convergence: false)"
    )

    @dg.asset_check(
        asset=asset_key(spec, spec.name),
        name=CONVERGENCE_CHECK,
        blocking=False,
        description=f"Off: {reason}. Nothing compares the table with its sources.",
    )
    def _off() -> dg.AssetCheckResult:
        return not_judged(f"{reason}.", dg.AssetCheckSeverity.WARN, check="off")

    return _off
