"""An independent oracle of product_360: the table recomputed in plain Python from the landed files.

Per source the latest state by op time (arrival breaks ties), the delete rules of
`wide_assets_defs/product_360/defs.yaml`, joined on product_id. It shares no code with the pipeline (not even
the JSON parser), so the tests and `bench.reliability` can fail when the pipeline is wrong.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from demos import declared
from wide_assets.table import WideTable

__all__ = ["SOURCES", "Row", "oracle", "records", "table_rows"]

PRODUCT_360 = declared("product_360").spec

SOURCES = ("catalog", "pricing", "lifecycle", "reviews", "questions")
TABLE_SOURCES = {
    "catalog": ("product_name", "brand"),
    "pricing": ("price", "sale_ends"),
    "lifecycle": ("discontinue_date",),
}
PARSERS: dict[str, Any] = {
    "product_id": int,
    "review_id": int,
    "question_id": int,
    "rating": int,
    "price": Decimal,
    "sale_ends": date.fromisoformat,
    "discontinue_date": date.fromisoformat,
}
Row = tuple[Any, ...]


def _ms(text: str) -> int:
    return round(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def _typed(fields: dict[str, Any]) -> dict[str, Any] | None:
    """The fields parsed, or None when a value does not parse (the record is malformed)."""
    try:
        return {k: (PARSERS[k](v) if k in PARSERS and v is not None else v) for k, v in fields.items()}
    except (ValueError, TypeError, InvalidOperation):
        return None


def records(landing: Path, source: str) -> list[tuple[str, int, dict[str, Any]]]:
    """(kind, op time ms, fields) of every well-formed record of `source`, in arrival order."""
    out = []
    for path in sorted((landing / "landing" / source).glob("*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if source in TABLE_SOURCES:
                op = data.get("op")
                image = data.get("before") if op == "d" else data.get("after")
                if op not in ("c", "r", "u", "d") or not isinstance(image, dict):
                    continue
                kind, ts, fields = ("-D" if op == "d" else "+I"), data["ts_ms"], image
            else:
                if data.get("rowkind") not in ("+I", "-U", "+U", "-D"):
                    continue
                kind, ts, fields = data["rowkind"], _ms(data["op_ts"]), data
            typed = _typed({k: v for k, v in fields.items() if k not in ("rowkind", "op_ts")})
            if typed is not None and isinstance(typed.get("product_id"), int):
                out.append((kind, ts, typed))
    return out


def _latest(
    landed: list[tuple[str, int, dict[str, Any]]], key: str
) -> dict[Any, tuple[str, int, dict[str, Any]]]:
    latest: dict[Any, tuple[int, int, tuple[str, int, dict[str, Any]]]] = {}
    for arrival, record in enumerate(landed):
        k = record[2][key]
        rank = (record[1], arrival)
        if k not in latest or rank >= latest[k][:2]:
            latest[k] = (*rank, record)
    return {k: v[2] for k, v in latest.items()}


def oracle(landing: Path) -> set[Row]:
    """product_360 recomputed in Python from the landed files (op times as epoch milliseconds)."""
    landed = {s: records(landing, s) for s in SOURCES}
    products = {r[2]["product_id"] for rs in landed.values() for r in rs}
    row: dict[int, dict[str, Any]] = {p: {} for p in products}
    for source, columns in TABLE_SOURCES.items():
        for product, (kind, ts, fields) in _latest(landed[source], "product_id").items():
            values = {c: (None if kind == "-D" else fields.get(c)) for c in columns}
            row[product].update(values, **{f"{source}_op_ts": ts, f"{source}_deleted": kind == "-D"})
    for source, key, counted, column in (
        ("reviews", "review_id", lambda f: True, "review_cnt"),
        ("questions", "question_id", lambda f: f["status"] == "open", "open_question_cnt"),
    ):
        for kind, _, fields in _latest(landed[source], key).values():
            r = row[fields["product_id"]]
            r[column] = r.get(column, 0) + (kind in ("+I", "+U") and counted(fields))
        for _, ts, fields in landed[source]:
            r = row[fields["product_id"]]
            r[f"{source}_op_ts"] = max(r.get(f"{source}_op_ts", ts), ts)
    return {
        (p, *(r.get(c) for c in PRODUCT_360.value_columns))
        for p, r in row.items()
        if not r.get("catalog_deleted")
    }


def table_rows(table: WideTable) -> set[Row]:
    """The table's rows with op times as epoch milliseconds, comparable with the oracle."""
    spark = table.spark
    assert spark is not None, "reading the rows needs a session"
    selected = ", ".join(
        f"unix_millis({c}) AS {c}" if c.endswith("_op_ts") else c for c in PRODUCT_360.column_names
    )
    rows = spark.sql(f"SELECT {selected} FROM {{t}}", t=table.read()).collect()
    return {tuple(r[c] for c in PRODUCT_360.column_names) for r in rows}
