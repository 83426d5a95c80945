"""What other Delta readers see of a wide table, and the published changelog they should read instead.

The oracle is `WideTable.changelog()` collected through Spark; the published table is read with
delta-rs, as an external reader would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.errors import InvalidInputError

COLUMNS = [("k", "int"), ("v", "string"), ("n", "bigint")]
DDL = "k int, v string, n bigint, _row_kind string"
# Write-only (lookup-free writers), lookup changelog: the changelog appears at compaction. Without
# deletion vectors, so that delta-rs 1.6 reads the wide table itself too.
OPTIONS = {
    "merge-engine": "partial-update",
    "partial-update.remove-record-on-delete": "true",
    "changelog-producer": "lookup",
    "write-only": "true",
    "deletion-vectors.enabled": "false",
}


def external(path: str) -> list[dict[str, Any]]:
    """The rows of the Delta table at `path` as delta-rs reads them."""
    from deltalake import DeltaTable

    rows: list[dict[str, Any]] = DeltaTable(path).to_pyarrow_dataset().to_table().to_pylist()
    return rows


def in_order(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda r: (r["_commit"], r["_offset"]))


def changelog(table: WideTable) -> list[dict[str, Any]]:
    return in_order([r.asDict() for r in table.changelog().collect()])


def write(spark: Any, table: WideTable, rows: list[tuple[Any, ...]]) -> None:
    table.write(spark.createDataFrame(rows, DDL))


def test_published_changelog_equals_changelog_exactly_once(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], OPTIONS)
    published = str(tmp_path / "t_published")
    first = table.publish_changelog(published)
    assert first.appended == 0 and external(published) == [], "created empty, so readers find it"

    write(spark, table, [(1, "a", 1, "+I"), (2, "b", 2, "+I")])
    write(spark, table, [(1, "a2", None, "+I"), (3, "c", 3, "+I")])
    # What an external reader sees before compaction: an empty wide table, and a log of internal rows.
    assert external(table.path) == [] and table.read().count() == 3
    origins = {r["_origin"] for r in external(table.changelog_path)}
    assert origins == {"commit", "fragment"}
    assert table.publish_changelog(published).appended == 0, "a lookup changelog appears at compaction"

    table.compact()
    write(spark, table, [(2, None, None, "-D"), (3, "c2", 30, "+I")])
    table.compact()
    write(spark, table, [(1, "pending", 9, "+I")])  # not compacted: not in the changelog yet
    result = table.publish_changelog(published)
    expected = changelog(table)
    assert result.appended == len(expected) == 6  # +I x3, then -D, -U/+U
    assert in_order(external(published)) == expected
    assert {r["_row_kind"] for r in expected} == {"+I", "-D", "-U", "+U"}

    again = table.publish_changelog(published)
    assert again.appended == 0 and again.start_commit == max(r["_commit"] for r in expected) + 1
    assert in_order(external(published)) == expected, "republishing adds nothing"
    table.compact()
    assert table.publish_changelog(published).appended == 2
    assert in_order(external(published)) == changelog(table)


def test_a_path_holds_one_encoding(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], {"table.delete.behavior": "allow"})
    write(spark, table, [(1, "a", 1, "+I")])
    published = str(tmp_path / "p")
    assert table.publish_changelog(published, "debezium").appended == 1
    with pytest.raises(InvalidInputError, match="publish each encoding of a table to its own path"):
        table.publish_changelog(published)
