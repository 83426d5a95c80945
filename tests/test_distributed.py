"""The conformance cases, the product_360 pipeline and the merge's refusals (their text) on Sail's
distributed runner and over a separate Spark Connect server: the same test modules, run by a child pytest whose environment picks the engine,
exactly as a deployment would set it.

- local-cluster: the embedded engine with `SAIL_MODE=local-cluster` and two workers (driver and
  workers talk over RPC, so every shuffle crosses a worker boundary);
- connect: `WIDE_ASSETS_ENGINE=connect` against `sail spark server`, a process of its own, so
  every DataFrame, SQL text and Python value crosses the Spark Connect wire.

Each child must pass every test it collects; the engine logs show that it ran where it was sent.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from pathlib import Path

import pytest
from servers import sail_server

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
MODULES = ("tests/test_conformance.py", "tests/test_product_360.py", "tests/test_merge_refusals.py")
WORKERS = 2
CHILD_TIMEOUT_S = 1800
# product_360's five runs of late, out-of-order and deleted records are the longest test of each child
# (104 of the local-cluster child's 266 test-seconds in a whole run here), and repeat on the same
# engine what the main suite runs in one process; the conformance cases and the
# rest of product_360 carry the merge across workers and the wire. `WIDE_ASSETS_DISTRIBUTED=all` runs
# them in both children.
MAIN_SUITE_REPEATS = (
    ()
    if os.environ.get("WIDE_ASSETS_DISTRIBUTED") == "all"
    else (
        "tests/test_product_360.py::test_late_out_of_order_and_deletes_converge_incrementally_and_on_backfill",
    )
)
# A child is a pytest session of its own: not an xdist worker, not inside the parent's current test.
PARENT_ONLY = (
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "PYTEST_CURRENT_TEST",
)


def run_modules(
    tmp_path: Path, env: dict[str, str], modules: Sequence[str] = MODULES, deselect: Sequence[str] = ()
) -> str:
    """Run `modules` (files or test ids) but not `deselect` (test ids) in a child pytest with `env` over
    this environment (its output kept in `tmp_path/child.log`); return that output after checking that
    every collected test passed."""
    report = tmp_path / "junit.xml"
    command = [
        sys.executable,
        "-m",
        "pytest",
        *modules,
        "-p",
        "no:cacheprovider",
        "-q",
        # Uncaptured, so the engine's own log lines reach this test's checks.
        "-s",
        f"--basetemp={tmp_path / 'basetemp'}",
        f"--junitxml={report}",
        *(f"--deselect={test}" for test in deselect),
    ]
    child_env = {k: v for k, v in os.environ.items() if k not in PARENT_ONLY} | env
    done = subprocess.run(
        command, cwd=ROOT, env=child_env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S
    )
    output = done.stdout + done.stderr
    (tmp_path / "child.log").write_text(output, encoding="utf-8")
    assert done.returncode == 0, output[-8000:]
    suite = ElementTree.parse(report).getroot().find("testsuite")
    assert suite is not None, output[-2000:]
    counts = {key: int(suite.get(key, "0")) for key in ("tests", "failures", "errors", "skipped")}
    assert counts["tests"] > 0 and counts["failures"] == counts["errors"] == counts["skipped"] == 0, counts
    return output


def test_modules_on_local_cluster_with_two_workers(tmp_path: Path) -> None:
    env = {
        "SAIL_MODE": "local-cluster",
        "SAIL_CLUSTER__WORKER_INITIAL_COUNT": str(WORKERS),
        # The worker pool logs each worker it starts at INFO.
        "RUST_LOG": "warn,sail_execution::driver::worker_pool=info",
    }
    output = run_modules(tmp_path, env, deselect=MAIN_SUITE_REPEATS)
    assert f"starting worker {WORKERS}" in output


def test_modules_over_a_separate_spark_connect_server(tmp_path: Path) -> None:
    # The session manager logs each Connect session it creates at INFO.
    server_env = {"RUST_LOG": "warn,sail_session::session_manager=info"}
    with sail_server(tmp_path, server_env) as server:
        env = {"WIDE_ASSETS_ENGINE": "connect", "WIDE_ASSETS_SPARK_REMOTE": server.remote}
        run_modules(tmp_path, env, deselect=MAIN_SUITE_REPEATS)
        assert "creating session" in server.log.read_text(errors="replace")
