"""The resources a declared table brings: its Spark engine, lake and landing zone, with working defaults.

Like Dagster's own integration components, a declaration needs nothing from the project's Python
code: by default its lake is `<project root>/lake` (or `$WIDE_ASSETS_LAKE`), its landing zone
`<project root>/data`, and its engine the embedded Sail (or the one `$WIDE_ASSETS_ENGINE` names); the
`lake`, `landing` and `spark` fields of its defs.yaml override them. Every table of a code location
shares the `spark`, `lake` and `landing` resource keys, so equal settings give the very same resource
object (Dagster merges definitions only when a key's resources are identical), and a declaration whose
settings differ from another's in the same code location is refused naming both files
(`claim_shared_resources`).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, model_validator

from wide_assets.component.declaration import Declaration
from wide_assets.component.refusal import DeclarationProblem
from wide_assets.pipelines import LandingZone
from wide_assets.session import Engine

if TYPE_CHECKING:
    from wide_assets.pipelines.resources import LakeSettings, SparkEngine

__all__ = ["LAKE_VARIABLE", "SparkDeclaration", "claim_shared_resources", "table_resources"]

LAKE_VARIABLE = "WIDE_ASSETS_LAKE"
# Per component tree being built (a code location's load, by identity: Dagster's trees take no weak
# references): the declaration that first brought each shared resource key, and the resource. Only the
# last few trees are kept; a process builds one per load.
_CLAIMS: OrderedDict[int, tuple[object, dict[str, tuple[Any, Path]]]] = OrderedDict()
_TREES_KEPT = 8


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


def claim_shared_resources(tree: object, declaration: Path, resources: Mapping[str, Any]) -> None:
    """Record `resources` as those of the declaration in the folder `declaration`, in the code location
    `tree` is loading; raise a `DeclarationProblem` at the field when another declaration of that tree
    brought a different resource under the same key. Dagster itself would refuse the merge with "have
    different resources with same key", naming neither file nor value."""
    entry = _CLAIMS.get(id(tree))
    if entry is None or entry[0] is not tree:
        entry = _CLAIMS[id(tree)] = (tree, {})
        while len(_CLAIMS) > _TREES_KEPT:
            _CLAIMS.popitem(last=False)
    claims = entry[1]
    for key, resource in resources.items():
        first, where = claims.setdefault(key, (resource, declaration))
        if where == declaration:
            # The same declaration built again (a reload of an edited file) replaces its own claim.
            claims[key] = (resource, declaration)
        elif first is not resource:
            raise DeclarationProblem(
                f"this table's `{key}` resource is {resource!r}, but the table declared in "
                f"{where / 'defs.yaml'} brings {first!r}: the tables of a code location share one `{key}` "
                f"resource (Dagster binds resources by key), so give both the same `{key}` (or leave it "
                "out in both, for the default), or declare this table in a code location of its own.",
                (key,),
            )
