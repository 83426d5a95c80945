"""A JVM Spark Connect server with delta-spark whose Spark runs on a standalone cluster on this machine,
started by the project's own code as a deployment runs it (`python -m wide_assets.jvm connect-server
--master 'local-cluster[2,1,1024]'`: the server is the driver, two executor JVMs do the work, and every
shuffle crosses processes): product_360's job through it with `dg launch`, checked against the oracle
of the landed files, and the merge's refusals, whose texts must cross the Connect wire unchanged.

One launch covers both shapes #29 asks to launch on: a Connect server and a standalone cluster. The
classic driver on that cluster (`test_jvm_cluster.py`) repeats the launch with the driver in the run's
own process; it runs with `WIDE_ASSETS_JVM_TIER=all`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from product_360_launch import LOCAL_CLUSTER, assert_equals_the_oracle, launch_product_360
from test_distributed import run_modules

from wide_assets.jvm import connect_server

pytestmark = [pytest.mark.jvm, pytest.mark.slow]


def test_product_360_job_and_refusals_through_a_jvm_spark_connect_server_on_a_cluster(
    spark: Any, tmp_path: Path
) -> None:
    with connect_server(tmp_path / "server.log", master=LOCAL_CLUSTER) as server:
        engine = {"WIDE_ASSETS_ENGINE": "connect", "WIDE_ASSETS_SPARK_REMOTE": server.remote}
        lake = launch_product_360(tmp_path, engine)
        refusals = tmp_path / "refusals"
        refusals.mkdir()
        run_modules(refusals, engine, ("tests/test_merge_refusals.py",))
    assert_equals_the_oracle(spark, lake)
    log = server.log.read_text(errors="replace")
    assert "Spark Connect server started" in log
    # Every service of the local cluster (master, workers, their web UIs) stayed on loopback.
    assert "Bound WorkerWebUI to 127.0.0.1" in log and "0.0.0.0" not in log, "a service bound outward"
    # The job's tasks ran in both executor JVMs, not in the server's own (its INFO log names each).
    for executor in ("0", "1"):
        assert re.search(rf"Finished task .* \(executor {executor}\)", log), (
            f"no task ran on executor {executor}"
        )
