"""Landed JSON change records (Debezium envelopes, Flink changelog JSON) -> one row of strings per line.

Plain Python, no Spark: each line of a file becomes its line number, its row kind, the source's
columns as text (cast and validated later, in the same SQL as CSV files) and the problem that makes
it unusable, if any (bad JSON, missing key, unknown op, missing image). Nothing is skipped: a
malformed line is a row whose problem is set, so it reaches the quarantine with its file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wide_assets.pipelines.specs import ROW_KINDS, SourceSpec

__all__ = ["DEBEZIUM_OPS", "JsonRecord", "format_op_time", "json_fields", "parse_json_lines"]

# Debezium `op`: create, read (snapshot), update, delete -> the row kind and the image that holds the row.
DEBEZIUM_OPS = {"c": ("+I", "after"), "r": ("+I", "after"), "u": ("+U", "after"), "d": ("-D", "before")}
FLINK_KIND = "rowkind"


@dataclass(frozen=True)
class JsonRecord:
    """One landed line: `values` follow the source's columns (text or None); `problem` '' when usable."""

    line: int
    row_kind: str | None
    values: tuple[str | None, ...]
    problem: str
    raw: str


def format_op_time(ts_ms: int) -> str:
    """Epoch milliseconds (Debezium `ts_ms`) -> a UTC `timestamp_ntz` literal with milliseconds."""
    return datetime.fromtimestamp(ts_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def _envelope(source: SourceSpec, data: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any], str]:
    """(row kind, the fields of the row, problem) of a decoded line in `source`'s format."""
    if source.format == "flink-json":
        kind = data.get(FLINK_KIND)
        if kind not in ROW_KINDS:
            return None, data, f"{FLINK_KIND} {kind!r} is not one of {', '.join(ROW_KINDS)} (unknown op)"
        return kind, data, ""
    envelope = data.get("payload", data) if isinstance(data.get("payload"), dict) else data
    op = envelope.get("op")
    if op not in DEBEZIUM_OPS:
        return None, {}, f"op {op!r} is not one of {', '.join(DEBEZIUM_OPS)} (unknown op)"
    kind, image_name = DEBEZIUM_OPS[op]
    image = envelope.get(image_name)
    if not isinstance(image, dict):
        return kind, {}, f"op {op!r} needs a '{image_name}' object (missing image)"
    ts_ms = envelope.get("ts_ms")
    if isinstance(ts_ms, bool) or not isinstance(ts_ms, int):
        return kind, image, f"ts_ms {ts_ms!r} is not epoch milliseconds (uncastable value)"
    return kind, {**image, source.op_time: format_op_time(ts_ms)}, ""


def _record(source: SourceSpec, number: int, line: str) -> JsonRecord:
    empty = (None,) * len(source.columns)
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        return JsonRecord(number, None, empty, f"{error.msg} at column {error.colno} (bad JSON)", line)
    if not isinstance(data, dict):
        return JsonRecord(number, None, empty, "the line is not a JSON object (bad JSON)", line)
    kind, fields, problem = _envelope(source, data)
    values = tuple(_text(fields.get(c)) for c in source.column_names)
    if not problem:
        missing = [k for k in source.required_columns if fields.get(k) is None]
        if missing:
            problem = f"key {', '.join(missing)} is missing (missing key)"
    return JsonRecord(number, kind, values, problem, line)


def parse_json_lines(source: SourceSpec, path: Path) -> Iterator[JsonRecord]:
    """Every non-blank line of `path` (line numbers from 1) as a `JsonRecord` of `source`."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield _record(source, number, line.rstrip("\n"))


def json_fields(source: SourceSpec, path: Path) -> set[str]:
    """The column names the well-formed records of `path` carry (envelope fields excluded)."""
    seen: set[str] = set()
    for record in parse_json_lines(source, path):
        if record.problem.endswith("(bad JSON)"):
            continue
        data = json.loads(record.raw)
        if source.format == "flink-json":
            seen.update(k for k in data if k != FLINK_KIND)
            continue
        envelope = data.get("payload", data) if isinstance(data.get("payload"), dict) else data
        for image in ("before", "after"):
            if isinstance(envelope.get(image), dict):
                seen.update(envelope[image])
        seen.add(source.op_time or "")
    seen.discard("")
    return seen
