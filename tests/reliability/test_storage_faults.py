"""A missing or corrupted data file and a truncated Delta log entry are errors, never an empty table,
and the wide table can be rebuilt from its commit log."""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.errors import TableStateError

EXPECTED = [(1, "a"), (2, "b2"), (3, "c")]


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> WideTable:
    table = WideTable.create(
        spark, tmp_path / "t", [("k", "int"), ("v", "string")], ["k"], {"changelog-producer": "lookup"}
    )
    table.write(spark.createDataFrame([(1, "a"), (2, "b")], "k int, v string"))
    table.write(spark.createDataFrame([(2, "b2"), (3, "c")], "k int, v string"))
    return table


def data_file(table: WideTable) -> str:
    import pyarrow as pa
    from deltalake import DeltaTable

    return os.path.join(
        table.path, pa.table(DeltaTable(table.path).get_add_actions(flatten=True)).to_pylist()[0]["path"]
    )


def remove(path: str) -> None:
    os.remove(path)


def garble(path: str) -> None:
    Path(path).write_bytes(b"not parquet at all")


def truncate_last_log_entry(table: WideTable) -> None:
    last = sorted(glob.glob(f"{table.path}/_delta_log/*.json"))[-1]
    text = Path(last).read_text()
    Path(last).write_text(text[: len(text) // 2])


@pytest.mark.parametrize(
    ("damage", "message"), [(remove, "is missing"), (garble, "has 18 bytes")], ids=["missing", "corrupted"]
)
def test_damaged_data_file_is_reported_and_rebuilt(
    spark: Any, table: WideTable, damage: Callable[[str], None], message: str
) -> None:
    table.verify()
    damage(data_file(table))
    with pytest.raises(TableStateError, match=message) as raised:
        table.verify()
    assert "WideTable.rebuild()" in str(raised.value)
    with pytest.raises(Exception):  # noqa: B017 - any engine error, as long as it is not an empty read
        table.read().collect()
    assert table.rebuild() == 3
    table.verify()
    assert sorted(tuple(r) for r in table.read().collect()) == EXPECTED
    table.write(spark.createDataFrame([(4, "d")], "k int, v string"))
    assert len(table.read().collect()) == 4


def test_truncated_log_entry_is_reported(table: WideTable) -> None:
    truncate_last_log_entry(table)
    with pytest.raises(TableStateError, match=r"Delta log .* cannot be read"):
        table.verify()
