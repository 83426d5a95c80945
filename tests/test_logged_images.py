"""A small commit's table images written by the driver from its log files (`logged_images`): every
flat column type, at its edge values, reads back as written through the engine and every Delta
reader, on Sail and on JVM Spark (whose log files hold INT96 timestamps), as it does where the engine
writes the images, with and without before-images in the log, through inserts, updates and a delete.
The expected rows are the records written, last one per key. (A TIMESTAMP starts
in 1900: classic pyspark converts one in local time, and year 1 then falls before year 1.)"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from delta_readers import rows_by_delta_rs

from wide_assets import WideTable
from wide_assets.session import is_connect
from wide_assets.table import logged_images, table_writes

SCHEMA = (
    "k int, b boolean, i8 tinyint, i16 smallint, i64 bigint, f float, d double, m decimal(38,9), "
    "s string, bin binary, day date, ts timestamp, ntz timestamp_ntz"
)
COLUMNS = [(name, kind) for name, kind in (c.split(" ", 1) for c in SCHEMA.split(", "))]
NAMES = [name for name, _ in COLUMNS]
LAST = datetime(9999, 12, 31, 23, 59, 59, 999999)
FIRST = datetime(1, 1, 1)
COMMITS: list[list[tuple[Any, ...]]] = [
    [
        (
            1,
            True,
            -128,
            -32768,
            -(2**63),
            float("nan"),
            -0.0,
            Decimal("-99999999999999999999999999999.999999999"),
            "",
            b"",
            date(1, 1, 1),
            datetime(1900, 1, 1),
            FIRST,
        ),
        (
            2,
            False,
            127,
            32767,
            2**63 - 1,
            float("inf"),
            float("nan"),
            Decimal("0.000000001"),
            "ü\u0000x",
            b"\x00\xff",
            date(9999, 12, 31),
            LAST,
            LAST,
        ),
        (3, None, None, None, None, None, None, None, None, None, None, None, None),
    ],
    [
        (
            2,
            True,
            0,
            0,
            0,
            -float("inf"),
            5e-324,
            Decimal("99999999999999999999999999999.999999999"),
            "two",
            b"2",
            date(2026, 11, 29),
            datetime(2026, 11, 29, 9, 30, 0, 123456),
            datetime(1970, 1, 1),
        ),
        (
            4,
            None,
            1,
            2,
            3,
            1.5,
            -1.7976931348623157e308,
            None,
            "four",
            None,
            None,
            None,
            datetime(2000, 2, 29),
        ),
    ],
]


def spelled(value: Any) -> Any:
    """A value as compared: a float by its repr (NaN and -0.0 told apart), a timestamp as naive UTC,
    a bytes-like as bytes."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


def by_key(rows: Any) -> dict[Any, tuple[Any, ...]]:
    return {row[0]: tuple(spelled(v) for v in row) for row in rows}


# The last commit's row kinds: key 3 deleted, key 1 updated (a -U before-image logged under `lookup`).
LAST_COMMIT: list[tuple[str, tuple[Any, ...]]] = [
    ("-D", (3, None, None, None, None, None, None, None, None, None, None, None, None)),
    (
        "+U",
        (
            1,
            False,
            1,
            1,
            1,
            0.0,
            0.0,
            Decimal("1.5"),
            "one",
            b"1",
            date(2000, 1, 1),
            datetime(1900, 1, 1),
            FIRST,
        ),
    ),
]


@pytest.mark.parametrize("producer", ["none", "lookup"])
@pytest.mark.parametrize("images_by", ["driver", "engine"])
def test_every_flat_type_reads_back_as_written(
    any_spark: Any,
    tmp_path: Path,
    producer: str,
    images_by: str,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if images_by == "engine":
        monkeypatch.setattr(logged_images, "DRIVER_IMAGE_ROWS", 0)
    driver_writes = []

    def write_images(files: Any, rows: Any) -> Any:
        driver_writes.append(rows.num_rows)
        return logged_images.write_images(files, rows)

    monkeypatch.setattr(table_writes, "write_images", write_images)
    if not is_connect(any_spark):
        # As a JVM session of the user's own may write timestamps (Spark's default; ours write micros).
        previous = any_spark.conf.get("spark.sql.parquet.outputTimestampType")
        any_spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
        request.addfinalizer(lambda: any_spark.conf.set("spark.sql.parquet.outputTimestampType", previous))
    table = WideTable.create(any_spark, tmp_path / "t", COLUMNS, ["k"], {"changelog-producer": producer})
    expected: dict[Any, tuple[Any, ...]] = {}
    commits = [[("+I", row) for row in rows] for rows in COMMITS] + [LAST_COMMIT]
    for records in commits:
        # A TIMESTAMP is an instant: written as UTC.
        frame = [
            (*row[:-2], None if row[-2] is None else row[-2].replace(tzinfo=UTC), row[-1], kind)
            for kind, row in records
        ]
        table.write(any_spark.createDataFrame(frame, f"{SCHEMA}, _row_kind string"))
        for kind, row in records:
            if kind == "-D":
                expected.pop(row[0])
            else:
                expected |= by_key([row])
    assert by_key(table.read().select(*NAMES).collect()) == expected
    assert by_key(rows_by_delta_rs(str(table.path), ", ".join(NAMES))) == expected
    assert driver_writes == ([3, 2, 1] if images_by == "driver" else [])


def test_a_commits_kinds_are_counted_from_its_files_statistics_where_each_file_holds_one_kind(
    spark: Any, tmp_path: Path
) -> None:
    """A commit whose log files each hold one row kind (a first load: all +I) is counted from the
    files' statistics without reading them; every commit's counts are those of its entries as the
    engine reads them from the log."""
    from wide_assets.changelog import kind_counts
    from wide_assets.table.log import Origin
    from wide_assets.table.log_frames import log_entries, log_file_actions

    table = WideTable.create(
        spark, tmp_path / "t", [("k", "int"), ("v", "string")], ["k"], {"changelog-producer": "lookup"}
    )
    batches = [
        [(k, f"v{k}", "+I") for k in range(1, 200)],
        [(1, "changed", "+I"), (2, None, "-D"), (500, "new", "+I"), (3, "v3", "+I")],
    ]
    for batch in batches:
        table.write(spark.createDataFrame(batch, "k int, v string, _row_kind string"))
    storage = table._storage
    first_load = log_file_actions(storage, 1, 1, Origin.MERGED, ["_row_kind"])
    assert logged_images._counts_from_statistics(first_load, 1) == {"+I": 199}
    for commit in (1, 2):
        expected = kind_counts(spark, log_entries(storage, [commit], Origin.MERGED))
        assert logged_images.logged_kind_counts(storage, commit) == expected
