"""wide_assets: partial-update wide tables on Delta Lake with PySpark, orchestrated by Dagster.

Public API: `WideTable`, `get_spark`, and the Dagster component `WideTableComponent` (this package
is the `dagster_dg_cli.registry_modules` entry point, so `dg list components` shows it). Imported
lazily so that loading a Dagster code location never starts Spark or imports PySpark before it is
needed, and using the table alone never imports Dagster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wide_assets.component import WideTableComponent
    from wide_assets.session import get_spark
    from wide_assets.table import Txn, WideTable, WriteResult

__all__ = ["Txn", "WideTable", "WideTableComponent", "WriteResult", "get_spark"]

_EXPORTS = {
    "WideTable": "wide_assets.table",
    "WriteResult": "wide_assets.table",
    "Txn": "wide_assets.table",
    "get_spark": "wide_assets.session",
    "WideTableComponent": "wide_assets.component",
}


def __dir__() -> list[str]:
    # `dg list components` finds components among the names `dir()` lists.
    return sorted({*globals(), *__all__})


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'wide_assets' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
