"""A wide table's health at a glance (pending commits, files, bytes, last compaction), read from its
commit log and Delta metadata through delta-rs: sensors and checks ask it without starting Spark."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from wide_assets.table import arbiter
from wide_assets.table.log import CommitLog


@dataclass(frozen=True)
class TableHealth:
    """What a glance at the table's metadata says."""

    pending_commits: int
    oldest_pending_minutes: float
    files: int
    bytes: int
    log_files: int
    last_commit: int
    last_compaction: str | None


def table_health(log: CommitLog) -> TableHealth:
    """The health of the table whose commit log is `log`, from one read of its markers."""
    markers = log.markers()
    pending = log.pending(markers)
    written = {c.commit: c.written_at for c in markers.commits}
    now = datetime.now(UTC)
    waited = (now - datetime.fromisoformat(written[pending[0]])).total_seconds() / 60 if pending else 0.0
    actions = arbiter.open_table(log.table_path).get_add_actions(flatten=True)
    return TableHealth(
        pending_commits=len(pending),
        oldest_pending_minutes=waited,
        files=actions.num_rows,
        bytes=int(sum(actions.column("size_bytes").to_pylist())),
        log_files=len(arbiter.open_table(log.path).file_uris()),
        last_commit=markers.last_commit,
        last_compaction=markers.compactions[-1].written_at if markers.compactions else None,
    )
