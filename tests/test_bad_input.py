"""Bad definitions fail at `create`; bad changes fail before anything is committed, naming the problem."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.batch import _spelled
from wide_assets.errors import InvalidInputError, InvalidOptionError, MergeError
from wide_assets.merge.first_row import RETRACT_REJECTED
from wide_assets.merge.partial_update import DELETE_REJECTED

COLUMNS = [("k", "int"), ("a", "int"), ("b", "string"), ("seq", "int")]


def state(table: WideTable) -> tuple[int, int, list[Any]]:
    return table.version, table.last_commit, sorted(tuple(r) for r in table.read().collect())


@pytest.fixture
def seeded(spark: Any, tmp_path: Path) -> WideTable:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], {"merge-engine": "partial-update"})
    table.write(spark.createDataFrame([(1, 10, "x", 1)], "k int, a int, b string, seq int"))
    return table


BAD_CHANGES = [
    ("NULL primary key k", "k int, a int", [(None, 1)], None),
    ("unknown _row_kind", "k int, a int, _row_kind string", [(2, 1, "+X")], None),
    ("not columns of the table", "k int, a int, zzz string", [(2, 1, "?")], None),
    ("cannot be cast to int in column a", "k int, a string", [(2, "twelve")], None),
    ("must contain every primary key column", "a int", [(1,)], None),
    (
        "The target write columns [a] must contain the primary key columns [k].",
        "k int, a int",
        [(2, 1)],
        ["a"],
    ),
    ("Target columns ['b'] are missing", "k int, a int", [(2, 1)], ["k", "b"]),
    ("duplicate _offset", "k int, a int, _offset bigint", [(2, 1, 7), (3, 1, 7)], None),
    ("NULL _offset", "k int, a int, _offset bigint", [(2, 1, None)], None),
    ("do not fit the table's column types", "k int, a array<int>", [(2, [1])], None),
]


@pytest.mark.parametrize(("message", "ddl", "rows", "targets"), BAD_CHANGES, ids=[c[0] for c in BAD_CHANGES])
def test_bad_changes_are_rejected_before_commit(
    spark: Any, seeded: WideTable, message: str, ddl: str, rows: list[Any], targets: list[str] | None
) -> None:
    before = state(seeded)
    changelog_version = seeded.commits()
    with pytest.raises(InvalidInputError, match=None) as raised:
        seeded.write(spark.createDataFrame(rows, ddl), target_columns=targets)
    assert message in str(raised.value)
    assert state(seeded) == before
    assert seeded.commits() == changelog_version


def test_error_reports_counts_and_examples(spark: Any, seeded: WideTable) -> None:
    rows = [(2, "1"), (3, "x"), (None, "y")]
    with pytest.raises(InvalidInputError) as raised:
        seeded.write(spark.createDataFrame(rows, "k int, a string"))
    text = str(raised.value)
    assert "1 record(s) with NULL primary key k" in text
    assert "2 record(s) with value that cannot be cast to int in column a (e.g. ['x', 'y'])" in text


# The whole message, as Paimon words it (multi-line ones included).
MERGE_FAILURES = [
    ({"merge-engine": "partial-update"}, [(1, 5, "y", 2, "-D")], DELETE_REJECTED),
    (
        {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"},
        [(1, 2147483647, "y", 2, "+I")],
        "int overflow: 10 + 2147483647",  # FieldSumAgg: the stored 10, then the input
    ),
    (
        {"merge-engine": "aggregation", "fields.a.aggregate-function": "max"},
        [(1, 3, "y", 2, "-U")],
        "Aggregate function 'max' does not support retraction, If you allow this function to ignore retraction "
        "messages, you can configure 'fields.${field_name}.ignore-retract'='true'.",
    ),
    ({"merge-engine": "first-row"}, [(1, 3, "y", 2, "-D")], RETRACT_REJECTED),
]


@pytest.mark.parametrize(
    ("options", "rows", "message"), MERGE_FAILURES, ids=[m[2][:40] for m in MERGE_FAILURES]
)
def test_unmergeable_records_fail_without_commit(
    spark: Any, tmp_path: Path, options: dict[str, str], rows: list[Any], message: str
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    table.write(spark.createDataFrame([(1, 10, "x", 1)], "k int, a int, b string, seq int"))
    before = state(table)
    with pytest.raises(MergeError) as raised:
        table.write(spark.createDataFrame(rows, "k int, a int, b string, seq int, _row_kind string"))
    assert str(raised.value) == message
    assert state(table) == before


def test_fluss_disabled_deletes_and_rejected_partial_writes(spark: Any, tmp_path: Path) -> None:
    disabled = WideTable.create(spark, tmp_path / "d", COLUMNS, ["k"], {"table.delete.behavior": "disable"})
    with pytest.raises(InvalidInputError, match="Delete operations are disabled for this table"):
        disabled.write(spark.createDataFrame([(1, "-D")], "k int, _row_kind string"), target_columns=None)
    first_row = WideTable.create(spark, tmp_path / "f", COLUMNS, ["k"], {"table.merge-engine": "first_row"})
    with pytest.raises(
        InvalidInputError, match="Partial update is not supported for the first_row merge engine"
    ):
        first_row.write(spark.createDataFrame([(1, 2)], "k int, a int"))
    assert disabled.last_commit == first_row.last_commit == 0


BAD_DEFINITIONS = [
    ({"merge-engine": "partial-update", "table.delete.behavior": "allow"}, "Options mix the Paimon dialect"),
    ({"merge-engine": "partial_update"}, "Could not parse value 'partial_update' for key 'merge-engine'."),
    (
        {"merge-engine": "partial-update", "fields.zz.sequence-group": "a"},
        "Field zz can not be found in table schema.",
    ),
    (
        {"merge-engine": "partial-update", "fields.seq.sequence-group": "a,nope"},
        "Field nope can not be found",
    ),
    (
        {"merge-engine": "partial-update", "fields.seq.sequence-group": "a", "fields.b.sequence-group": "a"},
        "is defined repeatedly by multiple groups",
    ),
    ({"merge-engine": "partial-update", "fields.seq.sequence-group": "k"}, "contains primary key field 'k'"),
    (
        {"merge-engine": "partial-update", "fields.a.aggregate-function": "sum"},
        "Must use sequence group for aggregation functions but not found for field a",
    ),
    (
        {
            "merge-engine": "partial-update",
            "ignore-delete": "true",
            "partial-update.remove-record-on-delete": "true",
        },
        "conflicting behavior",
    ),
    (
        {
            "merge-engine": "partial-update",
            "fields.seq.sequence-group": "a",
            "partial-update.remove-record-on-delete": "true",
        },
        "sequence-group and partial-update.remove-record-on-delete have conflicting behavior",
    ),
    (
        {
            "merge-engine": "partial-update",
            "fields.seq.sequence-group": "a",
            "partial-update.remove-record-on-sequence-group": "a",
        },
        "must be part of sequence groups",
    ),
    ({"sequence.field": "nope"}, "Sequence field: 'nope' can not be found in table schema."),
    (
        {"merge-engine": "first-row", "sequence.field": "seq"},
        "Do not support use sequence field on FIRST_ROW merge engine.",
    ),
    (
        {"merge-engine": "aggregation", "fields.b.aggregate-function": "sum"},
        "Data type for sum column must be 'NumericType' but was 'STRING'.",
    ),
    (
        {"merge-engine": "aggregation", "fields.a.aggregate-function": "median"},
        "Could not find any factory for identifier 'median'",
    ),
    ({"changelog-producer": "lookups"}, "Could not parse value 'lookups' for key 'changelog-producer'."),
    ({"ignore-delete": "yes"}, "Could not parse value 'yes' for key 'ignore-delete'."),
    ({"table.merge-engine": "first_row", "table.delete.behavior": "allow"}, "DELETE is not supported"),
    ({"table.merge-engine": "versioned"}, "must be set for versioned merge engine."),
    (
        {"table.merge-engine": "versioned", "table.merge-engine.versioned.ver-column": "b"},
        "must be one type of [INT, BIGINT, TIMESTAMP, TIMESTAMP_LTZ], but got STRING.",
    ),
    ({"fields.a.agg": "sum"}, "belong to the Fluss dialect"),
    (
        {"table.merge-engine": "aggregation", "fields.a.agg": "avg"},
        "Unknown aggregation function for column 'a': avg",
    ),
]


@pytest.mark.parametrize(("options", "message"), BAD_DEFINITIONS, ids=[d[1][:40] for d in BAD_DEFINITIONS])
def test_bad_definitions_fail_at_create_and_leave_nothing(
    spark: Any, tmp_path: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidOptionError) as raised:
        WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    assert message in str(raised.value)
    assert not (tmp_path / "t").exists()
    assert not (tmp_path / "t_changelog").exists()


@pytest.mark.parametrize(
    ("columns", "key", "message"),
    [
        (
            [("k", "int"), ("k", "int")],
            ["k"],
            "Table column [k, k] must not contain duplicate fields. Found: [k]",
        ),
        ([("k", "int")], [], "needs a primary key"),
        ([("k", "int")], ["id"], "Table column [k] should include all primary key constraint [id]"),
        ([("k", "int"), ("_offset", "int")], ["k"], "reserved for changelog metadata"),
    ],
)
def test_bad_columns_fail_at_create(
    spark: Any, tmp_path: Path, columns: list[tuple[str, str]], key: list[str], message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=None) as raised:
        WideTable.create(spark, tmp_path / "t", columns, key)
    assert message in str(raised.value)


def test_create_with_a_different_definition_is_refused(spark: Any, tmp_path: Path) -> None:
    WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], {"merge-engine": "partial-update"})
    assert WideTable.create(
        spark, tmp_path / "t", COLUMNS, ["k"], {"merge-engine": "partial-update"}
    ).definition
    with pytest.raises(InvalidOptionError, match="different definition"):
        WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], {"merge-engine": "deduplicate"})


@pytest.mark.parametrize(
    "type_text",
    [
        "long",
        "integer",
        "short",
        "byte",
        "real",
        "dec",
        "numeric(5, 2)",
        "decimal(7)",
        "DECIMAL(38,10)",
        "timestamp_ltz",
        "TIMESTAMP",
        "timestamp_ntz",
        "array<string>",
        "map<string,bigint>",
        "struct<a:int,b:string>",
    ],
)
def test_a_column_type_is_spelled_as_the_engine_names_it(spark: Any, type_text: str) -> None:
    """Validation skips the cast check of a column the changes carry with the table's own type, telling
    so by the engine's name for the changes' type; each spelling here is the engine's own reading of
    the same type text."""
    engine = spark.createDataFrame([], f"c {type_text}").schema["c"].dataType.simpleString()
    assert _spelled(type_text) == engine


def test_a_value_of_another_type_is_still_checked_against_an_aliased_column(
    spark: Any, tmp_path: Path
) -> None:
    """A DECIMAL(7,2) value that does not fit a `numeric(5, 2)` column is refused and one that fits is
    written; a value of the column's own type is written as it is."""
    table = WideTable.create(spark, tmp_path / "t", [("k", "long"), ("d", "numeric(5, 2)")], ["k"])
    with pytest.raises(InvalidInputError, match="cannot be cast to numeric"):
        table.write(spark.createDataFrame([(1, Decimal("12345.67"))], "k bigint, d decimal(7,2)"))
    table.write(spark.createDataFrame([(1, Decimal("123.45"))], "k bigint, d decimal(7,2)"))
    table.write(spark.createDataFrame([(2, Decimal("-999.99"))], "k long, d decimal(5,2)"))
    assert sorted(tuple(r) for r in table.read().collect()) == [
        (1, Decimal("123.45")),
        (2, Decimal("-999.99")),
    ]
