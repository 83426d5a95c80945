"""Debezium's and Kafka Connect's encodings of column values -> the text the ingest casts to a column.

Debezium writes dates and timestamps as numbers by default (`time.precision.mode=adaptive`) and a
DECIMAL as the base64 bytes of its unscaled value (`decimal.handling.mode=precise`); the logical
type and a decimal's scale are only in the record's schema. A number cast to a date as it is would
be a year (20777 read as the year 20777, not 2026-11-20), so such a value is decoded by the
encoding the envelope's `schema` names for the field, or else the one the source declares
(`encodings`); a number for a date or timestamp column without either is refused, never guessed.

Decoding is exact: a value that would lose digits (nanoseconds past microseconds) or does not fit
a Spark timestamp (years 1-9999) is a problem, as a decimal with too many places is at ingest.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

__all__ = ["DECIMAL_ENCODINGS", "ENCODINGS", "EncodingProblem", "decode", "field_encodings"]

_EPOCH = datetime(1970, 1, 1)
_TEXT = "%Y-%m-%d %H:%M:%S.%f"
# ISO-8601 with up to nine fractional digits (Debezium's ZonedTimestamp keeps the column's precision).
_ZONED = re.compile(r"(?P<time>[^.]+)(?:\.(?P<fraction>\d{1,9}))?(?P<zone>Z|[+-]\d{2}:?\d{2})")


class EncodingProblem(ValueError):
    """Why a value cannot be decoded: the words of a quarantine reason, without its category."""


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise EncodingProblem(f"{value!r} is not an integer")
    return int(value)


def _timestamp(micros: int) -> str:
    try:
        return (_EPOCH + timedelta(microseconds=micros)).strftime(_TEXT)
    except OverflowError:
        raise EncodingProblem(f"{micros} microseconds from the epoch is past the years 1-9999") from None


def _date(value: Any, scale: int | None) -> str:
    try:
        return (date(1970, 1, 1) + timedelta(days=_integer(value))).isoformat()
    except OverflowError:
        raise EncodingProblem(f"{value} days from the epoch is past the years 1-9999") from None


def _millis(value: Any, scale: int | None) -> str:
    return _timestamp(_integer(value) * 1000)


def _micros(value: Any, scale: int | None) -> str:
    return _timestamp(_integer(value))


def _nanos(value: Any, scale: int | None) -> str:
    micros, rest = divmod(_integer(value), 1000)
    if rest:
        raise EncodingProblem(f"{value} nanoseconds would be rounded to microseconds")
    return _timestamp(micros)


def _zoned(value: Any, scale: int | None) -> str:
    """ISO-8601 text with a zone offset -> the UTC instant (the session's time zone is UTC)."""
    match = _ZONED.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise EncodingProblem(f"{value!r} is not an ISO-8601 time with a zone")
    fraction = match["fraction"] or ""
    if fraction[6:].strip("0"):
        raise EncodingProblem(f"{value!r} would be rounded to microseconds")
    try:
        moment = datetime.fromisoformat(f"{match['time']}.{fraction[:6].ljust(6, '0')}{match['zone']}")
        return moment.astimezone(UTC).replace(tzinfo=None).strftime(_TEXT)
    except (ValueError, OverflowError):
        raise EncodingProblem(f"{value!r} is not a time in the years 1-9999") from None


def _unscaled(value: Any) -> int:
    if not isinstance(value, str):
        raise EncodingProblem(f"{value!r} is not base64 text")
    try:
        return int.from_bytes(base64.b64decode(value, validate=True), "big", signed=True)
    except (binascii.Error, ValueError):
        raise EncodingProblem(f"{value!r} is not base64 text") from None


def _decimal(value: Any, scale: int | None) -> str:
    """Kafka Connect's Decimal: base64 of the big-endian two's-complement unscaled value."""
    if scale is None:
        raise EncodingProblem("its scale is unknown")
    return format(Decimal(_unscaled(value)).scaleb(-scale), "f")


def _variable_decimal(value: Any, scale: int | None) -> str:
    """Debezium's VariableScaleDecimal: `{"scale": s, "value": <base64 unscaled value>}`."""
    if not isinstance(value, Mapping) or "scale" not in value or "value" not in value:
        raise EncodingProblem(f"{value!r} is not an object of `scale` and `value`")
    return _decimal(value["value"], _integer(value["scale"]))


# Logical type name (as the schema's `name` gives it) -> its decoder (value, scale) -> text.
ENCODINGS: dict[str, Callable[[Any, int | None], str]] = {
    "io.debezium.time.Date": _date,
    "org.apache.kafka.connect.data.Date": _date,
    "io.debezium.time.Timestamp": _millis,
    "org.apache.kafka.connect.data.Timestamp": _millis,
    "io.debezium.time.MicroTimestamp": _micros,
    "io.debezium.time.NanoTimestamp": _nanos,
    "io.debezium.time.ZonedTimestamp": _zoned,
    "org.apache.kafka.connect.data.Decimal": _decimal,
    "io.debezium.data.VariableScaleDecimal": _variable_decimal,
}
# The encodings that need a scale: the schema's `scale` parameter, or the declared column's.
DECIMAL_ENCODINGS = ("org.apache.kafka.connect.data.Decimal",)


def decode(encoding: str, value: Any, scale: int | None) -> str:
    """`value` as the text of the value it encodes; raises `EncodingProblem` saying why it cannot."""
    return ENCODINGS[encoding](value, scale)


def field_encodings(data: Mapping[str, Any], image: str) -> dict[str, tuple[str | None, int | None]] | None:
    """Field -> (logical type name or None, scale or None) of `image` ('before' or 'after') in the
    envelope's Connect schema (`{"schema": ..., "payload": ...}`), or None when the record has none."""
    schema = data.get("schema")
    if not isinstance(schema, Mapping) or not isinstance(schema.get("fields"), list):
        return None
    for part in schema["fields"]:
        if isinstance(part, Mapping) and part.get("field") == image and isinstance(part.get("fields"), list):
            found: dict[str, tuple[str | None, int | None]] = {}
            for column in part["fields"]:
                if not isinstance(column, Mapping) or not isinstance(column.get("field"), str):
                    continue
                parameters = column.get("parameters")
                scale = parameters.get("scale") if isinstance(parameters, Mapping) else None
                name = column.get("name")
                found[column["field"]] = (
                    name if isinstance(name, str) else None,
                    int(scale) if isinstance(scale, str | int) and str(scale).lstrip("-").isdigit() else None,
                )
            return found
    return None
