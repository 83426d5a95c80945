"""The commit log: what each row of `<table>_changelog` is, its marker rows, and a Spark-free reader.

Per commit the log holds the merged changelog entries, the input records (`input` producer) or the
records as written (lookup-free writers), and one marker row whose JSON describes the commit. Sensors
and health checks read the markers through delta-rs, so nothing here starts Spark.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import asdict, dataclass
from enum import StrEnum
from threading import Lock
from typing import Any, NamedTuple, Self

from wide_assets.schema import Column
from wide_assets.table import arbiter
from wide_assets.table.progress import Spans, covered

CHANGELOG_SUFFIX = "_changelog"


# A log row is these, then every table column (nullable: a marker row has none), then LOG_INFO.
LOG_POSITION = (
    Column("_commit", "bigint", False),
    Column("_offset", "bigint", False),
    Column("_row_kind", "string", True),
    Column("_origin", "string", False),
)
LOG_INFO = Column("_commit_info", "string", True)  # a marker row's JSON, NULL on other rows


class Origin(StrEnum):
    """What a row of the commit log is (its `_origin` column)."""

    MERGED = "merged"  # a changelog entry of the merge; together they hold each key's final image
    INPUT = "input"  # a record as written, for the `input` changelog producer
    FRAGMENT = "fragment"  # a record of a lookup-free write, folded in at compaction
    COMPACTED = "compacted"  # a changelog entry produced at compaction (lookup/full-compaction)
    COMMIT = "commit"  # the marker of a commit (`CommitInfo`)
    COMPACTION = "compaction"  # the marker of a compaction (`CompactionInfo`)
    RESOLUTION = "resolution"  # the marker of a compaction's resolved images (`Resolution`)
    TOMBSTONE = "tombstone"  # a delete's key and time, kept for `wide-assets.tombstone-retention`


MARKERS = (Origin.COMMIT, Origin.COMPACTION, Origin.RESOLUTION)


def changelog_path(table_path: str) -> str:
    return table_path.rstrip("/") + CHANGELOG_SUFFIX


class Txn(NamedTuple):
    """A writer's idempotency key: a write whose (app_id, offset) was already committed is skipped.

    `offset` is the writer's position in its own input (a source's last offset), not a table version.
    `after`, when given, is the offset of `app_id` the writer read its input after (0: from the
    start). If another writer committed a different offset of `app_id` in between, the write fails
    with `ConcurrentWriteError` instead of applying input that overlaps what that writer applied.
    `run`, when given, names the pipeline run whose commits ordered several writers' input together
    (`pipelines.run_order`): the convergence oracle tells from it which commits met which rows.
    `ahead` (and `after_ahead`, with `after`) are the spans of offsets beyond `offset` applied too,
    when a run applied some input ahead of offsets before it (`table.progress`)."""

    app_id: str
    offset: int
    after: int | None = None
    run: str | None = None
    ahead: Spans = ()
    after_ahead: Spans = ()

    def covers(self, other: Txn) -> bool:
        """Whether this progress holds every offset `other`'s does (a write of `other` is done)."""
        return covered(other.offset, other.ahead, self.offset, self.ahead)

    def to_list(self) -> list[Any]:
        """As JSON: the fields up to the last one that is not its default (the form markers had before
        the later fields existed)."""
        fields = [self.app_id, self.offset, self.after, self.run, list(map(list, self.ahead))]
        fields.append(list(map(list, self.after_ahead)))
        while len(fields) > 2 and fields[-1] in (None, []):
            fields.pop()
        return fields

    @classmethod
    def from_list(cls, fields: list[Any]) -> Txn:
        spans = [tuple((int(a), int(b)) for a, b in given) for given in fields[4:]]
        return cls(*fields[:4], *spans)


class JsonMarker:
    """A marker row's `_commit_info`: a flat dataclass as JSON."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)  # type: ignore[call-overload]

    @classmethod
    def from_json(cls, text: str) -> Self:
        return cls(**json.loads(text))


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
    key_only_deletes: int = 0  # -D records carrying only the key (see `WriteResult.key_only_deletes_ignored`)
    # The id of the `write` call that made the commit: a call that lost touch with the store finds out
    # from the log whether its commit landed.
    write_id: str | None = None

    def to_json(self) -> str:
        data = asdict(self)
        data["txn"] = self.txn.to_list() if self.txn else None
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CommitInfo:
        data = json.loads(text)
        txn = Txn.from_list(data["txn"]) if data.get("txn") else None
        targets = tuple(data["target_columns"]) if data.get("target_columns") else None
        return cls(
            commit=data["commit"],
            base_version=data["base_version"],
            txn=txn,
            written_at=data["written_at"],
            input_records=data["input_records"],
            target_columns=targets,
            next_auto_increment=data.get("next_auto_increment"),
            key_only_deletes=data.get("key_only_deletes", 0),
            write_id=data.get("write_id"),
        )


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


@dataclass(frozen=True)
class Markers:
    """Every marker of the log, each kind oldest first (tuples: one read is shared, see `read_markers`)."""

    commits: tuple[CommitInfo, ...]
    compactions: tuple[CompactionInfo, ...]
    resolutions: tuple[Resolution, ...]

    @property
    def last_commit(self) -> int:
        """The number of the last commit (0 before the first)."""
        return self.commits[-1].commit if self.commits else 0

    @property
    def compacted_through(self) -> int:
        """The last commit a finished compaction folded into the table (0 before the first)."""
        return self.compactions[-1].through if self.compactions else 0

    @property
    def unfinished_resolution(self) -> Resolution | None:
        """The resolution of a compaction cut short before its marker, if any."""
        last = self.resolutions[-1] if self.resolutions else None
        return last if last is not None and last.through > self.compacted_through else None

    @property
    def next_auto_increment(self) -> int:
        """The first id no commit has assigned yet."""
        return next((c.next_auto_increment for c in reversed(self.commits) if c.next_auto_increment), 1)


class LogSnapshot(NamedTuple):
    """The commit log pinned at one Delta version, and its markers: a commit computed from it must
    land at the next version (`arbiter`), so it was computed from the latest state or not at all."""

    table: Any  # a deltalake.DeltaTable pinned at `version`
    markers: Markers

    @property
    def version(self) -> int:
        return int(self.table.version())


class CommitLog:
    """The commit log of the wide table at `table_path`, read through delta-rs (no Spark job)."""

    def __init__(self, table_path: str) -> None:
        self.table_path = table_path
        self.path = changelog_path(table_path)

    def table_version(self) -> int:
        """The wide table's current Delta version."""
        return int(arbiter.open_table(self.table_path).version())

    def applied_through(self) -> int:
        """The last commit the wide table holds now (0: none)."""
        return arbiter.applied_through(arbiter.open_table(self.table_path))

    def version(self) -> int:
        """The log's current Delta version."""
        return int(arbiter.open_table(self.path).version())

    def snapshot(self) -> LogSnapshot:
        """The log as it is now, pinned, with its markers."""
        table = arbiter.open_table(self.path)
        return LogSnapshot(table, read_markers(table))

    def markers(self) -> Markers:
        return self.snapshot().markers

    def pending(self, markers: Markers, applied_through: int | None = None) -> list[int]:
        """Commits logged but not in the Delta table yet (`applied_through`: read now when not given):
        a write-only table's uncompacted fragments, or a commit whose table commit has not landed yet."""
        if applied_through is None:
            applied_through = self.applied_through()
        return [c.commit for c in markers.commits if c.commit > applied_through]


# A Delta version never changes once committed, so the markers of one version of one log (its
# metadata id tells a table recreated at the same path apart) are read once per process: a run's
# assets, checks and sensors ask for the same few versions again and again (276 reads of 29
# versions in product_360's late-records test).
_MARKERS_READ: OrderedDict[tuple[str, int, str], Markers] = OrderedDict()
_MARKERS_KEPT = 64
_MARKERS_LOCK = Lock()


def read_markers(log: Any) -> Markers:
    """Every marker of the log snapshot `log` (a deltalake.DeltaTable)."""
    version = (str(log.table_uri), int(log.version()), str(log.metadata().id))
    with _MARKERS_LOCK:
        markers = _MARKERS_READ.get(version)
        if markers is not None:
            _MARKERS_READ.move_to_end(version)
            return markers
    markers = _parse_markers(log)
    with _MARKERS_LOCK:
        _MARKERS_READ[version] = markers
        while len(_MARKERS_READ) > _MARKERS_KEPT:
            _MARKERS_READ.popitem(last=False)
    return markers


def _parse_markers(log: Any) -> Markers:
    import pyarrow as pa
    from deltalake import QueryBuilder

    # delta-rs's query engine, not `to_pyarrow_table`: 7x faster on a 40-file log (0.018 s against
    # 0.13 s), and it reads deletion vectors.
    origins = ", ".join(f"'{m}'" for m in MARKERS)
    query = f"SELECT _origin, _commit_info FROM log WHERE _origin IN ({origins})"
    rows = pa.table(QueryBuilder().register("log", log).execute(query).read_all())
    commits, compactions, resolutions = [], [], []
    for origin, text in zip(
        rows.column("_origin").to_pylist(), rows.column("_commit_info").to_pylist(), strict=True
    ):
        if origin == Origin.COMMIT:
            commits.append(CommitInfo.from_json(text))
        elif origin == Origin.COMPACTION:
            compactions.append(CompactionInfo.from_json(text))
        else:
            resolutions.append(Resolution.from_json(text))
    return Markers(
        tuple(sorted(commits, key=lambda c: c.commit)),
        tuple(sorted(compactions, key=lambda c: c.through)),
        tuple(sorted(resolutions, key=lambda r: r.through)),
    )


def now() -> str:
    """A marker's `written_at`: UTC, to the second."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")
