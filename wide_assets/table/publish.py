"""Publishing a wide table's changelog as a plain Delta table other readers can read, each commit once.

The published table is append-only and holds exactly what `WideTable.changelog()` returns
(`_row_kind`, the table's columns, `_commit`, `_offset`), or its `export` in a sink encoding: no
commit-log rows, no markers, no deletion vectors, so delta-rs, DuckDB and Spark read it as it is.
Its largest `_commit` is the watermark: a run appends the entries of later commits in one Delta
commit right after the snapshot it read the watermark from (`arbiter`), so a run cut short appends
nothing, and a repeated or concurrent run appends nothing twice. Entries appear
in the log one whole commit (or compaction) at a time, always under a commit number larger than any
logged before, so nothing is ever published after a larger `_commit` than its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.pandas.types import to_arrow_schema

from wide_assets.errors import InvalidInputError
from wide_assets.table import arbiter
from wide_assets.table.files import write_files
from wide_assets.table.objects import TableFiles
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
    return _watermark(arbiter.open_table(path)) if arbiter.exists(path) else 0


def _watermark(table: Any) -> int:
    """The largest `_commit` in the snapshot `table` (a deltalake.DeltaTable; 0 when empty)."""
    import pyarrow.compute as pc

    commits = table.to_pyarrow_dataset().to_table(columns=["_commit"])["_commit"]
    return int(pc.max(commits).as_py() or 0)


def publish(reader: Reader, path: str, encoding: Encoding | None = None) -> PublishResult:
    """Append the changelog entries (in `encoding`, or as `changelog()` returns them) of the commits
    not yet published at `path`, creating the table on the first run. The append lands right after
    the snapshot its watermark was read from, or is computed again: two runs at once append each
    commit once."""

    def attempt() -> PublishResult:
        from deltalake import DeltaTable

        fresh = not arbiter.exists(path)
        start = 1 if fresh else published_through(path) + 1
        # The log is pinned when the frame is made, so what is counted is what is appended.
        entries = reader.changelog(start) if encoding is None else reader.export(encoding, start)
        if fresh:
            # Created even when there is nothing to publish yet, so readers find it; a racing
            # creator's table is as good as ours.
            schema = to_arrow_schema(entries.schema)
            DeltaTable.create(
                path, schema=schema, mode="ignore", storage_options=arbiter.storage_options(path)
            )
        table = arbiter.open_table(path)
        if list(table.schema().to_arrow().names) != list(entries.columns):
            raise InvalidInputError(
                f"{path} holds columns {list(table.schema().to_arrow().names)}, not the published "
                f"changelog's {list(entries.columns)}: publish each encoding of a table to its own path."
            )
        if _watermark(table) + 1 != start:
            raise arbiter.Conflict(f"{path} was published to meanwhile.")
        written = write_files(entries, TableFiles(path))
        if written:
            arbiter.append_files(table, written)
        appended = sum(w.num_records or 0 for w in written)
        return PublishResult(path, start, appended, arbiter.open_table(path).version())

    return arbiter.retrying(attempt, f"publishing to {path}")[0]
