"""The Dagster resources under the names this repository's tests and scripts import them by.

They live in the library (`wide_assets.pipelines.resources`); each declared table brings its own
(`wide_assets.component.resources`), so `definitions.py` no longer wires any.
"""

from __future__ import annotations

from wide_assets.pipelines.resources import LakeSettings, SparkEngine, spark_from_env

__all__ = ["LakeSettings", "SparkEngine", "spark_from_env"]
