"""Declarative wide-table pipelines: specs of a wide table and its sources, and the Dagster factories.

Importing this package loads neither PySpark nor a session: Spark starts inside asset runs only.
"""

from __future__ import annotations

from wide_assets.pipelines.assets import (
    ApplyFn,
    column_lineage,
    materialized_table_asset,
    pipeline_job,
    source_asset,
    table_asset,
    table_schema,
    wide_table_asset,
    wide_table_defs,
    wide_table_job,
)
from wide_assets.pipelines.checks import (
    applied_once_check,
    check_result,
    first_row_check,
    primary_key_check,
    row_diff,
    table_check,
    unchanged_rows_check,
    unique_check,
)
from wide_assets.pipelines.landing import LandingZone
from wide_assets.pipelines.locate import asset_key, lake_name, table_path
from wide_assets.pipelines.specs import LakeTableSpec, SourceSpec, WideTableSpec
from wide_assets.pipelines.triggers import hourly_schedule, new_data_sensor

__all__ = [
    "ApplyFn",
    "LakeTableSpec",
    "LandingZone",
    "SourceSpec",
    "WideTableSpec",
    "applied_once_check",
    "asset_key",
    "check_result",
    "column_lineage",
    "first_row_check",
    "hourly_schedule",
    "lake_name",
    "materialized_table_asset",
    "new_data_sensor",
    "pipeline_job",
    "primary_key_check",
    "row_diff",
    "source_asset",
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
