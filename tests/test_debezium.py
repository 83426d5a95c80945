"""Debezium records as Debezium writes them: temporal columns as numbers, decimals as base64 bytes with
the scale in the schema, full row images. Each is read by the encoding the envelope's schema names (or
the source declares), a value that cannot be read so is refused or quarantined naming its file, line
and column, and an image that lacks a declared field or has one more is schema drift.

Oracles: values derived by hand below (20777 days after 1970-01-01 is 2026-11-20: 2026-01-01 is day
56 * 365 + 14 leap days = 20454, and day 323 of 2026 is November 20; 1795410000 s is 20780 days and
5 hours: 2026-11-23 05:00; 12000 is 0x2EE0, base64 "LuA=").
"""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from wide_assets.errors import InvalidInputError
from wide_assets.pipelines import SourceSpec
from wide_assets.pipelines.ingest import ingest, landed_files, quarantine_path

COLUMNS = (
    ("id", "bigint"),
    ("shipped", "date"),
    ("ms", "timestamp"),
    ("us", "timestamp"),
    ("ns", "timestamp"),
    ("zoned", "timestamp"),
    ("price", "decimal(10,2)"),
    ("op_ts", "timestamp"),
)
# Connect schema of each image column: (type, logical name, parameters).
SCHEMA = {
    "id": ("int64", None, None),
    "shipped": ("int32", "io.debezium.time.Date", None),
    "ms": ("int64", "io.debezium.time.Timestamp", None),
    "us": ("int64", "io.debezium.time.MicroTimestamp", None),
    "ns": ("int64", "io.debezium.time.NanoTimestamp", None),
    "zoned": ("string", "io.debezium.time.ZonedTimestamp", None),
    "price": (
        "bytes",
        "org.apache.kafka.connect.data.Decimal",
        {"scale": "2", "connect.decimal.precision": "10"},
    ),
}
ROW = {
    "id": 1,
    "shipped": 20777,
    "ms": 1795410000000,
    "us": 1795410000123456,
    "ns": 1795410000123456000,
    "zoned": "2026-11-23T07:00:00.5+02:00",
    "price": "LuA=",
}
EXPECTED = (
    1,
    date(2026, 11, 20),
    datetime(2026, 11, 23, 5, 0),
    datetime(2026, 11, 23, 5, 0, 0, 123456),
    datetime(2026, 11, 23, 5, 0, 0, 123456),
    datetime(2026, 11, 23, 5, 0, 0, 500000),
    Decimal("120.00"),
)


def source(max_bad_records: int | None = None, **declared: Any) -> SourceSpec:
    return SourceSpec(
        name="shipments",
        description="Shipments from the orders database.",
        files=("in/*.jsonl",),
        columns=COLUMNS,
        primary_key=("id",),
        feeds={c: c for c, _ in COLUMNS if c != "id"},
        op_time="op_ts",
        format="debezium",
        max_bad_records=max_bad_records,
        **declared,
    )


def connect_schema(fields: dict[str, tuple[str, str | None, dict[str, str] | None]]) -> dict[str, Any]:
    image = [
        {
            "type": t,
            "optional": True,
            "field": f,
            **({"name": n} if n else {}),
            **({"parameters": p} if p else {}),
        }
        for f, (t, n, p) in fields.items()
    ]
    return {
        "type": "struct",
        "name": "shop.public.shipments.Envelope",
        "fields": [
            {"type": "struct", "fields": image, "optional": True, "field": "before"},
            {"type": "struct", "fields": image, "optional": True, "field": "after"},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }


def envelope(after: dict[str, Any], schema: dict[str, Any] | None = None, op: str = "c") -> str:
    payload = {"before": None, "after": after, "op": op, "ts_ms": 1795410000000}
    return json.dumps(payload if schema is None else {"schema": schema, "payload": payload})


def land(tmp_path: Path, *lines: str) -> None:
    (tmp_path / "in").mkdir(exist_ok=True)
    (tmp_path / "in" / "s1.jsonl").write_text("\n".join(lines) + "\n", "utf-8")


def run(spark: Any, tmp_path: Path, spec: SourceSpec) -> Any:
    return ingest(spark, spec, landed_files(tmp_path, spec), str(tmp_path / "cdc"))


def values(spark: Any, path: str) -> list[tuple[Any, ...]]:
    rows = spark.read.format("delta").load(path).orderBy("_offset").collect()
    return [tuple(r[c] for c, _ in COLUMNS[:-1]) for r in rows]


def test_default_encodings_are_read_by_the_envelope_schema(spark: Any, tmp_path: Path) -> None:
    land(tmp_path, envelope(ROW, connect_schema(SCHEMA)))
    run(spark, tmp_path, source())
    assert values(spark, str(tmp_path / "cdc")) == [EXPECTED]


def test_without_a_schema_the_source_declares_the_encodings(spark: Any, tmp_path: Path) -> None:
    declared = {c: n for c, (_, n, _) in SCHEMA.items() if n}
    land(tmp_path, envelope(ROW), envelope({**ROW, "id": 2, "price": "+w=="}))
    run(spark, tmp_path, source(encodings=declared))
    assert values(spark, str(tmp_path / "cdc")) == [EXPECTED, (2, *EXPECTED[1:-1], Decimal("-0.05"))]


def test_a_number_for_a_date_without_an_encoding_is_refused_naming_file_line_and_column(
    spark: Any, tmp_path: Path
) -> None:
    """Cast as it is, 20777 would be the year 20777 (and the merge would crash on it)."""
    land(tmp_path, envelope({**ROW, "ms": None, "us": None, "ns": None, "zoned": None, "price": "120.00"}))
    with pytest.raises(InvalidInputError) as raised:
        run(spark, tmp_path, source())
    assert "in/s1.jsonl line 1: column shipped: 20777 is a number" in str(raised.value)
    assert "io.debezium.time.Date" in str(raised.value)


def test_values_an_encoding_cannot_hold_are_quarantined_with_their_column(spark: Any, tmp_path: Path) -> None:
    schema = connect_schema(SCHEMA)
    land(
        tmp_path,
        envelope({**ROW, "ns": 1795410000123456789}, schema),  # nanoseconds a timestamp cannot hold
        envelope({**ROW, "id": 2, "price": "not base64!"}, schema),
        envelope({**ROW, "id": 3, "shipped": 10**9}, schema),  # past the year 9999
        envelope({**ROW, "id": 4}, schema),
    )
    run(spark, tmp_path, source(max_bad_records=5))
    reasons = spark.read.format("delta").load(quarantine_path(str(tmp_path / "cdc"))).orderBy("_source_line")
    assert [(r._source_line, r._reason.split(":")[0]) for r in reasons.collect()] == [
        (1, "column ns"),
        (2, "column price"),
        (3, "column shipped"),
    ]
    assert values(spark, str(tmp_path / "cdc")) == [(4, *EXPECTED[1:])]


def test_an_after_image_without_a_declared_field_is_schema_drift_naming_file_and_field(
    spark: Any, tmp_path: Path
) -> None:
    """Read as NULL, the missing field would overwrite the stored value."""
    schema = connect_schema(SCHEMA)
    without_price = {c: v for c, v in ROW.items() if c != "price"}
    land(tmp_path, envelope(without_price, schema))
    with pytest.raises(InvalidInputError) as raised:
        run(spark, tmp_path, source())
    assert "in/s1.jsonl line 1: " in str(raised.value)
    assert "lacks declared field(s) ['price']" in str(raised.value) and "(schema drift)" in str(raised.value)


def test_an_image_with_an_undeclared_field_is_quarantined_as_schema_drift(spark: Any, tmp_path: Path) -> None:
    schema = connect_schema(SCHEMA)
    land(
        tmp_path,
        envelope({**ROW, "installs": 3}, schema),
        envelope({**ROW, "id": 2}, schema),
        # A delete's `before` may carry the key alone (PostgreSQL's default replica identity).
        json.dumps({"before": {"id": 2}, "after": None, "op": "d", "ts_ms": 1795410000001}),
    )
    run(spark, tmp_path, source(max_bad_records=1))
    [quarantined] = spark.read.format("delta").load(quarantine_path(str(tmp_path / "cdc"))).collect()
    assert (quarantined._source_file, quarantined._source_line) == ("in/s1.jsonl", 1)
    assert "undeclared field(s) ['installs'] (schema drift)" in quarantined._reason
    kinds = spark.read.format("delta").load(str(tmp_path / "cdc")).orderBy("_offset").collect()
    assert [(r.id, r._row_kind) for r in kinds] == [(2, "+I"), (2, "-D")]


def test_a_declared_encoding_is_checked_at_definition() -> None:
    with pytest.raises(ValueError, match=r"did you mean 'io\.debezium\.time\.MicroTimestamp'"):
        source(encodings={"us": "io.debezium.time.MicroTimestmp"})
    with pytest.raises(ValueError, match="not among its columns"):
        source(encodings={"nope": "io.debezium.time.Date"})
