"""Blocking asset checks of a lake table: its key, and comparisons with an independent oracle (its own
previous Delta version, or plain SQL over the source's CDC table). They read through Spark inside the
check run only; a failed check stops the run before anything downstream reads the table. A check
with nothing to compare yet (no rows, no commit, nothing landed) says so (`not_judged`) instead of
passing on an empty comparison.

No `from __future__ import annotations` here: Dagster inspects the check functions' annotations.
"""

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import dagster as dg

from wide_assets.pipelines.apply import consumed_progress, key_report
from wide_assets.pipelines.ingest import quarantine_path
from wide_assets.pipelines.landing import LandingZone
from wide_assets.pipelines.locate import LakeLocator, SparkProvider, asset_key, history_key, table_path
from wide_assets.pipelines.specs import JSON_FORMATS, LakeTableSpec, SourceSpec
from wide_assets.sql import columns, key_join, quote, string_literal
from wide_assets.table.progress import spans_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from wide_assets.table import WideTable

__all__ = [
    "KeyedDiff",
    "RowDiff",
    "applied_once_check",
    "applied_records",
    "check_result",
    "freshness_check",
    "keyed_diff",
    "landed_at",
    "not_judged",
    "primary_key_check",
    "quarantine_growth_check",
    "row_diff",
    "schema_drift_check",
    "source_health_checks",
    "table_check",
    "unchanged_rows_check",
    "unique_check",
]

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class RowDiff:
    """Rows an oracle expects that the table lacks (`missing`) and table rows it does not expect."""

    rows: int
    missing: int
    unexpected: int
    examples: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return self.missing == 0 and self.unexpected == 0

    def result(self, **metadata: Any) -> dg.AssetCheckResult:
        return check_result(
            self.passed,
            self.examples,
            rows=self.rows,
            missing=self.missing,
            unexpected=self.unexpected,
            **metadata,
        )


def check_result(passed: bool, examples: Sequence[str], **metadata: Any) -> dg.AssetCheckResult:
    """A check's result: the examples of what is wrong are its description and part of its metadata."""
    return dg.AssetCheckResult(
        passed=passed,
        description=None if passed else "; ".join(examples),
        metadata={**metadata, "examples": list(examples)},
    )


def not_judged(
    reason: str, severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR, **metadata: Any
) -> dg.AssetCheckResult:
    """The result of a check that has nothing to judge yet (no rows, no commit, no compaction, ...).

    It passes, since nothing is wrong, but says so in its description and in a `status` metadata
    entry, so that the UI never shows an empty comparison as a judged pass."""
    return dg.AssetCheckResult(
        passed=True,
        severity=severity,
        description=f"Not judged: {reason}",
        metadata={"status": f"not judged: {reason}", **metadata},
    )


def row_diff(
    spark: "SparkSession", actual: "DataFrame", expected: "DataFrame", columns: Sequence[str]
) -> RowDiff:
    """Compare two DataFrames row for row on `columns` (as multisets, NULL equal to NULL)."""
    missing, missing_examples = _absent(spark, expected, actual, columns)
    unexpected, unexpected_examples = _absent(spark, actual, expected, columns)
    examples = [f"missing {e}" for e in missing_examples] + [f"unexpected {e}" for e in unexpected_examples]
    return RowDiff(actual.count(), missing, unexpected, tuple(examples))


def _absent(
    spark: "SparkSession", rows: "DataFrame", other: "DataFrame", compared: Sequence[str]
) -> tuple[int, list[str]]:
    """How many of `rows` (on `compared` columns) `other` lacks, with a few of them shown."""
    selected = columns(compared)
    absent = spark.sql(
        f"SELECT {selected} FROM {{r}} EXCEPT ALL SELECT {selected} FROM {{o}}", r=rows, o=other
    )
    count = absent.count()
    # Examples only when there is something to show: each query computes both sides again.
    return count, [_show(r, compared) for r in absent.limit(MAX_EXAMPLES).collect()] if count else []


def _show(row: Any, columns: Sequence[str]) -> str:
    return "(" + ", ".join(f"{c}={row[c]!r}" for c in columns) + ")"


@dataclass(frozen=True)
class KeyedDiff(RowDiff):
    """A `RowDiff` by key: `missing`/`unexpected` count keys absent on one side, `differing` the keys
    present on both whose values differ, per column."""

    differing: Mapping[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return super().passed and not self.differing

    def result(self, **metadata: Any) -> dg.AssetCheckResult:
        return super().result(differing_keys_by_column=dict(self.differing), **metadata)


# The join's flag of a row the table holds: no table column is named so (a leading `_` is refused).
_PRESENT = "__in_table"


def keyed_diff(
    spark: "SparkSession",
    actual: "DataFrame",
    expected: "DataFrame",
    key: Sequence[str],
    columns: Sequence[str],
) -> KeyedDiff:
    """Compare two DataFrames keyed by `key` (unique on both sides) column by column, NULL equal to NULL."""
    on = key_join(key, "a", "e")
    first = quote(key[0])
    keys = ", ".join(f"coalesce(a.{quote(k)}, e.{quote(k)}) AS {quote(k)}" for k in key)
    flags = [f"NOT (a.{quote(c)} <=> e.{quote(c)})" for c in columns]
    names = ", ".join(
        f"CASE WHEN {f} THEN {string_literal(c)} END" for f, c in zip(flags, columns, strict=True)
    )
    shown = ", ".join(
        f"a.{quote(c)} AS {quote('a_' + c)}, e.{quote(c)} AS {quote('e_' + c)}" for c in columns
    )
    # One pass over the join counts everything, the table's rows too; the differing rows are read
    # again only for examples when there are some (each pass computes both sides again: the expected
    # rows are a whole oracle).
    joined = spark.sql(
        f"SELECT {keys}, a.{first} IS NOT NULL AS {_PRESENT}, e.{first} IS NULL AS unexpected, "
        f"a.{first} IS NULL AS missing, concat_ws(',', {names}) AS differs, {shown} "
        f"FROM {{a}} a FULL OUTER JOIN {{e}} e ON {on}",
        a=actual,
        e=expected,
    )
    counts = spark.sql(
        f"SELECT count_if({_PRESENT}) AS {_PRESENT}, count_if(missing) AS missing, "
        "count_if(unexpected) AS unexpected, "
        + ", ".join(
            f"count_if(NOT missing AND NOT unexpected AND array_contains(split(differs, ','), {string_literal(c)})) "
            f"AS {quote(c)}"
            for c in columns
        )
        + " FROM {j}",
        j=joined,
    ).collect()[0]
    differing = {c: int(counts[c]) for c in columns if counts[c]}
    examples = []
    if counts.missing or counts.unexpected or differing:
        diffs = joined.where("missing OR unexpected OR differs <> ''")
        for row in diffs.orderBy(*key).limit(MAX_EXAMPLES).collect():
            at = ", ".join(f"{k}={row[k]!r}" for k in key)
            if row.missing or row.unexpected:
                examples.append(f"{'missing' if row.missing else 'unexpected'} row {at}")
                continue
            changed = row.differs.split(",")
            detail = "; ".join(f"{c} table={row['a_' + c]!r} expected={row['e_' + c]!r}" for c in changed)
            examples.append(f"{at}: {detail}")
    return KeyedDiff(
        rows=int(counts[_PRESENT]),
        missing=int(counts.missing),
        unexpected=int(counts.unexpected),
        differing=differing,
        examples=tuple(examples),
    )


def table_check(
    spec: LakeTableSpec,
    name: str,
    description: str,
    evaluate: Callable[["SparkSession", "WideTable", LakeLocator], dg.AssetCheckResult],
) -> dg.AssetChecksDefinition:
    """A blocking check of `spec`'s table: `evaluate(spark, table, lake)` inside the check run. When it
    fails, Dagster does not materialize the table's history in the run: the result, the run's log
    and an observation of the history asset say so."""
    key = asset_key(spec, spec.name)
    blocked = _blocked_by_table_checks(spec)
    if blocked:
        description += f" Blocking: when it fails, {', '.join(blocked)} is not materialized in the run."

    @dg.asset_check(asset=key, name=name, blocking=True, description=description)
    def _check(
        context: dg.AssetCheckExecutionContext,
        spark: dg.ResourceParam[SparkProvider],
        lake: dg.ResourceParam[LakeLocator],
    ) -> dg.AssetCheckResult:
        """A table that fails this is not what its sources say it is, so nothing downstream may read it."""
        from wide_assets.table import WideTable

        session = spark.spark
        result = evaluate(session, WideTable.open(session, table_path(lake, spec)), lake)
        if result.passed or not blocked:
            return result
        note = (
            f"{', '.join(blocked)} is not materialized in run {context.op_execution_context.run_id}: the blocking check {name} "
            f"of {key.to_user_string()} failed. It stays at the commit of {spec.name} it last applied "
            "until a run passes the check."
        )
        context.log.error(note)
        for downstream in blocked:
            observation = dg.AssetObservation(
                asset_key=dg.AssetKey.from_user_string(downstream),
                metadata={"not_materialized": note, "blocked_by_check": f"{key.to_user_string()}:{name}"},
            )
            context.op_execution_context.log_event(observation)
        return dg.AssetCheckResult(
            passed=False,
            severity=result.severity,
            description=f"{result.description or ''} ({note})".strip(),
            metadata={**result.metadata, "not_materialized": blocked},
        )

    return _check


def _blocked_by_table_checks(spec: LakeTableSpec) -> list[str]:
    """The assets (as user strings) that a failed blocking check of `spec`'s table keeps from being
    materialized in its run: the history of a table that declares one."""
    if getattr(spec, "history", None) is None:
        return []
    return [history_key(spec).to_user_string()]  # type: ignore[arg-type]


def unique_check(
    spec: LakeTableSpec, columns: Sequence[str], name: str, description: str
) -> dg.AssetChecksDefinition:
    """`columns` of `spec`'s table are never NULL and identify one row each."""
    columns = tuple(columns)

    def evaluate(spark: "SparkSession", table: "WideTable", lake: LakeLocator) -> dg.AssetCheckResult:
        report = key_report(spark, table.read(), columns)
        if report.rows == 0:
            return not_judged(f"{spec.name} has no rows yet.", rows=0)
        return check_result(
            report.passed,
            report.examples,
            rows=report.rows,
            null_keys=report.null_keys,
            duplicate_keys=report.duplicate_keys,
            duplicate_rows=report.duplicate_rows,
        )

    return table_check(spec, name, description, evaluate)


def primary_key_check(spec: LakeTableSpec) -> dg.AssetChecksDefinition:
    """The table's primary key is unique and never NULL."""
    pk = ", ".join(spec.primary_key)
    return unique_check(
        spec,
        spec.primary_key,
        name="primary_key_unique_not_null",
        description=f"Every row of {spec.name} has a complete ({pk}) key that no other row shares.",
    )


def unchanged_rows_check(spec: LakeTableSpec, name: str, description: str) -> dg.AssetChecksDefinition:
    """Every row of the table's previous Delta version is still there, identical (first_row tables,
    id dictionaries: a key's values are fixed when it is first written)."""

    def evaluate(spark: "SparkSession", table: "WideTable", lake: LakeLocator) -> dg.AssetCheckResult:
        version = table.version
        # Version 0 is the empty creation; a table that never held rows before has nothing to keep.
        previous = table.read(version=version - 1) if version > 0 else None
        if previous is None or previous.isEmpty():
            return not_judged(
                f"{spec.name} held no rows before Delta version {version}: nothing to compare with.",
                version=version,
            )
        current = table.read()
        # One direction only: rows the current version adds are new keys (or duplicates, which the
        # key check reports); a previous row that is absent now was changed or removed.
        changed, examples = _absent(spark, previous, current, table.definition.column_names)
        diff = RowDiff(current.count(), changed, 0, tuple(f"changed or removed {e}" for e in examples))
        return diff.result(version=version, compared_with=version - 1)

    return table_check(spec, name, description, evaluate)


def applied_once_check(
    spec: LakeTableSpec, source: SourceSpec, name: str, description: str
) -> dg.AssetChecksDefinition:
    """Every commit of the table applied `source` records once: its txn names the source, the offset
    ranges follow each other, and their record counts add up to the source's records in that range.
    Holds for tables that receive exactly one record per source record."""

    def evaluate(spark: "SparkSession", table: "WideTable", lake: LakeLocator) -> dg.AssetCheckResult:
        commits = table.commits()
        if not commits:
            return not_judged(f"{spec.name} has no commit yet.", commits=0)
        foreign = [c.commit for c in commits if c.txn is None or c.txn.app_id != source.name]
        txns = [c.txn for c in commits if c.txn is not None and c.txn.app_id == source.name]
        replayed = [b.offset for a, b in itertools.pairwise(txns) if a.covers(b)]
        applied = sum(c.input_records for c in commits)
        consumed, records = applied_records(spark, spec, source, table, lake)
        expected = records.count()
        problems = []
        if foreign:
            problems.append(f"commits {foreign} were not written from {source.name}")
        if replayed:
            problems.append(f"offsets {replayed} were applied again after a later one")
        if applied != expected:
            problems.append(
                f"{applied} record(s) applied for {expected} source record(s) up to offset {consumed}"
            )
        return check_result(
            not problems,
            problems,
            commits=len(commits),
            consumed_offset=consumed,
            records_applied=applied,
            source_records=expected,
        )

    return table_check(spec, name, description, evaluate)


def applied_records(
    spark: "SparkSession", spec: LakeTableSpec, source: SourceSpec, table: "WideTable", lake: LakeLocator
) -> tuple[int, "DataFrame"]:
    """The offset up to which `table` consumed `source` (in `spec`'s group), and the CDC records it
    applied: those, and the ones past it a run cut short applied ahead (`table.progress`)."""
    consumed, ahead = consumed_progress(table).get(source.name, (0, ()))
    rows = spark.read.format("delta").load(table_path(lake, spec, source.name))
    applied = spans_sql("_offset", ((0, consumed), *ahead))
    return consumed, spark.sql(f"SELECT * FROM {{rows}} WHERE {applied}", rows=rows)


# ------------------------------------------------------------------------------------------ source health
def _warning(
    passed: bool,
    description: str,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.WARN,
    **metadata: Any,
) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=passed,
        severity=severity,
        description=None if passed else description,
        metadata=metadata,
    )


def landed_at(path: str) -> datetime | None:
    """When the newest records of the Delta table at `path` landed: the write time of its newest data
    file that holds rows (its add action's `modificationTime`), None while it holds none. delta-rs only."""
    import pyarrow as pa

    from wide_assets.table import delta_tables

    actions = pa.table(delta_tables.open_table(path).get_add_actions(flatten=True)).select(
        ["modification_time", "num_records"]
    )
    # Milliseconds since the epoch; a file without statistics (no record count) may hold rows: it counts.
    times = [a["modification_time"] for a in actions.to_pylist() if a["num_records"] != 0]
    return datetime.fromtimestamp(max(times) / 1000, UTC) if times else None


def freshness_check(spec: LakeTableSpec, source: SourceSpec, max_lag: timedelta) -> dg.AssetChecksDefinition:
    """Warns when `source`'s newest records landed in its CDC table more than `max_lag` ago (delta-rs,
    no Spark).

    Freshness is judged by arrival, like dbt's `loaded_at_field`: a source is stale when nothing new
    has reached the lake for longer than `max_lag` (the producer stopped sending, or the ingest stopped
    running). Op times are the producer's clock and say how old the changes are, not whether the
    feed is alive: a backfill or the bundled demo data is old by op time yet fresh by arrival, and
    would otherwise fail for ever. The newest op time is reported alongside."""
    op_time = source.op_time

    @dg.asset_check(
        asset=asset_key(spec, source.name),
        name=f"{source.name}_freshness",
        blocking=False,
        description=f"New {source.name} records landed in the lake less than {max_lag} ago (judged by "
        "arrival in the CDC table, not by op time, so historical or backfilled changes count as fresh "
        "when they arrive).",
    )
    def _fresh(lake: dg.ResourceParam[LakeLocator]) -> dg.AssetCheckResult:
        """A source that stopped sending changes leaves its wide-table columns silently stale."""
        import pyarrow.compute as pc

        from wide_assets.table import delta_tables

        path = table_path(lake, spec, source.name)
        landed = landed_at(path) if delta_tables.exists(path) else None
        threshold = round(max_lag.total_seconds())
        if landed is None:
            return not_judged(
                f"no {source.name} record has landed yet.",
                dg.AssetCheckSeverity.WARN,
                threshold_seconds=threshold,
            )
        lag = datetime.now(UTC) - landed
        metadata: dict[str, Any] = {
            "landed_at": landed.isoformat(),
            "lag_seconds": round(lag.total_seconds()),
            "threshold_seconds": threshold,
        }
        if op_time is not None:
            rows = delta_tables.open_table(path).to_pyarrow_dataset().to_table(columns=[op_time])
            newest = pc.max(rows[op_time]).as_py()
            if newest is not None:
                metadata["newest_op_time"] = (
                    newest if newest.tzinfo else newest.replace(tzinfo=UTC)
                ).isoformat()
        return _warning(
            lag <= max_lag,
            f"{source.name}: the newest records landed {lag} ago (threshold {max_lag}).",
            **metadata,
        )

    return _fresh


def schema_drift_check(spec: LakeTableSpec, source: SourceSpec) -> dg.AssetChecksDefinition:
    """Warns when `source`'s landed JSON records carry columns its spec lacks, or never carry one it has."""
    if source.format not in JSON_FORMATS:
        raise ValueError(
            f"source {source.name}: {source.format} columns are checked at ingest; drift is for JSON sources."
        )

    @dg.asset_check(
        asset=asset_key(spec, source.name),
        name=f"{source.name}_schema_drift",
        blocking=False,
        description=f"The columns of landed {source.name} records are exactly the spec's.",
    )
    def _drift(landing: LandingZone) -> dg.AssetCheckResult:
        """An upstream schema change shows up here before it shows up as NULLs in the wide table."""
        from wide_assets.pipelines.cdc_json import json_fields

        files = landing.files(source)
        if not files:
            return not_judged(f"no {source.name} file has landed yet.", dg.AssetCheckSeverity.WARN, files=0)
        seen = set().union(*(json_fields(source, f.path) for f in files))
        unexpected = sorted(seen - set(source.column_names))
        missing = sorted(set(source.column_names) - seen)
        return _warning(
            not unexpected and not missing,
            f"{source.name}: columns {unexpected} are not in the spec; spec columns {missing} never landed.",
            files=len(files),
            unexpected_columns=unexpected,
            missing_columns=missing,
        )

    return _drift


def quarantine_growth_check(
    spec: LakeTableSpec, source: SourceSpec, blocking: bool = False
) -> dg.AssetChecksDefinition:
    """Warns when the latest ingest of `source` quarantined malformed records (delta-rs, no Spark);
    `blocking`: fails instead (ERROR), so the run does not apply the source's other records."""
    if source.max_bad_records is None:
        raise ValueError(f"source {source.name}: it has no quarantine (max_bad_records is None).")
    key = asset_key(spec, source.name)

    @dg.asset_check(
        asset=key,
        name=f"{source.name}_quarantine_growth",
        blocking=blocking,
        description=f"The latest {source.name} ingest quarantined no malformed record."
        + (
            f" Blocking: a quarantined record stops the run before {spec.name} applies the source."
            if blocking
            else ""
        ),
    )
    def _growth(
        context: dg.AssetCheckExecutionContext, lake: dg.ResourceParam[LakeLocator]
    ) -> dg.AssetCheckResult:
        """Malformed records are kept, not dropped; someone has to look at new ones."""
        from wide_assets.table import delta_tables

        event = context.instance.get_latest_materialization_event(key)
        metadata = event.asset_materialization.metadata if event and event.asset_materialization else {}
        if "quarantined_this_run" not in metadata:
            return not_judged(
                f"no {source.name} ingest has been recorded yet.",
                dg.AssetCheckSeverity.WARN,
                max_bad_records=source.max_bad_records,
            )
        added = int(metadata["quarantined_this_run"].value)
        path = quarantine_path(table_path(lake, spec, source.name))
        total = delta_tables.row_count(path)
        return _warning(
            added == 0,
            f"{source.name}: the latest ingest quarantined {added} record(s); {total} in quarantine at {path}.",
            dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN,
            quarantined_last_run=added,
            quarantine_rows=total,
            max_bad_records=source.max_bad_records,
        )

    return _growth


def source_health_checks(
    spec: LakeTableSpec, sources: Sequence[SourceSpec], max_lag: timedelta, quarantine: bool = True
) -> list[dg.AssetChecksDefinition]:
    """Freshness, schema drift and (with `quarantine`) quarantine growth of every source that supports
    them (non-blocking)."""
    checks = []
    for source in sources:
        checks.append(freshness_check(spec, source, max_lag))
        if source.format in JSON_FORMATS:
            checks.append(schema_drift_check(spec, source))
        if quarantine and source.max_bad_records is not None:
            checks.append(quarantine_growth_check(spec, source))
    return checks
