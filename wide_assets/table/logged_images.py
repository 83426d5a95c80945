"""A small commit's table images and row-kind counts, and the counts of a few pending fragments, read
from the log files on the driver (pyarrow).

Applying one commit of a Paimon engine (one transition per key) takes its logged entries but the -U:
the engine would plan a query, read them back and write them as table files, and a second query
would bring their keys to the driver. For a commit of a few rows that fixed cost was most of the table
commit (and on JVM Spark, each query is a job or more). Here the driver reads the commit's rows from
the log files whose statistics can hold them and writes the new rows as one Parquet file. Large
commits, and tables whose rows a pyarrow round trip could change (nested types) or that are
bucketed (the engine writes one folder per bucket), stay with the engine.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from wide_assets.sql import RETRACTS, RowKind
from wide_assets.table.files import DataFile, describe, read_as_written
from wide_assets.table.log import Origin
from wide_assets.table.log_frames import file_records, log_file_actions
from wide_assets.table.objects import StoredFile, TableFiles

if TYPE_CHECKING:
    import pyarrow as pa

    from wide_assets.table.storage import Storage

logger = logging.getLogger(__name__)

# The most log rows read on the driver for one commit's images: beyond, the engine writes them in
# parallel (100k changes of bench.workload are about 93k entries).
DRIVER_IMAGE_ROWS = 250_000
# The column types a pyarrow round trip writes back as the engine wrote them (`read_as_written`).
FLAT_TYPES = frozenset(
    {
        "boolean",
        "tinyint",
        "smallint",
        "int",
        "integer",
        "bigint",
        "float",
        "double",
        "decimal",
        "string",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
    }
)


@dataclass(frozen=True)
class LoggedImages:
    """One commit's final images: the `keys` of every image (deletes included) and the `rows` (the
    table's columns) of those that are not deletes."""

    keys: pa.Table
    rows: pa.Table


def logged_images(storage: Storage, commit: int) -> LoggedImages | None:
    """The final images of `commit` (one transition per key) read from the log, or None where the
    engine writes them: a bucketed table, a column type outside FLAT_TYPES, more than
    DRIVER_IMAGE_ROWS log rows to read, a log file without every table column."""
    import pyarrow.compute as pc

    spec = storage.definition
    if spec.bucketing is not None or any(c.base_type.lower() not in FLAT_TYPES for c in spec.columns):
        return None
    entries = logged_entries(
        storage, commit, commit, Origin.MERGED, ["_row_kind", *spec.column_names], DRIVER_IMAGE_ROWS
    )
    if entries is None:
        return None
    images = entries.filter(pc.not_equal(entries["_row_kind"], RowKind.UPDATE_BEFORE.value))
    new_rows = images.filter(pc.not_equal(images["_row_kind"], RowKind.DELETE.value))
    return LoggedImages(images.select(spec.primary_key), new_rows.select(spec.column_names))


def logged_kind_counts(storage: Storage, commit: int) -> dict[str, int] | None:
    """`changelog.kind_counts` of `commit`'s merged entries, counted from their row kinds in the log
    files (None where those cannot be read so); from the files' statistics alone where each file holds
    entries of `commit` of one kind only (a first load's 1M +I entries: no read instead of 0.05-0.10 s)."""
    import pyarrow.compute as pc

    actions = log_file_actions(storage, commit, commit, Origin.MERGED, ["_row_kind"])
    counted = _counts_from_statistics(actions, commit)
    if counted is None:
        entries = logged_entries(storage, commit, commit, Origin.MERGED, ["_row_kind"], actions=actions)
        if entries is None:
            return None
        kinds, counts = pc.value_counts(entries["_row_kind"]).flatten()
        counted = dict(zip(kinds.to_pylist(), counts.to_pylist(), strict=True))
    return {
        "inserted": int(counted.get(RowKind.INSERT.value, 0)),
        "updated": int(counted.get(RowKind.UPDATE_AFTER.value, 0)),
        "deleted": int(counted.get(RowKind.DELETE.value, 0)),
        "unchanged": 0,
        "changelog_rows": sum(counted.values()),
    }


def _counts_from_statistics(actions: list[dict[str, Any]], commit: int) -> dict[str, int] | None:
    """Entries of `commit` by row kind, from the statistics of the log files' add `actions` that may
    hold them, where each holds only merged entries of `commit`, all of one kind, and records its row
    count; else None."""
    counted: dict[str, int] = {}
    for file in actions:
        kind, rows = file.get("min._row_kind"), file.get("num_records")
        only = {"_commit": commit, "_origin": Origin.MERGED.value, "_row_kind": kind}
        if (
            rows is None
            or kind is None
            or any(
                (file.get(f"min.{column}"), file.get(f"max.{column}")) != (value, value)
                for column, value in only.items()
            )
        ):
            return None
        counted[kind] = counted.get(kind, 0) + int(rows)
    return counted or None


def fragment_counts(storage: Storage, first: int, last: int) -> tuple[int, int | None, int | None] | None:
    """(retractions, least offset, greatest offset) of the fragments of commits [first, last], read
    from the log on the driver (no engine query); None where `logged_entries` gives none."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fragments = logged_entries(
        storage, first, last, Origin.FRAGMENT, ["_row_kind", "_offset"], DRIVER_IMAGE_ROWS
    )
    if fragments is None:
        return None
    retracting = pc.is_in(fragments["_row_kind"], value_set=pa.array([kind.value for kind in RETRACTS]))
    bounds = pc.min_max(fragments["_offset"]).as_py()
    return int(pc.sum(retracting).as_py() or 0), bounds["min"], bounds["max"]


def logged_entries(
    storage: Storage,
    first: int,
    last: int,
    origin: Origin,
    columns: list[str],
    most: int | None = None,
    actions: list[dict[str, Any]] | None = None,
) -> pa.Table | None:
    """The `columns` of the entries of `origin` of commits [first, last], read from the log files
    whose statistics can hold them (their add `actions`, when the caller has listed them already);
    None for none, more than `most` rows in those files, or files that differ in columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    records = file_records(actions if actions is not None else log_file_actions(storage, first, last, origin))
    counted = [rows for _, rows in records]
    if not records or (most is not None and (None in counted or sum(r or 0 for r in counted) > most)):
        return None
    files = TableFiles(storage.changelog_path)
    wanted = ["_commit", "_origin", *columns]
    parts = []
    try:
        for path, _ in records:
            part = read_as_written(files, path, wanted)
            if set(part.column_names) != set(wanted):  # pyarrow leaves out a column the file lacks
                return None
            commits = pc.and_(pc.greater_equal(part["_commit"], first), pc.less_equal(part["_commit"], last))
            mine = pc.and_(commits, pc.equal(part["_origin"], origin.value))
            parts.append(part.filter(mine).select(columns))
        if any(not p.schema.equals(parts[0].schema, check_metadata=False) for p in parts):
            return None
        return pa.concat_tables(parts)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
        # Past the commit point a value pyarrow cannot take must not stop the commit from applying:
        # the engine reads the same rows.
        logger.info(
            "%s: commits %d-%d's entries are read by the engine: %s", storage.path, first, last, error
        )
        return None


def write_images(files: TableFiles, rows: pa.Table) -> list[DataFile]:
    """`rows` as one new Parquet file of the table (zstd level 1, as the engine's), described from its
    footer as the engine's files are (`describe`); none for no rows."""
    if not rows.num_rows:
        return []
    folder = f"part-{uuid.uuid4().hex}"
    path = f"{folder}/{uuid.uuid4().hex}.zst.parquet"
    files.write_parquet(path, rows, compression="zstd", compression_level=1, dictionary=False)
    return [describe(files, StoredFile(path, files.size(path), datetime.now(UTC)))]
