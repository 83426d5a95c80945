"""Runs the Paimon/Fluss conformance cases (`tests/fixtures/conformance-public.json`; the rules and the
file's format are in `docs/semantics.md`).

The expectations come from the JSON file only; this module turns a case into writes, and actual
rows/changelog into the file's value format, so a case can be checked against any backend.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyroaring import BitMap, BitMap64

from wide_assets.schema import Column

CASES_FILE = Path(__file__).resolve().parent / "fixtures" / "conformance-public.json"


def load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(CASES_FILE.read_text())
    return cases


def table_options(case: dict[str, Any]) -> dict[str, str]:
    """A Fluss case without a `table.*` option names its dialect with Fluss's default delete behavior."""
    options = dict(case["options"])
    if case["engine"] == "fluss" and not any(k.startswith("table.") for k in options):
        options["table.delete.behavior"] = "allow"
    return options


def columns(case: dict[str, Any]) -> list[Column]:
    """The case's columns; an `rbm` column (a RoaringBitmap shown as a sorted int list) is BINARY."""
    return [
        Column.parse(name, "binary" if type_text == "rbm" else type_text)
        for name, type_text in case["columns"]
    ]


def bitmap_class(case: dict[str, Any], column: str) -> Any:
    """pyroaring's class for an `rbm` column: 64-bit when its function is rbm64."""
    function = case["options"].get(f"fields.{column}.aggregate-function") or case["options"].get(
        f"fields.{column}.agg"
    )
    return BitMap64 if function == "rbm64" else BitMap


def is_bitmap(case: dict[str, Any], column: str) -> bool:
    return dict(case["columns"]).get(column) == "rbm"


@dataclass(frozen=True)
class Write:
    """Consecutive input records written together: one Paimon batch, or a Fluss run of one target set."""

    batch: int
    target_columns: tuple[str, ...] | None
    records: tuple[tuple[int, dict[str, Any]], ...]  # (input index, record)


def writes(case: dict[str, Any], limit: int | None = None) -> list[Write]:
    records = list(enumerate(case["input"]))[:limit]
    grouped: list[Write] = []
    for index, record in records:
        targets = tuple(record["target_columns"]) if record.get("target_columns") else None
        if grouped and grouped[-1].batch == record["batch"] and grouped[-1].target_columns == targets:
            last = grouped[-1]
            grouped[-1] = Write(last.batch, targets, (*last.records, (index, record)))
        else:
            grouped.append(Write(record["batch"], targets, ((index, record),)))
    return grouped


def to_python(value: Any, column: Column) -> Any:
    if value is None:
        return None
    base = column.base_type
    if base == "date":
        return date.fromisoformat(value)
    if base in ("timestamp", "timestamp_ntz"):
        return datetime.fromisoformat(value)
    if base == "decimal":
        return Decimal(value)
    if base in ("double", "float"):
        return float(value)
    return value


def to_json(value: Any, column: Column) -> Any:
    """A value read back from Spark, in the JSON file's format."""
    if value is None:
        return None
    if isinstance(value, datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0").rstrip(".")
        return text
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if column.base_type in ("double", "float"):
        return float(value)
    return value


def canonical_expected(value: Any, column: Column) -> Any:
    if value is None:
        return None
    if column.base_type in ("timestamp", "timestamp_ntz"):
        return to_json(datetime.fromisoformat(value), column)
    if column.base_type in ("double", "float"):
        return float(value)
    return value


def value_in(case: dict[str, Any], column: Column, value: Any) -> Any:
    if value is not None and is_bitmap(case, column.name):
        return bitmap_class(case, column.name)(value).serialize()
    return to_python(value, column)


def value_out(case: dict[str, Any], column: Column, value: Any) -> Any:
    if value is not None and is_bitmap(case, column.name):
        return sorted(bitmap_class(case, column.name).deserialize(bytes(value)))
    return to_json(value, column)


def write_frame(spark: Any, case: dict[str, Any], write: Write) -> Any:
    """The write's records as a typed DataFrame with `_row_kind` and `_offset` (the input index)."""
    table_columns = columns(case)
    names = list(write.target_columns) if write.target_columns else [c.name for c in table_columns]
    by_name = {c.name: c for c in table_columns}
    rows = [
        (*(value_in(case, by_name[n], record["row"].get(n)) for n in names), record["kind"], index)
        for index, record in write.records
    ]
    ddl = ", ".join(f"`{n}` {by_name[n].type}" for n in names) + ", _row_kind string, _offset bigint"
    return spark.createDataFrame(rows, ddl)


def rows_as_json(rows: Iterable[Any], case: dict[str, Any]) -> list[dict[str, Any]]:
    table_columns = columns(case)
    out = [{c.name: value_out(case, c, row[c.name]) for c in table_columns} for row in rows]
    return sorted(out, key=lambda r: json.dumps([r[k] for k in case["primary_key"]], default=str))


def expected_rows(rows: Sequence[dict[str, Any]], case: dict[str, Any]) -> list[dict[str, Any]]:
    table_columns = columns(case)
    out = [{c.name: canonical_expected(row.get(c.name), c) for c in table_columns} for row in rows]
    return sorted(out, key=lambda r: json.dumps([r[k] for k in case["primary_key"]], default=str))


def changelog_by_batch_and_key(
    entries: Iterable[dict[str, Any]], case: dict[str, Any]
) -> dict[tuple[int, str], list[tuple[str, dict[str, Any]]]]:
    """Entries grouped by (batch, key), in order: the order the spec makes significant."""
    grouped: dict[tuple[int, str], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for entry in entries:
        key = json.dumps([entry["row"][k] for k in case["primary_key"]], default=str)
        grouped[(entry["batch"], key)].append((entry["kind"], entry["row"]))
    return dict(grouped)


def check_case(
    case: dict[str, Any],
    run: Callable[[dict[str, Any], list[Write]], tuple[list[dict[str, Any]], list[dict[str, Any]]]],
) -> None:
    """Run the case's writes (final and intermediate states) with `run` and compare to the file.

    `run(case, writes)` returns (rows, changelog entries as {"kind", "row", "batch"}) in the file's format.
    """
    rows, changelog = run(case, writes(case))
    assert rows == expected_rows(case["expected_rows"], case), f"final rows of {case['name']}"
    if case.get("expected_changelog") is not None:
        batches = case.get("expected_changelog_batches")
        expected = [e for e in case["expected_changelog"] if batches is None or e["batch"] in batches]
        actual = [e for e in changelog if batches is None or e["batch"] in batches]
        table_columns = columns(case)
        expected = [
            {**e, "row": {c.name: canonical_expected(e["row"].get(c.name), c) for c in table_columns}}
            for e in expected
        ]
        assert changelog_by_batch_and_key(actual, case) == changelog_by_batch_and_key(expected, case), (
            f"changelog of {case['name']}"
        )
    for step in case.get("intermediate", []):
        rows, _ = run(case, writes(case, limit=step["after_input"]))
        assert rows == expected_rows(step["rows"], case), (
            f"{case['name']} after {step['after_input']} records"
        )


# Cases of engines or functions that are not implemented yet, by name (empty: all pass).
EXPECTED_TO_FAIL: set[str] = set()


def case_params() -> list[Any]:
    return [
        pytest.param(
            case,
            id=case["name"],
            marks=[pytest.mark.xfail(strict=True)] if case["name"] in EXPECTED_TO_FAIL else [],
        )
        for case in load_cases()
    ]


def changelog_entries(
    rows: list[Any], case: dict[str, Any], batch_of_commit: dict[int, int]
) -> list[dict[str, Any]]:
    ordered = sorted(rows, key=lambda r: (r["_commit"], r["_offset"]))
    return [
        {"kind": r["_row_kind"], "row": rows_as_json([r], case)[0], "batch": batch_of_commit[r["_commit"]]}
        for r in ordered
    ]


def expect_error_or_run(case: dict[str, Any], run: Any) -> None:
    if case.get("expected_error"):
        with pytest.raises(Exception) as raised:
            run(case, [])
            check_case(case, run)
        assert case["expected_error"] in str(raised.value)
        return
    check_case(case, run)
