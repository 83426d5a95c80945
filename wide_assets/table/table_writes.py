"""The wide table's Delta commits: final images applied, or every row replaced, as exactly the next
version of a pinned snapshot, with the cost of the change, not of the table.

The engine writes the new images as new files (a small commit's, the driver: `logged_images`). The
rows they replace are found by reading only the key columns of the candidate files (the buckets the
images hit), and are then either marked deleted with a deletion vector (the default) or, on a
copy-on-write table (`deletion-vectors.enabled: false`), dropped by rewriting their files in the
engine. The commit names files and vectors only; it lands at the version after the snapshot it was
computed from, or raises `Conflict` (`delta_log.commit`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyroaring import BitMap
from pyspark.sql import DataFrame

from wide_assets import faults
from wide_assets.sql import quote
from wide_assets.table import change_feed, delta_log
from wide_assets.table.deletion_vectors import VectorFile, read_vector
from wide_assets.table.files import DataFile, write_files
from wide_assets.table.foreign import refuse_foreign_changes
from wide_assets.table.key_ranges import row_groups_holding
from wide_assets.table.logged_images import LoggedImages, write_images
from wide_assets.table.objects import TableFiles
from wide_assets.table.storage import IS_DELETE_IMAGE
from wide_assets.table_definition import BUCKET_COLUMN, TableDefinition

if TYPE_CHECKING:
    import pyarrow as pa

    from wide_assets.table.storage import Storage

KEY_READERS = 8


@dataclass(frozen=True)
class Replaced:
    """The rows of one live file that a commit replaces: positions already deleted, and new ones."""

    file: DataFile
    deleted: BitMap
    replaced: BitMap


def uses_deletion_vectors(table: Any) -> bool:
    """Whether the table (a pinned deltalake.DeltaTable) was created with deletion vectors enabled."""
    return bool(table.metadata().configuration.get("delta.enableDeletionVectors") == "true")


def apply_images(storage: Storage, images: DataFrame | LoggedImages, table: Any, through: int) -> int:
    """Apply final images (`_row_kind` '-D' = delete) as the table commit right after the snapshot
    `table`, making the table hold the log's commits up to `through`; returns how many images there
    were. Images read on the driver (`logged_images`, deletion-vector tables only) are written without
    the engine. Raises `Conflict` when another commit landed first."""
    spec = storage.definition
    files = TableFiles(storage.path)
    version = int(table.version())
    refuse_foreign_changes(files, version, spec)
    live = delta_log.live_files(files, version)
    frame: DataFrame | None = None
    touched: pa.Table | None
    if isinstance(images, LoggedImages):
        logged = images
        touched = logged.keys if live else None

        def write_new_rows() -> list[DataFile]:
            return write_images(files, logged.rows)
    else:
        frame = storage.with_bucket(images.select("_row_kind", *[quote(c) for c in spec.column_names]))
        # Only the keys come to the driver, to find the rows the images replace.
        touched = frame.select(*[quote(c) for c in key_columns(spec)]).toArrow() if live else None
        new_rows = frame.where(f"NOT {IS_DELETE_IMAGE}").drop("_row_kind")

        def write_new_rows() -> list[DataFile]:
            return write_files(new_rows, files, partition_columns(spec))

    with ThreadPoolExecutor(1) as finder:
        # The driver reads the stored keys while the images are written: neither needs the other.
        finding = (
            finder.submit(replaced_rows, files, live, touched, spec)
            if touched is not None and touched.num_rows
            else None
        )
        written = write_new_rows()
        replaced = finding.result() if finding is not None else None
    faults.checkpoint("after-table-files")
    now = int(time.time() * 1000)
    actions: list[dict[str, Any]] = [delta_log.txn_action(through)]
    if replaced is not None:
        if uses_deletion_vectors(table):
            actions += mark_deleted(files, replaced, now)
        else:
            assert frame is not None, "images read on the driver are only for deletion-vector tables"
            keys = frame.select(*[quote(c) for c in spec.primary_key])
            actions += rewrite_without(storage, files, replaced, keys, now)
    actions += [w.add_action() for w in written]
    actions += change_feed.cdc_actions(storage, files, table, through, partition_columns(spec))
    delta_log.commit(files, version + 1, actions, "MERGE")
    delta_log.checkpoint_if_due(storage.path, version + 1)
    return touched.num_rows if touched is not None else sum(w.num_records or 0 for w in written)


def replace_all(storage: Storage, rows: DataFrame, table: Any, through: int) -> None:
    """Replace every row with `rows` (the table's columns) as the table commit right after the snapshot
    `table`, holding the log's commits up to `through` (or raise `Conflict`)."""
    files = TableFiles(storage.path)
    version = int(table.version())
    live = delta_log.live_files(files, version)
    written = write_files(storage.with_bucket(rows), files, partition_columns(storage.definition))
    now = int(time.time() * 1000)
    actions = [
        delta_log.txn_action(through),
        *(f.remove_action(now) for f in live),
        *(w.add_action() for w in written),
        *change_feed.cdc_actions(storage, files, table, through, partition_columns(storage.definition)),
    ]
    delta_log.commit(files, version + 1, actions, "WRITE")
    delta_log.checkpoint_if_due(storage.path, version + 1)


def key_columns(spec: TableDefinition) -> list[str]:
    """The primary key, and the bucket column that prunes the files to read."""
    return [*spec.primary_key, *partition_columns(spec)]


def partition_columns(spec: TableDefinition) -> list[str]:
    return [BUCKET_COLUMN] if spec.bucketing is not None else []


def replaced_rows(
    files: TableFiles, live: Sequence[DataFile], touched: pa.Table, spec: TableDefinition
) -> list[Replaced]:
    """Per live file, the positions of its live rows whose key is among `touched` (read from the key
    columns of the files in the touched buckets only, in parallel)."""
    candidates = list(live)
    if spec.bucketing is not None:
        buckets = {str(b) for b in touched.column(BUCKET_COLUMN).unique().to_pylist()}
        candidates = [f for f in live if f.partition_values.get(BUCKET_COLUMN) in buckets]
    vector_files = {
        v.file_path() for f in candidates if (v := f.deletion_vector) is not None and v.storage_type != "i"
    }
    with ThreadPoolExecutor(KEY_READERS) as pool:
        contents = dict(zip(vector_files, pool.map(files.get, vector_files), strict=True))
        keys = touched.select(list(spec.primary_key))
        found = pool.map(lambda f: _replaced_in(files, f, keys, contents), candidates)
        return [r for r in found if r is not None]


def _replaced_in(
    files: TableFiles, file: DataFile, keys: pa.Table, vectors: dict[str, bytes]
) -> Replaced | None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(files.open_parquet(file.path))
    schema = parquet.schema_arrow
    keys = keys.cast(pa.schema([schema.field(name) for name in keys.column_names]))
    groups = row_groups_holding(parquet.metadata, keys)
    if not groups:
        return None
    stored = parquet.read_row_groups(groups, columns=keys.column_names)
    if keys.num_columns == 1:
        mask = pc.is_in(stored.column(0), value_set=keys.column(0))
        found = pc.indices_nonzero(mask).to_numpy()
    else:
        numbered = stored.append_column("__read", pa.array(np.arange(stored.num_rows, dtype=np.int64)))
        found = numbered.join(keys, keys=keys.column_names, join_type="inner").column("__read").to_numpy()
    if not len(found):
        return None
    positions = _file_positions(parquet.metadata, groups, found)
    deleted = BitMap()
    vector = file.deletion_vector
    if vector is not None:  # an inline vector ('i') carries its positions in the descriptor itself
        deleted = read_vector(vector, vectors[vector.file_path()] if vector.storage_type != "i" else b"")
    replaced = BitMap(positions.astype(np.uint32)) - deleted
    return Replaced(file, deleted, replaced) if replaced else None


def _file_positions(metadata: Any, groups: list[int], found: Any) -> Any:
    """The file positions of rows `found` among the rows of row groups `groups` read one after another:
    a row group's rows start in the file where the row groups before it end."""
    import numpy as np

    sizes = np.array([metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)], dtype=np.int64)
    if len(groups) == len(sizes):
        return found
    starts = np.cumsum(sizes) - sizes
    read_sizes = sizes[groups]
    read_starts = np.cumsum(read_sizes) - read_sizes
    group = np.searchsorted(read_starts, found, side="right") - 1
    return found - read_starts[group] + starts[groups][group]


def mark_deleted(files: TableFiles, replaced: Sequence[Replaced], now: int) -> list[dict[str, Any]]:
    """The actions that delete the replaced rows: each file again with a vector of its old and new
    deleted positions (all in one new vector file), or removed when no live row is left."""
    vectors = VectorFile()
    actions: list[dict[str, Any]] = []
    for r in replaced:
        deleted = r.deleted | r.replaced
        actions.append(r.file.remove_action(now))
        if len(deleted) != r.file.num_records:
            actions.append(r.file.add_action(vectors.add(deleted)))
    if vectors.count:
        files.put(vectors.path, vectors.content())
    return actions


def rewrite_without(
    storage: Storage, files: TableFiles, replaced: Sequence[Replaced], keys: DataFrame, now: int
) -> list[dict[str, Any]]:
    """Copy-on-write: the files holding replaced rows, rewritten by the engine without the rows whose
    key is among `keys` (such a table has no deletion vectors: every stored row is live)."""
    spec = storage.definition
    schema = ", ".join(f"{quote(c.name)} {c.type}" for c in spec.columns)
    paths = [files.uri(r.file.path) for r in replaced]
    stored = storage.spark.read.schema(schema).parquet(*paths).select(*[quote(c) for c in spec.column_names])
    kept = stored.join(keys, on=list(spec.primary_key), how="left_anti")
    rewritten = write_files(storage.with_bucket(kept), files, partition_columns(spec))
    return [*(r.file.remove_action(now) for r in replaced), *(w.add_action() for w in rewritten)]
