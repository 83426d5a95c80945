"""Declarative wide-table pipelines: specs of a wide table and its sources, and the Dagster factories.

Importing this package loads neither PySpark nor a session: Spark starts inside asset runs only.
"""

from __future__ import annotations

from wide_assets.pipelines.assets import (
    asset_key,
    primary_key_check,
    source_asset,
    wide_table_asset,
    wide_table_defs,
    wide_table_job,
)
from wide_assets.pipelines.landing import LandingZone
from wide_assets.pipelines.specs import SourceSpec, WideTableSpec

__all__ = [
    "LandingZone",
    "SourceSpec",
    "WideTableSpec",
    "asset_key",
    "primary_key_check",
    "source_asset",
    "wide_table_asset",
    "wide_table_defs",
    "wide_table_job",
]
