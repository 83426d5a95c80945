"""Compaction: fold every pending commit into the Delta table with one MERGE, crash safe.

Copy-on-write tables only have pending commits after a crash; write-only tables have them by design.
Lookup-free commits (fragments) are first resolved into absolute images and logged with a
`resolution` marker, then applied (`recovery.apply_resolution`), so a compaction cut short in between
is finished from the images and never refolded.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from wide_assets import faults
from wide_assets.changelog import collapsed_transitions, final_images
from wide_assets.table.images import folded_fragments
from wide_assets.table.log import CompactionInfo, Origin, Resolution, now
from wide_assets.table.recovery import apply_resolution, recover
from wide_assets.table.storage import Storage


def compact(storage: Storage) -> CompactionInfo | None:
    """Fold every pending commit into the table; None when nothing is pending. The MERGE is idempotent
    and the marker that ends it is written after it."""
    recover(storage)
    spec = storage.spec
    pending = storage.log.pending(storage.log.markers(), spec.merge.write_only)
    if not pending:
        return None
    version_before = storage.version
    if spec.merge.lookup_free_writes:
        resolution = Resolution(pending[-1], len(pending), version_before)
        entries = folded_fragments(storage, pending, storage.rows(version=version_before))
        storage.append_log(
            [
                storage.log_rows(entries, resolution.through, Origin.MERGED),
                *compaction_changelog(storage, entries, resolution.through),
            ],
            resolution.through,
            Origin.RESOLUTION,
            resolution.to_json(),
        )
        faults.checkpoint("after-resolution")
        return apply_resolution(storage, resolution)
    entries = storage.log_entries(pending, Origin.MERGED)
    applied = storage.apply_images(final_images(storage.spark, spec, entries, across_commits=True))
    faults.checkpoint("after-compaction-merge")
    info = CompactionInfo(
        through=pending[-1],
        commits=len(pending),
        applied_rows=applied,
        version_before=version_before,
        version_after=storage.version,
        written_at=now(),
    )
    storage.append_log(
        compaction_changelog(storage, entries, info.through), info.through, Origin.COMPACTION, info.to_json()
    )
    return info


def compaction_changelog(storage: Storage, entries: DataFrame, through: int) -> list[DataFrame]:
    """The changelog a compaction produces (one transition per key), when the table's producer runs at
    compaction; nothing otherwise."""
    if not storage.spec.merge.changelog_at_compaction:
        return []
    transitions = collapsed_transitions(storage.spark, storage.spec, entries)
    return [storage.log_rows(transitions, through, Origin.COMPACTED)]
