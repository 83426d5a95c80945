"""Delta's Change Data Feed on the wide table: with the table property `delta.enableChangeDataFeed` set,
every table commit that applies log commits carries `cdc` actions naming Parquet files under
`_change_data/` that hold those commits' changelog, so that Delta's own change readers (delta-spark's
`readChangeFeed`, delta-rs's `load_cdf`) return exactly our changelog, each change at the table version
that applied it.

Delta's readers take a version's changes from its `cdc` files alone when it has any, and otherwise read
its added and removed files as inserts and deletes (PROTOCOL.md, "Add CDC File"). A table commit of
ours removes and adds files to change rows in place, so every commit of a table with the feed on names
at least one change file: one with no rows when the commits it applies logged no change.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote as url_quote

from wide_assets.errors import InvalidOptionError, TableStateError
from wide_assets.frames import arrow_schema
from wide_assets.options.common import parse_bool
from wide_assets.sql import RowKind, columns, string_literal
from wide_assets.table import arbiter
from wide_assets.table.files import DataFile, write_files
from wide_assets.table.objects import TableFiles
from wide_assets.table_definition import TableDefinition

if TYPE_CHECKING:
    from wide_assets.table.storage import Storage

__all__ = ["PROPERTY", "cdc_actions", "check_requested", "enabled"]

PROPERTY = "delta.enableChangeDataFeed"
FOLDER = "_change_data"
CHANGE_TYPE = "_change_type"
# Delta's change types (PROTOCOL.md, "Change Data Files") of our changelog's row kinds.
CHANGE_TYPES = {
    RowKind.INSERT: "insert",
    RowKind.UPDATE_BEFORE: "update_preimage",
    RowKind.UPDATE_AFTER: "update_postimage",
    RowKind.DELETE: "delete",
}


def enabled(configuration: Mapping[str, str]) -> bool:
    """Whether a Delta table's configuration turns the change data feed on (Delta reads the value
    case-insensitively)."""
    return str(configuration.get(PROPERTY, "false")).strip().lower() == "true"


def check_requested(spec: TableDefinition, path: str) -> bool:
    """Whether the table's options ask for the feed (`delta.enableChangeDataFeed: "true"`); refuses it
    for a table that has no changelog to feed."""
    if not parse_bool(spec.options, PROPERTY):
        return False
    _check_changelog(spec, path)
    return True


def cdc_actions(
    storage: Storage, files: TableFiles, table: Any, through: int, partition_by: Sequence[str]
) -> list[dict[str, Any]]:
    """The `cdc` actions of the table commit after the snapshot `table` (a pinned deltalake.DeltaTable)
    that makes the table hold the log's commits up to `through`: the changelog entries of the commits
    it adds, written as change files. None when the snapshot's configuration leaves the feed off; it is
    read at every commit, so a feed turned on or off later (ALTER TABLE ... SET TBLPROPERTIES) counts
    from the next commit on."""
    if not enabled(table.metadata().configuration):
        return []
    spec = storage.definition
    _check_changelog(spec, storage.path)
    from wide_assets.table.reads import Reader

    entries = Reader(storage).changelog(arbiter.applied_through(table) + 1, through)
    kinds = " ".join(f"WHEN {string_literal(k)} THEN {string_literal(t)}" for k, t in CHANGE_TYPES.items())
    unknown = "raise_error(concat('A changelog entry has the row kind ', coalesce(_row_kind, 'NULL'), "
    unknown += "', which has no Delta change type.'))"
    changes = storage.spark.sql(
        f"SELECT {columns(spec.column_names)}, CASE _row_kind {kinds} ELSE {unknown} END AS {CHANGE_TYPE} "
        f"FROM {{entries}}",
        entries=entries,
    )
    written = write_files(storage.with_bucket(changes), files, partition_by, f"{FOLDER}/{uuid.uuid4().hex}")
    if not written:
        written = [_empty_change_file(storage, files, partition_by)]
    return [_cdc_action(file) for file in written]


def _check_changelog(spec: TableDefinition, path: str) -> None:
    if spec.merge.produces_changelog:
        return
    message = (
        f"Delta's change data feed ('{PROPERTY}') needs the changelog of the wide table {path}, and the "
        "table has none ('changelog-producer' = 'none'). Create it with 'changelog-producer' = 'input' or "
        "'lookup' (or as a Fluss table) to feed Delta's change readers"
    )
    if PROPERTY in spec.options:
        raise InvalidOptionError(f"{message}, or leave '{PROPERTY}' out of its options.")
    raise TableStateError(
        f"{message}, or turn the feed off: ALTER TABLE delta.`{path}` UNSET TBLPROPERTIES ('{PROPERTY}'). "
        "The table commit was not made; it is applied by the next write, compaction or recover()."
    )


def _empty_change_file(storage: Storage, files: TableFiles, partition_by: Sequence[str]) -> DataFile:
    """A change file with no rows: the table commit changes no row, and Delta's readers must not read
    its rewritten files as inserts and deletes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(storage.spark, storage.definition.columns).append(
        pa.field(CHANGE_TYPE, pa.string())
    )
    buffer = io.BytesIO()
    pq.write_table(schema.empty_table(), buffer)
    path = f"{FOLDER}/{uuid.uuid4().hex}/empty.parquet"
    files.put(path, buffer.getvalue())
    # Its partition: bucket 0 (the only partition column is the bucket number, never NULL); no row is in it.
    return DataFile(path, len(buffer.getvalue()), 0, dict.fromkeys(partition_by, "0"), None)


def _cdc_action(file: DataFile) -> dict[str, Any]:
    return {
        "cdc": {
            "path": url_quote(file.path, safe="/="),
            "partitionValues": file.partition_values,
            "size": file.size,
            "dataChange": False,
        }
    }
