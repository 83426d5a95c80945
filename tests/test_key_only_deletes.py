"""A `-D` that carries only the key, under each table's options: removed where Paimon and Fluss remove
the row, kept (counted in `WriteResult.key_only_deletes_ignored`, with a note naming the option that
would remove it) where they ignore it, and refused with their words where they refuse it.

Each expectation is worked out by hand from the upstream source named next to it (apache/paimon at
5dacde516b, apache/fluss at 545c553902, the versions docs/semantics.md describes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.errors import InvalidInputError

COLUMNS = [("k", "int"), ("a", "string"), ("ga", "int"), ("b", "bigint"), ("gb", "int")]
DDL = "k int, a string, ga int, b bigint, gb int"
STORED = (1, "x", 5, 10, 5)
GROUPS = {
    "merge-engine": "partial-update",
    "fields.ga.sequence-group": "a",
    "fields.gb.sequence-group": "b",
}
KEY_ONLY_DELETE = ([(1, "-D")], "k int, _row_kind string")

# (options, rows after the stored row and a key-only -D, whether the -D was ignored, note fragment)
CASES = [
    # PartialUpdateMergeFunction.retractWithSequenceGroup: isEmptySequenceGroup skips each group whose
    # sequence fields are all NULL, ungrouped fields are never retracted: nothing changes.
    pytest.param(GROUPS, [STORED], "list a group's sequence field in", id="paimon-sequence-groups"),
    # Same, with remove-record-on-sequence-group: only a -D whose `ga` is >= the stored one removes.
    pytest.param(
        {**GROUPS, "partial-update.remove-record-on-sequence-group": "ga"},
        [STORED],
        "send the -D with ga set",
        id="paimon-remove-on-sequence-group",
    ),
    # PartialUpdateMergeFunction.add: removeRecordOnDelete, a DELETE resets the row (currentDeleteRow).
    pytest.param(
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
        [],
        None,
        id="paimon-remove-on-delete",
    ),
    # AggregateMergeFunction.add: without removeRecordOnDelete a DELETE is retracted field by field;
    # FieldSumAgg.retract(acc, null) = acc and last_non_null_value's retract(acc, null) = acc.
    pytest.param(
        {"merge-engine": "aggregation", "fields.b.aggregate-function": "sum"},
        [STORED],
        "'aggregation.remove-record-on-delete' = 'true'",
        id="paimon-aggregation",
    ),
    # AggregateMergeFunction.add: removeRecordOnDelete and DELETE -> currentDeleteRow.
    pytest.param(
        {
            "merge-engine": "aggregation",
            "fields.b.aggregate-function": "sum",
            "aggregation.remove-record-on-delete": "true",
        },
        [],
        None,
        id="paimon-aggregation-remove-on-delete",
    ),
    # DeduplicateMergeFunction: the last record wins; a DELETE result removes the key.
    pytest.param({}, [], None, id="paimon-deduplicate"),
    # MergeFunction inputs are filtered by ignore-delete before the merge (KeyValue row kind filter).
    pytest.param({"ignore-delete": "true"}, [STORED], "'ignore-delete'", id="paimon-ignore-delete"),
    # KvTablet.processDeletion: DeleteBehavior.IGNORE returns before looking the key up;
    # FirstRowRowMerger/VersionedRowMerger default to IGNORE and reject ALLOW.
    pytest.param(
        {"table.merge-engine": "first_row"},
        [STORED],
        "no option makes a delete remove a row",
        id="fluss-first-row",
    ),
    pytest.param(
        {"table.merge-engine": "versioned", "table.merge-engine.versioned.ver-column": "ga"},
        [STORED],
        "no option makes a delete remove a row",
        id="fluss-versioned",
    ),
    # AggregateRowMerger: IGNORE by default; with ALLOW, delete() of a full row returns null.
    pytest.param(
        {"table.merge-engine": "aggregation"}, [STORED], "set it to 'allow'", id="fluss-aggregation-ignore"
    ),
    pytest.param(
        {"table.merge-engine": "aggregation", "table.delete.behavior": "allow"},
        [],
        None,
        id="fluss-aggregation-allow",
    ),
    # DefaultRowMerger: ALLOW by default, delete() returns null.
    pytest.param({"table.delete.behavior": "allow"}, [], None, id="fluss-last-row"),
]


def rows(table: WideTable) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.read().collect())


@pytest.mark.parametrize(("options", "expected", "note"), CASES)
def test_key_only_delete(
    spark: Any, tmp_path: Path, options: dict[str, str], expected: list[tuple[Any, ...]], note: str | None
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    table.write(spark.createDataFrame([STORED], DDL))
    result = table.write(spark.createDataFrame(*KEY_ONLY_DELETE))
    assert rows(table) == expected
    if note is None:
        assert result.key_only_deletes_ignored == 0 and result.note is None
    else:
        assert result.key_only_deletes_ignored == 1
        assert result.note is not None and note in result.note
        assert result.note.startswith("1 -D record(s) of commit 2 carry only the key and removed no row: ")


def test_a_delete_carrying_the_groups_sequence_removes_the_row(spark: Any, tmp_path: Path) -> None:
    """P11 / retractWithSequenceGroup: a DELETE whose `ga` (in remove-record-on-sequence-group) is >= the
    stored one resets the row; one with an older `ga` only clears nothing and keeps it."""
    options = {**GROUPS, "partial-update.remove-record-on-sequence-group": "ga"}
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    table.write(spark.createDataFrame([STORED, (2, "y", 5, 20, 5)], DDL))
    result = table.write(
        spark.createDataFrame([(1, 6, "-D"), (2, 4, "-D")], "k int, ga int, _row_kind string")
    )
    assert rows(table) == [(2, "y", 5, 20, 5)]
    assert result.key_only_deletes_ignored == 0 and result.note is None


def test_an_ignored_key_only_delete_is_logged(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], GROUPS)
    table.write(spark.createDataFrame([STORED], DDL))
    with caplog.at_level("WARNING", logger="wide_assets.table.protocol"):
        result = table.write(spark.createDataFrame(*KEY_ONLY_DELETE), txn=("deletes", 1))
    assert [r.getMessage() for r in caplog.records] == [f"{table.path}: {result.note}"]
    # The count is kept in the commit log: a repeated write reports it again, without logging.
    caplog.clear()
    again = table.write(spark.createDataFrame(*KEY_ONLY_DELETE), txn=("deletes", 1))
    assert again.skipped and again.key_only_deletes_ignored == 1 and again.note == result.note
    assert caplog.records == []


def test_fluss_whole_row_engines_refuse_key_only_upserts_and_disabled_deletes(
    spark: Any, tmp_path: Path
) -> None:
    # FirstRowRowMerger.configureTargetColumns: target columns -> "Partial update is not supported".
    first_row = WideTable.create(spark, tmp_path / "f", COLUMNS, ["k"], {"table.merge-engine": "first_row"})
    with pytest.raises(
        InvalidInputError, match="Partial update is not supported for the first_row merge engine"
    ):
        first_row.write(spark.createDataFrame([(1, "+I"), (2, "-D")], "k int, _row_kind string"))
    # KvTablet.processDeletion: DeleteBehavior.DISABLE throws DeletionDisabledException.
    disabled = WideTable.create(
        spark,
        tmp_path / "d",
        COLUMNS,
        ["k"],
        {
            "table.merge-engine": "versioned",
            "table.merge-engine.versioned.ver-column": "ga",
            "table.delete.behavior": "disable",
        },
    )
    with pytest.raises(InvalidInputError, match="Delete operations are disabled for this table"):
        disabled.write(spark.createDataFrame(*KEY_ONLY_DELETE))
    assert first_row.last_commit == disabled.last_commit == 0
