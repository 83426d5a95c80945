"""`workspace.yaml` loads the code location `dg dev` loads: same name, same assets, jobs and checks.

Oracles: `[tool.dg.project]` in pyproject.toml (what `dg` reads to find the location) and `dg list
defs --json`, dg's own listing of that location; the workspace is loaded by Dagster's workspace
loader, as `dagster dev -w workspace.yaml` does, and validated by `dagster definitions validate`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["dg"]["project"]


def _run(*command: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "DAGSTER_HOME": str(home),
        # This checkout's code, wherever the environment's editable install points.
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _dg_listing(home: Path) -> dict[str, Any]:
    listed = _run(str(VENV_BIN / "dg"), "list", "defs", "--json", home=home)
    assert listed.returncode == 0, listed.stderr[-3000:]
    return dict(json.loads(listed.stdout))


@pytest.mark.slow
def test_dagster_definitions_validate_loads_the_workspace(tmp_path: Path) -> None:
    validated = _run(
        str(VENV_BIN / "dagster"), "definitions", "validate", "-w", "workspace.yaml", home=tmp_path
    )
    output = validated.stdout + validated.stderr
    assert validated.returncode == 0, output[-3000:]
    assert f"Validation successful for code location {PROJECT['code_location_name']}." in output


@pytest.mark.slow
def test_the_workspace_serves_what_dg_dev_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget

    listing = _dg_listing(tmp_path)
    monkeypatch.chdir(ROOT)
    with (
        dg.instance_for_test() as instance,
        WorkspaceProcessContext(instance, WorkspaceFileTarget([str(ROOT / "workspace.yaml")])) as process,
    ):
        workspace = process.create_request_context()
        assert workspace.code_location_names == [PROJECT["code_location_name"]]
        errors = workspace.get_code_location_error(PROJECT["code_location_name"])
        assert errors is None, errors
        location = workspace.get_code_location(PROJECT["code_location_name"])
        (repository,) = location.get_repositories().values()
        assets = {"/".join(node.asset_key.path) for node in repository.get_asset_node_snaps()}
        jobs = {job.name for job in repository.get_all_jobs() if not job.name.startswith("__")}
        checks = {c.key.to_user_string() for c in repository.get_asset_check_node_snaps()}
    assert assets == {asset["asset_key"] for asset in listing["assets"]}
    assert jobs == {job["name"] for job in listing["jobs"]}
    assert checks == {check["key"] for check in listing["asset_checks"]}
