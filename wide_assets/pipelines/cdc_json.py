"""Landed JSON change records (Debezium envelopes, Flink changelog JSON) -> one row of strings per line.

Plain Python, no Spark: each line of a file becomes its line number, its row kind, the source's
columns as text (cast and validated later, in the same SQL as CSV files) and the problem that makes
it unusable, if any (bad JSON, bad encoding, too long, missing key, unknown op, missing image, missing
sequence field). Nothing is skipped: a malformed line is a row whose problem is set, so it reaches the
quarantine with its file and line.
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
# A longer line is quarantined (too long) and only its first characters are kept as the record.
MAX_LINE_CHARS = 1 << 20


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
    if ts_ms is None:
        return kind, image, "ts_ms is missing (missing sequence field)"
    if isinstance(ts_ms, bool) or not isinstance(ts_ms, int):
        return kind, image, f"ts_ms {ts_ms!r} is not epoch milliseconds (uncastable value)"
    try:
        op_time = format_op_time(ts_ms)
    except (ValueError, OverflowError, OSError):
        return kind, image, f"ts_ms {ts_ms} is out of range (uncastable value)"
    return kind, {**image, source.op_time: op_time}, ""


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
        elif source.op_time and fields.get(source.op_time) is None:
            problem = f"op time {source.op_time} is missing (missing sequence field)"
    return JsonRecord(number, kind, values, problem, line)


def _decoded(source: SourceSpec, number: int, data: bytes) -> JsonRecord:
    """One line's bytes as a record; bytes that are not UTF-8 or too many make it unusable."""
    empty = (None,) * len(source.columns)
    try:
        line = data.decode("utf-8")
    except UnicodeDecodeError as error:
        text = data.decode("utf-8", errors="replace")[:MAX_LINE_CHARS]
        return JsonRecord(number, None, empty, f"byte {error.start + 1} is not UTF-8 (bad encoding)", text)
    if len(line) > MAX_LINE_CHARS:
        problem = f"{len(line)} characters, more than {MAX_LINE_CHARS} (too long)"
        return JsonRecord(number, None, empty, problem, line[:MAX_LINE_CHARS])
    return _record(source, number, line)


def parse_json_lines(source: SourceSpec, path: Path) -> Iterator[JsonRecord]:
    """Every non-blank line of `path` (line numbers from 1) as a `JsonRecord` of `source`; each line is
    decoded on its own, so one line of bad bytes does not stop the rest of the file."""
    with path.open("rb") as handle:
        for number, data in enumerate(handle, start=1):
            if data.strip():
                yield _decoded(source, number, data.rstrip(b"\r\n"))


def json_fields(source: SourceSpec, path: Path) -> set[str]:
    """The column names the well-formed records of `path` carry (envelope fields excluded)."""
    seen: set[str] = set()
    for record in parse_json_lines(source, path):
        if record.problem.endswith(("(bad JSON)", "(bad encoding)", "(too long)")):
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
