"""The Dagster component of a wide table: `WideTableComponent`, its YAML schema and its scaffolder.

`dg` imports this package while it lists the environment's components (every `dg` command does).
dagster-pyspark, a dependency, registers a preview scaffolder that warns each time `dg` lists it, in
every command of every project, whether or not the project uses it; that one message is silenced
here. Every other warning, Dagster's preview and beta ones about the project's own code included,
still shows.
"""

from __future__ import annotations

import warnings

from wide_assets.component.component import WideTableComponent

__all__ = ["WideTableComponent"]

warnings.filterwarnings(
    "ignore", message="Class `SparkDeclarativePipelineScaffolder` is currently in preview"
)
