"""The Dagster resources a wide table runs with: the Spark engine and the lake's location."""

from __future__ import annotations

import re
from typing import Any, Literal

import dagster as dg
from dagster_pyspark import LazyPySparkResource
from pydantic import Field, PrivateAttr

from wide_assets.session import REMOTE_VARIABLE, EngineSettings, engine_from_env, get_spark, parse_engine

__all__ = ["LakeSettings", "SparkEngine", "spark_from_env"]

_SEGMENT = re.compile(r"[A-Za-z0-9_.-]+")


def _conf_value(value: Any) -> str:
    # Spark parses booleans case-sensitively, and str(True) would give "True".
    return str(value).lower() if isinstance(value, bool) else str(value)


def _resolved(value: str | None) -> str | None:
    """A field's value outside a Dagster run too: there an `EnvVar` field is still the `EnvVar`
    (`python -m demos` reads the resource directly), and str() of one raises."""
    return value.get_value() if isinstance(value, dg.EnvVar) else value


class SparkEngine(LazyPySparkResource):
    """Spark session resource that picks Sail, Spark Connect or classic Spark and starts it on first use."""

    engine: Literal["sail", "connect", "classic"] = Field(
        default="sail", description="sail (embedded), connect (remote Spark Connect) or classic (JVM)."
    )
    remote: str | None = Field(default=None, description="sc://host:port, only for engine=connect.")
    master: str = Field(default="local[2]", description="Spark master, only for engine=classic.")
    with_delta: bool = Field(default=True, description="Load delta-spark, only for engine=classic.")
    spark_config: dict[str, Any] = Field(default_factory=dict, description="Extra Spark conf.")

    _settings: EngineSettings | None = PrivateAttr(default=None)

    @classmethod
    def _is_dagster_maintained(cls) -> bool:
        return False

    @property
    def settings(self) -> EngineSettings:
        """The engine settings this resource's config resolves to."""
        if self._settings is None:
            self._settings = EngineSettings(
                engine=self.engine,
                remote=_resolved(self.remote),
                master=self.master,
                with_delta=self.with_delta,
                spark_conf={k: _conf_value(v) for k, v in self.spark_config.items()},
            )
        return self._settings

    def _init_session(self) -> None:
        # Always go through get_spark: it re-creates a stopped session and re-points pyspark's
        # process-global Connect/classic function dispatch at this engine.
        # LazyPySparkResource declares its private session attribute as None-typed.
        self._spark_session = get_spark(self.settings)  # type: ignore[assignment]

    @property
    def spark(self) -> Any:
        """The Spark session (Connect for sail/connect, classic otherwise), created lazily."""
        return self.spark_session


class LakeSettings(dg.ConfigurableResource["LakeSettings"]):
    """Where the lake's tables live."""

    root: str = Field(description="Lake directory or URL (`s3://bucket/prefix`); tables are folders in it.")

    def path(self, name: str) -> str:
        """Location of table `name` (slash-separated safe segments) inside the lake root."""
        if not name or name.startswith(("/", "\\")) or "\\" in name or re.match(r"^[A-Za-z]:", name):
            raise ValueError(f"table name must be a relative path inside the lake: {name!r}")
        segments = name.split("/")
        for segment in segments:
            if segment in ("", ".", "..") or not _SEGMENT.fullmatch(segment):
                raise ValueError(f"invalid segment {segment!r} in table name {name!r}")
        return f"{self.root.rstrip('/')}/{'/'.join(segments)}"


def spark_from_env(engine: str | None = None) -> SparkEngine:
    """The Spark resource for `engine`: the one `get_spark()` would start, i.e. $WIDE_ASSETS_ENGINE
    (see `wide_assets.session.engine_from_env`) unless given. Starts nothing."""
    engine = engine_from_env() if engine is None else parse_engine(engine)
    if engine == "sail":
        return SparkEngine(engine="sail")
    if engine == "connect":
        # EnvVar defers the lookup to run time, so definitions still load where it is unset; a run
        # without it fails naming the variable.
        return SparkEngine(engine="connect", remote=dg.EnvVar(REMOTE_VARIABLE))
    settings = EngineSettings.from_env(engine="classic")
    return SparkEngine(engine="classic", master=settings.master, with_delta=settings.with_delta)
