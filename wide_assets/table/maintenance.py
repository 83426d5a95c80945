"""Keeping a wide table healthy: small-file compaction, vacuum, verification, rebuild from the log, and
new columns for a new source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wide_assets.errors import InvalidOptionError, TableStateError, first_line
from wide_assets.schema import Column
from wide_assets.table import arbiter, delta_log
from wide_assets.table.deletion_vectors import DV_PREFIX, read_vector
from wide_assets.table.files import DataFile
from wide_assets.table.foreign import refuse_foreign_changes
from wide_assets.table.images import commit_images
from wide_assets.table.objects import TableFiles
from wide_assets.table.staging import STAGING_DIR
from wide_assets.table.storage import Storage
from wide_assets.table.table_writes import replace_all
from wide_assets.table_definition import TableDefinition


def optimize(storage: Storage, z_order: Sequence[str] | None = None) -> dict[str, Any]:
    """Small-file compaction (delta-rs OPTIMIZE, optionally Z-ordered) of the table and its log; the
    rewritten files leave their deleted rows behind, so this also folds the deletion vectors away.
    Each lands as exactly the version after the snapshot it planned from: a file a concurrent write
    gave a new vector meanwhile is never rewritten from its old one."""

    writing = writer_properties(storage.definition)

    def table_attempt() -> dict[str, Any]:
        table = arbiter.open_table(storage.path)
        no_retry = arbiter.commit_properties()
        with arbiter.arbitrated():
            if z_order:
                return dict(
                    table.optimize.z_order(
                        list(z_order), commit_properties=no_retry, writer_properties=writing
                    )
                )
            return dict(table.optimize.compact(commit_properties=no_retry, writer_properties=writing))

    def log_attempt() -> None:
        with arbiter.arbitrated():
            arbiter.open_table(storage.changelog_path).optimize.compact(
                commit_properties=arbiter.commit_properties(), writer_properties=writing
            )

    metrics = arbiter.retrying(table_attempt, f"optimizing {storage.path}")[0]
    arbiter.retrying(log_attempt, f"optimizing {storage.changelog_path}")
    return metrics


def writer_properties(spec: TableDefinition) -> Any:
    """delta-rs writer settings of the files OPTIMIZE writes. Compressed as the engine's own files are
    (zstd level 1): delta-rs writes files uncompressed when given settings that name no codec, which
    left an optimized table of bench.workload 2.6 times its size. And no statistics on the FLOAT/DOUBLE
    columns: its writer leaves NaN out of their bounds, so a rewritten file holding NaN and 5.0 said
    min = max = 5.0, which Sail reads as the column's constant (`files.without_bounds` does the same for
    the engine's files)."""
    from deltalake import ColumnProperties, WriterProperties

    floats = [c.name for c in spec.columns if c.base_type in ("float", "double")]
    return WriterProperties(
        compression="ZSTD",
        compression_level=1,
        column_properties={c: ColumnProperties(statistics_enabled="NONE") for c in floats},
    )


def vacuum(storage: Storage, retention_hours: int | None = None, dry_run: bool = False) -> list[str]:
    """Delete files no version within the retention needs (delta-rs VACUUM). The retention can never
    go below the table's `delta.deletedFileRetentionDuration` (7 days unless set), so readers of
    recent versions and time travel keep working."""
    removed = []
    for path in (storage.path, storage.changelog_path):
        # `full`: also files no commit ever named (a writer that crashed or lost a race wrote them).
        # Deletion vectors sit under a `_` folder, which a full vacuum leaves alone.
        removed += arbiter.open_table(path).vacuum(
            retention_hours=retention_hours, dry_run=dry_run, enforce_retention_duration=True, full=True
        )
    return removed + _vacuum_underscore_folders(storage, retention_hours, dry_run)


def _vacuum_underscore_folders(storage: Storage, retention_hours: int | None, dry_run: bool) -> list[str]:
    """Delete what Delta's vacuum leaves in our `_` folders once older than the retention: deletion
    vector files no version within it reads (replaced by later vectors, or written by a writer that
    crashed or lost a race), and input a killed writer staged (a live write deletes its own)."""
    from datetime import UTC, datetime, timedelta

    table = arbiter.open_table(storage.path)
    hours = retention_hours if retention_hours is not None else _retention_hours(table)
    since = datetime.now(UTC) - timedelta(hours=hours)
    files = TableFiles(storage.path)
    in_use = delta_log.vectors_in_use(files, table.version(), since)
    stale = [f.path for f in files.list(DV_PREFIX) if f.path not in in_use and f.modified < since]
    stale += [f.path for f in files.list(STAGING_DIR) if f.modified < since]
    if not dry_run:
        for path in stale:
            files.delete(path)
    return [files.uri(path) for path in stale]


def _retention_hours(table: Any) -> float:
    """The table's `delta.deletedFileRetentionDuration` in hours (Delta's default: a week)."""
    text = table.metadata().configuration.get("delta.deletedFileRetentionDuration", "interval 1 weeks")
    count, unit = text.removeprefix("interval").split()
    per_unit = {"second": 1 / 3600, "minute": 1 / 60, "hour": 1, "day": 24, "week": 168}
    return float(count) * per_unit[unit.rstrip("s")]


def verify(storage: Storage) -> None:
    """Check that the table and its log are readable: every Delta log entry parses, every data file
    they reference exists in the store with its recorded size and a valid Parquet footer, and every
    deletion vector is there with its checksum. Raises TableStateError naming the damage and the way
    out (see the README's recovery section)."""
    for path in (storage.path, storage.changelog_path):
        fix = "WideTable.rebuild()" if path == storage.path else "restore it from a backup"
        files = TableFiles(path)
        try:
            live = delta_log.live_files(files, arbiter.open_table(path).version())
        except Exception as error:
            raise TableStateError(
                f"The Delta log of {path} cannot be read ({first_line(error)}); restore the damaged "
                "_delta_log entry from a backup."
            ) from error
        if path == storage.path:
            refuse_foreign_changes(files, arbiter.open_table(path).version(), storage.definition)
        for file in live:
            problem = None
            if not files.exists(file.path):
                problem = "is missing"
            elif files.size(file.path) != file.size:
                problem = f"has {files.size(file.path)} bytes, the log recorded {file.size}"
            else:
                problem = _unreadable(files, file)
            if problem:
                raise TableStateError(
                    f"Data file {files.uri(file.path)} of {path} {problem}; recover with {fix}."
                )


def _unreadable(files: TableFiles, file: DataFile) -> str | None:
    """What is wrong with a present file's footer or its deletion vector, if anything."""
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(files.open_parquet(file.path))
    except Exception as error:
        return f"is not valid Parquet ({first_line(error)})"
    vector = file.deletion_vector
    if vector is not None and vector.storage_type == "u":
        try:
            read_vector(vector, files.get(vector.file_path()))
        except Exception as error:
            return f"has an unreadable deletion vector {vector.file_path()} ({first_line(error)})"
    return None


def rebuild(storage: Storage) -> int:
    """Rewrite the wide table from its commit log (every commit's final images), as a new Delta
    version: the way back from a lost or corrupted data file of the table. Returns the row count."""

    def attempt() -> bool:
        commits = storage.log.snapshot().markers.commits
        if not commits:
            return False
        table = arbiter.open_table(storage.path)
        # From empty: every commit's images again (fragments are folded from no rows at all).
        empty = storage.rows(version=table.version()).limit(0)
        images = commit_images(storage, [c.commit for c in commits], empty)
        replace_all(storage, storage.image_rows(images), table, commits[-1].commit)
        return True

    if not arbiter.retrying(attempt, f"rebuilding {storage.path}")[0]:
        return 0
    return storage.spark.read.format("delta").load(storage.path).count()


def with_columns(
    spec: TableDefinition, requested: Sequence[Column], options: dict[str, Any] | None
) -> tuple[TableDefinition, list[Column]]:
    """The definition with `requested` columns and `options` added, and the columns not there yet.
    Added columns must be nullable and the dialect and engine stay as they are."""
    added = [c for c in requested if c not in spec.columns]
    not_nullable = [c.name for c in added if not c.nullable]
    if not_nullable:
        raise InvalidOptionError(f"Columns added to an existing table must be nullable: {not_nullable}.")
    extended = TableDefinition.build(
        [*spec.columns, *added], spec.primary_key, {**spec.options, **(options or {})}
    )
    if extended.merge.dialect != spec.merge.dialect or extended.merge.engine != spec.merge.engine:
        raise InvalidOptionError("Adding columns cannot change the table's dialect or merge engine.")
    return extended, added
