"""Declarative wide-table pipelines: specs of a wide table and its sources, and the Dagster factories.

Importing this package loads neither PySpark nor a session: Spark starts inside asset runs only.
"""

from __future__ import annotations

from wide_assets.pipelines.apply import (
    Pending,
    Prepared,
    SourceApplied,
    apply_with_retries,
    consumed_offsets,
    pending_records,
)
from wide_assets.pipelines.assets import (
    ApplyFn,
    column_lineage,
    materialized_table_asset,
    pipeline_job,
    source_asset,
    table_asset,
    wide_table_asset,
    wide_table_defs,
    wide_table_job,
)
from wide_assets.pipelines.cdc_json import format_op_time
from wide_assets.pipelines.checks import (
    applied_once_check,
    applied_records,
    check_result,
    keyed_diff,
    not_judged,
    primary_key_check,
    row_diff,
    source_health_checks,
    table_check,
    unchanged_rows_check,
    unique_check,
)
from wide_assets.pipelines.column_schema import table_schema
from wide_assets.pipelines.convergence import convergence_check, expected_rows
from wide_assets.pipelines.landing import LandingZone
from wide_assets.pipelines.locate import LakeLocator, asset_key, lake_name, table_path
from wide_assets.pipelines.maintenance import CompactionPolicy, maintenance_defs
from wide_assets.pipelines.specs import LakeTableSpec, SourceSpec, WideTableSpec
from wide_assets.pipelines.triggers import hourly_schedule, new_data_sensor

__all__ = [
    "ApplyFn",
    "CompactionPolicy",
    "LakeLocator",
    "LakeTableSpec",
    "LandingZone",
    "Pending",
    "Prepared",
    "SourceApplied",
    "SourceSpec",
    "WideTableSpec",
    "applied_once_check",
    "applied_records",
    "apply_with_retries",
    "asset_key",
    "check_result",
    "column_lineage",
    "consumed_offsets",
    "convergence_check",
    "expected_rows",
    "format_op_time",
    "hourly_schedule",
    "keyed_diff",
    "lake_name",
    "maintenance_defs",
    "materialized_table_asset",
    "new_data_sensor",
    "not_judged",
    "pending_records",
    "pipeline_job",
    "primary_key_check",
    "row_diff",
    "source_asset",
    "source_health_checks",
    "table_asset",
    "table_check",
    "table_path",
    "table_schema",
    "unchanged_rows_check",
    "unique_check",
    "wide_table_asset",
    "wide_table_defs",
    "wide_table_job",
]
