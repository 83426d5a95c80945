"""`WideTable`: the facade users hold; each call hands the work to the module that owns it (storage,
protocol, reads, compaction, recovery, maintenance). Writers on local disk also take a file lock,
which only saves them retries: the commit protocol keeps any number of writers correct.

Storage, for a table at `path`: `path` is a Delta table holding exactly the table's columns, its
definition persisted in the Delta metadata; `path` + `_changelog` is a Delta table that is both the
changelog users read and the table's commit log (see `wide_assets.table.log`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame

from wide_assets.ddl import parse_create_table
from wide_assets.errors import InvalidOptionError, StoreError, TableStateError, first_line
from wide_assets.frames import spark_frame
from wide_assets.locking import exclusive
from wide_assets.schema import Column
from wide_assets.table import arbiter, compaction, definition, maintenance, protocol
from wide_assets.table.health import TableHealth, table_health
from wide_assets.table.log import CommitInfo, CompactionInfo, Txn
from wide_assets.table.protocol import WriteResult
from wide_assets.table.publish import PublishResult, publish
from wide_assets.table.reads import Reader
from wide_assets.table.recovery import recover
from wide_assets.table.staging import staging_area
from wide_assets.table.storage import Storage
from wide_assets.table_definition import TableDefinition

if TYPE_CHECKING:
    from wide_assets.export import Encoding
    from wide_assets.frames import Rows
    from wide_assets.session import SparkSession

log = logging.getLogger(__name__)


class WideTable:
    """A wide table at `path`: create or open it, then write changes, read rows and its changelog."""

    def __init__(self, spark: SparkSession | None, path: str, spec: TableDefinition) -> None:
        self.path = str(path)
        definition.check_path(self.path)
        self.spark = spark
        self._storage = Storage(spark, self.path, spec)
        self._reader = Reader(self._storage)

    @property
    def definition(self) -> TableDefinition:
        return self._storage.definition

    @property
    def changelog_path(self) -> str:
        return self._storage.changelog_path

    # ----------------------------------------------------------------------------- lifecycle
    @classmethod
    def create(
        cls,
        spark: SparkSession,
        path: str | os.PathLike[str],
        columns: Sequence[tuple[str, str] | Column],
        primary_key: Sequence[str],
        options: dict[str, Any] | None = None,
        append_new_columns: bool = False,
    ) -> WideTable:
        """Create the table (idempotent when the same definition exists); invalid options fail here.
        Options that only tune Paimon's or Fluss's own storage are kept and listed in
        `definition.ignored_options` (logged once, when the table is created).

        With `append_new_columns`, an existing table whose definition this one only extends (new
        nullable columns after the stored ones, with `fields.<column>.*` options of their own: a new
        source) gets them by `add_columns`; any other difference is refused, naming it."""
        spec = TableDefinition.build(columns, primary_key, options)
        table = cls(spark, str(path), spec)
        try:
            existing = definition.stored_definition(table.path)
        except TableStateError:
            definition.create(table._storage)
            if spec.ignored_options:
                log.warning(
                    "Options with no effect on %s (they tune Paimon's or Fluss's own storage): %s",
                    table.path,
                    ", ".join(spec.ignored_options),
                )
            return table
        if existing.to_json() == spec.to_json():
            return cls.open(spark, table.path)
        if not append_new_columns:
            raise InvalidOptionError(
                f"A wide table with a different definition already exists at {table.path}: {existing.to_json()}"
            )
        try:
            columns, added_options = spec.additions_over(existing)
        except InvalidOptionError as error:
            raise InvalidOptionError(
                f"The wide table at {table.path} cannot take its new definition: {error}"
            ) from None
        log.info(
            "Adding columns %s and options %s to %s", [c.name for c in columns], added_options, table.path
        )
        return cls.open(spark, table.path).add_columns(columns, added_options)

    @classmethod
    def from_ddl(cls, spark: SparkSession, path: str | os.PathLike[str], ddl: str) -> WideTable:
        """`create` with the columns, primary key and options of a Flink SQL `CREATE TABLE ... WITH (...)`
        statement, Paimon's or Fluss's (`wide_assets.ddl` says what it reads)."""
        parsed = parse_create_table(ddl)
        return cls.create(spark, path, parsed.columns, parsed.primary_key, parsed.options)

    @classmethod
    def open(cls, spark: SparkSession | None, path: str | os.PathLike[str]) -> WideTable:
        """Open an existing table; its definition is read from the Delta metadata. Without a session
        (`spark=None`) only the metadata methods work: commits, compactions, pending_commits, version."""
        table = cls(spark, str(path), definition.stored_definition(str(path)))
        if not arbiter.exists(table.changelog_path):
            raise TableStateError(f"The changelog of {table.path} is missing at {table.changelog_path}.")
        return table

    # ----------------------------------------------------------------------------- reading
    def read(self, version: int | None = None, timestamp: str | None = None) -> DataFrame:
        """The merged rows, exactly the table's columns; optionally as of a Delta version or timestamp."""
        return self._reader.read(version, timestamp)

    def changelog(self, start_commit: int | None = None, end_commit: int | None = None) -> DataFrame:
        """`_row_kind`, the table's columns, `_commit`, `_offset` of the commits in [start, end]."""
        return self._reader.changelog(start_commit, end_commit)

    def export(
        self, encoding: Encoding, start_commit: int | None = None, end_commit: int | None = None
    ) -> DataFrame:
        """The changelog of commits [start, end] in a sink encoding; see `wide_assets.export`."""
        return self._reader.export(encoding, start_commit, end_commit)

    def publish_changelog(
        self, path: str | os.PathLike[str], encoding: Encoding | None = None
    ) -> PublishResult:
        """Append the changelog of every commit not yet published to the plain Delta table at `path`
        (created on the first call), as `changelog()` returns it or in a sink `encoding`: what other
        Delta readers should read instead of the internal `<table>_changelog`. Exactly once per
        commit; see `wide_assets.table.publish`."""
        return publish(self._reader, str(path), encoding)

    def diff(self, from_version: int, to_version: int | None = None) -> DataFrame:
        """The changelog (+I, -U/+U, -D; changed rows only) from one Delta version to another (default now)."""
        return self._reader.diff(from_version, to_version)

    def lookup(self, keys: Rows) -> DataFrame:
        """The rows of the given primary keys (rows of the key columns: Spark, pandas or Arrow); absent
        keys give no row."""
        return self._reader.lookup(self._frame(keys, "lookup keys"))

    def prefix_lookup(self, prefixes: Rows) -> DataFrame:
        """The rows whose leading key columns equal one of `prefixes` (a prefix of the primary key)."""
        return self._reader.prefix_lookup(self._frame(prefixes, "lookup prefixes"))

    # ----------------------------------------------------------------------------- metadata (no Spark)
    @property
    def version(self) -> int:
        """The wide table's current Delta version."""
        return self._storage.version

    @property
    def changelog_version(self) -> int:
        """The commit log's (`changelog_path`'s) current Delta version."""
        return self._storage.log.version()

    def health(self) -> TableHealth:
        """Pending commits, files, bytes and the last compaction, from one read of the commit log."""
        return table_health(self._storage.log)

    def commits(self) -> list[CommitInfo]:
        """Every commit's marker, oldest first."""
        return list(self._storage.log.markers().commits)

    def compactions(self) -> list[CompactionInfo]:
        """Every compaction's marker, oldest first."""
        return list(self._storage.log.markers().compactions)

    def pending_commits(self) -> list[int]:
        """Commits logged but not in the Delta table yet: a write-only table's uncompacted fragments, or
        a copy-on-write commit whose MERGE a crash cut short (it still shows in `read()`)."""
        return self._storage.log.pending(self._storage.log.markers())

    @property
    def last_commit(self) -> int:
        """The number of the last committed write (0 before the first)."""
        return self._storage.log.markers().last_commit

    # ----------------------------------------------------------------------------- writing
    def write(
        self,
        changes: Rows,
        target_columns: Sequence[str] | None = None,
        *,
        txn: (
            Txn | tuple[str, int] | tuple[str, int, int | None] | tuple[str, int, int | None, str] | None
        ) = None,
    ) -> WriteResult:
        """Merge `changes` (a Spark DataFrame, a pandas DataFrame or a pyarrow Table) into the table and
        its changelog as one commit; see `wide_assets.table.protocol`."""
        write_id = uuid.uuid4().hex
        with staging_area(self.path) as stage, self._locked():
            try:
                frame = spark_frame(self._storage.spark, changes, self.definition.columns, "changes", stage)
            except Exception as error:
                if not protocol.is_store_error(error):
                    raise
                raise StoreError(
                    f"Writing to {self.path}: staging the changes failed ({first_line(error)}); nothing "
                    "was committed, so the call can be retried.",
                    committed=False,
                    write_id=write_id,
                ) from error
            return protocol.write(self._storage, frame, target_columns, Txn(*txn) if txn else None, write_id)

    def recover(self) -> bool:
        """Finish a commit whose MERGE did not land (after a crash); True if one was applied."""
        with self._locked():
            return recover(self._storage)

    def compact(self) -> CompactionInfo | None:
        """Fold every pending commit into the Delta table with one MERGE (the dedicated compaction job
        of a write-only table); None when nothing is pending. Crash safe."""
        with self._locked():
            return compaction.compact(self._storage)

    # ----------------------------------------------------------------------------- maintenance
    def add_columns(
        self, columns: Sequence[tuple[str, str] | Column], options: dict[str, Any] | None = None
    ) -> WideTable:
        """Add nullable columns (a new source) and options (e.g. its sequence group), keeping every row,
        the changelog and time travel. Idempotent: a call cut short by a crash can simply be repeated."""
        requested = [c if isinstance(c, Column) else Column.parse(c[0], c[1]) for c in columns]
        spec, added = maintenance.with_columns(self.definition, requested, options)
        with self._locked():
            recover(self._storage)
            if added:
                definition.add_columns(self._storage, added)
            definition.record_definition(self._storage, spec)
        return self

    def verify(self) -> None:
        """Check that the table and its log are readable; raises TableStateError naming the damage."""
        maintenance.verify(self._storage)

    def rebuild(self) -> int:
        """Rewrite the wide table from its commit log as a new Delta version; returns the row count."""
        with self._locked():
            return maintenance.rebuild(self._storage)

    def optimize(self, z_order: Sequence[str] | None = None) -> dict[str, Any]:
        """Small-file compaction (delta-rs OPTIMIZE, optionally Z-ordered) of the table and its log."""
        with self._locked():
            recover(self._storage)
            return maintenance.optimize(self._storage, z_order)

    def vacuum(self, retention_hours: int | None = None, dry_run: bool = False) -> list[str]:
        """Delete files no version within the retention (never below Delta's, 7 days) needs."""
        with self._locked():
            return maintenance.vacuum(self._storage, retention_hours, dry_run)

    def _frame(self, rows: Rows, what: str) -> DataFrame:
        return spark_frame(self._storage.spark, rows, self.definition.columns, what)

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        """One writer at a time on this machine's disk (fewer conflicts to retry; not the guarantee)."""
        return exclusive(self.path)
