"""Plain Delta tables beside the wide tables (CDC tables, quarantines, published changelogs, query
results, Delta sources): whether one exists, its version and row count, read through delta-rs with the
store's settings and without Spark."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wide_assets.table import arbiter

if TYPE_CHECKING:
    from deltalake import DeltaTable


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
