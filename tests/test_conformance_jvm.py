"""Every public Paimon/Fluss conformance case through the merge logic (validation, fold, changelog,
apply) on DataFrames with classic JVM Spark `local[2]`: the merge is engine-neutral SQL.

A file of its own so that a parallel run (`make test`) gives the JVM its own worker.
"""

from __future__ import annotations

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
from memory_table import MemoryTable


@pytest.mark.jvm
@pytest.mark.parametrize("case", case_params())
def test_case_merge_logic_on_jvm(jvm_spark: Any, case: dict[str, Any]) -> None:
    def run(case: dict[str, Any], writes: list[Write]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        table = MemoryTable(jvm_spark, columns(case), case["primary_key"], table_options(case))
        for write in writes:
            targets = None if write.target_columns is None else list(write.target_columns)
            table.write(write_frame(jvm_spark, case, write), targets)
        batch_of_commit = {i: w.batch for i, w in enumerate(writes, start=1)}
        return rows_as_json(table.read().collect(), case), changelog_entries(
            table.entries, case, batch_of_commit
        )

    expect_error_or_run(case, run)
