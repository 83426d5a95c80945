"""A JVM Spark Connect server with delta-spark, started by the project's own code as a deployment runs
it (`python -m wide_assets.jvm connect-server`): product_360's job through it with `dg launch`, checked
against the oracle of the landed files, and the merge's refusals, whose texts must cross the Connect
wire unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from product_360_launch import assert_equals_the_oracle, launch_product_360
from test_distributed import run_modules

from wide_assets.jvm import connect_server

pytestmark = [pytest.mark.jvm, pytest.mark.slow]


def test_product_360_job_and_refusals_through_a_jvm_spark_connect_server(spark: Any, tmp_path: Path) -> None:
    with connect_server(tmp_path / "server.log") as server:
        engine = {"WIDE_ASSETS_ENGINE": "connect", "WIDE_ASSETS_SPARK_REMOTE": server.remote}
        lake = launch_product_360(tmp_path, engine)
        refusals = tmp_path / "refusals"
        refusals.mkdir()
        run_modules(refusals, engine, ("tests/test_merge_refusals.py",))
    assert_equals_the_oracle(spark, lake)
    assert "Spark Connect server started" in server.log.read_text(errors="replace")
