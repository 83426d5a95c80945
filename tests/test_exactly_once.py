"""Exactly once: a writer killed (SIGKILL) at any commit step, then re-run, equals one clean run.

The table aggregates with `sum` and keeps a lookup changelog, so a double-applied write would show as
doubled sums and repeated changelog entries; a lost one as missing sums.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.faults import CRASH_POINT

COLUMNS = [("k", "int"), ("name", "string"), ("total", "bigint"), ("seq", "int")]
OPTIONS = {
    "merge-engine": "aggregation",
    "fields.total.aggregate-function": "sum",
    "fields.name.aggregate-function": "last_non_null_value",
    "sequence.field": "seq",
    "changelog-producer": "lookup",
}
DDL = "k int, name string, total bigint, seq int, _row_kind string"
BATCHES: list[list[list[Any]]] = [
    [[1, "a", 10, 1, "+I"], [2, "b", 5, 1, "+I"], [3, "c", 7, 1, "+I"]],
    [[1, None, 3, 2, "+I"], [2, "b2", -5, 2, "+U"], [3, "c", 7, 1, "-U"], [4, "d", 1, 1, "+I"]],
    [[4, None, 2, 2, "+I"], [1, "a3", 100, 3, "+I"]],
]
# By hand from BATCHES: k1 10+3+100; k2 5 + (-5); k3 7 retracted by -U(7), and retracting the
# non-NULL name of last_non_null_value clears it (docs/semantics.md 1.6), and so does the retraction of its
# sequence field, which aggregates as last_value (A1, as Paimon does); k4 1+2 with the newer
# name kept.
EXPECTED_ROWS = [(1, "a3", 113, 3), (2, "b2", 0, 2), (3, None, 0, None), (4, "d", 3, 2)]
CRASH_POINTS = ["before-changelog-commit", "after-changelog-commit", "after-table-commit"]

WRITER = textwrap.dedent(
    """
    import json, sys
    from wide_assets import WideTable, get_spark
    path, ddl, rows, version = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    spark = get_spark()
    WideTable.open(spark, path).write(spark.createDataFrame([tuple(r) for r in rows], ddl), txn=("test", version))
    """
)


def write(spark: Any, table: WideTable, batch_number: int) -> Any:
    rows = [tuple(r) for r in BATCHES[batch_number]]
    return table.write(spark.createDataFrame(rows, DDL), txn=("test", batch_number + 1))


def write_in_killed_process(path: str | Path, batch_number: int, crash_point: str) -> None:
    env = {**os.environ, CRASH_POINT: crash_point}
    args = [
        sys.executable,
        "-c",
        WRITER,
        str(path),
        DDL,
        json.dumps(BATCHES[batch_number]),
        str(batch_number + 1),
    ]
    finished = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert finished.returncode == -signal.SIGKILL, finished.stderr[-2000:]


def snapshot(table: WideTable) -> tuple[list[Any], list[Any]]:
    rows = sorted(tuple(r) for r in table.read().collect())
    changelog = sorted(tuple(r) for r in table.changelog().collect())
    return rows, changelog


def clean_run_at(spark: Any, path: str | Path) -> tuple[list[Any], list[Any]]:
    """Every batch written once, without faults, into a new table at `path`."""
    table = WideTable.create(spark, path, COLUMNS, ["k"], OPTIONS)
    for batch_number in range(len(BATCHES)):
        write(spark, table, batch_number)
    return snapshot(table)


def killed_then_rerun_at(spark: Any, path: str | Path, crash_point: str) -> tuple[list[Any], list[Any]]:
    """Batch 1's writer killed at `crash_point` and re-run, between clean writes of batches 0 and 2."""
    table = WideTable.create(spark, path, COLUMNS, ["k"], OPTIONS)
    write(spark, table, 0)
    write_in_killed_process(path, 1, crash_point)
    result = write(spark, WideTable.open(spark, path), 1)
    assert result.skipped == (crash_point != "before-changelog-commit")
    write(spark, table, 2)
    return snapshot(table)


@pytest.fixture(scope="module")
def clean_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], list[Any]]:
    return clean_run_at(spark, tmp_path_factory.mktemp("clean") / "t")


def test_clean_run_is_the_hand_computed_table(clean_run: tuple[list[Any], list[Any]]) -> None:
    rows, _ = clean_run
    assert rows == EXPECTED_ROWS


@pytest.mark.parametrize("crash_point", CRASH_POINTS)
def test_killed_write_then_rerun_equals_clean_run(
    spark: Any, tmp_path: Path, crash_point: str, clean_run: tuple[list[Any], list[Any]]
) -> None:
    assert killed_then_rerun_at(spark, tmp_path / "t", crash_point) == clean_run


def test_recover_finishes_a_logged_commit_without_a_new_write(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = WideTable.create(spark, path, COLUMNS, ["k"], OPTIONS)
    write_in_killed_process(path, 0, "after-changelog-commit")
    expected = [(1, "a", 10, 1), (2, "b", 5, 1), (3, "c", 7, 1)]
    assert spark.read.format("delta").load(str(path)).count() == 0
    assert table.pending_commits() == [1]
    # The logged commit is already visible: read() is the Delta table plus pending commits.
    assert sorted(tuple(r) for r in table.read().collect()) == expected
    assert table.recover() is True
    assert table.pending_commits() == []
    assert sorted(tuple(r) for r in spark.read.format("delta").load(str(path)).collect()) == expected
    assert table.recover() is False


def test_replayed_writes_are_skipped(
    spark: Any, tmp_path: Path, clean_run: tuple[list[Any], list[Any]]
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], OPTIONS)
    for batch_number in range(len(BATCHES)):
        write(spark, table, batch_number)
        version = table.version
        again = write(spark, table, batch_number)
        assert again.skipped and table.version == version
    assert snapshot(table) == clean_run
