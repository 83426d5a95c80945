"""Landed JSON change records (Debezium envelopes, Flink changelog JSON) -> one row of strings per line.

Plain Python, no Spark: each line of a file becomes its line number, its row kind, the source's
columns as text (cast and validated later, in the same SQL as CSV files) and the problem that makes
it unusable, if any (bad JSON, bad encoding, too long, missing key, unknown op, missing image, missing
sequence field, a value its encoding cannot give). Nothing is skipped: a malformed line is a row whose
problem is set, so it reaches the quarantine with its file and line.

A Debezium value is decoded by the encoding its envelope's `schema` names, else the one the source
declares (`debezium_values`). A row image must hold exactly the declared columns (a Debezium
source's op time excepted: `ts_ms` fills it): a field it lacks would be read as NULL and overwrite
the stored value, a field it has more would be dropped, so either is schema drift (`_image_drift`). A
retraction (`-U`, `-D`) may carry its key alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wide_assets.pipelines.debezium_values import ENCODINGS, EncodingProblem, decode, field_encodings
from wide_assets.pipelines.specs import ROW_KINDS, SourceSpec

__all__ = ["DEBEZIUM_OPS", "JsonRecord", "format_op_time", "json_fields", "parse_json_lines"]

# Debezium `op`: create, read (snapshot), update, delete -> the row kind and the image that holds the row.
DEBEZIUM_OPS = {"c": ("+I", "after"), "r": ("+I", "after"), "u": ("+U", "after"), "d": ("-D", "before")}
FLINK_KIND = "rowkind"
# A longer line is quarantined (too long) and only its first characters are kept as the record.
MAX_LINE_CHARS = 1 << 20
# Declared types whose value a bare JSON number would misstate (20777 cast to a date is the year 20777).
_TEMPORAL_TYPES = ("date", "timestamp")


@dataclass(frozen=True)
class JsonRecord:
    """One landed line: `values` follow the source's columns (text or None); `problem` '' when usable;
    `drift` says which fields its image lacks or has more than the source declares ('' when none)."""

    line: int
    row_kind: str | None
    values: tuple[str | None, ...]
    problem: str
    raw: str
    drift: str = ""


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
        row = {name: value for name, value in data.items() if name != FLINK_KIND}
        if kind not in ROW_KINDS:
            return None, row, f"{FLINK_KIND} {kind!r} is not one of {', '.join(ROW_KINDS)} (unknown op)"
        return kind, row, ""
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
    values, unreadable = _values(source, data, kind, fields)
    if not problem:
        missing = [k for k in source.required_columns if fields.get(k) is None]
        if missing:
            problem = f"key {', '.join(missing)} is missing (missing key)"
        elif source.op_time and fields.get(source.op_time) is None:
            problem = f"op time {source.op_time} is missing (missing sequence field)"
        else:
            problem = unreadable
    return JsonRecord(
        number, kind, values, problem, line, _image_drift(source, kind, fields) if fields else ""
    )


def _image_name(kind: str | None) -> str:
    return "before" if kind == "-D" else "after"


def _image_drift(source: SourceSpec, kind: str | None, fields: Mapping[str, Any]) -> str:
    """Why a record's row image is not the source's columns (schema drift), or '' when it is."""
    expected = [c for c in source.column_names if not (c == source.op_time and source.format == "debezium")]
    lacking = [c for c in expected if c not in fields] if kind in ("+I", "+U") else []
    extra = [f for f in fields if f not in source.column_names]
    if not (lacking or extra):
        return ""
    image = f"its '{_image_name(kind)}' image" if source.format == "debezium" else "the record"
    parts = [f"lacks declared field(s) {lacking}"] if lacking else []
    parts += [f"has undeclared field(s) {extra}"] if extra else []
    return f"{image} {' and '.join(parts)} (schema drift)"


def _values(
    source: SourceSpec, data: Mapping[str, Any], kind: str | None, fields: Mapping[str, Any]
) -> tuple[tuple[str | None, ...], str]:
    """The source's columns of `fields` as text, each decoded by its encoding, and the problems of the
    values that cannot be (uncastable value, undeclared encoding; '' when none)."""
    payload = data.get("payload")
    schema = field_encodings(data, _image_name(kind)) if isinstance(payload, dict) else None
    types = dict(source.columns)
    values: list[str | None] = []
    problems = []
    for column in source.column_names:
        value = fields.get(column)
        encoding, scale = (schema or {}).get(column, (None, None))
        declared = source.encodings.get(column)
        if declared is not None and encoding is not None and declared != encoding:
            problems.append(
                f"column {column}: the record's schema says {encoding}, the source declares {declared} "
                "(encoding mismatch)"
            )
            values.append(None)
            continue
        encoding = encoding or declared
        if (
            value is None
            or encoding not in ENCODINGS
            or (source.format == "debezium" and column == source.op_time)
        ):
            values.append(_text(value))
            if _bare_number(value) and types[column].lower().startswith(_TEMPORAL_TYPES):
                needs = (
                    "its encoding from the envelope's schema or the source's `encodings` (e.g. "
                    "io.debezium.time.Date for days since the epoch)"
                    if source.format == "debezium"
                    else "text (e.g. '2026-11-20', '2026-11-20 10:15:00')"
                )
                problems.append(
                    f"column {column}: {value} is a number; a {types[column]} column needs {needs} "
                    "(undeclared encoding)"
                )
            continue
        try:
            values.append(
                decode(encoding, value, scale if scale is not None else source.declared_scale(column))
            )
        except EncodingProblem as error:
            values.append(None)
            problems.append(f"column {column}: {encoding} {error} (uncastable value)")
    return tuple(values), "; ".join(problems)


def _bare_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
