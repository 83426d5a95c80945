"""The Spark engines the tests run on: embedded Sail, the Spark Connect server the environment names, or
classic JVM Spark with Delta.

`WIDE_ASSETS_ENGINE=connect` with `WIDE_ASSETS_SPARK_REMOTE=sc://host:port` points the `spark`
fixture and the pipelines' Spark resource at a separate server, and `WIDE_ASSETS_ENGINE=classic`
(with `WIDE_ASSETS_SPARK_MASTER`, `local[2]` by default) at classic JVM Spark with delta-spark:
`test_distributed.py` and `test_jvm_delta.py` run modules so. `SAIL_MODE` and Sail's other variables
configure the embedded engine as usual.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from wide_assets.session import EngineSettings

if TYPE_CHECKING:
    from wide_assets.pipelines.resources import SparkEngine

__all__ = ["ENGINE", "JVM", "WHOLE_JVM_TIER", "spark_resource"]


def _engine_under_test() -> EngineSettings:
    settings = EngineSettings.from_env()
    if settings.engine == "classic":
        return EngineSettings(engine="classic", master=settings.master, with_delta=True)
    return EngineSettings(engine=settings.engine, remote=settings.remote)


ENGINE = _engine_under_test()
# Classic JVM Spark with Delta: the `jvm_spark` fixture, and `spark` itself when ENGINE is classic (a
# process has one SparkContext, whose jars and master are fixed when it starts).
JVM = ENGINE if ENGINE.engine == "classic" else EngineSettings(engine="classic", with_delta=True)
# The JVM tests run in a bounded form in `make test` (a small JVM write takes seconds);
# `WIDE_ASSETS_JVM_TIER=all` runs them whole (each bounded test says what it leaves out).
WHOLE_JVM_TIER = os.environ.get("WIDE_ASSETS_JVM_TIER") == "all"


def spark_resource() -> SparkEngine:
    """The Dagster Spark resource for ENGINE (it resolves to the `spark` fixture's session)."""
    from wide_assets.pipelines.resources import (
        SparkEngine,  # Dagster: only for the tests that build pipelines
    )

    return SparkEngine(
        engine=ENGINE.engine, remote=ENGINE.remote, master=ENGINE.master, with_delta=ENGINE.with_delta
    )
