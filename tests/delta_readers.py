"""The Delta readers the README names, each running one query over a table's path: delta-rs's
DataFusion (QueryBuilder), DuckDB's `delta` extension (loaded from its PyPI package, never downloaded)
and polars' own Delta scan. Each applies deletion vectors and may skip files by their statistics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder


def query(columns: str, where: str | None) -> str:
    return f"SELECT {columns} FROM t" + (f" WHERE {where}" if where else "")


def rows_by_delta_rs(path: str, columns: str, where: str | None = None) -> list[tuple[Any, ...]]:
    """delta-rs's DataFusion reader (QueryBuilder)."""
    result = pa.table(
        QueryBuilder().register("t", DeltaTable(path)).execute(query(columns, where)).read_all()
    )
    return [tuple(row.values()) for row in result.to_pylist()]


def rows_by_duckdb(path: str, columns: str, where: str | None = None) -> list[tuple[Any, ...]]:
    """DuckDB's `delta` extension (Delta kernel based), loaded from its PyPI package."""
    import duckdb
    import duckdb_extension_delta  # type: ignore[import-untyped]  # it ships no type information

    package = Path(duckdb_extension_delta.__file__).parent
    extension = package / "extensions" / f"v{duckdb.__version__}" / "delta.duckdb_extension"
    connection = duckdb.connect()
    connection.sql(f"LOAD '{extension}'")
    connection.sql("SET TimeZone = 'UTC'")
    connection.sql(f"CREATE VIEW t AS SELECT * FROM delta_scan('{path}')")
    return [tuple(row) for row in connection.sql(query(columns, where)).fetchall()]


def rows_by_polars(path: str, columns: str, where: str | None = None) -> list[tuple[Any, ...]]:
    """polars' own Delta scan."""
    import polars as pl

    return list(pl.scan_delta(path).sql(query(columns, where), table_name="t").collect().rows())


READERS: dict[str, Callable[..., list[tuple[Any, ...]]]] = {
    "delta-rs": rows_by_delta_rs,
    "duckdb": rows_by_duckdb,
    "polars": rows_by_polars,
}
