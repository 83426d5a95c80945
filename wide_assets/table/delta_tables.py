"""Plain Delta tables beside the wide tables (CDC tables, quarantines, published changelogs, query
results, Delta sources): whether one exists, its version and row count, and an empty one created,
through delta-rs with the store's settings and without a Spark job."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wide_assets.table import arbiter

if TYPE_CHECKING:
    from deltalake import DeltaTable

    from wide_assets.session import SparkSession


def exists(path: str) -> bool:
    """Whether a Delta table is at `path`."""
    return arbiter.exists(path)


def open_table(path: str) -> DeltaTable:
    """The Delta table at `path` as it is now (raises when there is none)."""
    return arbiter.open_table(path)


def version(path: str) -> int | None:
    """The current version of the Delta table at `path`; None when there is no table."""
    return int(arbiter.open_table(path).version()) if arbiter.exists(path) else None


def row_count(path: str) -> int:
    """The rows of the Delta table at `path` (0 when there is no table)."""
    return arbiter.open_table(path).to_pyarrow_dataset().count_rows() if arbiter.exists(path) else 0


def create_empty(spark: SparkSession, path: str, columns: Sequence[tuple[str, str]]) -> None:
    """Create an empty Delta table of `columns` (name, Spark SQL type; all nullable) at `path` unless
    one is there; racing creators agree. Through delta-rs: an engine's write of no rows ran Spark jobs
    (about 2 s on JVM Spark) to commit the same empty table."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from wide_assets.frames import arrow_schema
    from wide_assets.schema import Column

    if arbiter.exists(path):
        return
    declared = arrow_schema(spark, [Column.parse(name, type_) for name, type_ in columns])
    try:
        DeltaTable.create(
            path,
            schema=pa.schema([field.with_nullable(True) for field in declared]),
            name=Path(path).name,
            storage_options=arbiter.storage_options(path),
        )
    except Exception:
        if not arbiter.exists(path):  # not a creator that lost the race for version 0
            raise
