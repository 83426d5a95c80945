"""Publishing a wide table's changelog as a plain Delta table other readers can read, each commit once.

The published table is append-only and holds exactly what `WideTable.changelog()` returns
(`_row_kind`, the table's columns, `_commit`, `_offset`), or its `export` in a sink encoding: no
commit-log rows, no markers, no deletion vectors, so delta-rs, DuckDB and Spark read it as it is.
Its largest `_commit` is the watermark: a run appends the entries of later commits in one Delta
commit, so a run cut short appends nothing and a repeated run appends nothing twice. Entries appear
in the log one whole commit (or compaction) at a time, always under a commit number larger than any
logged before, so nothing is ever published after a larger `_commit` than its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from wide_assets.errors import InvalidInputError
from wide_assets.locking import exclusive
from wide_assets.table.reads import Reader

if TYPE_CHECKING:
    from wide_assets.export import Encoding


@dataclass(frozen=True)
class PublishResult:
    """What one `publish` appended: the entries of commits from `start_commit` on (none: `appended` 0)."""

    path: str
    start_commit: int
    appended: int
    version: int  # the published table's Delta version afterwards


def published_through(path: str) -> int:
    """The largest `_commit` published at `path` (0 when nothing is: no table, or an empty one)."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(path):
        return 0
    commits = DeltaTable(path).to_pyarrow_dataset().to_table(columns=["_commit"])["_commit"]
    return int(pc.max(commits).as_py() or 0)


def publish(reader: Reader, path: str, encoding: Encoding | None = None) -> PublishResult:
    """Append the changelog entries (in `encoding`, or as `changelog()` returns them) of the commits
    not yet published at `path`, creating the table on the first run. Under a lock on `path`: two runs
    at once would both append the same commits."""
    from deltalake import DeltaTable

    with exclusive(path):
        start = published_through(path) + 1
        # The log is pinned when the frame is made, so its count and its append see the same entries.
        entries = reader.changelog(start) if encoding is None else reader.export(encoding, start)
        if DeltaTable.is_deltatable(path):
            existing = DeltaTable(path).schema().to_arrow().names
            if list(existing) != list(entries.columns):
                raise InvalidInputError(
                    f"{path} holds columns {list(existing)}, not the published changelog's "
                    f"{list(entries.columns)}: publish each encoding of a table to its own path."
                )
        appended = entries.count()
        if appended or not DeltaTable.is_deltatable(path):
            # The first run creates the table even when there is nothing to publish yet, so readers find it.
            entries.write.format("delta").mode("append").save(path)
        return PublishResult(path, start, appended, DeltaTable(path).version())
