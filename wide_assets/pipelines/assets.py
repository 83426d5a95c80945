"""Factories: a `WideTableSpec` -> its source assets, wide-table asset, blocking key check, job,
schedule and sensor; the pieces also serve pipelines whose tables are `LakeTableSpec`s fed by code.

Nothing here touches Spark or the lake when definitions load; sessions and tables are opened inside
the asset and check bodies, through the `spark` and `lake` resources. Each asset runs in the
concurrency pool named after its lake table: the exactly-once bookkeeping (files ingested, offsets
applied) is read before it is written, so two runs must not write one table at once; an instance
enforces that with a pool limit of 1 (`concurrency: pools: default_limit: 1` in dagster.yaml).

No `from __future__ import annotations` here: Dagster inspects the asset functions' annotations.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import astuple
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

import dagster as dg

from wide_assets.pipelines.apply import SourceApplied, apply_sources, changelog_preview, open_wide_table
from wide_assets.pipelines.checks import (
    primary_key_check,
    quarantine_growth_check,
    source_health_checks,
    unchanged_rows_check,
)
from wide_assets.pipelines.column_schema import table_schema
from wide_assets.pipelines.convergence import convergence_check, convergence_off_check
from wide_assets.pipelines.ingest import (
    BadSourceRecords,
    cdc_columns,
    ingest,
    quarantine_path,
    require_landed,
)
from wide_assets.pipelines.landing import LandingZone
from wide_assets.pipelines.locate import (
    LakeLocator,
    SparkProvider,
    asset_key,
    history_key,
    lake_name,
    table_path,
)
from wide_assets.pipelines.maintenance import CompactionPolicy, is_write_only, maintenance_defs
from wide_assets.pipelines.markdown import markdown_table
from wide_assets.pipelines.specs import JSON_FORMATS, LakeTableSpec, SourceSpec, WideTableSpec
from wide_assets.pipelines.triggers import HOURLY, hourly_schedule, new_data_sensor, run_failure_logger

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
    from pyspark.sql import SparkSession

    from wide_assets.table import WideTable

__all__ = [
    "ApplyFn",
    "LakeLocator",
    "SensorScope",
    "SparkProvider",
    "asset_key",
    "column_lineage",
    "lake_name",
    "materialized_table_asset",
    "pipeline_job",
    "source_asset",
    "table_asset",
    "wide_table_asset",
    "wide_table_defs",
    "wide_table_job",
]

METRICS = ("inserted", "updated", "deleted", "unchanged")
# Which new-data sensors a table gets: one watching all its sources, or one per source's landing folder.
SensorScope = Literal["table", "per-source"]
# (spark, the table, the lake) -> what this run applied to the table, one entry per upstream.
ApplyFn = Callable[["SparkSession", "WideTable", LakeLocator], Sequence[SourceApplied]]


def _source_schema(source: SourceSpec) -> dg.TableSchema:
    return table_schema(cdc_columns(source), source.primary_key)


def column_lineage(deps: Mapping[str, Sequence[tuple[dg.AssetKey, str]]]) -> dg.TableColumnLineage:
    """Column -> the (asset, column) pairs it is computed from."""
    return dg.TableColumnLineage(
        deps_by_column={
            column: [dg.TableColumnDep(asset_key=key, column_name=name) for key, name in sources]
            for column, sources in deps.items()
        }
    )


def _lineage(spec: WideTableSpec) -> dg.TableColumnLineage:
    deps: dict[str, list[tuple[dg.AssetKey, str]]] = {}
    for source in spec.sources:
        for source_column, wide_column in spec.column_map(source).items():
            deps.setdefault(wide_column, []).append((asset_key(spec, source.name), source_column))
    return column_lineage(deps)


def source_asset(spec: LakeTableSpec, source: SourceSpec, pool: str | None = None) -> dg.AssetsDefinition:
    """The asset that ingests `source`'s newly landed files into its Delta CDC table, in `spec`'s group
    (in `pool`, default the CDC table's own pool)."""
    key = asset_key(spec, source.name)

    @dg.asset(
        key=key,
        group_name=spec.group,
        description=source.description,
        kinds={"spark", "delta", "json" if source.format in JSON_FORMATS else source.format},
        pool=pool or lake_name(key),
        metadata={"dagster/column_schema": _source_schema(source), "files": list(source.files)},
    )
    def _source(
        context: dg.AssetExecutionContext,
        spark: dg.ResourceParam[SparkProvider],
        lake: dg.ResourceParam[LakeLocator],
        landing: LandingZone,
    ) -> dg.MaterializeResult[Any]:
        """Newly landed source records, appended once each to the source's change table."""
        files = landing.files(source)
        path = table_path(lake, spec, source.name)
        waiting = require_landed(landing.root, source, files, path)
        if waiting:
            context.log.warning(f"{source.name}: {waiting}")
        try:
            result = ingest(spark.spark, source, files, path)
        except BadSourceRecords as error:
            raise dg.Failure(
                description=str(error),
                metadata={
                    "bad_records": error.count,
                    "examples": dg.MetadataValue.md(
                        markdown_table(["file", "line", "problems"], [astuple(e) for e in error.examples])
                    ),
                },
            ) from error
        context.log.info(
            f"{source.name}: appended {result.appended} row(s) from {list(result.ingested)}; "
            f"skipped already ingested {list(result.skipped)}"
        )
        metadata: dict[str, Any] = {
            "dagster/row_count": result.total_rows,
            "rows_appended": result.appended,
            "files_ingested": list(result.ingested),
            "files_skipped": list(result.skipped),
            "max_offset": result.max_offset,
            "delta_version": result.version,
            "path": dg.MetadataValue.path(result.path),
            "dagster/column_schema": _source_schema(source),
        }
        if result.latest_op_time is not None:
            metadata["latest_op_time"] = result.latest_op_time
        if source.op_time is not None:
            # Records delivered again (identical, op time included): never appended twice.
            metadata["duplicates_this_run"] = result.duplicates
        if source.max_bad_records is not None:
            from wide_assets.table import delta_tables

            # Read by the quarantine-growth check: what this run added, against the run's limit.
            metadata["quarantined_this_run"] = result.quarantined
            metadata["max_bad_records"] = source.max_bad_records
            metadata["quarantine_path"] = dg.MetadataValue.path(quarantine_path(result.path))
            metadata["quarantine_rows"] = delta_tables.row_count(quarantine_path(result.path))
            if result.quarantined:
                context.log.warning(
                    f"{source.name}: {result.quarantined} record(s) quarantined, {result.duplicates} of them "
                    f"duplicates (limit {source.max_bad_records} malformed per run)"
                )
        return dg.MaterializeResult[Any](metadata=metadata)

    return _source


def table_asset(
    spec: LakeTableSpec,
    deps: Sequence[dg.AssetKey],
    lineage: dg.TableColumnLineage,
    apply: ApplyFn,
    automation_condition: dg.AutomationCondition[Any] | None = None,
    pool: str | None = None,
) -> dg.AssetsDefinition:
    """The asset that maintains `spec`'s table: `apply(spark, table, lake)` makes this run's commits
    (at most one per upstream, each exactly once) and the materialization describes them. It runs in
    `pool`, by default the table's own."""
    key = asset_key(spec, spec.name)
    schema = table_schema(spec.columns, spec.primary_key)

    @dg.asset(
        key=key,
        group_name=spec.group,
        description=spec.description,
        deps=list(deps),
        kinds={"spark", "delta"},
        pool=pool or lake_name(key),
        automation_condition=automation_condition,
        metadata={"dagster/column_schema": schema, "options": dict(spec.options)},
    )
    def _table(
        context: dg.AssetExecutionContext,
        spark: dg.ResourceParam[SparkProvider],
        lake: dg.ResourceParam[LakeLocator],
    ) -> dg.MaterializeResult[Any]:
        """What is new upstream, applied to the table once, however often the run is repeated."""
        session = spark.spark
        table = open_wide_table(session, spec, table_path(lake, spec))
        first_new = table.last_commit + 1
        applied = apply(session, table, lake)
        metadata = _applied_metadata(context, applied)
        metadata.update(
            {
                "dagster/row_count": table.read().count(),
                "delta_version": table.version,
                "changelog_version": table.changelog_version,
                "last_commit": table.last_commit,
                "commits_this_run": sum(len(item.results) for item in applied),
                "path": dg.MetadataValue.path(table.path),
                "changelog_preview": dg.MetadataValue.md(changelog_preview(session, table, first_new)),
                "dagster/column_schema": schema,
                "dagster/column_lineage": lineage,
            }
        )
        quarantined = _quarantined_records(spec, lake)
        if quarantined:
            # Malformed records kept aside instead of applied: every run shows them, per source.
            metadata["quarantined_records"] = quarantined
            metadata["quarantined_records_total"] = sum(quarantined.values())
        # At a glance: what a compaction would fold in, and how many files reads open.
        health = table.health()
        metadata.update(
            {
                "pending_commits": health.pending_commits,
                "files": health.files,
                "bytes": health.bytes,
                "last_compaction": health.last_compaction or "never",
            }
        )
        return dg.MaterializeResult[Any](metadata=metadata)

    return _table


def _quarantined_records(spec: LakeTableSpec, lake: LakeLocator) -> dict[str, int]:
    """Per source of `spec` that quarantines (`max_bad_records`): the records in its quarantine."""
    from wide_assets.table import delta_tables

    return {
        source.name: delta_tables.row_count(quarantine_path(table_path(lake, spec, source.name)))
        for source in getattr(spec, "sources", ())
        if source.max_bad_records is not None
    }


def _applied_metadata(context: dg.AssetExecutionContext, applied: Sequence[SourceApplied]) -> dict[str, Any]:
    """Per upstream: the progress range, the version read and the commit's merge metrics; then totals."""
    metadata: dict[str, Any] = {}
    totals = dict.fromkeys(METRICS, 0)
    for item in applied:
        metadata[f"{item.source}/offsets"] = f"({item.from_offset}, {item.to_offset}]"
        # Read by the sensors: a newer source version than this one may hold unapplied records.
        metadata[f"{item.source}/source_version"] = item.source_version
        if item.unordered_keys:
            metadata[f"{item.source}/keys_out_of_op_time_order"] = len(item.unordered_keys)
            context.log.warning(
                f"{item.source}: its late records kept {len(item.unordered_keys)} key(s) from op-time order "
                "across sources (docs/semantics.md 0.3), e.g. "
                + ", ".join(repr(k) for k in sorted(item.unordered_keys, key=repr)[:5])
            )
        if not item.results:
            context.log.info(f"{item.source}: nothing new after {item.from_offset}")
            continue
        for result in item.results:
            context.log.info(f"{item.source}: commit {result.commit} {result.as_metadata()}")
        # Several commits when the run's time order interleaves this source's records with another's.
        commits = [result.commit for result in item.results]
        metadata[f"{item.source}/commit"] = commits[0] if len(commits) == 1 else commits
        for metric in METRICS:
            value = sum(getattr(result, metric) for result in item.results)
            metadata[f"{item.source}/{metric}"] = value
            totals[metric] += value
    return {**metadata, **totals}


def source_applier(spec: WideTableSpec) -> ApplyFn:
    """The wide table's run: each source's new CDC records applied, in op-time order across sources."""

    def apply(spark: "SparkSession", table: "WideTable", lake: LakeLocator) -> list[SourceApplied]:
        paths = {s.name: table_path(lake, spec, s.name) for s in spec.sources}
        return apply_sources(spark, spec, table, paths)

    return apply


def wide_table_asset(
    spec: WideTableSpec,
    automation_condition: dg.AutomationCondition[Any] | None = None,
    pool: str | None = None,
    apply: ApplyFn | None = None,
) -> dg.AssetsDefinition:
    """The asset that applies each source's new CDC records to the wide table, one commit per source
    (`apply`, default `source_applier(spec)`, makes a run's commits)."""
    deps = [asset_key(spec, s.name) for s in spec.sources]
    return table_asset(spec, deps, _lineage(spec), apply or source_applier(spec), automation_condition, pool)


def pipeline_job(name: str, keys: Sequence[dg.AssetKey], description: str) -> "UnresolvedAssetJobDefinition":
    """A job materializing `keys` (and running their checks) in one process, one step after another."""
    return dg.define_asset_job(
        name=name,
        selection=dg.AssetSelection.assets(*keys),
        description=description,
        executor_def=dg.in_process_executor,
    )


def wide_table_job(spec: WideTableSpec) -> "UnresolvedAssetJobDefinition":
    """The job that ingests every source, then applies them to the wide table (and its history) and
    checks it."""
    # Imported here: the history's asset module builds on this one.

    history = [history_key(spec)] if spec.history is not None else []
    return pipeline_job(
        f"{spec.name}_job",
        [asset_key(spec, s.name) for s in spec.sources] + [asset_key(spec, spec.name), *history],
        f"Ingest {', '.join(s.name for s in spec.sources)} and apply them to {spec.name}"
        + (", then to its history." if history else "."),
    )


def wide_table_defs(
    spec: WideTableSpec,
    checks: Sequence[dg.AssetChecksDefinition] = (),
    *,
    key_check: bool = True,
    convergence: bool = True,
    rows_never_change: bool = False,
    source_health: timedelta | None = None,
    quarantine_blocking: bool = False,
    sensor: SensorScope | None = "table",
    schedule: str | None = HOURLY,
    failure_sensor: bool = False,
    automation_condition: dg.AutomationCondition[Any] | None = None,
    pool: str | None = None,
    compaction: CompactionPolicy | None = None,
    export_encoding: str | None = "debezium",
    apply: ApplyFn | None = None,
) -> dg.Definitions:
    """Everything Dagster needs for one wide table, minus the shared `spark`/`lake`/`landing` resources.

    Its assets (each source's ingest, the table), in `pool` (default: one pool per lake table); the
    blocking primary-key check (`key_check`) and convergence check (`convergence`, see
    `convergence.py`), a check that rows never change once written (`rows_never_change`, for
    first-row tables and dictionaries), freshness (`source_health`: the largest lag), schema-drift and
    quarantine-growth warnings (the latter blocking, for every quarantining source, with
    `quarantine_blocking`), plus `checks`; the history table's asset and checks when `spec`
    declares one (`history.py`); the job; a schedule on `schedule` (cron, None for
    none); a new-data sensor for the table or one per source's landing folder (`sensor`); optionally
    a run-failure sensor; and `maintenance_defs(spec, compaction, export_encoding)`, which a
    write-only table needs (its default policy when `compaction` is None). `apply` replaces what a run
    of the table's asset does (default: `source_applier(spec)`).
    """
    job = wide_table_job(spec)
    applied_by = asset_key(spec, spec.name)
    sensors = []
    if sensor == "per-source":
        sensors = [
            new_data_sensor(spec, (s,), job, applied_by=applied_by, name=f"{spec.name}_{s.name}_sensor")
            for s in spec.sources
        ]
    elif sensor == "table":
        sensors = [new_data_sensor(spec, spec.sources, job, applied_by=applied_by)]
    if failure_sensor:
        sensors.append(run_failure_logger(f"{spec.name}_run_failure_sensor", [job]))
    generated = [primary_key_check(spec)] if key_check else []
    # Off, the check still shows on the table's Checks tab, saying why it does not run.
    generated.append(convergence_check(spec) if convergence else convergence_off_check(spec))
    if rows_never_change:
        generated.append(
            unchanged_rows_check(
                spec,
                name="rows_never_change",
                description=f"Every row of {spec.name}, once written, is identical in every later version.",
            )
        )
    if source_health is not None:
        generated.extend(source_health_checks(spec, spec.sources, source_health, not quarantine_blocking))
    if quarantine_blocking:
        quarantining = [s for s in spec.sources if s.max_bad_records is not None]
        generated.extend(quarantine_growth_check(spec, s, blocking=True) for s in quarantining)
    history = []
    if spec.history is not None:
        from wide_assets.pipelines.history import history_asset, history_checks  # builds on this module

        history = [history_asset(spec, pool)]
        generated.extend(history_checks(spec))
    table = dg.Definitions(
        assets=[
            *(source_asset(spec, s, pool) for s in spec.sources),
            wide_table_asset(spec, automation_condition, pool, apply),
            *history,
        ],
        asset_checks=[*generated, *checks],
        jobs=[job],
        schedules=[hourly_schedule(job, schedule)] if schedule else [],
        sensors=sensors,
    )
    if compaction is None and not is_write_only(spec):
        return table
    return dg.Definitions.merge(table, maintenance_defs(spec, compaction, export_encoding, pool))


def materialized_table_asset(
    name: str,
    group: str,
    description: str,
    sql: str,
    upstreams: Mapping[str, LakeTableSpec],
    primary_key: tuple[str, ...],
    automation_condition: dg.AutomationCondition[Any] | None = None,
) -> dg.AssetsDefinition:
    """A table defined by Spark SQL over lake tables (`{name}` placeholders of `upstreams`), fully
    recomputed and overwritten in one Delta commit on each materialization (Flink's materialized table)."""
    key = dg.AssetKey([group, name])

    @dg.asset(
        key=key,
        group_name=group,
        description=description,
        deps=[asset_key(spec, spec.name) for spec in upstreams.values()],
        kinds={"spark", "delta", "sql"},
        pool=lake_name(key),
        automation_condition=automation_condition,
        metadata={"sql": dg.MetadataValue.md(f"```sql\n{sql}\n```")},
    )
    def _materialized(
        spark: dg.ResourceParam[SparkProvider], lake: dg.ResourceParam[LakeLocator]
    ) -> dg.MaterializeResult[Any]:
        """The query's result over the upstream tables as they are now, replacing the previous one."""
        from wide_assets.table import WideTable, delta_tables

        session = spark.spark
        tables = {alias: WideTable.open(session, table_path(lake, spec)) for alias, spec in upstreams.items()}
        frames: dict[str, Any] = {alias: t.read() for alias, t in tables.items()}
        rows = session.sql(sql, **frames)
        path = lake.path(lake_name(key))
        rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)
        written = session.read.format("delta").load(path)
        return dg.MaterializeResult[Any](
            metadata={
                "dagster/row_count": written.count(),
                "delta_version": delta_tables.version(path),
                "upstream_versions": {alias: t.version for alias, t in tables.items()},
                "path": dg.MetadataValue.path(path),
                "dagster/column_schema": table_schema(
                    tuple((f.name, f.dataType.simpleString()) for f in written.schema.fields), primary_key
                ),
            }
        )

    return _materialized
