"""Several writer processes on one table at once, with no lock between them (the commit protocol
alone keeps them correct): nothing lost, nothing applied twice, commit numbers unique and dense."""

from __future__ import annotations

import random
from pathlib import Path

from bench.multi_writer import KINDS, run_trials, workers


def test_racing_writers_and_compactions_on_local_disk_without_a_lock(tmp_path: Path) -> None:
    with workers(str(tmp_path), tmp_path) as pool:
        trials = run_trials(str(tmp_path), pool, 20, random.Random(11))
    assert [t.problems for t in trials] == [()] * 20, trials
    assert {t.kind for t in trials} == set(KINDS)
    assert {t.writers for t in trials} == {2, 3, 4}
    assert sum(t.conflicts for t in trials) > 0, "the writers really raced"
