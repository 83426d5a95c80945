"""SIGKILLed product_360 runs, re-run, equal a clean run and the oracle; replays change nothing.

Reduced counts of `python -m bench.reliability` (see its module doc); the full run's figures are in
the README's reliability section.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from bench.product_360_oracle import Row
from bench.reliability import CrashTrial, LakeState, crash_trials, replays


@pytest.fixture(scope="module")
def crashed(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[CrashTrial], LakeState, set[Row]]:
    work = tmp_path_factory.mktemp("crashes")
    # Even trials are killed at a random time, odd ones at a random named checkpoint.
    trials, clean, expected = crash_trials(spark, work, 2, random.Random(3), progress=print)
    return work, trials, clean, expected


def test_killed_runs_rerun_to_a_clean_runs_state(
    crashed: tuple[Path, list[CrashTrial], LakeState, set[Row]],
) -> None:
    _, trials, clean, expected = crashed
    assert clean.rows == expected and clean.pending == () and len(clean.commits) == 5
    assert sum(t.killed for t in trials) == 2 and trials[1].killed, trials
    assert [t.problems for t in trials] == [()] * len(trials), trials


def test_replays_give_identical_results(
    spark: Any, crashed: tuple[Path, list[CrashTrial], LakeState, set[Row]]
) -> None:
    work, _, clean, expected = crashed
    results = replays(spark, work, work / "data", clean, expected)
    assert {r.name: r.problems for r in results} == {r.name: () for r in results}
    assert len(results) == 5
