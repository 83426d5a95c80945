"""Point and prefix lookups return exactly what a join of the keys with the whole table returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.errors import InvalidInputError

COLUMNS = [("shop", "string"), ("user", "bigint"), ("orders", "int")]


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> WideTable:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["shop", "user"])
    rows = [(f"s{s}", u, s * 100 + u) for s in range(5) for u in range(40)]
    table.write(spark.createDataFrame(rows, "shop string, user bigint, orders int"))
    return table


def joined(spark: Any, table: WideTable, keys: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    on = " AND ".join(f"t.{c} = k.{c}" for c in columns)
    query = f"SELECT DISTINCT t.* FROM {{t}} t JOIN {{k}} k ON {on}"
    return sorted(tuple(r) for r in spark.sql(query, t=table.read(), k=keys).collect())


@pytest.mark.parametrize("many", [False, True], ids=["pruned", "semi-join"])
def test_lookup_equals_a_join(
    spark: Any, table: WideTable, many: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if many:
        monkeypatch.setattr("wide_assets.table.reads.LOOKUP_PRUNING_KEYS", 1)
    keys = spark.createDataFrame(
        [("s1", 3), ("s4", 39), ("s9", 1), ("s1", 3), ("s2", None)], "shop string, user bigint"
    )
    got = sorted(tuple(r) for r in table.lookup(keys).collect())
    assert got == joined(spark, table, keys, ["shop", "user"]) == [("s1", 3, 103), ("s4", 39, 439)]


def test_prefix_lookup_equals_a_join(spark: Any, table: WideTable) -> None:
    prefixes = spark.createDataFrame([("s3",), ("nope",)], "shop string")
    got = sorted(tuple(r) for r in table.prefix_lookup(prefixes).collect())
    assert got == joined(spark, table, prefixes, ["shop"])
    assert len(got) == 40


def test_lookup_rejects_wrong_columns(spark: Any, table: WideTable) -> None:
    with pytest.raises(InvalidInputError, match="leading primary key columns"):
        table.prefix_lookup(spark.createDataFrame([(1,)], "user bigint"))
    with pytest.raises(InvalidInputError, match="exactly the columns"):
        table.lookup(spark.createDataFrame([("s1",)], "shop string"))
