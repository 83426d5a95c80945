"""`make` re-creates a `.venv` built by another Python than the one asked for, and reuses a matching one.

Runs the project's Makefile in a scratch directory with stand-in interpreters (scripts that report a
version and record what they are asked to do), so nothing is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A stand-in interpreter: answers the version query, makes a venv whose python is a copy of itself,
# and records any other call (the pip installs) in calls.log next to the project.
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = "-c" ]; then echo "{version}"; exit 0; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; exit 0; fi
echo "python{version} $*" >> calls.log
"""

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    for version in ("3.11", "3.13"):
        fake = tmp_path / f"python{version}"
        fake.write_text(FAKE_PYTHON.format(version=version))
        fake.chmod(0o755)
    return tmp_path


def make_venv(project: Path, version: str) -> str:
    done = subprocess.run(
        ["make", f"PYTHON={project / f'python{version}'}", "venv"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def venv_version(project: Path) -> str:
    return subprocess.run(
        [project / ".venv" / "bin" / "python", "-c", "version"], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_venv_of_another_python_is_rebuilt_and_a_matching_one_reused(project: Path) -> None:
    make_venv(project, "3.13")
    assert venv_version(project) == "3.13"
    assert "python3.13 -m pip install -e .[dev]" in (project / "calls.log").read_text()

    rebuilt = make_venv(project, "3.11")
    assert "creating .venv" in rebuilt
    assert venv_version(project) == "3.11"
    assert sorted(p.name for p in (project / ".venv").glob(".installed*")) == [".installed-python3.11"]
    assert "python3.11 -m pip install -e .[dev]" in (project / "calls.log").read_text()

    (project / "calls.log").unlink()
    assert "Nothing to be done" in make_venv(project, "3.11")
    assert not (project / "calls.log").exists()


def test_a_venv_whose_interpreter_is_gone_is_rebuilt(project: Path) -> None:
    make_venv(project, "3.11")
    (project / ".venv" / "bin" / "python").unlink()
    assert "creating .venv" in make_venv(project, "3.11")
    assert venv_version(project) == "3.11"
