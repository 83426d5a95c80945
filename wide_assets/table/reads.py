"""Reading a wide table: the union read (stored rows plus pending commits), time travel, lookups, the
changelog and its sink encodings, and the diff between two versions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from wide_assets.changelog import apply_images, without_ignored_updates
from wide_assets.errors import InvalidInputError, InvalidOptionError
from wide_assets.queries import select
from wide_assets.sql import columns, key_join, quote, string_literal, value_literal
from wide_assets.table import arbiter
from wide_assets.table.images import commit_images, rows_fold_directly, with_fragments_folded
from wide_assets.table.log import Origin
from wide_assets.table.log_frames import log_frame
from wide_assets.table.storage import Storage
from wide_assets.table_definition import BUCKET_COLUMN

if TYPE_CHECKING:
    from wide_assets.export import Encoding

LOOKUP_PRUNING_KEYS = 1000  # up to this many lookup keys become IN filters the Delta scan can prune with


class Reader:
    """Everything that reads the table at `storage`; nothing here writes."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def read(
        self, version: int | None = None, timestamp: str | None = None, where: str = "true"
    ) -> DataFrame:
        """The merged rows, exactly the table's columns; optionally as of a Delta version or timestamp
        (the table as stored then), and with `where` applied to the stored rows first."""
        storage = self.storage
        if version is not None or timestamp is not None:
            return storage.rows(version, timestamp, where)
        # One snapshot of the table, so that its rows and what it holds agree.
        table = arbiter.open_table(storage.path)
        base = storage.rows(table.version(), where=where)
        return self.union(base, storage.log.pending(storage.log.markers(), arbiter.applied_through(table)))

    def union(self, base: DataFrame, pending: list[int]) -> DataFrame:
        """The stored rows `base` with the logged commits `pending` that the table does not hold yet
        folded in: the union read."""
        if not pending:
            return base
        storage, spec = self.storage, self.storage.definition
        if spec.merge.lookup_free_writes and rows_fold_directly(spec):
            # No join of every stored row with the images, which the engine plans as a repartition of
            # the whole table by key.
            return with_fragments_folded(storage, pending, base)
        return apply_images(storage.spark, spec, base, commit_images(storage, pending, base))

    def changelog(self, start_commit: int | None = None, end_commit: int | None = None) -> DataFrame:
        """`_row_kind`, the table's columns, `_commit`, `_offset` of the commits in [start, end], from
        the log as it is now (commits logged after this call do not appear however late it is read)."""
        storage = self.storage
        merge = storage.definition.merge
        if not merge.produces_changelog:
            raise InvalidOptionError(
                f"Table {storage.path} has changelog-producer 'none'; create it with 'changelog-producer' = "
                "'input', 'lookup' or 'full-compaction' to read a changelog."
            )
        origin = Origin.MERGED
        if merge.changelog_producer == "input":
            origin = Origin.INPUT
        if merge.changelog_at_compaction:
            origin = Origin.COMPACTED
        first = int(start_commit) if start_commit is not None else None
        last = int(end_commit) if end_commit is not None else None
        conditions = [f"_origin = {string_literal(origin)}"]
        if first is not None:
            conditions.append(f"_commit >= {first}")
        if last is not None:
            conditions.append(f"_commit <= {last}")
        entries = select(
            storage.spark,
            f"SELECT _row_kind, {columns(storage.definition.column_names)}, _commit, _offset FROM {{log}} "
            f"WHERE {' AND '.join(conditions)}",
            log=log_frame(storage, first, last, origin),
        )
        if merge.row_deduplicate and merge.row_deduplicate_ignore_fields and origin == Origin.MERGED:
            entries = without_ignored_updates(storage.spark, storage.definition, entries)
        return entries

    def export(
        self, encoding: Encoding, start_commit: int | None = None, end_commit: int | None = None
    ) -> DataFrame:
        """The changelog of commits [start, end] in a sink encoding; see `wide_assets.export`."""
        from wide_assets.export import ENCODINGS

        storage = self.storage
        return ENCODINGS[encoding](
            storage.spark, storage.definition, self.changelog(start_commit, end_commit)
        )

    def diff(self, from_version: int, to_version: int | None = None) -> DataFrame:
        """The changelog (+I, -U/+U, -D; changed rows only) from one Delta version to another (default now)."""
        from wide_assets.export import snapshot_diff

        return snapshot_diff(
            self.storage.spark,
            self.storage.definition,
            self.read(version=from_version),
            self.read(version=to_version),
        )

    def lookup(self, keys: DataFrame) -> DataFrame:
        """The rows of the given primary keys (a DataFrame of the key columns); absent keys give no row."""
        return self._rows_matching(keys, self.storage.definition.primary_key)

    def prefix_lookup(self, prefixes: DataFrame) -> DataFrame:
        """The rows whose leading key columns equal one of `prefixes` (a prefix of the primary key)."""
        key = self.storage.definition.primary_key
        given = tuple(prefixes.columns)
        if not given or given != key[: len(given)]:
            raise InvalidInputError(
                f"A prefix lookup takes leading primary key columns {list(key)}, got {list(given)}."
            )
        return self._rows_matching(prefixes, given)

    def _rows_matching(self, keys: DataFrame, key: tuple[str, ...]) -> DataFrame:
        storage = self.storage
        if set(keys.columns) != set(key):
            raise InvalidInputError(
                f"Lookup keys must have exactly the columns {list(key)}, got {keys.columns}."
            )
        bucketing = storage.definition.bucketing
        if bucketing is not None and set(bucketing.key) <= set(key):
            # Partition pruning: only the buckets the keys hash to are read.
            rows = self.read(where=f"{BUCKET_COLUMN} IN ({storage.buckets_of(keys)})")
        else:
            rows = self.read()
        wanted = keys.distinct().limit(LOOKUP_PRUNING_KEYS + 1).collect()
        if len(wanted) <= LOOKUP_PRUNING_KEYS:
            # Literal IN lists reach the Delta scan, whose per-file min/max statistics skip files.
            literals = {c: sorted({value_literal(r[c]) for r in wanted if r[c] is not None}) for c in key}
            if any(not values for values in literals.values()):
                return rows.limit(0)
            rows = rows.where(" AND ".join(f"{quote(c)} IN ({', '.join(v)})" for c, v in literals.items()))
        return select(
            storage.spark,
            f"SELECT t.* FROM {{rows}} t LEFT SEMI JOIN {{keys}} k ON {key_join(key, 't', 'k')}",
            rows=rows,
            keys=keys,
        )
