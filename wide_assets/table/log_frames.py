"""The commit log as the engine reads and appends it: the log's frame, a range of commits' entries, log
rows for a commit, and one append of entries plus their marker (its markers, read without the engine:
`wide_assets.table.log`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame

from wide_assets.changelog import without_before_images
from wide_assets.errors import merge_errors
from wide_assets.merge import changelog_read_from_merge
from wide_assets.queries import select
from wide_assets.schema import Column
from wide_assets.sql import as_declared, columns, quote, string_literal
from wide_assets.table import arbiter, delta_log
from wide_assets.table.files import rewritten_without_bounds, write_files
from wide_assets.table.log import LOG_INFO, LOG_POSITION, LogSnapshot, Origin
from wide_assets.table.objects import TableFiles
from wide_assets.table.storage import Storage


def log_frame(
    storage: Storage, first: int | None = None, last: int | None = None, origin: Origin | None = None
) -> DataFrame:
    """The commit log as it is now (pinned: later appends do not change what this frame reads): its
    live files, listed by delta-rs, read as Parquet; only those that can hold rows of commits
    [first, last] of `origin` when they are given (the caller still filters the rows). The log has no
    deletion vectors, partitions or column mapping, so this is what a Delta reader returns; but
    delta-spark rebuilt a snapshot's state in Spark jobs for every version it was pinned at, so each
    write paid for it (`bench.jvm_write_jobs`: 22 jobs and 8.1-9.9 s per warm 20-row write through
    it, 17 jobs and 6.4-8.3 s without)."""
    schema = log_schema(storage)
    live = log_files(storage, first, last, origin)
    if not live:
        return storage.spark.createDataFrame([], schema)
    groups = [live]
    if any("map<" in c.type.lower() for c in storage.definition.columns):
        # Sail 0.7.2 refuses one scan of files whose map entries are named differently ("Fail to
        # merge schema"): the files pyarrow rewrote are read apart and cast to the declared types.
        rewritten: list[str] = []
        written: list[str] = []
        for f in live:
            (rewritten if rewritten_without_bounds(f) else written).append(f)
        groups = [g for g in (rewritten, written) if g]
    declared = as_declared(log_columns(storage))
    frames = [storage.spark.read.schema(schema).parquet(*group).selectExpr(*declared) for group in groups]
    return frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])


def log_files(
    storage: Storage, first: int | None = None, last: int | None = None, origin: Origin | None = None
) -> list[str]:
    """The URIs of the log's live files, but for those whose add action's statistics (every log file
    carries its minimum and maximum `_commit` and `_origin`) rule out commits [first, last] of
    `origin`; a file without them is kept. The log gains a few files a commit: a write that read every
    one of them grew slower with every commit before it (`bench.log_growth`, docs/performance.md)."""
    files = TableFiles(storage.changelog_path)
    return [files.uri(path) for path, _ in log_file_records(storage, first, last, origin)]


def log_file_records(
    storage: Storage, first: int | None = None, last: int | None = None, origin: Origin | None = None
) -> list[tuple[str, int | None]]:
    """(log-relative path, row count if recorded) of the live log files `log_files` names."""
    return file_records(log_file_actions(storage, first, last, origin))


def file_records(actions: Sequence[dict[str, Any]]) -> list[tuple[str, int | None]]:
    """(log-relative path, row count if recorded) of log files' flattened add `actions`."""
    return [(f["path"], f.get("num_records")) for f in actions]


def log_file_actions(
    storage: Storage,
    first: int | None = None,
    last: int | None = None,
    origin: Origin | None = None,
    bounded: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The add actions of the live log files `log_files` names, flattened: `path`, `num_records`, and
    `min.<column>` / `max.<column>` of `_commit`, `_origin` and the `bounded` columns (each None where
    not recorded)."""
    import pyarrow as pa

    actions = pa.table(arbiter.open_table(storage.changelog_path).get_add_actions(flatten=True))
    bounds = [("_commit", first, last), ("_origin", origin, origin)]

    def may_hold(file: dict[str, Any]) -> bool:
        for column, low, high in bounds:
            least, most = file.get(f"min.{column}"), file.get(f"max.{column}")
            if least is None or most is None:
                continue
            if (high is not None and least > high) or (low is not None and most < low):
                return False
        return True

    # Only the statistics asked for: a wide table's log has a minimum and maximum for every column.
    columns = [*(column for column, _, _ in bounds), *bounded]
    statistics = [f"{end}.{column}" for column in columns for end in ("min", "max")]
    kept = [name for name in ("path", "num_records", *statistics) if name in actions.column_names]
    return [f for f in actions.select(kept).to_pylist() if may_hold(f)]


def log_columns(storage: Storage) -> list[Column]:
    """The commit log's columns in order: log columns, every table column, the marker JSON."""
    return [*LOG_POSITION, *storage.definition.columns, LOG_INFO]


def log_schema(storage: Storage) -> str:
    """The commit log's columns as DDL."""
    return ", ".join(f"{quote(c.name)} {c.type}" for c in log_columns(storage))


def log_entries(storage: Storage, commits: list[int], origin: Origin) -> DataFrame:
    """The log rows of `origin` of `commits` (a contiguous range), from the log as it is now."""
    return select(
        storage.spark,
        f"SELECT * FROM {{log}} WHERE _commit BETWEEN {min(commits)} AND {max(commits)} "
        f"AND _origin = {string_literal(origin)}",
        log=log_frame(storage, min(commits), max(commits), origin),
    )


def log_rows(storage: Storage, entries: DataFrame, commit: int, origin: Origin) -> DataFrame:
    """`entries` (row kind, the table's columns, offset) as rows of the log for `commit`. Merged entries
    keep their before-images only where a changelog is read from them: the table needs only the
    after-images."""
    spec = storage.definition
    if origin == Origin.MERGED and not changelog_read_from_merge(spec.merge):
        entries = without_before_images(entries)
    return select(
        storage.spark,
        f"SELECT CAST({commit} AS BIGINT) AS _commit, _offset, _row_kind, {string_literal(origin)} AS _origin, "
        f"{columns(spec.column_names)}, CAST(NULL AS STRING) AS _commit_info FROM {{entries}}",
        entries=entries,
    )


def append_log(
    storage: Storage, parts: list[DataFrame], commit: int, origin: Origin, info_json: str, log: LogSnapshot
) -> None:
    """One log commit right after the snapshot `log`: the entries plus their marker row (`origin` is a
    marker's). Raises `Conflict` when another commit took that version first."""
    values = {
        "_commit": str(commit),
        "_offset": "-1",
        "_origin": string_literal(origin),
        LOG_INFO.name: string_literal(info_json),
    }
    marker = select(
        storage.spark,
        "SELECT "
        + ", ".join(
            f"CAST({values.get(c.name, 'NULL')} AS {c.type}) AS {quote(c.name)}" for c in log_columns(storage)
        ),
    )
    files = TableFiles(storage.changelog_path)
    # One engine write per part, not one of their union: Sail 0.7.2's local-cluster mode was seen to
    # stall for good writing a union of the one-row marker and a merge (bench.repeated_writes). Without
    # dictionaries: log files are written once and read about once, and Sail wrote 1M rows of
    # bench.workload in 0.40-0.48 s instead of 0.56-0.84 s, into files 10% smaller (docs/performance.md).
    with merge_errors():
        written = [
            w
            for part in (marker, *parts)
            for w in write_files(part.select(*marker.columns), files, dictionary=False)
        ]
    arbiter.append_files(log.table, written)
    delta_log.checkpoint_if_due(storage.changelog_path, log.version + 1)
