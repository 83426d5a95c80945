"""The convergence check's oracle states docs/semantics.md: it passes a correctly merged table where an
older update after a delete brings the row back (P11) and where a column is a `sum`, and fails a table
merged otherwise.

Oracle of the oracle: the rows written here by hand from the landed records.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from test_run_order import OPTIONS, ORDERS, PAYMENTS
from test_run_order import spec as declared_by

from wide_assets.pipelines import WideTableSpec
from wide_assets.pipelines.apply import apply_sources, open_wide_table
from wide_assets.pipelines.checks import keyed_diff
from wide_assets.pipelines.convergence import applied_in_commits, convergence_problem, expected_rows
from wide_assets.pipelines.ingest import ingest, landed_files
from wide_assets.table import WideTable


def t(minute: int) -> datetime:
    return datetime(2026, 1, 1, 10, minute)


# Two runs. Order 1 is deleted in run 1; in run 2 an older status update and an older payment arrive:
# each brings the row back with only what arrived after the delete (P11). Order 2's payments are
# summed, a retracted one subtracted (-D of a `sum` column, P10). Order 3 is deleted and stays so.
RUNS = [
    {
        "orders": ["+I,1,new,10:01", "+I,2,new,10:01", "+I,3,new,10:01", "-D,1,new,10:05", "-D,3,new,10:09"],
        "payments": ["+I,1,10,10:02", "+I,2,7,10:02", "+I,2,5,10:03", "+I,3,4,10:02"],
    },
    {
        "orders": ["+U,1,late,10:03"],
        "payments": ["+I,1,20,10:04", "-D,2,7,10:06"],
    },
]
EXPECTED = {
    (1, "late", t(3), 20, t(4)),
    (2, "new", t(1), 5, t(6)),
}
SUMMED = {**OPTIONS, "fields.amount.aggregate-function": "sum"}


def spec(options: dict[str, str]) -> WideTableSpec:
    return declared_by((ORDERS, PAYMENTS), options)


def merged(spark: Any, tmp_path: Path, declared: WideTableSpec) -> tuple[WideTable, dict[str, Any]]:
    """The table after both runs, and each source's applied records with their commits."""
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    table = open_wide_table(spark, declared, str(lake / declared.name))
    paths = {s.name: str(lake / s.name) for s in declared.sources}
    for number, run in enumerate(RUNS, start=1):
        for name, lines in run.items():
            column = "status" if name == "orders" else "amount"
            (landing / name).mkdir(parents=True, exist_ok=True)
            text = "\n".join(
                [
                    f"_row_kind,order_id,{column},ts",
                    *(f"{line.replace(',10:', ',2026-01-01 10:')}:00" for line in lines),
                ]
            )
            (landing / name / f"{name}_{number}.csv").write_text(text + "\n", "utf-8")
        for source in declared.sources:
            ingest(spark, source, landed_files(landing, source), paths[source.name])
        apply_sources(spark, declared, table, paths)
    applied = {
        name: applied_in_commits(spark, table, name, spark.read.format("delta").load(path))
        for name, path in paths.items()
    }
    return table, applied


def verdict(spark: Any, declared: WideTableSpec, table: WideTable, applied: dict[str, Any]) -> Any:
    expected = expected_rows(spark, declared, applied)
    return keyed_diff(spark, table.read(), expected, declared.primary_key, declared.value_columns)


def test_passes_a_correct_table_with_a_row_back_after_its_delete_and_a_sum(
    spark: Any, tmp_path: Path
) -> None:
    declared = spec(SUMMED)
    assert convergence_problem(declared) is None
    table, applied = merged(spark, tmp_path, declared)
    assert {tuple(r) for r in table.read().collect()} == EXPECTED
    diff = verdict(spark, declared, table, applied)
    assert diff.passed, diff.examples
    assert diff.rows == len(EXPECTED)


def test_fails_a_table_changed_behind_the_engine(spark: Any, tmp_path: Path) -> None:
    declared = spec(SUMMED)
    table, applied = merged(spark, tmp_path, declared)
    DeltaTable(table.path).update(predicate="order_id = 2", updates={"amount": "12"})
    diff = verdict(spark, declared, table, applied)
    assert not diff.passed
    assert (dict(diff.differing), diff.rows, diff.missing, diff.unexpected) == (
        {"amount": 1},
        len(EXPECTED),
        0,
        0,
    )


@pytest.mark.parametrize(
    ("options", "differing"),
    [
        # Without the sum the last payment wins: order 2 holds NULL (the retraction's) instead of 5.
        (OPTIONS, ({"amount": 1}, 0)),
        # Without P11 the deletes only clear the orders group: order 3 stays, and order 1 keeps its
        # first payment and ignores the status update older than its delete (P8).
        (
            {k: v for k, v in SUMMED.items() if not k.startswith("partial-update.")},
            ({"status": 1, "order_ts": 1, "amount": 1}, 1),
        ),
    ],
)
def test_fails_a_table_whose_options_merge_otherwise(
    spark: Any, tmp_path: Path, options: dict[str, str], differing: tuple[dict[str, int], int]
) -> None:
    merged_by, applied = merged(spark, tmp_path, spec(options))
    # Judged against the declaration with the summed column and P11.
    diff = verdict(spark, spec(SUMMED), merged_by, applied)
    assert not diff.passed
    assert (dict(diff.differing), diff.unexpected) == differing
