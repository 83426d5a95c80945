"""Finishing what a crash cut short: a commit whose MERGE did not land, a compaction after its resolution.

Both are finished from what the log already holds (absolute images), so finishing is idempotent and
never merges anything a second time.
"""

from __future__ import annotations

from wide_assets import faults
from wide_assets.changelog import without_before_images
from wide_assets.table.images import commit_images
from wide_assets.table.log import CompactionInfo, Markers, Origin, Resolution, now
from wide_assets.table.storage import Storage


def recover(storage: Storage, markers: Markers | None = None) -> bool:
    """Finish what a crash cut short, judged by `markers` (read now when not given); True if anything
    was applied."""
    if markers is None:
        markers = storage.log.markers()
    if storage.spec.merge.write_only:
        # Pending commits are the compaction's to apply; only a compaction cut short is finished.
        resolution = markers.unfinished_resolution
        if resolution is not None:
            apply_resolution(storage, resolution)
        return resolution is not None
    pending = storage.log.pending(markers, write_only=False)
    return bool(pending) and storage.apply_images(commit_images(storage, pending)) > 0


def apply_resolution(storage: Storage, resolution: Resolution) -> CompactionInfo:
    """MERGE a resolution's logged images (idempotent), then write the compaction's marker."""
    entries = storage.log_entries([resolution.through], Origin.MERGED)
    # One merge of Paimon-engine fragments: one transition per key (see `commit_images`).
    applied = storage.apply_images(without_before_images(entries))
    faults.checkpoint("after-compaction-merge")
    info = CompactionInfo(
        through=resolution.through,
        commits=resolution.commits,
        applied_rows=applied,
        version_before=resolution.version_before,
        version_after=storage.version,
        written_at=now(),
    )
    storage.append_log([], info.through, Origin.COMPACTION, info.to_json())
    return info
