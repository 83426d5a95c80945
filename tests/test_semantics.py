"""Merge and changelog rules beyond the public cases; each expectation is worked out by hand from the
rule it names in `docs/semantics.md`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.errors import InvalidOptionError

KV = [("k", "int"), ("v", "string"), ("seq", "int")]
KV_DDL = "k int, v string, seq int"


def rows(table: WideTable) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.read().collect())


def changelog(table: WideTable, commit: int | None = None) -> list[tuple[Any, ...]]:
    entries = table.changelog(commit, commit).collect()
    return [tuple(r)[:-1] for r in sorted(entries, key=lambda r: (r["_commit"], r["_offset"]))]


def write(spark: Any, table: WideTable, data: list[tuple[Any, ...]], ddl: str = KV_DDL, **kwargs: Any) -> Any:
    return table.write(spark.createDataFrame(data, ddl), **kwargs)


def test_input_producer_emits_the_records_as_written(spark: Any, tmp_path: Path) -> None:
    """C2: `input` = the input records after the ignore-delete filter, not the merged rows."""
    options = {"merge-engine": "partial-update", "changelog-producer": "input", "ignore-delete": "true"}
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], options)
    write(
        spark,
        table,
        [(1, "a", None, "+I"), (1, None, 7, "+I"), (1, "a", 7, "-D")],
        f"{KV_DDL}, _row_kind string",
    )
    assert rows(table) == [(1, "a", 7)]
    assert changelog(table) == [("+I", 1, "a", None, 1), ("+I", 1, None, 7, 1)]


def test_row_deduplicate_ignores_fields_in_the_changelog_only(spark: Any, tmp_path: Path) -> None:
    """C3 + row-deduplicate-ignore-fields: no -U/+U for a seq-only change, but the table takes it."""
    options = {
        "changelog-producer": "lookup",
        "changelog-producer.row-deduplicate": "true",
        "changelog-producer.row-deduplicate-ignore-fields": "seq",
    }
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], options)
    write(spark, table, [(1, "a", 1)])
    write(spark, table, [(1, "a", 2)])
    assert rows(table) == [(1, "a", 2)]
    assert changelog(table, 2) == []
    write(spark, table, [(1, "b", 3)])
    assert changelog(table, 3) == [("-U", 1, "a", 2, 3), ("+U", 1, "b", 3, 3)]


def test_older_sequence_keeps_the_row_but_lookup_still_emits(spark: Any, tmp_path: Path) -> None:
    """D4 + C4: a late record with a smaller sequence changes nothing yet yields -U/+U (same image)."""
    options = {"sequence.field": "seq", "changelog-producer": "lookup"}
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], options)
    write(spark, table, [(1, "a", 5)])
    result = write(spark, table, [(1, "b", 3)])
    assert rows(table) == [(1, "a", 5)]
    assert changelog(table, 2) == [("-U", 1, "a", 5, 2), ("+U", 1, "a", 5, 2)]
    assert (result.updated, result.unchanged) == (0, 1)


def test_descending_sequence_order_keeps_the_smallest(spark: Any, tmp_path: Path) -> None:
    """0.1: sequence.field.sort-order=descending reverses the order of the values; a NULL sequence
    still sorts first, so it never wins (GenerateUtils.generateRowCompare)."""
    options = {"sequence.field": "seq", "sequence.field.sort-order": "descending"}
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], options)
    write(spark, table, [(1, "a", 5), (1, "b", 3), (2, "c", None), (2, "d", 9)])
    assert rows(table) == [(1, "b", 3), (2, "d", 9)]


def test_records_of_one_key_collapse_into_one_transition(spark: Any, tmp_path: Path) -> None:
    """C3: (1,1),(1,3),(1,4),(1,5) under sum in one commit give a single +I(1,13)."""
    options = {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "changelog-producer": "lookup",
    }
    table = WideTable.create(spark, tmp_path / "t", [("k", "int"), ("v", "int")], ["k"], options)
    write(spark, table, [(1, 1), (1, 3), (1, 4), (1, 5)], "k int, v int")
    assert changelog(table) == [("+I", 1, 13, 1)]


def test_fluss_emits_every_record_of_a_key_in_one_write(spark: Any, tmp_path: Path) -> None:
    """2.3: per-record CDC, no collapsing, even inside one write."""
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], {"table.delete.behavior": "allow"})
    write(
        spark,
        table,
        [(1, "a", 1, "+I"), (1, "b", 2, "+I"), (1, None, None, "-D")],
        f"{KV_DDL}, _row_kind string",
    )
    assert rows(table) == []
    assert changelog(table) == [
        ("+I", 1, "a", 1, 1),
        ("-U", 1, "a", 1, 1),
        ("+U", 1, "b", 2, 1),
        ("-D", 1, "b", 2, 1),
    ]


def test_target_columns_write_nulls_on_a_paimon_table(spark: Any, tmp_path: Path) -> None:
    """A target-column write follows the Fluss write model: declared columns as given, NULL included."""
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], {"merge-engine": "partial-update"})
    write(spark, table, [(1, "a", 5)])
    write(spark, table, [(1, None)], "k int, v string")
    assert rows(table) == [(1, "a", 5)], "plain write: NULL means no change (P1)"
    write(spark, table, [(1, None)], "k int, v string", target_columns=["k", "v"])
    assert rows(table) == [(1, None, 5)]


def test_read_at_an_earlier_version_and_changelog_ranges(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], {"changelog-producer": "lookup"})
    first = write(spark, table, [(1, "a", 1)])
    write(spark, table, [(1, "b", 2), (2, "c", 1)])
    assert sorted(tuple(r) for r in table.read(version=first.version).collect()) == [(1, "a", 1)]
    assert changelog(table, 2) == [("-U", 1, "a", 1, 2), ("+U", 1, "b", 2, 2), ("+I", 2, "c", 1, 2)]
    assert [r["_commit"] for r in table.changelog(start_commit=2).collect()] == [2, 2, 2]


def test_changelog_of_a_table_without_producer_is_an_error(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"])
    with pytest.raises(InvalidOptionError, match="changelog-producer 'none'"):
        table.changelog()


@pytest.mark.parametrize(
    ("producer", "unchanged"),
    [("lookup", 1), ("none", 0)],  # only a producer that shows unchanged rows sees the unchanged key
)
def test_write_result_counts(spark: Any, tmp_path: Path, producer: str, unchanged: int) -> None:
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], {"changelog-producer": producer})
    write(spark, table, [(1, "a", 1), (2, "b", 1), (3, "c", 1)])
    result = write(
        spark,
        table,
        [(1, "a", 1, "+I"), (2, "x", 1, "+I"), (3, None, None, "-D"), (4, "d", 1, "+I")],
        f"{KV_DDL}, _row_kind string",
    )
    assert (result.inserted, result.updated, result.unchanged, result.deleted) == (1, 1, unchanged, 1)
    assert result.input_records == 4 and result.commit == 2


def test_partially_null_multi_field_sequence_is_older(spark: Any, tmp_path: Path) -> None:
    """P6: a multi-field sequence compares lexicographically with NULL smallest: (1,NULL) < (1,1)."""
    columns = [("k", "int"), ("v", "string"), ("s1", "int"), ("s2", "int")]
    options = {"merge-engine": "partial-update", "fields.s1,s2.sequence-group": "v"}
    table = WideTable.create(spark, tmp_path / "t", columns, ["k"], options)
    ddl = "k int, v string, s1 int, s2 int"
    write(spark, table, [(1, "stored", 1, 1)], ddl)
    write(spark, table, [(1, "older", 1, None)], ddl)
    assert rows(table) == [(1, "stored", 1, 1)]
    write(spark, table, [(1, "newer", 2, None)], ddl)
    assert rows(table) == [(1, "newer", 2, None)]


def test_fluss_delete_naming_only_the_key_removes_the_row(spark: Any, tmp_path: Path) -> None:
    """A key-only delete is `DELETE FROM t WHERE k = ...` (not a W3 partial delete of no columns)."""
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], {"table.delete.behavior": "allow"})
    write(spark, table, [(1, "a", 1), (2, "b", 2)])
    write(spark, table, [(1, "-D")], "k int, _row_kind string")
    assert rows(table) == [(2, "b", 2)]
    assert changelog(table, 2) == [("-D", 1, "a", 1, 2)]


def test_column_names_that_match_internal_names(spark: Any, tmp_path: Path) -> None:
    """User columns named like the engine's internal aliases must not collide with them."""
    columns = [("first", "int"), ("last", "string"), ("k", "string"), ("before", "string"), ("value", "int")]
    options = {"changelog-producer": "lookup", "write-only": "true"}
    table = WideTable.create(spark, tmp_path / "t", columns, ["first", "last"], options)
    ddl = "first int, last string, k string, before string, value int"
    table.write(spark.createDataFrame([(1, "x", "a", "b", 1)], ddl))
    table.write(spark.createDataFrame([(1, "x", "c", None, 2)], ddl))
    table.compact()
    assert rows(table) == [(1, "x", "c", None, 2)]
    assert [r["_row_kind"] for r in table.changelog().collect()] == ["+I"]
    for encoding in ("upsert", "debezium", "flink-json", "retract"):
        assert table.export(encoding).count() == 1


def test_full_compaction_changelog_every_n_commits(spark: Any, tmp_path: Path) -> None:
    """C3: with full-compaction.delta-commits=2, intermediate states are not visible in the changelog."""
    options = {"changelog-producer": "full-compaction", "full-compaction.delta-commits": "2"}
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], options)
    for data in ([(1, "a", 1)], [(1, "b", 2), (2, "x", 1)], [(2, "y", 2)], [(2, "y", 2)]):
        write(spark, table, data)
    assert changelog(table, 1) == [] and changelog(table, 3) == []
    assert sorted(changelog(table, 2)) == [("+I", 1, "b", 2, 2), ("+I", 2, "x", 1, 2)]
    # commits 3 and 4 touch key 2 only: x -> y, then y again; one -U/+U for the pair
    assert changelog(table, 4) == [("-U", 2, "x", 1, 4), ("+U", 2, "y", 2, 4)]
    assert rows(table) == [(1, "b", 2), (2, "y", 2)]


def test_timestamp_ntz_sequence_group(spark: Any, tmp_path: Path) -> None:
    """Paimon TIMESTAMP (no time zone) sequence fields are Spark timestamp_ntz."""
    from datetime import datetime

    columns = [("k", "int"), ("v", "string"), ("ts", "timestamp_ntz")]
    table = WideTable.create(
        spark,
        tmp_path / "t",
        columns,
        ["k"],
        {"merge-engine": "partial-update", "fields.ts.sequence-group": "v"},
    )
    ddl = "k int, v string, ts timestamp_ntz"
    write(spark, table, [(1, "new", datetime(2026, 3, 1, 12))], ddl)
    write(spark, table, [(1, "late", datetime(2026, 3, 1, 11))], ddl)
    assert rows(table) == [(1, "new", datetime(2026, 3, 1, 12))]
