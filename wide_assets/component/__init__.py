"""The Dagster component of a wide table: `WideTableComponent`, its YAML schema and its scaffolder."""

from __future__ import annotations

from wide_assets.component.component import WideTableComponent

__all__ = ["WideTableComponent"]
