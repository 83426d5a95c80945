"""The Spark engine the tests run on: embedded Sail, or the Spark Connect server the environment names.

`WIDE_ASSETS_ENGINE=connect` with `WIDE_ASSETS_SPARK_REMOTE=sc://host:port` points the `spark`
fixture and the pipelines' Spark resource at a separate server (`test_distributed.py` runs modules
so); `SAIL_MODE` and Sail's other variables configure the embedded engine as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wide_assets.session import EngineSettings

if TYPE_CHECKING:
    from wide_assets.pipelines.resources import SparkEngine

__all__ = ["ENGINE", "spark_resource"]


def _engine_under_test() -> EngineSettings:
    settings = EngineSettings.from_env()
    if settings.engine == "classic":
        raise ValueError(
            "WIDE_ASSETS_ENGINE=classic: the tests' `spark` fixture is Sail or Spark Connect; "
            "classic JVM Spark is the `jvm_spark` fixture"
        )
    return EngineSettings(engine=settings.engine, remote=settings.remote)


ENGINE = _engine_under_test()


def spark_resource() -> SparkEngine:
    """The Dagster Spark resource for ENGINE (it resolves to the `spark` fixture's session)."""
    from wide_assets.pipelines.resources import (
        SparkEngine,  # Dagster: only for the tests that build pipelines
    )

    return SparkEngine(engine=ENGINE.engine, remote=ENGINE.remote)
