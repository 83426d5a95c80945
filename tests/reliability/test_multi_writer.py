"""Several writer processes on one table at once, with no lock between them (the commit protocol
alone keeps them correct), on local disk and on a real S3 server: nothing lost, nothing applied
twice, commit numbers unique and dense."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from servers import S3Endpoint

from bench.multi_writer import KINDS, run_trials, workers

TRIALS = 20
# On S3 the trials exercise the same protocol through the object store's put-if-absent, at more than
# twice the CPU of a trial on local disk: CI runs each kind twice there (`python -m bench.multi_writer
# --root s3://...` runs as many as wanted).
S3_TRIALS = 8


def check_trials(root: str, logs: Path, seed: int, count: int = TRIALS) -> None:
    with workers(root, logs) as pool:
        trials = run_trials(root, pool, count, random.Random(seed))
    assert [t.problems for t in trials] == [()] * count, trials
    assert {t.kind for t in trials} == set(KINDS)
    assert {t.writers for t in trials} == {2, 3, 4}
    assert sum(t.conflicts for t in trials) > 0, "the writers really raced"


def test_racing_writers_and_compactions_on_local_disk_without_a_lock(tmp_path: Path) -> None:
    check_trials(str(tmp_path), tmp_path, seed=11)


@pytest.mark.slow
def test_racing_writers_and_compactions_on_s3(s3: S3Endpoint, tmp_path: Path) -> None:
    # The workers inherit the AWS_* variables the fixture set in this process.
    check_trials(s3.uri("multi-writer"), tmp_path, seed=13, count=S3_TRIALS)
