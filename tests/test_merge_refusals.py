"""A write the table's merge must refuse fails with upstream's text, and commits nothing, in every engine
mode: this module runs on the default engine, and test_distributed.py runs it again in Sail's
local-cluster mode (where a task's error was replaced by its retry's, "a different attempt has
already produced job output") and over a separate Spark Connect server.

Each refusal is tried several times in Sail's local-cluster mode, where the lost text showed in about
half the writes; elsewhere a task runs once, and a second try shows a refused write leaves the table
able to refuse again (each JVM write takes seconds: test_jvm_delta.py and test_jvm_connect.py run this
module too)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.errors import MergeError
from wide_assets.merge.first_row import RETRACT_REJECTED
from wide_assets.merge.partial_update import DELETE_REJECTED

TRIES = 6 if os.environ.get("SAIL_MODE") == "local-cluster" else 2
DDL = "k int, a string, _row_kind string"


@pytest.mark.parametrize(
    ("options", "refused_kind", "message"),
    [
        ({"merge-engine": "partial-update"}, "-D", DELETE_REJECTED),
        ({"merge-engine": "first-row"}, "-U", RETRACT_REJECTED),
    ],
    ids=["partial-update-delete", "first-row-retraction"],
)
def test_a_refused_record_fails_the_write_with_upstreams_text(
    spark: Any, tmp_path: Path, options: dict[str, str], refused_kind: str, message: str
) -> None:
    table = WideTable.create(spark, tmp_path / "t", [("k", "int"), ("a", "string")], ["k"], options)
    table.write(spark.createDataFrame([(1, "x", "+I"), (2, "y", "+I")], DDL))
    for attempt in range(TRIES):
        with pytest.raises(MergeError) as raised:
            table.write(spark.createDataFrame([(1, "x", refused_kind), (2, f"z{attempt}", "+I")], DDL))
        assert str(raised.value) == message
    assert sorted(tuple(r) for r in table.read().collect()) == [(1, "x"), (2, "y")]


def test_an_error_raised_inside_the_merge_keeps_its_text(spark: Any, tmp_path: Path) -> None:
    """An error only the merge's own tasks can find (here Paimon's sum overflowing) keeps its text too:
    the embedded server runs each task once (`SAIL_CLUSTER__TASK_MAX_ATTEMPTS`), so no retry replaces it."""
    options = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}
    table = WideTable.create(spark, tmp_path / "t", [("k", "int"), ("v", "int")], ["k"], options)
    table.write(
        spark.createDataFrame([(1, 2147483647, "+I"), (2, 1, "+I")], "k int, v int, _row_kind string")
    )
    for attempt in range(TRIES):
        with pytest.raises(MergeError) as raised:
            table.write(
                spark.createDataFrame([(1, 1, "+I"), (2, attempt, "+I")], "k int, v int, _row_kind string")
            )
        assert str(raised.value) == "int overflow: 2147483647 + 1"
    assert sorted(tuple(r) for r in table.read().collect()) == [(1, 2147483647), (2, 1)]
