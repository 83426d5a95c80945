"""product_360's job launched as a user would (`dg launch --job product_360_job` in the repository, on
its landed files) with an engine's environment variables, a lake and an instance of its own; and its
table checked against the plain-Python oracle of the landed files (`bench.product_360_oracle`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.product_360_oracle import oracle, table_rows
from demos import declared
from wide_assets.pipelines import asset_key, lake_name
from wide_assets.session import activate
from wide_assets.table import WideTable

ROOT = Path(__file__).resolve().parents[1]
PRODUCT_360 = declared("product_360").spec
LAUNCH_TIMEOUT_S = 2400
# A standalone cluster on this machine: a driver and two executor JVMs of one core and 1 GiB each.
LOCAL_CLUSTER = "local-cluster[2,1,1024]"


def launch_product_360(tmp_path: Path, engine: dict[str, str]) -> Path:
    """Run the job with `engine`'s variables (its output kept in `tmp_path/launch.log`); return its lake
    after checking that the run and its checks succeeded."""
    lake, home = tmp_path / "lake", tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, **engine, "WIDE_ASSETS_LAKE": str(lake), "DAGSTER_HOME": str(home)}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dg"), "launch", "--job", "product_360_job"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=LAUNCH_TIMEOUT_S,
    )
    output = done.stdout + done.stderr
    (tmp_path / "launch.log").write_text(output, encoding="utf-8")
    assert done.returncode == 0 and "RUN_SUCCESS" in output, output[-6000:]
    assert "converges_to_source_join" in output and "STEP_FAILURE" not in output, output[-6000:]
    return lake


def assert_equals_the_oracle(spark: Any, lake: Path) -> None:
    """The launched job's wide table, read on `spark`, holds exactly the oracle's rows."""
    path = lake / lake_name(asset_key(PRODUCT_360, PRODUCT_360.name))
    table = WideTable.open(activate(spark), path)
    assert table_rows(table) == oracle(ROOT / "data")
