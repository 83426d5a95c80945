"""The resources a declared table brings: its Spark engine, lake and landing zone, with working defaults.

Like Dagster's own integration components, a declaration needs nothing from the project's Python
code: by default its lake is `<project root>/lake` (or `$WIDE_ASSETS_LAKE`), its landing zone
`<project root>/data`, and its engine the embedded Sail (or the one `$WIDE_ASSETS_ENGINE` names); the
`lake`, `landing` and `spark` fields of its defs.yaml override them. Every table of a code location
shares the `spark`, `lake` and `landing` resource keys, so equal settings give the very same resource
object (Dagster merges definitions only when a key's resources are identical).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, model_validator

from wide_assets.component.declaration import Declaration
from wide_assets.pipelines import LandingZone
from wide_assets.session import Engine

if TYPE_CHECKING:
    from wide_assets.pipelines.resources import LakeSettings, SparkEngine

__all__ = ["LAKE_VARIABLE", "SparkDeclaration", "table_resources"]

LAKE_VARIABLE = "WIDE_ASSETS_LAKE"


class SparkDeclaration(Declaration):
    """The Spark engine every asset and check of the table runs on."""

    engine: Annotated[
        Engine,
        Field(
            description="`sail` (embedded, no JVM), `connect` (a remote Spark Connect server) or `classic` (JVM)."
        ),
    ] = "sail"
    remote: Annotated[
        str | None, Field(description="The Spark Connect server, `sc://host:port`: only for `connect`.")
    ] = None
    master: Annotated[str, Field(description="Spark master: only for `classic`.")] = "local[2]"
    with_delta: Annotated[bool, Field(description="Load delta-spark: only for `classic`.")] = True
    config: Annotated[
        dict[str, str], Field(default_factory=dict, description="Extra Spark configuration, verbatim.")
    ]

    @model_validator(mode="after")
    def _remote_for_connect(self) -> SparkDeclaration:
        if self.engine == "connect" and not self.remote:
            raise ValueError(
                "spark: engine 'connect' needs `remote: sc://host:port`, the Spark Connect server"
            )
        return self


def _under(project_root: Path, location: str) -> str:
    """`location` as given when it is a URL or absolute, else under the project root."""
    if "://" in location or Path(location).is_absolute():
        return location
    return str(project_root / location)


@cache
def _lake(root: str) -> LakeSettings:
    from wide_assets.pipelines.resources import LakeSettings

    return LakeSettings(root=root)


@cache
def _landing(root: str) -> LandingZone:
    return LandingZone(root=root)


@cache
def _spark(
    engine: Engine, remote: str | None, master: str, with_delta: bool, config: tuple[tuple[str, str], ...]
) -> SparkEngine:
    from wide_assets.pipelines.resources import SparkEngine

    return SparkEngine(
        engine=engine, remote=remote, master=master, with_delta=with_delta, spark_config=dict(config)
    )


@cache
def _spark_from_env(engine: str | None) -> SparkEngine:
    from wide_assets.pipelines.resources import spark_from_env

    return spark_from_env(engine)


def table_resources(
    project_root: Path, lake: str | None, landing: str, spark: SparkDeclaration | None
) -> dict[str, Any]:
    """The `spark`, `lake` and `landing` resources of a declaration in the project at `project_root`."""
    from wide_assets.session import engine_from_env

    lake_root = _under(project_root, lake or os.environ.get(LAKE_VARIABLE) or "lake")
    if spark is None:
        # Keyed by the engine the environment names now, so a changed variable is never served a stale
        # one (a classic engine's master and delta settings are read once per process).
        engine = _spark_from_env(engine_from_env())
    else:
        config = tuple(sorted(spark.config.items()))
        engine = _spark(spark.engine, spark.remote, spark.master, spark.with_delta, config)
    return {"spark": engine, "lake": _lake(lake_root), "landing": _landing(_under(project_root, landing))}
