"""Finding the rows a commit replaces through the key bounds of each row group (`table.key_ranges`):
random keys of every key type, extreme values included, in files sorted, shuffled and sorted the
other way, small row groups; the rows found must be exactly those a plain membership test over every
stored key finds (the oracle), and a file sorted by key must be read only where the keys can be."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from wide_assets.table.files import DataFile
from wide_assets.table.key_ranges import row_groups_holding
from wide_assets.table.objects import TableFiles
from wide_assets.table.table_writes import _replaced_in

ROWS = 400
ROW_GROUP = 37
LONG = "x" * 90  # longer than writers keep of a string bound


def _values(kind: str, rng: random.Random) -> tuple[pa.DataType, list[Any]]:
    """Distinct values of one key type, its extremes among them."""
    if kind == "bigint":
        values = {-(2**63), 2**63 - 1, 0, -1} | {rng.randint(-(2**40), 2**40) for _ in range(ROWS)}
        return pa.int64(), list(values)
    if kind == "int":
        return pa.int32(), list(
            {-(2**31), 2**31 - 1, 0} | {rng.randint(-(2**31), 2**31 - 1) for _ in range(ROWS)}
        )
    if kind == "string":
        fixed = {"", "a", "é", "😀", "\U0010ffff", LONG, LONG + "a", LONG + "\U0010ffff"}
        return pa.string(), list(
            fixed | {"".join(rng.choices("abcé😀", k=rng.randint(0, 70))) for _ in range(ROWS)}
        )
    if kind == "binary":
        return pa.binary(), list(
            {b"", b"\x00", b"\xff" * 80} | {rng.randbytes(rng.randint(1, 70)) for _ in range(ROWS)}
        )
    if kind == "date":
        days = {date(1, 1, 1).toordinal(), date(9999, 12, 31).toordinal()}
        days |= {rng.randint(date(1, 1, 1).toordinal(), date(9999, 12, 31).toordinal()) for _ in range(ROWS)}
        return pa.date32(), [date.fromordinal(d) for d in days]
    if kind == "timestamp":
        low, high = datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
        seconds = (int(low.timestamp()), int(high.timestamp()))
        stamps = {low, high} | {datetime.fromtimestamp(rng.randint(*seconds), UTC) for _ in range(ROWS)}
        return pa.timestamp("us", tz="UTC"), list(stamps)
    if kind == "decimal":
        edge = Decimal("9" * 28 + "." + "9" * 10)
        decimals = {edge, -edge, Decimal(0)} | {
            Decimal(f"{rng.randint(-(10**30), 10**30)}E-10") for _ in range(ROWS)
        }
        return pa.decimal128(38, 10), list(decimals)
    assert kind == "double"
    floats = [float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 5e-324, 1.7976931348623157e308]
    return pa.float64(), floats + [rng.uniform(-1e6, 1e6) for _ in range(ROWS)]


def _file(folder: Path, table: pa.Table, name: str) -> DataFile:
    pq.write_table(table, folder / name, row_group_size=ROW_GROUP)
    return DataFile(name, (folder / name).stat().st_size, 0, {}, None)


def _oracle(stored: pa.Table, keys: pa.Table) -> set[int]:
    """Positions of the stored rows whose key is among `keys`: every stored key compared."""
    numbered = stored.append_column("_p", pa.array(np.arange(stored.num_rows)))
    return set(numbered.join(keys, keys=keys.column_names, join_type="inner").column("_p").to_pylist())


def _found(folder: Path, file: DataFile, keys: pa.Table) -> set[int]:
    replaced = _replaced_in(TableFiles(str(folder)), file, keys, {})
    return set() if replaced is None else set(replaced.replaced)


@pytest.mark.parametrize(
    "kind", ["bigint", "int", "string", "binary", "date", "timestamp", "decimal", "double"]
)
def test_rows_found_through_row_group_bounds_are_every_stored_match(tmp_path: Path, kind: str) -> None:
    rng = random.Random(f"key-ranges-{kind}")
    arrow_type, values = _values(kind, rng)
    rng.shuffle(values)
    stored_values, absent = values[: len(values) * 3 // 4], values[len(values) * 3 // 4 :]
    column = pa.array(stored_values, arrow_type)
    orders = {
        "shuffled": column,
        "sorted": column.take(pc.sort_indices(column)),
        "descending": column.take(pc.sort_indices(column, sort_keys=[("", "descending")])),
    }
    for order, keys_in_file in orders.items():
        stored = pa.table({"k": keys_in_file})
        file = _file(tmp_path, stored, f"{order}.parquet")
        for trial in range(12):
            chosen = rng.sample(stored_values, rng.randint(0, 6)) + rng.sample(absent, rng.randint(0, 3))
            if trial % 4 == 0:  # a clustered batch: keys adjacent in the file's order
                start = rng.randrange(len(keys_in_file))
                chosen = keys_in_file.slice(start, 5).to_pylist()
            keys = pa.table({"k": pa.array(chosen, arrow_type)})
            assert _found(tmp_path, file, keys) == _oracle(stored, keys), (order, chosen)


def test_a_two_column_key_is_found_in_every_row_group_that_holds_it(tmp_path: Path) -> None:
    rng = random.Random(7)
    pairs = sorted({(rng.randint(0, 20), f"s{rng.randint(0, 500):04d}") for _ in range(ROWS)})
    stored = pa.table({"a": [p[0] for p in pairs], "b": [p[1] for p in pairs]})
    file = _file(tmp_path, stored, "pairs.parquet")
    for _ in range(30):
        chosen = rng.sample(pairs, 4) + [
            (rng.randint(0, 20), f"s{rng.randint(0, 500):04d}") for _ in range(3)
        ]
        keys = pa.table({"a": [p[0] for p in chosen], "b": [p[1] for p in chosen]})
        assert _found(tmp_path, file, keys) == _oracle(stored, keys)


def test_a_file_sorted_by_key_is_read_only_where_the_keys_can_be(tmp_path: Path) -> None:
    stored = pa.table({"k": pa.array(np.arange(1000, dtype=np.int64))})
    pq.write_table(stored, tmp_path / "sorted.parquet", row_group_size=100)
    metadata = pq.read_metadata(tmp_path / "sorted.parquet")
    assert row_groups_holding(metadata, pa.table({"k": pa.array([950, 999], pa.int64())})) == [9]
    assert row_groups_holding(metadata, pa.table({"k": pa.array([5, 540, 5000], pa.int64())})) == [0, 5]
    assert row_groups_holding(metadata, pa.table({"k": pa.array([-1, 1000], pa.int64())})) == []
    # Floating-point bounds leave NaN out: they rule nothing out.
    floats = pa.table({"k": pa.array(np.arange(1000, dtype=np.float64))})
    pq.write_table(floats, tmp_path / "floats.parquet", row_group_size=100)
    every = row_groups_holding(pq.read_metadata(tmp_path / "floats.parquet"), pa.table({"k": [float("nan")]}))
    assert every == list(range(10))
