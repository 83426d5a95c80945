"""Where a pipeline's assets and tables are: asset keys, lake names and the resources that resolve them.

Separate from the factories so that sensors and checks can use them without importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import dagster as dg

from wide_assets.pipelines.specs import LakeTableSpec, WideTableSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["LakeLocator", "SparkProvider", "asset_key", "lake_name", "table_path"]


class SparkProvider(Protocol):
    """The `spark` resource: a lazily started Spark session."""

    @property
    def spark(self) -> SparkSession: ...


class LakeLocator(Protocol):
    """The `lake` resource: where a named table lives."""

    def path(self, name: str) -> str: ...


def asset_key(spec: LakeTableSpec, name: str) -> dg.AssetKey:
    """Assets of a table and its sources share the table's group as key prefix."""
    return dg.AssetKey([spec.group, name])


def history_key(spec: WideTableSpec) -> dg.AssetKey:
    """The asset key of a table's history (its own Delta table beside it)."""
    from wide_assets.table.history import HISTORY_SUFFIX

    return asset_key(spec, spec.name + HISTORY_SUFFIX)


def lake_name(key: dg.AssetKey) -> str:
    """A table's location in the lake mirrors its asset key: `<group>/<name>`."""
    return "/".join(key.path)


def table_path(lake: LakeLocator, spec: LakeTableSpec, name: str | None = None) -> str:
    """Where `spec`'s table, or the table named `name` in its group (a source), lives in the lake."""
    return lake.path(lake_name(asset_key(spec, name or spec.name)))
