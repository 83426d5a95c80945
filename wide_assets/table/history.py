"""A wide table's history table (SCD type 2): one row per key per interval in which its tracked columns
held one value, computed from change events and kept in step with the wide table's commit log once.

The history is a Delta table of its own (the wide table's path + `_history`): the key, the tracked
columns, `__START_AT` and `__END_AT` (NULL: the interval is open, the row as it is now). It is a pure
function of the events (one per source record: its op time, what it sets, whether it removes the
row), folded per key in op-time order, so a late record lands in its place: it splits the interval it
falls in and re-closes the ones after it. A run recomputes the intervals of the keys the commits it
has not consumed yet touched, and writes the difference as one Delta commit carrying the
application transaction (`txn`) of the last wide-table commit it consumed, at exactly the version
after the snapshot it read (`table_writes.apply_images`, `arbiter`): a retried, repeated or
concurrent run applies each wide-table commit once, and a run cut short leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wide_assets.errors import InvalidOptionError
from wide_assets.frames import arrow_schema
from wide_assets.merge.context import comparable
from wide_assets.schema import Column
from wide_assets.sql import quote
from wide_assets.table import arbiter, table_writes
from wide_assets.table.storage import Storage
from wide_assets.table_definition import TableDefinition

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["END", "HISTORY_SUFFIX", "START", "EventSource", "HistoryResult", "HistoryTable", "history_path"]

HISTORY_SUFFIX = "_history"
START = "__START_AT"
END = "__END_AT"
# The order a key's events are folded in: op time, then (equal times) the source's name, as a run
# orders its sources (docs/semantics.md 0.3), then arrival within the source.
EVENT_ORDER = "_time, _source, _offset"
# () -> (the last wide-table commit they cover, the events of every commit up to it). An event has the
# key columns, `_time` (its op time, typed like the validity columns, never NULL), `_source`,
# `_offset`, `_commit` (the wide-table commit that applied it), `_live` (an insert or update),
# `_removes` (it removes the row), and per tracked column i the value `_v<i>` and whether the event
# sets it, `_sets<i>`.
EventSource = Callable[[], tuple[int, "DataFrame"]]


def history_path(table_path: str) -> str:
    return table_path.rstrip("/") + HISTORY_SUFFIX


@dataclass(frozen=True)
class HistoryResult:
    """What one maintenance call did: the wide-table commit the history holds after it, its Delta
    version, how many wide-table commits it consumed and the interval rows it wrote or removed."""

    through: int
    version: int
    commits: int = 0
    changed_rows: int = 0
    conflicts: int = 0

    @property
    def skipped(self) -> bool:
        return self.commits == 0


class HistoryTable:
    """The history table at `path`: `key` and `tracked` columns of the wide table, then the validity
    columns typed `validity_type` (the sources' op time)."""

    def __init__(
        self,
        spark: SparkSession,
        path: str,
        key: Sequence[Column],
        tracked: Sequence[Column],
        validity_type: str,
    ) -> None:
        self.spark = spark
        self.path = path
        self.key = tuple(c.name for c in key)
        self.tracked = tuple(c.name for c in tracked)
        validity = (Column.parse(START, validity_type), Column.parse(END, validity_type))
        # Not `TableDefinition.build`: the history is no wide table (nothing is merged into it) and its
        # validity columns keep AUTO CDC's reserved-looking names; the spec only tells the table's
        # commits (`table_writes`) its columns and that an interval is identified by key and start.
        self.definition = TableDefinition((*key, *tracked, *validity), (*self.key, START), {})
        self._storage = Storage(spark, path, self.definition)

    # ----------------------------------------------------------------------------- table
    def create(self) -> None:
        """Create the empty Delta table (with deletion vectors) unless it exists; racing creators agree."""
        import pyarrow as pa
        from deltalake import DeltaTable

        if arbiter.exists(self.path):
            return
        schema = pa.schema([f.with_nullable(True) for f in arrow_schema(self.spark, self.definition.columns)])
        try:
            DeltaTable.create(
                self.path,
                schema=schema,
                name=Path(self.path).name,
                configuration={"delta.enableDeletionVectors": "true"},
                storage_options=arbiter.storage_options(self.path),
            )
        except Exception:
            if not arbiter.exists(self.path):  # not a creator that lost the race for version 0
                raise

    def applied_through(self) -> int:
        """The last wide-table commit the history holds (0: none)."""
        return arbiter.applied_through(arbiter.open_table(self.path))

    def rows(self, version: int | None = None) -> DataFrame:
        """Every interval, as of `version` (default: the latest)."""
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(self.path).select(*[quote(c) for c in self.definition.column_names])

    # ----------------------------------------------------------------------------- maintenance
    def maintain(self, events: EventSource) -> HistoryResult:
        """Bring the history up to the last commit `events` covers, exactly once (see the module doc)."""
        self.create()
        result, conflicts = arbiter.retrying(lambda: self._attempt(events), f"history {self.path}")
        return HistoryResult(result.through, result.version, result.commits, result.changed_rows, conflicts)

    def _attempt(self, events: EventSource) -> HistoryResult:
        """One attempt from the history's latest snapshot; raises `Conflict` when another run committed
        first (its work is then read back by the next attempt, never redone on top of it)."""
        table = arbiter.open_table(self.path)
        self._check_tracked(table)
        version, applied = int(table.version()), arbiter.applied_through(table)
        through, all_events = events()
        if through <= applied:
            return HistoryResult(applied, version)
        keys = ", ".join(quote(k) for k in self.key)
        touched = self.spark.sql(
            f"SELECT DISTINCT {keys} FROM {{e}} WHERE _commit > {applied} AND _commit <= {through}",
            e=all_events,
        )
        of_touched = self._of_keys(all_events.where(f"_commit <= {through}"), touched)
        images = self._images(self._of_keys(self.rows(version), touched), self.intervals(of_touched))
        changed = table_writes.apply_images(self._storage, images, table, through)
        return HistoryResult(through, version + 1, through - applied, changed)

    def _check_tracked(self, table: DeltaTable) -> None:
        """Refuse a history that does not hold every tracked column: one started before a column was
        tracked cannot say what it held then."""
        stored = set(table.schema().to_arrow().names)
        missing = [c for c in self.tracked if c not in stored]
        if missing:
            raise InvalidOptionError(
                f"The history at {self.path} does not hold the columns {missing} it tracks now (they were "
                "not tracked when it started): leave them out of the history (`track_except`), or delete "
                "that Delta table to build the history again from the sources' records."
            )

    def _of_keys(self, rows: DataFrame, keys: DataFrame) -> DataFrame:
        on = " AND ".join(f"r.{quote(k)} <=> t.{quote(k)}" for k in self.key)
        return self.spark.sql(f"SELECT r.* FROM {{r}} r LEFT SEMI JOIN {{t}} t ON {on}", r=rows, t=keys)

    def intervals(self, events: DataFrame) -> DataFrame:
        """The history rows of the keys of `events` (see `EventSource`), from all of their events.

        Per key in `EVENT_ORDER`: a removing event starts a new segment in which the row is built
        again from nothing; after each event the row exists when an insert or update was seen in the
        segment, and each tracked column holds the value of the segment's last event that set it. Of
        several events at one op time, the state after the last counts. An interval starts at each
        time the state differs from the one before, while the row exists, and ends at the next."""
        keys = ", ".join(quote(k) for k in self.key)
        types = {c.name: c.type for c in self.definition.columns}
        segment = f"PARTITION BY {keys}, _segment ORDER BY {EVENT_ORDER} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        values = ", ".join(
            f"'v{i}', last(CASE WHEN _sets{i} THEN named_struct('v', _v{i}) END, true) OVER ({segment}).v"
            for i in range(len(self.tracked))
        )
        compared = ", ".join(
            f"'v{i}', {comparable(f'_state.v{i}', types[c])}" for i, c in enumerate(self.tracked)
        )
        tracked = ", ".join(f"_state.v{i} AS {quote(c)}" for i, c in enumerate(self.tracked))
        by_key = f"PARTITION BY {keys} ORDER BY _time"
        return self.spark.sql(
            f"""
            WITH segmented AS (
              SELECT *, sum(CASE WHEN _removes THEN 1 ELSE 0 END) OVER (PARTITION BY {keys}
                ORDER BY {EVENT_ORDER} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS _segment
              FROM {{events}}
            ), states AS (
              SELECT {keys}, _time, _source, _offset,
                CASE WHEN bool_or(_live) OVER ({segment}) THEN named_struct({values}) END AS _state
              FROM segmented
            ), at_time AS (
              SELECT {keys}, _time, _state,
                CASE WHEN _state IS NOT NULL THEN named_struct({compared}) END AS _compared
              FROM (SELECT *, row_number() OVER (PARTITION BY {keys}, _time
                    ORDER BY _source DESC, _offset DESC) AS _last FROM states)
              WHERE _last = 1
            ), changes AS (
              SELECT {keys}, _time, _state FROM (
                SELECT *, lag(_compared) OVER ({by_key}) AS _before FROM at_time)
              WHERE NOT (_compared <=> _before)
            )
            SELECT {keys}, {tracked}, _time AS {START}, {END} FROM (
              SELECT *, lead(_time) OVER ({by_key}) AS {END} FROM changes)
            WHERE _state IS NOT NULL
            """,
            events=events,
        )

    def _images(self, stored: DataFrame, recomputed: DataFrame) -> DataFrame:
        """The final images (`table_writes`) turning `stored` intervals into `recomputed` ones: a new or
        changed interval as an insert, a stored one no longer there as a delete."""
        on = " AND ".join(f"s.{quote(k)} <=> r.{quote(k)}" for k in self.definition.primary_key)
        same = " AND ".join(
            f"{comparable(f's.{quote(c.name)}', c.type)} <=> {comparable(f'r.{quote(c.name)}', c.type)}"
            for c in self.definition.columns
        )
        columns = ", ".join(
            f"CASE WHEN r._new THEN r.{quote(c)} ELSE s.{quote(c)} END AS {quote(c)}"
            for c in self.definition.column_names
        )
        return self.spark.sql(
            f"SELECT CASE WHEN r._new THEN '+I' ELSE '-D' END AS _row_kind, {columns} "
            f"FROM {{s}} s FULL OUTER JOIN (SELECT *, true AS _new FROM {{r}}) r ON {on} "
            f"WHERE r._new IS NULL OR s.{quote(START)} IS NULL OR NOT ({same})",
            s=stored,
            r=recomputed,
        )
