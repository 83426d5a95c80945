"""product_360's job with a classic driver (in the run's own process) on a standalone Spark cluster on
this machine, `local-cluster[2,1,1024]` (a driver and two executor JVMs, every shuffle between
processes) with delta-spark: the shape users outgrow `local[N]` into. Launched with `dg launch`,
checked against the oracle of the landed files.

`make test` launches the job on that cluster once, through a JVM Connect server (test_jvm_connect.py);
this file, the same launch with the driver in the run's process, runs with `WIDE_ASSETS_JVM_TIER=all`
(tests/conftest.py deselects it otherwise)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from product_360_launch import LOCAL_CLUSTER, assert_equals_the_oracle, launch_product_360

pytestmark = [pytest.mark.jvm, pytest.mark.slow, pytest.mark.whole_jvm_tier]


def test_product_360_job_with_a_classic_driver_on_a_standalone_cluster(spark: Any, tmp_path: Path) -> None:
    engine = {"WIDE_ASSETS_ENGINE": "classic", "WIDE_ASSETS_SPARK_MASTER": LOCAL_CLUSTER}
    assert_equals_the_oracle(spark, launch_product_360(tmp_path, engine))
