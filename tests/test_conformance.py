"""Every public Paimon/Fluss conformance case through the public API: real Delta tables on Sail.

The same cases run on classic JVM Spark with delta-spark in `test_conformance_jvm.py`.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from conformance import (
    Write,
    case_params,
    changelog_entries,
    columns,
    expect_error_or_run,
    rows_as_json,
    table_options,
    write_frame,
)

from wide_assets import WideTable


@pytest.mark.parametrize("case", case_params())
def test_case_through_wide_table(spark: Any, tmp_path: Path, case: dict[str, Any]) -> None:
    run_case(spark, tmp_path, case)


def run_case(spark: Any, tmp_path: Path, case: dict[str, Any]) -> None:
    """Each of the case's tables written through `WideTable` on `spark`, against its expected rows,
    changelog or error."""
    counter = itertools.count()

    def run(case: dict[str, Any], writes: list[Write]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        table = WideTable.create(
            spark, tmp_path / f"t{next(counter)}", columns(case), case["primary_key"], table_options(case)
        )
        batch_of_commit = {}
        for write in writes:
            result = table.write(write_frame(spark, case, write), target_columns=write.target_columns)
            batch_of_commit[result.commit] = write.batch
        rows = rows_as_json(table.read().collect(), case)
        entries = []
        if case.get("expected_changelog") is not None:
            entries = changelog_entries(table.changelog().collect(), case, batch_of_commit)
        return rows, entries

    expect_error_or_run(case, run)
