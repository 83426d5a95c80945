"""`write` and the lookups take pandas DataFrames and pyarrow Tables as well as Spark DataFrames,
including pandas 3 frames whose columns are chunked Arrow arrays (which pyspark 4.0's own pandas
conversion refuses); the stored rows are compared with expectations written out by hand."""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wide_assets import WideTable
from wide_assets.errors import InvalidInputError

COLUMNS = [("k", "string"), ("n", "int"), ("price", "decimal(10,2)"), ("label", "string")]
# Paimon partial-update: a NULL leaves the stored value; a -D removes the row.
OPTIONS = {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> WideTable:
    return WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], OPTIONS)


def stored(table: WideTable) -> dict[str, tuple[Any, ...]]:
    return {row.k: (row.n, row.price, row.label) for row in table.read().collect()}


def chunks(frame: pd.DataFrame) -> int:
    """The most chunks any column of `frame` has as Arrow: above 1 is the shape pyspark 4.0.1 refuses."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    return max(int(column.num_chunks) for column in table.columns)


def test_a_concatenated_pandas_frame_with_nullable_ints(table: WideTable) -> None:
    first = pd.DataFrame(
        {
            "k": ["a", "b"],
            "n": pd.array([1, None], dtype="Int64"),
            "price": ["1.50", "0.99"],
            "label": ["x", "y"],
        }
    )
    second = pd.DataFrame({"k": ["c"], "n": pd.array([3], dtype="Int64"), "price": [None], "label": [None]})
    frame = pd.concat([first, second], ignore_index=True)
    assert chunks(frame) > 1
    result = table.write(frame)
    assert (result.inserted, result.input_records) == (3, 3)
    assert stored(table) == {
        "a": (1, Decimal("1.50"), "x"),
        "b": (None, Decimal("0.99"), "y"),
        "c": (3, None, None),
    }
    # A partial update's NULLs (here a column of None only) keep the stored values; the unnamed index
    # of a filtered frame is row positions, not a column.
    update = frame.assign(n=pd.array([None, 7, None], dtype="Int64"), price=None, label=[None, "z", None])
    table.write(update[update["k"] == "b"])
    assert stored(table) == {
        "a": (1, Decimal("1.50"), "x"),
        "b": (7, Decimal("0.99"), "z"),
        "c": (3, None, None),
    }


def test_a_multi_row_group_parquet_file_read_by_pandas(table: WideTable, tmp_path: Path) -> None:
    rows = pa.table(
        {
            "k": [f"k{i:02d}" for i in range(10)],
            "n": pa.array([i if i % 3 else None for i in range(10)], pa.int64()),
            "label": [f"l{i}" for i in range(10)],
        }
    )
    pq.write_table(rows, tmp_path / "rows.parquet", row_group_size=3)
    frame = pd.read_parquet(tmp_path / "rows.parquet")
    assert chunks(frame) > 1
    table.write(frame)
    assert stored(table) == {f"k{i:02d}": (i if i % 3 else None, None, f"l{i}") for i in range(10)}


def test_a_large_csv_read_by_pandas_with_the_pyarrow_engine(table: WideTable) -> None:
    # Over the Arrow CSV reader's 1 MiB block, so the columns come in several chunks.
    count = 40_000
    text = "k,n,price,label\n" + "".join(
        f"key{i:06d},{'' if i % 5 == 0 else i},{i % 1000}.{i % 100:02d},{'label' * 4}{i}\n"
        for i in range(count)
    )
    frame = pd.read_csv(io.StringIO(text), engine="pyarrow")
    assert chunks(frame) > 1
    assert frame["n"].dtype == "float64"  # the missing ints made pandas read the column as floats
    table.write(frame)
    got = stored(table)
    assert len(got) == count
    for i in (0, 1, 5, 12_345, count - 1):
        expected = (
            None if i % 5 == 0 else i,
            Decimal(f"{i % 1000}.{i % 100:02d}"),
            f"labellabellabellabel{i}",
        )
        assert got[f"key{i:06d}"] == expected


def test_an_arrow_table_of_several_chunks_with_row_kinds(table: WideTable) -> None:
    table.write(
        pa.table({"k": ["a", "b", "c"], "n": pa.array([1, 2, 3], pa.int8()), "label": ["x", "y", "z"]})
    )
    batches = [
        pa.record_batch({"k": ["a"], "n": pa.array([10], pa.int64()), "_row_kind": ["+U"]}),
        pa.record_batch({"k": ["b"], "n": pa.array([None], pa.int64()), "_row_kind": ["-D"]}),
        pa.record_batch({"k": ["d"], "n": pa.array([4], pa.int64()), "_row_kind": ["+I"]}),
    ]
    changes = pa.Table.from_batches(batches)
    assert changes.column("k").num_chunks == 3
    result = table.write(changes)
    assert (result.updated, result.deleted, result.inserted) == (1, 1, 1)
    assert stored(table) == {"a": (10, None, "x"), "c": (3, None, "z"), "d": (4, None, None)}


def test_pandas_dtypes_spark_has_no_type_for_take_the_table_types(table: WideTable) -> None:
    frame = pd.DataFrame(
        {
            "k": pd.Categorical(["a", "b", "a2"]),
            "n": pd.array([1, 2, 3], dtype="uint16"),
            "label": pd.Categorical(["x", None, "x"]),
        }
    )
    table.write(frame)
    assert stored(table) == {"a": (1, None, "x"), "b": (2, None, None), "a2": (3, None, "x")}
    # An unsigned value beyond the column's range stays as it is, and the validation names it.
    with pytest.raises(
        InvalidInputError, match=r"cannot be cast to int in column n \(e\.g\. \['4000000000'\]\)"
    ):
        table.write(pd.DataFrame({"k": ["c"], "n": pd.array([4_000_000_000], dtype="uint32")}))


def test_lookups_take_pandas_and_arrow_keys(table: WideTable) -> None:
    table.write(pd.DataFrame({"k": ["a", "b", "c"], "n": [1, 2, 3]}))
    assert sorted(r.k for r in table.lookup(pd.DataFrame({"k": ["a", "c", "zz"]})).collect()) == ["a", "c"]
    assert [r.n for r in table.prefix_lookup(pa.table({"k": ["b"]})).collect()] == [2]
    assert [r.n for r in table.lookup(pa.record_batch({"k": ["c"]})).collect()] == [3]
    # A named index is a column: here the key.
    assert [r.n for r in table.lookup(pd.DataFrame(index=pd.Index(["b"], name="k"))).collect()] == [2]


def test_values_that_do_not_fit_are_named_as_for_a_spark_frame(table: WideTable) -> None:
    with pytest.raises(
        InvalidInputError, match=r"1 record\(s\) with value that cannot be cast to int in column n"
    ):
        table.write(pd.DataFrame({"k": ["a", "b"], "n": ["12", "twelve"]}))
    with pytest.raises(InvalidInputError, match="Columns \\['nn'\\] are not columns of the table"):
        table.write(pa.table({"k": ["a"], "nn": [1]}))
    with pytest.raises(InvalidInputError, match="must be a Spark DataFrame, a pandas DataFrame or a pyarrow"):
        table.write([{"k": "a"}])
    assert table.last_commit == 0


def test_a_large_frame_built_from_local_rows_is_staged_once_and_written_exactly(
    spark: Any, tmp_path: Path
) -> None:
    """Sail copies a `createDataFrame` frame's rows into every query a write runs (validation, merge,
    its checks); from a megabyte on they are staged as Parquet instead: as they are for a plain
    `createDataFrame`, and computed once by the engine for any other frame over such rows."""
    from pyspark.sql import functions as F

    from wide_assets.frames import STAGED_INLINED_BYTES, inlined_bytes, spark_frame
    from wide_assets.table.staging import staging_area

    count = 40_000
    keys = [f"key{i:06d}" for i in range(count)]
    numbers = [None if i % 7 == 0 else i for i in range(count)]
    prices = [None if i % 11 == 0 else Decimal(f"{i % 1000}.{i % 100:02d}") for i in range(count)]
    labels = [f"label{i}" if i % 3 else None for i in range(count)]
    rows = pd.DataFrame({"k": keys, "n": pd.array(numbers, dtype="Int64"), "price": prices, "label": labels})
    frames = {
        "createDataFrame of pandas": spark.createDataFrame(rows.astype({"n": "float64"})),
        "createDataFrame of tuples with a DDL schema": spark.createDataFrame(
            list(zip(keys, numbers, prices, labels, strict=True)),
            "k STRING, n INT, price DECIMAL(10,2), label STRING",
        ),
        "a projection over it": spark.createDataFrame(
            list(zip(keys, numbers, prices, labels, strict=True)),
            "k STRING, n INT, price DECIMAL(10,2), label STRING",
        ).withColumn("label", F.upper("label")),
    }
    upper = {"a projection over it"}
    for name, frame in frames.items():
        assert inlined_bytes(frame) >= STAGED_INLINED_BYTES, name
        table = WideTable.create(spark, tmp_path / name.replace(" ", "_"), COLUMNS, ["k"], OPTIONS)
        with staging_area(table.path) as stage:
            assert inlined_bytes(spark_frame(spark, frame, table.definition.columns, "changes", stage)) == 0
        assert table.write(frame).inserted == count, name
        got = stored(table)
        for i in (0, 1, 7, 11, 33, count - 1):
            label = labels[i]
            if name in upper and label is not None:
                label = label.upper()
            assert got[keys[i]] == (numbers[i], prices[i], label), (name, i)
        assert len(got) == count
    # A small one stays in the plan: a copy of it costs less than a staged file.
    small = spark.createDataFrame(rows.head(3).astype({"n": "float64"}))
    with staging_area(str(tmp_path / "small")) as stage:
        assert spark_frame(spark, small, [], "changes", stage) is small
