"""The suite on the engine most users run: Apache Spark 4.0 with delta-spark, in its three JVM shapes.

- classic JVM Spark `local[2]`: the JVM tier (below) in a child pytest with `WIDE_ASSETS_ENGINE=classic`,
  so that the engine reads every Delta table with Delta's own reader and appends the source tables with
  Delta's own writer, while the commits to the wide table stay ours;
- a standalone cluster on this machine, `local-cluster[2,1,1024]` (a driver and two executor JVMs,
  every shuffle between processes): product_360's job, launched with `dg launch` as a user would;
- a JVM Spark Connect server with delta-spark (`python -m wide_assets.jvm connect-server`): the same
  job through it, and the merge's refusals, whose texts must cross the Connect wire unchanged.

The conformance cases and the function tests run on classic JVM Spark with Delta in the main suite
(`test_conformance_jvm.py` and the `engine` fixture's `jvm-delta` parameter). Each product_360 run is
checked against the plain-Python oracle of the landed files (`bench.product_360_oracle`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_distributed import run_modules

from bench.product_360_oracle import oracle, table_rows
from demos import declared
from wide_assets.jvm import connect_server
from wide_assets.pipelines import asset_key, lake_name
from wide_assets.session import activate
from wide_assets.table import WideTable

pytestmark = [pytest.mark.jvm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
PRODUCT_360 = declared("product_360").spec
LOCAL_CLUSTER = "local-cluster[2,1,1024]"
# What runs on classic JVM Spark + Delta beyond the main suite's JVM tests, bounded for CI: the
# deletion-vector random rounds, write-only + compaction, exactly-once and the crash cases, history,
# tombstones, the seeds' demos, and the refusals' texts.
JVM_TIER = (
    "tests/test_deletion_vectors.py::test_random_rounds_equal_the_oracle_in_every_reader",
    "tests/test_exactly_once.py",
    "tests/reliability/test_crashes.py",
    "tests/test_merge_refusals.py",
)


def test_the_jvm_tier_on_classic_spark_with_delta(tmp_path: Path) -> None:
    output = run_modules(tmp_path, {"WIDE_ASSETS_ENGINE": "classic"}, JVM_TIER)
    assert "passed" in output


def launch_product_360(tmp_path: Path, engine: dict[str, str]) -> Path:
    """`dg launch --job product_360_job` on the repository's landed files with `engine`'s variables, a
    lake and an instance of its own; returns the lake."""
    lake, home = tmp_path / "lake", tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, **engine, "WIDE_ASSETS_LAKE": str(lake), "DAGSTER_HOME": str(home)}
    done = subprocess.run(
        ["dg", "launch", "--job", "product_360_job"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    output = done.stdout + done.stderr
    (tmp_path / "launch.log").write_text(output, encoding="utf-8")
    assert done.returncode == 0 and "RUN_SUCCESS" in output, output[-6000:]
    assert "Asset check 'converges_to_source_join'" in output and "RUN_FAILURE" not in output
    return lake


def assert_product_360_equals_the_oracle(spark: Any, lake: Path) -> None:
    path = lake / lake_name(asset_key(PRODUCT_360, PRODUCT_360.name))
    table = WideTable.open(activate(spark), path)
    assert table_rows(table) == oracle(ROOT / "data" / "landing")


def test_product_360_job_on_a_standalone_cluster(spark: Any, tmp_path: Path) -> None:
    engine = {"WIDE_ASSETS_ENGINE": "classic", "WIDE_ASSETS_SPARK_MASTER": LOCAL_CLUSTER}
    assert_product_360_equals_the_oracle(spark, launch_product_360(tmp_path, engine))


def test_product_360_job_and_refusals_through_a_jvm_spark_connect_server(spark: Any, tmp_path: Path) -> None:
    with connect_server(tmp_path / "server.log") as server:
        engine = {"WIDE_ASSETS_ENGINE": "connect", "WIDE_ASSETS_SPARK_REMOTE": server.remote}
        lake = launch_product_360(tmp_path, engine)
        (tmp_path / "refusals").mkdir()
        run_modules(tmp_path / "refusals", engine, ("tests/test_merge_refusals.py",))
    assert_product_360_equals_the_oracle(spark, lake)
    assert "SparkConnectServer" in server.log.read_text(errors="replace")
