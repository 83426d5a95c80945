"""Compaction: fold every pending commit of a write-only table into the Delta table, crash safe and
safe against concurrent writers and compactions.

A compaction is decided in the log first: one log commit holds its `resolution` marker, the images it
resolved lookup-free fragments into and the changelog it produces. Applying that to the table and
logging the `compaction` marker follow (`recovery.finish_compaction`); whoever finds them missing
finishes them from the log, so nothing is refolded. Copy-on-write tables only have pending commits
after a crash, and catching up applies those.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from wide_assets import faults
from wide_assets.changelog import collapsed_transitions
from wide_assets.table import arbiter
from wide_assets.table.images import folded_fragments
from wide_assets.table.log import CompactionInfo, Origin, Resolution
from wide_assets.table.log_frames import append_log, log_entries, log_rows
from wide_assets.table.recovery import catch_up, finish_compaction, recover
from wide_assets.table.storage import Storage


def compact(storage: Storage) -> CompactionInfo | None:
    """Fold every pending commit into the table; None when nothing is pending."""
    recover(storage)
    resolution, _ = arbiter.retrying(lambda: resolve(storage), f"compacting {storage.path}")
    return finish_compaction(storage, resolution) if resolution is not None else None


def resolve(storage: Storage) -> Resolution | None:
    """Log the resolution of every commit the table does not hold (None when there is none), as the
    log commit after the snapshot it was computed from (or raise `Conflict`)."""
    log = storage.log.snapshot()
    table, _ = catch_up(storage, log.markers)
    pending = storage.log.pending(log.markers, arbiter.applied_through(table))
    if not pending:
        return None
    resolution = Resolution(pending[-1], len(pending), table.version())
    parts = []
    if storage.definition.merge.lookup_free_writes:
        entries = folded_fragments(storage, pending, storage.rows(version=resolution.version_before))
        parts.append(log_rows(storage, entries, resolution.through, Origin.MERGED))
    else:
        entries = log_entries(storage, pending, Origin.MERGED)
    parts += compaction_changelog(storage, entries, resolution.through)
    append_log(storage, parts, resolution.through, Origin.RESOLUTION, resolution.to_json(), log)
    faults.checkpoint("after-resolution")
    return resolution


def compaction_changelog(storage: Storage, entries: DataFrame, through: int) -> list[DataFrame]:
    """The changelog a compaction produces (one transition per key), when the table's producer runs at
    compaction; nothing otherwise."""
    if not storage.definition.merge.changelog_at_compaction:
        return []
    transitions = collapsed_transitions(storage.spark, storage.definition, entries)
    return [log_rows(storage, transitions, through, Origin.COMPACTED)]
