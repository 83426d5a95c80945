"""`WideTable`: a partial-update wide table stored as Delta Lake, written by PySpark MERGEs.

Storage, for a table at `path`:
- `path`: the wide table, a Delta table holding exactly the table's columns; its definition (columns,
  primary key, options) is persisted in the Delta metadata (`wide_assets.spec`).
- `path` + `_changelog`: a Delta table that is both the changelog users read and the table's commit
  log. Per commit it holds the merged changelog entries (`_origin` = 'merged'), the input records for
  the `input` producer ('input'), and one marker row ('commit') whose JSON carries the base version and
  the writer's transaction id.

Commit protocol (exactly once, crash safe). Under the table's lock: (1) recover: if the last logged
commit's MERGE never landed (the wide table is still at that commit's base version), apply it; (2)
skip the write if its transaction id was already committed; (3) merge the batch against the wide table
pinned at its current version; (4) append the commit to the log in one atomic Delta commit; (5) apply
it to the wide table with a MERGE that reads the commit back from the log. Step 5 is idempotent, so a
crash anywhere leaves either nothing or a commit that the next write (or `recover()`) finishes.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from pyspark.sql import DataFrame, SparkSession

from wide_assets import faults
from wide_assets.batch import (
    PreparedBatch,
    apply_images,
    assign_auto_increment,
    collapsed_transitions,
    final_images,
    first_line,
    input_changelog,
    merge_batch,
    merge_errors,
    prepare_batch,
    transition_counts,
    without_ignored_updates,
)
from wide_assets.errors import (
    ConcurrentWriteError,
    InvalidInputError,
    InvalidOptionError,
    TableStateError,
    WideTableError,
)
from wide_assets.locking import exclusive
from wide_assets.merge import MergeContext, engine_for
from wide_assets.merge.plan import quote
from wide_assets.spec import BUCKET_COLUMN, Column, TableSpec

if TYPE_CHECKING:
    from wide_assets.export import Encoding

SPEC_PROPERTY = "wide_assets.spec"
CHANGELOG_SUFFIX = "_changelog"
LOG_COLUMNS = ("_commit", "_offset", "_row_kind", "_origin")
CHANGELOG_ORIGIN = {"input": "input"}  # every other producer's changelog is the merged one
LOOKUP_PRUNING_KEYS = 1000  # up to this many lookup keys become IN filters the Delta scan can prune with


URL_UNSAFE = " %#?"


class Txn(NamedTuple):
    """A writer's idempotency key: a write whose (app_id, version) was already committed is skipped.

    `after`, when given, is the version of `app_id` the writer read its input after (0: from the
    start). If another writer committed a different version of `app_id` in between, the write fails
    with `ConcurrentWriteError` instead of applying input that overlaps what that writer applied."""

    app_id: str
    version: int
    after: int | None = None


@dataclass(frozen=True)
class WriteResult:
    """What one `write` committed (or found already committed)."""

    commit: int
    version: int
    changelog_version: int
    inserted: int
    updated: int
    deleted: int
    unchanged: int
    input_records: int
    changelog_rows: int
    skipped: bool = False
    recovered: bool = False
    # Lookup-free write-only commits are folded in at compaction: until then the counts are 0.
    resolved_at_compaction: bool = False

    def as_metadata(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CommitInfo:
    """The marker row of one commit in the log."""

    commit: int
    base_version: int
    txn: Txn | None
    written_at: str
    input_records: int
    target_columns: tuple[str, ...] | None
    next_auto_increment: int | None = None

    def to_json(self) -> str:
        data = asdict(self)
        data["txn"] = list(self.txn) if self.txn else None
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CommitInfo:
        data = json.loads(text)
        txn = Txn(*data["txn"]) if data.get("txn") else None
        targets = tuple(data["target_columns"]) if data.get("target_columns") else None
        return cls(
            commit=data["commit"],
            base_version=data["base_version"],
            txn=txn,
            written_at=data["written_at"],
            input_records=data["input_records"],
            target_columns=targets,
            next_auto_increment=data.get("next_auto_increment"),
        )


class JsonMarker:
    """A marker row's `_commit_info`: a flat dataclass as JSON."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Self:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class CompactionInfo(JsonMarker):
    """The marker row of one compaction: the table holds every commit up to `through`."""

    through: int
    commits: int
    applied_rows: int
    version_before: int
    version_after: int
    written_at: str


@dataclass(frozen=True)
class Resolution(JsonMarker):
    """The first step of compacting fragments (lookup-free writes): the commits up to `through`, folded
    into the table as it was at `version_before`, are logged as absolute images. Applying those is
    idempotent, so a compaction cut short after this step is finished from them, never refolded."""

    through: int
    commits: int
    version_before: int


Markers = tuple[list[CommitInfo], list[CompactionInfo], list[Resolution]]


class WideTable:
    """A wide table at `path`: create or open it, then write changes, read rows and its changelog."""

    def __init__(self, spark: SparkSession | None, path: str, spec: TableSpec) -> None:
        unsafe = sorted(set(URL_UNSAFE) & set(str(path)))
        if unsafe:
            # Sail 0.7.2 URL-decodes local paths: it looks for such a table elsewhere, finds no commit
            # and reports an empty location (seen with a space), so refuse the path up front.
            raise InvalidOptionError(f"A table path must not contain any of {unsafe}: {path!r}.")
        self.spark = spark
        self.path = str(path)
        self.spec = spec

    # ----------------------------------------------------------------------------- lifecycle
    @classmethod
    def create(
        cls,
        spark: SparkSession,
        path: str | os.PathLike[str],
        columns: Sequence[tuple[str, str] | Column],
        primary_key: Sequence[str],
        options: dict[str, Any] | None = None,
    ) -> WideTable:
        """Create the table (idempotent when the same definition exists); invalid options fail here."""
        import pyarrow as pa
        from deltalake import DeltaTable

        spec = TableSpec.build(columns, primary_key, options)
        path = str(path)
        table = cls(spark, path, spec)
        if DeltaTable.is_deltatable(path) and SPEC_PROPERTY in DeltaTable(path).metadata().configuration:
            existing = cls.open(spark, path)
            if existing.spec.to_json() != spec.to_json():
                raise InvalidOptionError(
                    f"A wide table with a different definition already exists at {path}: {existing.spec.to_json()}"
                )
            return existing
        schema = table._arrow_schema()
        # Log first, then the table, then its definition: a creation cut short anywhere is finished
        # by calling `create` again.
        if not DeltaTable.is_deltatable(table.changelog_path):
            name = f"{Path(path).name}{CHANGELOG_SUFFIX}"
            DeltaTable.create(table.changelog_path, schema=table._arrow_log_schema(schema), name=name)
        if not DeltaTable.is_deltatable(path):
            partition_by = None
            if spec.bucketing is not None:
                schema = schema.append(pa.field(BUCKET_COLUMN, pa.int32(), nullable=False))
                partition_by = [BUCKET_COLUMN]
            configuration = {"delta.enableDeletionVectors": "true"} if spec.deletion_vectors else None
            DeltaTable.create(
                path,
                schema=schema,
                name=Path(path).name,
                partition_by=partition_by,
                configuration=configuration,
            )
        elif DeltaTable(path).version() != 0:
            raise TableStateError(f"The Delta table at {path} holds data but is not a wide table.")
        # delta-rs only accepts unknown (non-`delta.*`) properties through ALTER.
        DeltaTable(path).alter.set_table_properties(
            {SPEC_PROPERTY: spec.to_json()}, raise_if_not_exists=False
        )
        return table

    @classmethod
    def open(cls, spark: SparkSession | None, path: str | os.PathLike[str]) -> WideTable:
        """Open an existing table; its definition is read from the Delta metadata. Without a session
        (`spark=None`) only the metadata methods work: commits, compactions, pending_commits, version."""
        from deltalake import DeltaTable

        path = str(path)
        if not DeltaTable.is_deltatable(path):
            raise TableStateError(f"No Delta table at {path}.")
        configuration = DeltaTable(path).metadata().configuration
        if SPEC_PROPERTY not in configuration:
            raise TableStateError(
                f"The Delta table at {path} is not a wide table (no '{SPEC_PROPERTY}' property)."
            )
        table = cls(spark, path, TableSpec.from_json(configuration[SPEC_PROPERTY]))
        if not DeltaTable.is_deltatable(table.changelog_path):
            raise TableStateError(f"The changelog of {path} is missing at {table.changelog_path}.")
        return table

    @property
    def changelog_path(self) -> str:
        return self.path.rstrip("/") + CHANGELOG_SUFFIX

    # ----------------------------------------------------------------------------- reading
    def read(self, version: int | None = None, timestamp: str | None = None) -> DataFrame:
        """The merged rows, exactly the table's columns; optionally as of a Delta version or timestamp."""
        return self._read(version, timestamp)

    def _read(
        self, version: int | None = None, timestamp: str | None = None, where: str = "true"
    ) -> DataFrame:
        """`read`, with `where` applied to the stored rows first (it may name the bucket column)."""
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        if timestamp is not None:
            reader = reader.option("timestampAsOf", timestamp)
        base = reader.load(self.path).where(where).select(*[quote(c) for c in self.spec.column_names])
        if version is not None or timestamp is not None:
            return base
        pending = self.pending_commits()
        if not pending:
            return base
        # Union read: the Delta table plus the logged commits it does not hold yet.
        return apply_images(self.spark, self.spec, base, self._images(pending, base))

    def diff(self, from_version: int, to_version: int | None = None) -> DataFrame:
        """The changelog (+I, -U/+U, -D; changed rows only) from one Delta version to another (default now)."""
        from wide_assets.export import snapshot_diff

        return snapshot_diff(
            self.spark, self.spec, self.read(version=from_version), self.read(version=to_version)
        )

    def export(
        self, encoding: Encoding, start_commit: int | None = None, end_commit: int | None = None
    ) -> DataFrame:
        """The changelog of commits [start, end] in a sink encoding; see `wide_assets.export`."""
        from wide_assets.export import ENCODINGS

        return ENCODINGS[encoding](self.spark, self.spec, self.changelog(start_commit, end_commit))

    def changelog(self, start_commit: int | None = None, end_commit: int | None = None) -> DataFrame:
        """`_row_kind`, the table's columns, `_commit`, `_offset` of the commits in [start, end]."""
        merge = self.spec.merge
        if merge.dialect == "paimon" and merge.changelog_producer == "none":
            raise InvalidOptionError(
                f"Table {self.path} has changelog-producer 'none'; create it with 'changelog-producer' = "
                "'input', 'lookup' or 'full-compaction' to read a changelog."
            )
        origin = CHANGELOG_ORIGIN.get(merge.changelog_producer, "merged")
        if merge.changelog_at_compaction:
            origin = "compacted"
        conditions = [f"_origin = '{origin}'"]
        if start_commit is not None:
            conditions.append(f"_commit >= {int(start_commit)}")
        if end_commit is not None:
            conditions.append(f"_commit <= {int(end_commit)}")
        columns = ", ".join(quote(c) for c in self.spec.column_names)
        entries = self.spark.sql(
            f"SELECT _row_kind, {columns}, _commit, _offset FROM {{log}} WHERE {' AND '.join(conditions)}",
            log=self.spark.read.format("delta").load(self.changelog_path),
        )
        if merge.row_deduplicate and merge.row_deduplicate_ignore_fields and origin == "merged":
            entries = without_ignored_updates(self.spark, self.spec, entries)
        return entries

    def lookup(self, keys: DataFrame) -> DataFrame:
        """The rows of the given primary keys (a DataFrame of the key columns); absent keys give no row."""
        return self._rows_matching(keys, self.spec.primary_key)

    def prefix_lookup(self, prefixes: DataFrame) -> DataFrame:
        """The rows whose leading key columns equal one of `prefixes` (a prefix of the primary key)."""
        columns = tuple(prefixes.columns)
        if not columns or columns != self.spec.primary_key[: len(columns)]:
            raise InvalidInputError(
                f"A prefix lookup takes leading primary key columns {list(self.spec.primary_key)}, got {list(columns)}."
            )
        return self._rows_matching(prefixes, columns)

    def _rows_matching(self, keys: DataFrame, columns: tuple[str, ...]) -> DataFrame:
        if set(keys.columns) != set(columns):
            raise InvalidInputError(
                f"Lookup keys must have exactly the columns {list(columns)}, got {keys.columns}."
            )
        rows = self.read()
        bucketing = self.spec.bucketing
        if bucketing is not None and set(bucketing.key) <= set(columns):
            # Partition pruning: only the buckets the keys hash to are read.
            rows = self._read(where=f"{BUCKET_COLUMN} IN ({self._buckets_of(keys)})")
        wanted = keys.distinct().limit(LOOKUP_PRUNING_KEYS + 1).collect()
        if len(wanted) <= LOOKUP_PRUNING_KEYS:
            # Literal IN lists reach the Delta scan, whose per-file min/max statistics skip files.
            literals = {c: sorted({_sql_value(r[c]) for r in wanted if r[c] is not None}) for c in columns}
            if any(not values for values in literals.values()):
                return rows.limit(0)
            rows = rows.where(" AND ".join(f"{quote(c)} IN ({', '.join(v)})" for c, v in literals.items()))
        on = " AND ".join(f"t.{quote(c)} = k.{quote(c)}" for c in columns)
        return self.spark.sql(
            f"SELECT t.* FROM {{rows}} t LEFT SEMI JOIN {{keys}} k ON {on}", rows=rows, keys=keys
        )

    @property
    def version(self) -> int:
        """The wide table's current Delta version."""
        from deltalake import DeltaTable

        return DeltaTable(self.path).version()

    def _markers(self) -> Markers:
        """Commit, compaction and resolution markers, oldest first (read through delta-rs: no Spark job)."""
        from deltalake import DeltaTable

        log = DeltaTable(self.changelog_path).to_pyarrow_table(
            columns=["_origin", "_commit_info"],
            filters=[("_origin", "in", ["commit", "compaction", "resolution"])],
        )
        commits, compactions, resolutions = [], [], []
        for origin, text in zip(
            log.column("_origin").to_pylist(), log.column("_commit_info").to_pylist(), strict=True
        ):
            if origin == "commit":
                commits.append(CommitInfo.from_json(text))
            elif origin == "compaction":
                compactions.append(CompactionInfo.from_json(text))
            else:
                resolutions.append(Resolution.from_json(text))
        return (
            sorted(commits, key=lambda c: c.commit),
            sorted(compactions, key=lambda c: c.through),
            sorted(resolutions, key=lambda r: r.through),
        )

    def commits(self) -> list[CommitInfo]:
        """Every commit's marker, oldest first."""
        return self._markers()[0]

    def compactions(self) -> list[CompactionInfo]:
        """Every compaction's marker, oldest first."""
        return self._markers()[1]

    def _unfinished_resolution(self, markers: Markers) -> Resolution | None:
        """The resolution of a compaction cut short before its marker, if any."""
        _, compactions, resolutions = markers
        through = compactions[-1].through if compactions else 0
        return resolutions[-1] if resolutions and resolutions[-1].through > through else None

    def pending_commits(self) -> list[int]:
        """Commits logged but not in the Delta table yet: a write-only table's uncompacted fragments, or
        a copy-on-write commit whose MERGE a crash cut short (it still shows in `read()`)."""
        return self._pending(self._markers())

    def _pending(self, markers: Markers) -> list[int]:
        from deltalake import DeltaTable

        commits, compactions, resolutions = markers
        if not commits:
            return []
        if self.spec.merge.write_only:
            through = compactions[-1].through if compactions else 0
            if resolutions and resolutions[-1].through > through:
                # A compaction cut short: its commits are in the table once its MERGE landed.
                since = self.version - resolutions[-1].version_before
                history = DeltaTable(self.path).history(since) if since > 0 else []
                if any(entry.get("operation") == "MERGE" for entry in history):
                    through = resolutions[-1].through
        else:
            last = commits[-1]
            through = last.commit - 1 if self.version == last.base_version else last.commit
        return [c.commit for c in commits if c.commit > through]

    @property
    def last_commit(self) -> int:
        """The number of the last committed write (0 before the first)."""
        commits = self.commits()
        return commits[-1].commit if commits else 0

    # ----------------------------------------------------------------------------- writing
    def write(
        self,
        changes: DataFrame,
        target_columns: Sequence[str] | None = None,
        *,
        txn: Txn | tuple[str, int] | None = None,
    ) -> WriteResult:
        """Merge `changes` into the table and its changelog as one commit; see the module docstring."""
        txn = Txn(*txn) if txn is not None else None
        with self._locked():
            # Recovery adds no commit marker, so one read of the markers serves both.
            markers = self._markers()
            recovered = self._recover(markers)
            commits = markers[0]
            if txn is not None:
                done = [
                    c
                    for c in commits
                    if c.txn and c.txn.app_id == txn.app_id and c.txn.version >= txn.version
                ]
                if done:
                    return self._result(done[-1], skipped=True, recovered=recovered)
                if txn.after is not None:
                    last = max(
                        (c.txn.version for c in commits if c.txn and c.txn.app_id == txn.app_id), default=0
                    )
                    if last != txn.after:
                        raise ConcurrentWriteError(
                            f"{txn.app_id}: this write read its input after version {txn.after}, but version "
                            f"{last} is committed now; read the input again and retry."
                        )
            batch = prepare_batch(self.spark, self.spec, changes, target_columns)
            base_version = self.version
            info = CommitInfo(
                commit=(commits[-1].commit if commits else 0) + 1,
                base_version=base_version,
                txn=txn,
                written_at=datetime.now(UTC).isoformat(timespec="seconds"),
                input_records=0,
                target_columns=batch.context.target_columns,
            )
            if self.spec.merge.lookup_free_writes:
                # Their fold into the stored rows waits for compaction. Of these engines' checks only a
                # guard can fail (on the records alone): run the merge to check it, before the commit.
                if engine_for(self.spec.merge).guard(batch.context) is not None:
                    with merge_errors():
                        merge_batch(self.spark, batch, self._read(version=base_version).limit(0)).count()
                parts = [self._log_rows(batch.frame, info.commit, "fragment")]
            else:
                stored = self.read()
                if self.spec.merge.auto_increment is not None:
                    next_id = next(
                        (c.next_auto_increment for c in reversed(commits) if c.next_auto_increment), 1
                    )
                    batch, next_id = assign_auto_increment(self.spark, batch, stored, next_id)
                    info = replace(info, next_auto_increment=next_id)
                entries = merge_batch(self.spark, batch, stored)
                parts = [self._log_rows(entries, info.commit, "merged")]
            if self.spec.merge.changelog_producer == "input":
                parts.append(self._log_rows(input_changelog(self.spark, batch), info.commit, "input"))
            every = self.spec.merge.full_compaction_delta_commits
            if (
                self.spec.merge.changelog_at_compaction
                and not self.spec.merge.write_only
                and info.commit % every == 0
            ):
                # Full compaction every N commits: their changes collapse into one changelog, committed
                # atomically with this commit.
                window = parts[0]
                if every > 1:
                    window = self._merged_entries(
                        list(range(info.commit - every + 1, info.commit))
                    ).unionByName(window)
                transitions = collapsed_transitions(self.spark, self.spec, window)
                parts.append(self._log_rows(transitions, info.commit, "compacted"))
            assert batch.records is not None, "prepare_batch counts the records"
            info = replace(info, input_records=batch.records)
            faults.checkpoint("before-changelog-commit")
            self._append_log(parts, info.commit, "commit", info.to_json())
            faults.checkpoint("after-changelog-commit")
            if not self.spec.merge.write_only:
                self._merge_images(self._images([info.commit]))
            faults.checkpoint("after-table-commit")
            # `info` is exactly the marker just committed: no need to read the log back.
            return self._result(info, recovered=recovered)

    def add_columns(
        self, columns: Sequence[tuple[str, str] | Column], options: dict[str, Any] | None = None
    ) -> WideTable:
        """Add nullable columns (a new source) and options (e.g. its sequence group), keeping every row,
        the changelog and time travel. Idempotent: a call cut short by a crash can simply be repeated."""
        from deltalake import DeltaTable

        requested = [c if isinstance(c, Column) else Column.parse(c[0], c[1]) for c in columns]
        # Columns a completed earlier call already added are not added again.
        added = [c for c in requested if c not in self.spec.columns]
        not_nullable = [c.name for c in added if not c.nullable]
        if not_nullable:
            raise InvalidOptionError(f"Columns added to an existing table must be nullable: {not_nullable}.")
        spec = TableSpec.build(
            [*self.spec.columns, *added], self.spec.primary_key, {**self.spec.options, **(options or {})}
        )
        if spec.merge.dialect != self.spec.merge.dialect or spec.merge.engine != self.spec.merge.engine:
            raise InvalidOptionError("Adding columns cannot change the table's dialect or merge engine.")
        with self._locked():
            self._recover()
            if added:
                self._add_delta_columns(added)
            DeltaTable(self.path).alter.set_table_properties(
                {SPEC_PROPERTY: spec.to_json()}, raise_if_not_exists=False
            )
        self.spec = spec
        return self

    def _add_delta_columns(self, added: list[Column]) -> None:
        from deltalake import DeltaTable, Schema
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow = to_arrow_schema(self.spark.createDataFrame([], ", ".join(c.ddl for c in added)).schema)
        fields = Schema.from_arrow(arrow).fields
        # Log first, table second, definition last: until the definition names them, readers ignore the
        # new columns, and a repeated call adds only what is still missing.
        for path in (self.changelog_path, self.path):
            table = DeltaTable(path)
            existing = set(table.schema().to_arrow().names)
            missing = [f for f in fields if f.name not in existing]
            if missing:
                table.alter.add_columns(missing)

    def verify(self) -> None:
        """Check that the table and its log are readable: every Delta log entry parses, every data file
        they reference exists with its recorded size and a valid Parquet footer. Raises TableStateError
        naming the damage and the way out (see the README's recovery section)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        from deltalake import DeltaTable

        for path in (self.path, self.changelog_path):
            try:
                actions = pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist()
            except Exception as error:
                raise TableStateError(
                    f"The Delta log of {path} cannot be read ({first_line(error)}); restore the damaged "
                    "_delta_log entry from a backup."
                ) from error
            for action in actions:
                file = os.path.join(path, action["path"])
                problem = None
                if not os.path.exists(file):
                    problem = "is missing"
                elif os.path.getsize(file) != action["size_bytes"]:
                    problem = f"has {os.path.getsize(file)} bytes, the log recorded {action['size_bytes']}"
                else:
                    try:
                        pq.read_metadata(file)
                    except Exception as error:
                        problem = f"is not valid Parquet ({first_line(error)})"
                if problem:
                    fix = "WideTable.rebuild()" if path == self.path else "restore it from a backup"
                    raise TableStateError(f"Data file {file} of {path} {problem}; recover with {fix}.")

    def rebuild(self) -> int:
        """Rewrite the wide table from its commit log (every commit's final images), as a new Delta
        version: the way back from a lost or corrupted data file of the table. Returns the row count."""
        with self._locked():
            commits = self.commits()
            if not commits:
                return 0
            # From empty: every commit's images again (fragments are folded from no rows at all).
            images = self._images([c.commit for c in commits], self._read(version=self.version).limit(0))
            rows = images.where("_row_kind <> '-D'").select(*[quote(c) for c in self.spec.column_names])
            writer = rows.write.format("delta").mode("overwrite")
            if self.spec.bucketing is not None:
                rows = rows.selectExpr("*", f"{self.spec.bucketing.expression()} AS {BUCKET_COLUMN}")
                writer = rows.write.format("delta").mode("overwrite").partitionBy(BUCKET_COLUMN)
            writer.save(self.path)
            return self.spark.read.format("delta").load(self.path).count()

    def recover(self) -> bool:
        """Finish a commit whose MERGE did not land (after a crash); True if one was applied."""
        with self._locked():
            return self._recover()

    def _recover(self, markers: Markers | None = None) -> bool:
        """Finish what a crash cut short, judged by `markers` (read now when not given)."""
        if markers is None:
            markers = self._markers()
        if self.spec.merge.write_only:
            # Pending commits are the compaction's to apply; only a compaction cut short is finished.
            resolution = self._unfinished_resolution(markers)
            if resolution is not None:
                self._apply_resolution(resolution)
            return resolution is not None
        pending = self._pending(markers)
        return bool(pending) and self._merge_images(self._images(pending)) > 0

    def compact(self) -> CompactionInfo | None:
        """Fold every pending commit into the Delta table with one MERGE (the dedicated compaction job
        of a write-only table); None when nothing is pending. Crash safe: the MERGE is idempotent and the
        marker that ends it is written after it."""
        with self._locked():
            self._recover()
            pending = self.pending_commits()
            if not pending:
                return None
            version_before = self.version
            if self.spec.merge.lookup_free_writes:
                resolution = Resolution(pending[-1], len(pending), version_before)
                entries = self._folded_fragments(pending, self._read(version=version_before))
                self._append_log(
                    [
                        self._log_rows(entries, resolution.through, "merged"),
                        *self._compacted(entries, resolution.through),
                    ],
                    resolution.through,
                    "resolution",
                    resolution.to_json(),
                )
                faults.checkpoint("after-resolution")
                return self._apply_resolution(resolution)
            entries = self._merged_entries(pending)
            applied = self._merge_images(final_images(self.spark, self.spec, entries, across_commits=True))
            faults.checkpoint("after-compaction-merge")
            info = CompactionInfo(
                through=pending[-1],
                commits=len(pending),
                applied_rows=applied,
                version_before=version_before,
                version_after=self.version,
                written_at=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            self._append_log(
                self._compacted(entries, info.through), info.through, "compaction", info.to_json()
            )
            return info

    def _compacted(self, entries: DataFrame, through: int) -> list[DataFrame]:
        """The changelog a compaction produces, when the table's producer runs at compaction."""
        if not self.spec.merge.changelog_at_compaction:
            return []
        return [self._log_rows(collapsed_transitions(self.spark, self.spec, entries), through, "compacted")]

    def _apply_resolution(self, resolution: Resolution) -> CompactionInfo:
        """MERGE a resolution's logged images (idempotent), then write the compaction's marker."""
        entries = self._merged_entries([resolution.through])
        applied = self._merge_images(final_images(self.spark, self.spec, entries))
        faults.checkpoint("after-compaction-merge")
        info = CompactionInfo(
            through=resolution.through,
            commits=resolution.commits,
            applied_rows=applied,
            version_before=resolution.version_before,
            version_after=self.version,
            written_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        self._append_log([], info.through, "compaction", info.to_json())
        return info

    def optimize(self, z_order: Sequence[str] | None = None) -> dict[str, Any]:
        """Small-file compaction (delta-rs OPTIMIZE, optionally Z-ordered) of the table and its log."""
        from deltalake import DeltaTable

        with self._locked():
            self._recover()
            table = DeltaTable(self.path)
            metrics = table.optimize.z_order(list(z_order)) if z_order else table.optimize.compact()
            DeltaTable(self.changelog_path).optimize.compact()
            return metrics

    def vacuum(self, retention_hours: int | None = None, dry_run: bool = False) -> list[str]:
        """Delete files no version within the retention needs (delta-rs VACUUM). The retention can never
        go below the table's `delta.deletedFileRetentionDuration` (7 days unless set), so readers of
        recent versions and time travel keep working."""
        from deltalake import DeltaTable

        with self._locked():
            removed = []
            for path in (self.path, self.changelog_path):
                removed += DeltaTable(path).vacuum(
                    retention_hours=retention_hours, dry_run=dry_run, enforce_retention_duration=True
                )
            return removed

    def _log_rows(self, entries: DataFrame, commit: int, origin: str) -> DataFrame:
        columns = ", ".join(quote(c) for c in self.spec.column_names)
        return self.spark.sql(
            f"SELECT CAST({commit} AS BIGINT) AS _commit, _offset, _row_kind, '{origin}' AS _origin, {columns}, "
            "CAST(NULL AS STRING) AS _commit_info FROM {entries}",
            entries=entries,
        )

    def _append_log(self, parts: list[DataFrame], commit: int, origin: str, info_json: str) -> None:
        """One atomic Delta commit: the entries plus their marker row (`origin` = commit|compaction)."""
        nulls = ", ".join(f"CAST(NULL AS {c.type}) AS {quote(c.name)}" for c in self.spec.columns)
        rows = self.spark.sql(
            f"SELECT CAST({commit} AS BIGINT) AS _commit, CAST(-1 AS BIGINT) AS _offset, "
            f"CAST(NULL AS STRING) AS _row_kind, '{origin}' AS _origin, {nulls}, "
            f"{_sql_literal(info_json)} AS _commit_info"
        )
        for part in parts:
            rows = rows.unionByName(part)
        with merge_errors():
            rows.write.format("delta").mode("append").save(self.changelog_path)

    def _images(self, commits: list[int], stored: DataFrame | None = None) -> DataFrame:
        """The final image per key of `commits` (a contiguous range) over the `stored` rows they follow
        (default: the Delta table). Merged entries hold absolute images; only fragments need `stored`."""
        if self.spec.merge.lookup_free_writes:
            if stored is None:
                stored = self._read(version=self.version)
            return final_images(self.spark, self.spec, self._folded_fragments(commits, stored))
        return final_images(self.spark, self.spec, self._merged_entries(commits), across_commits=True)

    def _folded_fragments(self, commits: list[int], stored: DataFrame) -> DataFrame:
        """The changelog entries of folding the records of `commits` into `stored`, as one merge whose
        arrival order is commit then offset (the fold is sequential, so this equals commit by commit)."""
        columns = ", ".join(quote(c) for c in self.spec.column_names)
        records = self.spark.sql(
            f"SELECT {columns}, _row_kind, _segment, row_number() OVER (ORDER BY _segment, _position) AS _offset "
            f"FROM (SELECT {columns}, _row_kind, _commit AS _segment, _offset AS _position FROM {{log}} "
            f"WHERE _commit BETWEEN {min(commits)} AND {max(commits)} AND _origin = 'fragment')",
            log=self._log(),
        )
        batch = PreparedBatch(records, MergeContext(self.spec))
        entries = merge_batch(self.spark, batch, stored, segmented=True)
        # One merge: its entries belong to the last commit folded, as the log will record them.
        return self.spark.sql(f"SELECT *, CAST({max(commits)} AS BIGINT) AS _commit FROM {{e}}", e=entries)

    def _merge_images(self, images: DataFrame) -> int:
        """MERGE final images into the Delta table; returns how many rows it upserts or deletes."""
        spec = self.spec
        count = images.count()
        if count == 0:
            return 0
        on = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in spec.primary_key)
        assignments = ", ".join(f"t.{quote(c)} = s.{quote(c)}" for c in spec.value_columns)
        update = f"WHEN MATCHED THEN UPDATE SET {assignments} " if assignments else ""
        columns = ", ".join(quote(c) for c in spec.column_names)
        values = ", ".join(f"s.{quote(c)}" for c in spec.column_names)
        if spec.bucketing is not None:
            # The literal bucket list prunes the target's partitions: only buckets the images hit are
            # scanned and rewritten.
            on = f"t.{BUCKET_COLUMN} IN ({self._buckets_of(images)}) AND t.{BUCKET_COLUMN} = s.{BUCKET_COLUMN} AND {on}"
            columns += f", {BUCKET_COLUMN}"
            values += f", s.{BUCKET_COLUMN}"
            images = self.spark.sql(
                f"SELECT *, {spec.bucketing.expression()} AS {BUCKET_COLUMN} FROM {{images}}", images=images
            )
        view = f"wide_assets_apply_{os.getpid()}_{id(self)}"
        images.createOrReplaceTempView(view)
        try:
            self.spark.sql(
                f"MERGE INTO delta.`{self.path}` t USING {view} s ON {on} "
                f"WHEN MATCHED AND s._row_kind = '-D' THEN DELETE "
                f"{update}"
                f"WHEN NOT MATCHED AND s._row_kind <> '-D' THEN INSERT ({columns}) VALUES ({values})"
            ).collect()
        finally:
            self.spark.catalog.dropTempView(view)
        return count

    def _buckets_of(self, keys: DataFrame) -> str:
        """The buckets `keys` (a frame with the bucket key columns) hash to, as a SQL list."""
        assert self.spec.bucketing is not None
        hit = self.spark.sql(
            f"SELECT DISTINCT {self.spec.bucketing.expression()} AS b FROM {{keys}}", keys=keys
        ).collect()
        return ", ".join(str(r.b) for r in hit) or "NULL"

    def _merged_entries(self, commits: list[int]) -> DataFrame:
        """The merged changelog entries of `commits` (a contiguous range), from the log as it is now."""
        return self.spark.sql(
            f"SELECT * FROM {{log}} WHERE _commit BETWEEN {min(commits)} AND {max(commits)} AND _origin = 'merged'",
            log=self._log(),
        )

    def _log(self) -> DataFrame:
        """The commit log as it is now (pinned: later appends do not change what this frame reads)."""
        from deltalake import DeltaTable

        return (
            self.spark.read.format("delta")
            .option("versionAsOf", DeltaTable(self.changelog_path).version())
            .load(self.changelog_path)
        )

    def _result(self, info: CommitInfo, skipped: bool = False, recovered: bool = False) -> WriteResult:
        from deltalake import DeltaTable

        lookup_free = self.spec.merge.lookup_free_writes
        counts = dict.fromkeys(("inserted", "updated", "unchanged", "deleted", "changelog_rows"), 0)
        if not lookup_free:  # a lookup-free commit has no merged entries until its compaction
            entries = self._merged_entries([info.commit])
            counts = {**transition_counts(self.spark, self.spec, entries), "changelog_rows": entries.count()}
        return WriteResult(
            commit=info.commit,
            version=self.version,
            changelog_version=DeltaTable(self.changelog_path).version(),
            input_records=info.input_records,
            skipped=skipped,
            recovered=recovered,
            resolved_at_compaction=lookup_free,
            **counts,
        )

    # ----------------------------------------------------------------------------- helpers
    def _locked(self) -> contextlib.AbstractContextManager[None]:
        """One writer per table on this machine; remote stores rely on the orchestrator's pool."""
        return exclusive(self.path)

    def _arrow_schema(self) -> Any:
        from pyspark.sql.pandas.types import to_arrow_schema

        ddl = ", ".join(
            c.ddl if c.name not in self.spec.primary_key else f"{quote(c.name)} {c.type} NOT NULL"
            for c in self.spec.columns
        )
        schema = self.spark.createDataFrame([], ddl).schema
        return to_arrow_schema(schema)

    @staticmethod
    def _arrow_log_schema(schema: Any) -> Any:
        import pyarrow as pa

        fields = [
            pa.field("_commit", pa.int64(), nullable=False),
            pa.field("_offset", pa.int64(), nullable=False),
            pa.field("_row_kind", pa.string()),
            pa.field("_origin", pa.string(), nullable=False),
        ]
        fields += [field.with_nullable(True) for field in schema]
        fields.append(pa.field("_commit_info", pa.string()))
        return pa.schema(fields)


def _sql_value(value: Any) -> str:
    """A key value as a SQL literal (numbers as is, everything else as a string literal)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return repr(value)
    return _sql_literal(str(value))


def _sql_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


__all__ = ["CommitInfo", "Txn", "WideTable", "WideTableError", "WriteResult"]
