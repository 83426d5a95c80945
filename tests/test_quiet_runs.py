"""A process that used the embedded Sail engine exits without Sail's shutdown noise on stderr, and a
RUST_LOG the user sets still decides what Sail logs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Several requests, as every job makes: each schedules one idle-session probe that exit aborts.
PROGRAM = """
from wide_assets import get_spark
spark = get_spark()
for n in range(3):
    assert spark.range(n + 1).count() == n + 1
print("done")
"""
SHUTDOWN_WARNING = "aborting"


def run(environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=environ, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "done" in done.stdout, done.stderr[-3000:]
    return done


@pytest.fixture
def environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "WIDE_ASSETS_ENGINE")}


def test_a_run_on_sail_ends_without_the_actor_shutdown_warning(environ: dict[str, str]) -> None:
    assert SHUTDOWN_WARNING not in run(environ).stderr


def test_the_users_rust_log_still_decides(environ: dict[str, str]) -> None:
    # With Sail's own WARN level the warning is there: what the first test checks can fail.
    assert SHUTDOWN_WARNING in run({**environ, "RUST_LOG": "warn"}).stderr
