"""Engine selection, coexistence of Sail and classic Spark, and lake path safety."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from engine import JVM
from pyspark.sql import functions as F

from wide_assets.pipelines.resources import LakeSettings, SparkEngine
from wide_assets.session import EngineSettings, activate, get_spark, is_connect


def _plus_one(spark: Any) -> list[int]:
    rows = spark.range(3).select((F.col("id") + 1).alias("n")).orderBy("n").collect()
    return [row.n for row in rows]


def test_sail_session_runs_sql(spark: Any) -> None:
    assert is_connect(spark)
    assert spark.sql("SELECT 1 AS one").collect()[0].one == 1
    assert _plus_one(spark) == [1, 2, 3]
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


@pytest.mark.jvm
def test_classic_session_runs_sql(jvm_spark: Any) -> None:
    assert not is_connect(jvm_spark)
    assert jvm_spark.sql("SELECT 1 AS one").collect()[0].one == 1
    assert jvm_spark.range(3).count() == 3
    assert jvm_spark.conf.get("spark.sql.session.timeZone") == "UTC"


@pytest.mark.jvm
def test_sail_and_classic_coexist(spark: Any, jvm_spark: Any) -> None:
    for session in (spark, jvm_spark, spark):
        assert _plus_one(activate(session)) == [1, 2, 3]
    # The cache hands back the very same live sessions rather than starting new engines.
    assert get_spark(EngineSettings(engine="sail")) is spark
    assert get_spark(JVM) is jvm_spark


def test_any_spark_dispatch(any_spark: Any) -> None:
    assert _plus_one(any_spark) == [1, 2, 3]


@pytest.mark.parametrize(
    "name", ["../x", "/abs", "a/../../b", "", ".", "a//b", "a/./b", "a\\b", "C:/x", "a b", "x/.."]
)
def test_lake_path_rejects_escapes(tmp_lake: Path, name: str) -> None:
    with pytest.raises(ValueError):
        LakeSettings(root=str(tmp_lake)).path(name)


def test_lake_path_stays_under_root(tmp_lake: Path) -> None:
    lake = LakeSettings(root=str(tmp_lake) + "/")
    assert lake.path("bronze/users.v1") == f"{tmp_lake}/bronze/users.v1"


def test_spark_engine_resource_in_dagster(spark: Any, tmp_lake: Path) -> None:
    @dg.asset
    def numbers(spark: SparkEngine, lake: LakeSettings) -> dg.MaterializeResult[Any]:
        assert is_connect(spark.spark)
        return dg.MaterializeResult(
            metadata={"rows": spark.spark.range(5).count(), "path": lake.path("numbers")}
        )

    result = dg.materialize(
        [numbers], resources={"spark": SparkEngine(engine="sail"), "lake": LakeSettings(root=str(tmp_lake))}
    )
    assert result.success
    metadata = result.asset_materializations_for_node("numbers")[0].metadata
    assert metadata["rows"].value == 5
    assert metadata["path"].value == f"{tmp_lake}/numbers"


IDLE_RUN = """
import sys, time
import wide_assets.session as session
session.EMBEDDED_SESSION_TIMEOUT_SECS = int(sys.argv[1])
spark = session.get_spark()
assert spark.range(3).count() == 3
time.sleep(4)
try:
    print(spark.range(3).count())
except Exception as error:
    print(type(error).__name__)
"""


@pytest.mark.slow
def test_the_embedded_sail_session_outlives_idle_time_up_to_its_timeout() -> None:
    """Sail drops a session idle longer than its timeout (15 minutes unless told): the embedded server
    is told `EMBEDDED_SESSION_TIMEOUT_SECS`, so the cached session survives a long pause. Shown in
    fresh interpreters with the timeout shortened to below and above a 4-second pause."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "SAIL_SPARK__SESSION_TIMEOUT_SECS"}

    def after_idle(timeout_secs: int) -> str:
        command = [sys.executable, "-c", IDLE_RUN, str(timeout_secs)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=True)
        return done.stdout.strip().splitlines()[-1]

    assert after_idle(1) == "IllegalArgumentException"  # "session ... is not running"
    assert after_idle(60) == "3"
