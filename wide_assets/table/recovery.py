"""Bringing the Delta table up to what the log decided: commits whose table commit has not landed, a
compaction's resolution not applied yet. Run by every writer before it merges, and by `recover`.

What the table must hold is decided in the log first; the table's own application-transaction version
says what it holds (`arbiter.applied_through`). Applying is a table commit at the snapshot it was
computed from, so two writers finishing the same work land it once, and nobody applies old work over
newer: work is applied from the log's absolute images, never merged a second time.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from wide_assets import faults
from wide_assets.changelog import final_images, without_before_images
from wide_assets.merge import engine_for
from wide_assets.table import arbiter
from wide_assets.table.arbiter import Conflict
from wide_assets.table.images import commit_images
from wide_assets.table.log import CompactionInfo, Markers, Origin, Resolution, now
from wide_assets.table.log_frames import append_log, log_entries
from wide_assets.table.logged_images import LoggedImages, logged_images
from wide_assets.table.storage import Storage
from wide_assets.table.table_writes import apply_images, uses_deletion_vectors


def catch_up(storage: Storage, markers: Markers, table: Any | None = None) -> tuple[Any, bool]:
    """The Delta table pinned at a snapshot that holds everything `markers` decided it must hold
    (every commit; for a write-only table, every resolved compaction), applying what it lacks first;
    and whether anything was applied. `table`: the latest snapshot, when the caller just opened it.
    Raises `Conflict` if the table moved on meanwhile."""
    table = arbiter.open_table(storage.path) if table is None else table
    applied = arbiter.applied_through(table)
    if storage.definition.merge.write_only:
        resolution = markers.resolutions[-1] if markers.resolutions else None
        if resolution is None or resolution.through <= applied:
            return table, False
        through = resolution.through
        apply_images(storage, resolution_images(storage, resolution), table, through)
    else:
        pending = storage.log.pending(markers, applied)
        if not pending:
            return table, False
        through = pending[-1]
        apply_images(
            storage, _logged(storage, pending, table) or commit_images(storage, pending), table, through
        )
    table = arbiter.open_table(storage.path)
    if arbiter.applied_through(table) != through:
        raise Conflict(f"{storage.path} moved past commit {through} while it was being caught up.")
    return table, True


def _logged(storage: Storage, pending: list[int], table: Any) -> LoggedImages | None:
    """The images of one pending commit of a Paimon engine read on the driver, where they can be
    (`logged_images`): those of several commits, or of a Fluss engine's per-record entries, are
    ranked in the engine (`commit_images`), and a copy-on-write table rewrites its files there."""
    merge = storage.definition.merge
    if len(pending) != 1 or engine_for(merge).per_record or merge.lookup_free_writes:
        return None
    return logged_images(storage, pending[0]) if uses_deletion_vectors(table) else None


def resolution_images(storage: Storage, resolution: Resolution) -> DataFrame:
    """The final image per key that `resolution` makes the table hold: lookup-free fragments were
    resolved into logged images; otherwise its commits' merged entries are the images."""
    if storage.definition.merge.lookup_free_writes:
        # One merge of Paimon-engine fragments: one transition per key (see `commit_images`).
        return without_before_images(log_entries(storage, [resolution.through], Origin.MERGED))
    commits = list(range(resolution.through - resolution.commits + 1, resolution.through + 1))
    entries = log_entries(storage, commits, Origin.MERGED)
    return final_images(storage.spark, storage.definition, entries, across_commits=True)


def recover(storage: Storage) -> bool:
    """Finish what a crash cut short: a commit the table does not hold, or a compaction whose images
    or marker are missing. True if anything was finished."""
    if storage.definition.merge.write_only:
        resolution = storage.log.markers().unfinished_resolution
        if resolution is not None:
            finish_compaction(storage, resolution)
        return resolution is not None

    def attempt() -> bool:
        return catch_up(storage, storage.log.snapshot().markers)[1]

    return arbiter.retrying(attempt, f"recovering {storage.path}")[0]


def finish_compaction(storage: Storage, resolution: Resolution) -> CompactionInfo:
    """Apply a logged resolution to the table (unless it holds it already), then log the compaction's
    marker (unless it is there already)."""

    def attempt() -> CompactionInfo:
        log = storage.log.snapshot()
        recorded = [c for c in log.markers.compactions if c.through == resolution.through]
        if recorded:
            return recorded[-1]
        table = arbiter.open_table(storage.path)
        images = resolution_images(storage, resolution)
        if arbiter.applied_through(table) < resolution.through:
            applied_rows = apply_images(storage, images, table, resolution.through)
        else:
            applied_rows = images.count()
        faults.checkpoint("after-compaction-merge")
        info = CompactionInfo(
            through=resolution.through,
            commits=resolution.commits,
            applied_rows=applied_rows,
            version_before=resolution.version_before,
            version_after=storage.version,
            written_at=now(),
        )
        append_log(storage, [], info.through, Origin.COMPACTION, info.to_json(), log)
        return info

    return arbiter.retrying(attempt, f"compacting {storage.path}")[0]
