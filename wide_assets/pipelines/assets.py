"""Factories: a `WideTableSpec` -> its source assets, wide-table asset, blocking key check and job.

Nothing here touches Spark or the lake when definitions load; sessions and tables are opened inside
the asset and check bodies, through the `spark` and `lake` resources. Each asset runs in the
concurrency pool named after its lake table: the exactly-once bookkeeping (files ingested, offsets
applied) is read before it is written, so two runs must not write one table at once; an instance
enforces that with a pool limit of 1 (`concurrency: pools: default_limit: 1` in dagster.yaml).

No `from __future__ import annotations` here: Dagster inspects the asset functions' annotations.
"""

from dataclasses import astuple
from typing import TYPE_CHECKING, Any, Protocol

import dagster as dg

from wide_assets.pipelines.ingest import BadSourceRecords, cdc_columns, ingest
from wide_assets.pipelines.landing import LandingZone
from wide_assets.pipelines.markdown import markdown_table
from wide_assets.pipelines.specs import SourceSpec, WideTableSpec
from wide_assets.pipelines.wide import apply_sources, changelog_preview, key_report, open_wide_table

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
    from pyspark.sql import SparkSession

__all__ = [
    "LakeLocator",
    "SparkProvider",
    "asset_key",
    "lake_name",
    "primary_key_check",
    "source_asset",
    "wide_table_asset",
    "wide_table_defs",
    "wide_table_job",
]

METRICS = ("inserted", "updated", "deleted", "unchanged")
CDC_DESCRIPTIONS = {
    "_row_kind": "Change kind: +I insert, -U/+U update before/after, -D delete.",
    "_offset": "Arrival order across all ingested files of the source.",
    "_source_file": "Landed file the record came from, relative to the landing zone.",
    "_source_line": "Line of the record in its file (the header is line 1).",
    "_source_hash": "SHA-256 of the landed file; a file is ingested once per content.",
}


class SparkProvider(Protocol):
    """The `spark` resource: a lazily started Spark session."""

    @property
    def spark(self) -> "SparkSession": ...


class LakeLocator(Protocol):
    """The `lake` resource: where a named table lives."""

    def path(self, name: str) -> str: ...


def asset_key(spec: WideTableSpec, name: str) -> dg.AssetKey:
    """Assets of a wide table and its sources share the table's group as key prefix."""
    return dg.AssetKey([spec.group, name])


def lake_name(key: dg.AssetKey) -> str:
    """A table's location in the lake mirrors its asset key: `<group>/<name>`."""
    return "/".join(key.path)


def _schema(columns: tuple[tuple[str, str], ...], primary_key: tuple[str, ...]) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name,
                type_,
                description=CDC_DESCRIPTIONS.get(name),
                constraints=dg.TableColumnConstraints(nullable=name not in primary_key),
            )
            for name, type_ in columns
        ],
        constraints=dg.TableConstraints(other=[f"primary key ({', '.join(primary_key)})"]),
    )


def _source_schema(source: SourceSpec) -> dg.TableSchema:
    return _schema(cdc_columns(source), source.primary_key)


def _lineage(spec: WideTableSpec) -> dg.TableColumnLineage:
    deps: dict[str, list[dg.TableColumnDep]] = {}
    for source in spec.sources:
        for source_column, wide_column in spec.column_map(source).items():
            deps.setdefault(wide_column, []).append(
                dg.TableColumnDep(asset_key=asset_key(spec, source.name), column_name=source_column)
            )
    return dg.TableColumnLineage(deps_by_column=deps)


def source_asset(spec: WideTableSpec, source: SourceSpec) -> dg.AssetsDefinition:
    """The asset that ingests `source`'s newly landed files into its Delta CDC table."""
    key = asset_key(spec, source.name)

    @dg.asset(
        key=key,
        group_name=spec.group,
        description=source.description,
        kinds={"spark", "delta", "csv"},
        pool=lake_name(key),
        metadata={"dagster/column_schema": _source_schema(source), "files": list(source.files)},
    )
    def _source(
        context: dg.AssetExecutionContext,
        spark: dg.ResourceParam[SparkProvider],
        lake: dg.ResourceParam[LakeLocator],
        landing: LandingZone,
    ) -> dg.MaterializeResult:
        """Newly landed source records, appended once each to the source's change table."""
        files = landing.files(source)
        try:
            result = ingest(spark.spark, source, files, lake.path(lake_name(key)))
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
        return dg.MaterializeResult(metadata=metadata)

    return _source


def wide_table_asset(spec: WideTableSpec) -> dg.AssetsDefinition:
    """The asset that applies each source's new CDC records to the wide table as partial updates."""
    key = asset_key(spec, spec.name)
    schema = _schema(spec.columns, spec.primary_key)

    @dg.asset(
        key=key,
        group_name=spec.group,
        description=spec.description,
        deps=[asset_key(spec, s.name) for s in spec.sources],
        kinds={"spark", "delta"},
        pool=lake_name(key),
        metadata={"dagster/column_schema": schema, "options": dict(spec.options)},
    )
    def _wide(
        context: dg.AssetExecutionContext,
        spark: dg.ResourceParam[SparkProvider],
        lake: dg.ResourceParam[LakeLocator],
    ) -> dg.MaterializeResult:
        """One row per key combining the latest values every source reported for it."""
        from deltalake import DeltaTable

        session = spark.spark
        table = open_wide_table(session, spec, lake.path(lake_name(key)))
        first_new = table.last_commit + 1
        paths = {s.name: lake.path(lake_name(asset_key(spec, s.name))) for s in spec.sources}
        applied = apply_sources(session, spec, table, paths)
        metadata: dict[str, Any] = {}
        totals = dict.fromkeys(METRICS, 0)
        for item in applied:
            metadata[f"{item.source}/offsets"] = f"({item.from_offset}, {item.to_offset}]"
            if item.result is None:
                context.log.info(f"{item.source}: no new records after offset {item.from_offset}")
                continue
            context.log.info(f"{item.source}: commit {item.result.commit} {item.result.as_metadata()}")
            metadata[f"{item.source}/commit"] = item.result.commit
            for metric in METRICS:
                value = getattr(item.result, metric)
                metadata[f"{item.source}/{metric}"] = value
                totals[metric] += value
        metadata.update(
            {
                "dagster/row_count": table.read().count(),
                "delta_version": table.version,
                "changelog_version": DeltaTable(table.changelog_path).version(),
                "last_commit": table.last_commit,
                "commits_this_run": sum(item.result is not None for item in applied),
                **totals,
                "path": dg.MetadataValue.path(table.path),
                "dagster/column_schema": schema,
                "dagster/column_lineage": _lineage(spec),
                "changelog_preview": dg.MetadataValue.md(changelog_preview(session, table, first_new)),
            }
        )
        return dg.MaterializeResult(metadata=metadata)

    return _wide


def primary_key_check(spec: WideTableSpec) -> dg.AssetChecksDefinition:
    """A blocking check that the wide table's primary key is unique and never NULL."""
    key = asset_key(spec, spec.name)
    pk = ", ".join(spec.primary_key)

    @dg.asset_check(
        asset=key,
        name="primary_key_unique_not_null",
        blocking=True,
        description=f"Every row of {spec.name} has a complete ({pk}) key that no other row shares.",
    )
    def _check(
        spark: dg.ResourceParam[SparkProvider], lake: dg.ResourceParam[LakeLocator]
    ) -> dg.AssetCheckResult:
        """Each key identifies exactly one row, so every source updates a single record per key."""
        from wide_assets.table import WideTable

        session = spark.spark
        report = key_report(
            session, WideTable.open(session, lake.path(lake_name(key))).read(), spec.primary_key
        )
        return dg.AssetCheckResult(
            passed=report.passed,
            description=None if report.passed else "; ".join(report.examples),
            metadata={
                "rows": report.rows,
                "null_keys": report.null_keys,
                "duplicate_keys": report.duplicate_keys,
                "duplicate_rows": report.duplicate_rows,
                "examples": list(report.examples),
            },
        )

    return _check


def wide_table_job(spec: WideTableSpec) -> "UnresolvedAssetJobDefinition":
    """The job that ingests every source, then applies them to the wide table and checks its key."""
    keys = [asset_key(spec, s.name) for s in spec.sources] + [asset_key(spec, spec.name)]
    return dg.define_asset_job(
        name=f"{spec.name}_job",
        selection=dg.AssetSelection.assets(*keys),
        description=f"Ingest {', '.join(s.name for s in spec.sources)} and apply them to {spec.name}.",
        executor_def=dg.in_process_executor,
    )


def wide_table_defs(spec: WideTableSpec) -> dg.Definitions:
    """Everything Dagster needs for one wide table, minus the shared `spark`/`lake`/`landing` resources."""
    return dg.Definitions(
        assets=[*(source_asset(spec, s) for s in spec.sources), wide_table_asset(spec)],
        asset_checks=[primary_key_check(spec)],
        jobs=[wide_table_job(spec)],
    )
