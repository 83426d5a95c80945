"""Data files written by the engine: Spark writes a frame as Parquet into a new folder under a Delta
table; the driver reads only the files' footers, to describe them as add actions (size, partition
values, statistics). Rows never pass through the driver.

A folder holds one write's files. Until a commit names them, no reader sees them; a writer that crashed
or lost a race leaves them behind, and `vacuum` deletes them after the retention.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import quote, unquote

from pyspark.sql import DataFrame

from wide_assets.session import is_connect
from wide_assets.table.deletion_vectors import Descriptor
from wide_assets.table.objects import StoredFile, TableFiles

# Bounds of longer strings are cut to this many characters (a prefix is a lower bound; a prefix
# followed by the largest character is an upper bound), as Delta's own writers cut them.
STRING_BOUND_CHARS = 32
LARGEST_CHAR = "\U0010ffff"
FOOTER_READERS = 8
_ONE_MILLISECOND = timedelta(milliseconds=1)


@dataclass(frozen=True)
class DataFile:
    """A data file of the table: its add action's fields (a file the engine just wrote has no vector)."""

    path: str  # table-relative, decoded
    size: int
    modification_time: int
    partition_values: dict[str, str | None]
    stats: str | None
    deletion_vector: Descriptor | None = None

    @property
    def num_records(self) -> int | None:
        """The physical row count its statistics record (deleted rows included)."""
        if not self.stats:
            return None
        value = json.loads(self.stats).get("numRecords")
        return None if value is None else int(value)

    def add_action(self, deletion_vector: Descriptor | None = None) -> dict[str, Any]:
        """This file's add action, with `deletion_vector` instead of its own when given."""
        stats = self.stats
        if deletion_vector is not None and stats:
            # With rows deleted, the recorded min/max may be wider than the live rows' (still a bound).
            stats = json.dumps({**json.loads(stats), "tightBounds": False})
        action: dict[str, Any] = {
            "path": quote(self.path, safe="/="),
            "partitionValues": self.partition_values,
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": True,
            "stats": stats,
        }
        vector = deletion_vector or self.deletion_vector
        if vector is not None:
            action["deletionVector"] = vector.to_action()
        return {"add": action}

    def remove_action(self, timestamp: int) -> dict[str, Any]:
        """The remove action of this exact file: a file is identified by its path and its vector."""
        action: dict[str, Any] = {
            "path": quote(self.path, safe="/="),
            "deletionTimestamp": timestamp,
            "dataChange": True,
            "extendedFileMetadata": True,
            "partitionValues": self.partition_values,
            "size": self.size,
        }
        if self.deletion_vector is not None:
            action["deletionVector"] = self.deletion_vector.to_action()
        return {"remove": action}


def write_files(
    frame: DataFrame,
    files: TableFiles,
    partition_by: Sequence[str] = (),
    folder: str | None = None,
    dictionary: bool = True,
) -> list[DataFile]:
    """Have the engine write `frame` as Parquet into a new folder of the table `files`; returns the
    files it wrote (none for an empty frame: a file the engine wrote with no rows is deleted). Not
    `dictionary`: no column is dictionary-encoded (Sail's `dictionary_enabled`, parquet-mr's
    `parquet.enable.dictionary`; each engine ignores the other's)."""
    folder = folder or f"part-{uuid.uuid4().hex}"
    writer = frame.write.mode("error")
    if not dictionary:
        writer = writer.option("dictionary_enabled", "false").option("parquet.enable.dictionary", "false")
    if is_connect(frame.sparkSession):
        # Sail reads "zstd" as level 1, where its default is level 3 (`parquet.compression`): writing
        # 1M rows of bench.workload took 0.53 s instead of 0.62, into files 2.5% smaller. (A JVM Spark
        # Connect server reads it as its own zstd; classic JVM Spark keeps its default.)
        writer = writer.option("compression", "zstd")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(files.uri(folder))
    stored = [f for f in files.list(folder) if f.path.endswith(".parquet")]
    with ThreadPoolExecutor(FOOTER_READERS) as pool:
        described = list(pool.map(lambda f: describe(files, f), stored))
    for empty in (w for w in described if not w.num_records):
        files.delete(empty.path)
    return [w for w in described if w.num_records]


def describe(files: TableFiles, stored: StoredFile) -> DataFile:
    """The add action of a Parquet file, from its footer: row count, null counts, integer bounds. A
    file holding NaN is first written again without bounds on its FLOAT/DOUBLE columns."""
    import pyarrow.parquet as pq

    metadata = pq.read_metadata(files.open_parquet(stored.path))
    floats = floating_columns(metadata)
    if floats and holds_nan(files, stored.path, floats):
        stored = without_bounds(files, stored, floats)
        metadata = pq.read_metadata(files.open_parquet(stored.path))
    return DataFile(
        path=stored.path,
        size=stored.size,
        modification_time=int(stored.modified.timestamp() * 1000),
        partition_values=partition_values(stored.path),
        stats=json.dumps(statistics(metadata), allow_nan=False),  # JSON has no NaN or Infinity
    )


def floating_columns(metadata: Any) -> list[str]:
    """The top-level FLOAT/DOUBLE columns of a Parquet file."""
    import pyarrow as pa

    return [f.name for f in metadata.schema.to_arrow_schema() if pa.types.is_floating(f.type)]


def holds_nan(files: TableFiles, path: str, columns: list[str]) -> bool:
    """Whether any of `columns` of the Parquet file `path` holds a NaN (read column by column, one row
    group at a time: the footer cannot tell, as writers leave NaN out of its bounds)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(files.open_parquet(path)).iter_batches(columns=columns):
        if any(pc.any(pc.is_nan(column)).as_py() for column in batch.columns):
            return True
    return False


def rewritten_without_bounds(path: str) -> bool:
    """Whether the file `path` (a path or URI) is one `without_bounds` wrote: pyarrow names a map's
    entries `key_value` in Parquet, where Sail's own writer names them `entries`."""
    return re.search(r"(^|/)[0-9a-f]{32}\.parquet$", path) is not None


def without_bounds(files: TableFiles, stored: StoredFile, floats: list[str]) -> StoredFile:
    """`stored` written again, beside it, without footer bounds on its `floats` columns; the original
    is deleted. Parquet writers leave NaN out of a column's bounds, and Sail, DuckDB and DataFusion
    skip row groups by them, so `d > 6` (true for NaN, which sorts above +Infinity in every reader)
    missed a NaN stored beside 5.0; and delta-rs's OPTIMIZE turned such bounds into a file whose
    minimum equals its maximum, which Sail reads as a constant (the NaN read back as 5.0)."""
    rows = read_as_written(files, stored.path)
    folder, _, _ = stored.path.rpartition("/")
    path = f"{folder}/{uuid.uuid4().hex}.parquet" if folder else f"{uuid.uuid4().hex}.parquet"
    files.write_parquet(path, rows, statistics=[c for c in rows.column_names if c not in floats])
    files.delete(stored.path)
    return StoredFile(path, files.size(path), datetime.now(UTC))


def read_as_written(files: TableFiles, path: str, columns: Sequence[str] | None = None) -> Any:
    """The Parquet file `path` (its `columns`) as a pyarrow Table that writes back with the same
    meaning. A top-level INT96 timestamp (classic JVM Spark's default for TIMESTAMP) is read as
    microseconds, UTC-adjusted, which is what it holds: pyarrow's default, nanoseconds, wrapped around
    before 1677 and after 2262, and Spark cannot read nanoseconds written back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(files.open_parquet(path), coerce_int96_timestamp_unit="us")
    rows = parquet.read(columns=columns)
    schema = parquet.schema
    int96 = {schema.column(i).path for i in range(len(schema)) if schema.column(i).physical_type == "INT96"}
    for index, name in enumerate(rows.column_names):
        if name in int96:
            rows = rows.set_column(index, name, rows[name].cast(pa.timestamp("us", tz="UTC")))
    return rows


def partition_values(path: str) -> dict[str, str | None]:
    """The `column=value` folders of a file's path (Hive layout, as Spark writes it)."""
    values: dict[str, str | None] = {}
    for part in path.split("/")[:-1]:
        if "=" in part:
            name, value = part.split("=", 1)
            decoded = unquote(value)
            values[unquote(name)] = None if decoded == "__HIVE_DEFAULT_PARTITION__" else decoded
    return values


def statistics(metadata: Any) -> dict[str, Any]:
    """Delta file statistics from a Parquet footer: numRecords, and the null count and bounds of every
    top-level column with a scalar type. A bound is written only where it is certain: a column
    without one reads, to delta-rs's dataset reader, as all NULL, so a column whose bounds are unknown
    (a nested or binary column, for which delta-rs makes no such guess) gets neither bounds nor a null
    count."""
    null_count: dict[str, int] = {}
    minimum: dict[str, Any] = {}
    maximum: dict[str, Any] = {}
    leaves = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    for field in metadata.schema.to_arrow_schema():
        index = leaves.get(field.name)
        if index is None or field.type.num_fields != 0:
            continue  # a nested column: several leaves, no single count
        chunks = [metadata.row_group(g).column(index).statistics for g in range(metadata.num_row_groups)]
        if not chunks or any(s is None or not s.has_null_count for s in chunks):
            continue
        nulls = sum(s.null_count for s in chunks)
        with_values = [s for s in chunks if s.num_values > s.null_count]
        if not with_values:  # all NULL: a null count alone says so
            null_count[field.name] = nulls
            continue
        if not all(s.has_min_max for s in with_values):
            continue
        low = _bound(min(s.min for s in with_values), field.type, upper=False)
        high = _bound(max(s.max for s in with_values), field.type, upper=True)
        if low is not None and high is not None:
            null_count[field.name], minimum[field.name], maximum[field.name] = nulls, low, high
    return {
        "numRecords": metadata.num_rows,
        "minValues": minimum,
        "maxValues": maximum,
        "nullCount": null_count,
    }


def _bound(value: Any, arrow_type: Any, upper: bool) -> Any:
    """A footer's min or max as Delta's JSON statistics write it, widened where the JSON form is less
    precise (decimals and floats by one step, timestamps to the millisecond); None where no sure bound
    exists: for ±Infinity and the largest doubles, which JSON cannot spell (delta-rs leaves them out
    too, delta-io/delta-rs#1784), and past the last timestamp. A FLOAT/DOUBLE file holding NaN has
    no bounds in its footer (`without_bounds`), hence none here (delta-io/delta#7101 drops such
    bounds for the same reason)."""
    import math
    import sys
    from decimal import Decimal

    import pyarrow as pa

    types = pa.types
    if types.is_boolean(arrow_type):
        return bool(value)
    if types.is_integer(arrow_type):
        return int(value)
    if types.is_floating(arrow_type) or types.is_decimal(arrow_type):
        # Strictly wider than the value, always: Sail 0.7.2 takes a column whose bounds are equal for
        # constant in the file and reads the value from the JSON, which it parses up to 1 ULP off. A
        # decimal moves one unit of its scale first, so that its float is a bound whatever the digits.
        direction = math.inf if upper else -math.inf
        step = Decimal(1).scaleb(-arrow_type.scale) if types.is_decimal(arrow_type) else 0
        widened = math.nextafter(float(value + step if upper else value - step), direction)
        if not math.isfinite(widened):
            return None
        # No subnormal numbers: not every reader parses them.
        return (
            widened
            if widened == 0 or abs(widened) >= sys.float_info.min
            else math.copysign(sys.float_info.min, widened)
        )
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        text = str(value)
        if len(text) <= STRING_BOUND_CHARS:
            return text
        return text[:STRING_BOUND_CHARS] + LARGEST_CHAR if upper else text[:STRING_BOUND_CHARS]
    if types.is_date(arrow_type) and isinstance(value, date):
        return value.isoformat()
    if types.is_timestamp(arrow_type) and isinstance(value, datetime):
        millis = value.replace(microsecond=value.microsecond // 1000 * 1000, tzinfo=None)
        if upper and millis < value.replace(tzinfo=None):
            if millis > datetime.max - _ONE_MILLISECOND:
                return None  # the next millisecond is past the last one a timestamp holds
            millis += _ONE_MILLISECOND
        # isoformat, not strftime: years before 1000 keep their four digits.
        text = millis.isoformat(timespec="milliseconds")
        return text + "Z" if arrow_type.tz is not None else text
    return None
