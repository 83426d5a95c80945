"""Every public Paimon/Fluss conformance case, through the public API and on classic JVM Spark.

`test_case_through_wide_table` writes real Delta tables on Sail with `WideTable`; the JVM test runs the
same merge logic (validation, fold, changelog, apply) on DataFrames with classic Spark `local[2]`.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from conformance import Write, check_case, columns, load_cases, rows_as_json, table_options, write_frame
from memory_table import MemoryTable

from wide_assets import WideTable

CASES = load_cases()
# Cases of engines or functions that are not implemented yet, by name (empty: all pass).
EXPECTED_TO_FAIL: set[str] = set()


def case_params() -> list[Any]:
    return [
        pytest.param(
            case,
            id=case["name"],
            marks=[pytest.mark.xfail(strict=True)] if case["name"] in EXPECTED_TO_FAIL else [],
        )
        for case in CASES
    ]


def changelog_entries(
    rows: list[Any], case: dict[str, Any], batch_of_commit: dict[int, int]
) -> list[dict[str, Any]]:
    ordered = sorted(rows, key=lambda r: (r["_commit"], r["_offset"]))
    return [
        {"kind": r["_row_kind"], "row": rows_as_json([r], case)[0], "batch": batch_of_commit[r["_commit"]]}
        for r in ordered
    ]


def expect_error_or_run(case: dict[str, Any], run: Any) -> None:
    if case.get("expected_error"):
        with pytest.raises(Exception) as raised:
            run(case, [])
            check_case(case, run)
        assert case["expected_error"] in str(raised.value)
        return
    check_case(case, run)


@pytest.mark.parametrize("case", case_params())
def test_case_through_wide_table(spark: Any, tmp_path: Path, case: dict[str, Any]) -> None:
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


@pytest.mark.jvm
@pytest.mark.parametrize("case", case_params())
def test_case_merge_logic_on_jvm(jvm_spark: Any, case: dict[str, Any]) -> None:
    def run(case: dict[str, Any], writes: list[Write]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        table = MemoryTable(jvm_spark, columns(case), case["primary_key"], table_options(case))
        for write in writes:
            table.write(write_frame(jvm_spark, case, write), write.target_columns)
        batch_of_commit = {i: w.batch for i, w in enumerate(writes, start=1)}
        return rows_as_json(table.read().collect(), case), changelog_entries(
            table.entries, case, batch_of_commit
        )

    expect_error_or_run(case, run)
