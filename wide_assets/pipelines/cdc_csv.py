"""Landed CSV change records -> their header and one row of strings per record, with the line it
starts on.

Plain Python, no Spark, like `cdc_json`: a record with another number of fields than the header is
kept with its problem (never padded with NULLs or cut), so a quarantining source quarantines it with
its file and line and ingests the file's other records. An empty field is NULL, as Spark's CSV reader
reads it; blank lines are skipped. A file that is not UTF-8 raises `UnreadableFile` with the line of
the first bad byte.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CsvRecord", "UnreadableFile", "read_csv"]


class UnreadableFile(ValueError):
    """A landed file that cannot be read at all (bad encoding, corrupt Parquet, ...): why, in words."""


@dataclass(frozen=True)
class CsvRecord:
    """One record: its first line (the header is line 1), its fields (None for an empty one), the
    problem ('' when it has as many fields as the header) and its text as landed."""

    line: int
    fields: tuple[str | None, ...]
    problem: str
    raw: str


def read_csv(path: Path) -> tuple[list[str], list[CsvRecord]]:
    """`path`'s header and its records."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UnreadableFile(f"line {line} is not UTF-8 ({error.reason})") from error
    lines = text.splitlines()
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    records = []
    # `line_num` counts the lines read so far: a record spans the lines after the previous one's end.
    end = reader.line_num
    for fields in reader:
        start, end = end + 1, reader.line_num
        if not fields:
            continue
        raw = "\n".join(lines[start - 1 : end])
        if len(fields) != len(header):
            problem = f"{len(fields)} field(s), the header has {len(header)} (malformed line)"
            records.append(CsvRecord(start, (), problem, raw))
        else:
            records.append(CsvRecord(start, tuple(f if f != "" else None for f in fields), "", raw))
    return header, records
