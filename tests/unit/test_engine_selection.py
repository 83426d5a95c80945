"""Engine selection from the environment: one set of names for `get_spark()` and the Dagster resources,
and clear errors for an unknown engine or a `connect` engine without a URL. No engine starts."""

from __future__ import annotations

import dagster as dg
import pytest

from wide_assets.pipelines.resources import SparkEngine, spark_from_env
from wide_assets.session import EngineSettings, engine_from_env, get_spark

REMOTE = "sc://spark.example:15002"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("WIDE_ASSETS_ENGINE", "WIDE_ASSETS_ENV", "WIDE_ASSETS_SPARK_REMOTE"):
        monkeypatch.delenv(variable, raising=False)


@pytest.mark.parametrize(
    ("environ", "engine"),
    [
        ({}, "sail"),
        ({"WIDE_ASSETS_ENGINE": "sail"}, "sail"),
        ({"WIDE_ASSETS_ENGINE": " Classic "}, "classic"),
        ({"WIDE_ASSETS_ENGINE": "connect", "WIDE_ASSETS_SPARK_REMOTE": REMOTE}, "connect"),
        # The former name, as the README gave it: it must not silently start the embedded engine.
        ({"WIDE_ASSETS_ENV": "connect", "WIDE_ASSETS_SPARK_REMOTE": REMOTE}, "connect"),
        ({"WIDE_ASSETS_ENV": "local"}, "sail"),
        ({"WIDE_ASSETS_ENV": "classic", "WIDE_ASSETS_ENGINE": "classic"}, "classic"),
        ({"WIDE_ASSETS_ENV": "local", "WIDE_ASSETS_ENGINE": "sail"}, "sail"),
    ],
)
def test_get_spark_and_the_resources_start_the_engine_the_environment_names(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], engine: str
) -> None:
    assert EngineSettings.from_env(environ).engine == engine
    for variable, value in environ.items():
        monkeypatch.setenv(variable, value)
    assert engine_from_env() == engine
    assert spark_from_env().engine == engine


def test_the_other_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    classic = {
        "WIDE_ASSETS_ENGINE": "classic",
        "WIDE_ASSETS_SPARK_MASTER": "local[1]",
        "WIDE_ASSETS_SPARK_DELTA": "false",
    }
    settings = EngineSettings.from_env(classic)
    assert (settings.engine, settings.master, settings.with_delta) == ("classic", "local[1]", False)
    for variable, value in classic.items():
        monkeypatch.setenv(variable, value)
    resource = spark_from_env()
    assert (resource.engine, resource.master, resource.with_delta) == ("classic", "local[1]", False)
    connect = EngineSettings.from_env({"WIDE_ASSETS_ENGINE": "connect", "WIDE_ASSETS_SPARK_REMOTE": REMOTE})
    assert connect.remote == REMOTE


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"WIDE_ASSETS_ENGINE": "sial"},
            "WIDE_ASSETS_ENGINE='sial' is not an engine (did you mean 'sail'?); valid: sail, connect, classic",
        ),
        (
            {"WIDE_ASSETS_ENGINE": "duckdb"},
            "WIDE_ASSETS_ENGINE='duckdb' is not an engine; valid: sail, connect, classic",
        ),
        (
            {"WIDE_ASSETS_ENV": "prod"},
            "WIDE_ASSETS_ENV='prod' is not an engine; valid: local, connect, classic",
        ),
        (
            {"WIDE_ASSETS_ENV": "connect", "WIDE_ASSETS_ENGINE": "sail"},
            "WIDE_ASSETS_ENGINE='sail' and WIDE_ASSETS_ENV='connect' name different engines; "
            "set only WIDE_ASSETS_ENGINE",
        ),
    ],
)
def test_an_unknown_or_conflicting_engine_is_an_error(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], message: str
) -> None:
    for variable, value in environ.items():
        monkeypatch.setenv(variable, value)
    for select in (engine_from_env, get_spark, spark_from_env):
        with pytest.raises(ValueError) as raised:
            select()
        assert str(raised.value) == message


def test_an_unknown_engine_passed_in_code_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"engine='jvm' is not an engine; valid: sail, connect, classic"):
        spark_from_env("jvm")
    with pytest.raises(ValueError, match=r"engine='sali' is not an engine \(did you mean 'sail'\?\)"):
        EngineSettings(engine="sali")  # type: ignore[arg-type]
    assert EngineSettings(engine=" Classic") == EngineSettings(engine="classic")  # type: ignore[arg-type]


@pytest.mark.parametrize("variable", ["WIDE_ASSETS_ENGINE", "WIDE_ASSETS_ENV"])
def test_connect_without_a_url_names_the_variable_to_set(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "connect")
    with pytest.raises(ValueError, match="set WIDE_ASSETS_SPARK_REMOTE=sc://host:port"):
        get_spark()
    # The Dagster resource defers the URL to run time (definitions load without it); a run fails there.
    resource = spark_from_env()
    assert resource.engine == "connect"

    @dg.asset
    def uses_spark(spark: SparkEngine) -> None:
        spark.spark.range(1).count()

    with pytest.raises(
        dg.DagsterInvalidConfigError, match='variable "WIDE_ASSETS_SPARK_REMOTE" which is not set'
    ):
        dg.materialize([uses_spark], resources={"spark": resource})


def test_resources_start_no_engine_until_used() -> None:
    for engine in ("sail", "connect", "classic"):
        assert spark_from_env(engine)._spark_session is None


def test_the_connect_url_resolves_outside_a_dagster_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # `python -m demos` reads the resource directly, where its EnvVar field is not resolved for it.
    monkeypatch.setenv("WIDE_ASSETS_SPARK_REMOTE", "sc://sail.example:50051")
    spark = spark_from_env("connect")
    assert spark.settings.remote == "sc://sail.example:50051"
