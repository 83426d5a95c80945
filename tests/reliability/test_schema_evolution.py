"""Adding a source (new columns, its own sequence group) to a wide table keeps its data and history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.errors import InvalidOptionError

COLUMNS = [("id", "bigint"), ("name", "string"), ("name_ts", "int")]
OPTIONS = {
    "merge-engine": "partial-update",
    "fields.name_ts.sequence-group": "name",
    "changelog-producer": "lookup",
}


def rows(table: WideTable, **at: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.read(**at).collect())


def test_new_source_columns_keep_rows_changelog_and_time_travel(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["id"], OPTIONS)
    first = table.write(
        spark.createDataFrame([(1, "a", 1), (2, "b", 1)], "id bigint, name string, name_ts int")
    )
    before = table.changelog().collect()
    table.add_columns(
        [("price", "decimal(10,2)"), ("price_ts", "int")], {"fields.price_ts.sequence-group": "price"}
    )
    table.add_columns(
        [("price", "decimal(10,2)"), ("price_ts", "int")], {"fields.price_ts.sequence-group": "price"}
    )
    reopened = WideTable.open(spark, table.path)
    assert reopened.definition.column_names == ("id", "name", "name_ts", "price", "price_ts")
    assert rows(reopened) == [(1, "a", 1, None, None), (2, "b", 1, None, None)]
    reopened.write(
        spark.createDataFrame([(1, "9.50", 5), (3, "1.25", 1)], "id bigint, price string, price_ts int")
    )
    reopened.write(
        spark.createDataFrame([(1, "8.00", 4)], "id bigint, price string, price_ts int")
    )  # late: loses
    from decimal import Decimal

    assert rows(reopened) == [
        (1, "a", 1, Decimal("9.50"), 5),
        (2, "b", 1, None, None),
        (3, None, None, Decimal("1.25"), 1),
    ]
    assert sorted(tuple(r)[:3] for r in before) == sorted(
        tuple(r)[:3] for r in reopened.changelog(1, 1).collect()
    )
    assert [
        tuple(r)
        for r in spark.read.format("delta")
        .option("versionAsOf", first.version)
        .load(table.path)
        .orderBy("id")
        .collect()
    ] == [
        (1, "a", 1),
        (2, "b", 1),
    ]


def test_added_columns_must_be_nullable_and_keep_the_engine(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["id"], {"merge-engine": "partial-update"})
    with pytest.raises(InvalidOptionError, match="must be nullable"):
        table.add_columns([("qty", "int not null")])
    with pytest.raises(InvalidOptionError, match="cannot change the table's dialect or merge engine"):
        table.add_columns([("qty", "int")], {"merge-engine": "deduplicate"})
    with pytest.raises(InvalidOptionError, match="must not contain duplicate fields"):
        table.add_columns([("name", "int")])
