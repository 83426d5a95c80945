"""Snapshot sources: landed full snapshots (a daily export) -> the change records between each snapshot
and the one before it, at the snapshot's time. docs/semantics.md 7.3.

A snapshot is the landed files whose names match the source's `time_pattern` with the same captured
text, which `time_format` reads as the snapshot's time. New snapshots are taken in time order; each is
compared with the one before it (for the first of a run: the source's state in its CDC table, each
key's latest record unless it is a `-D`): a key only in the new snapshot is a `+I`, a key in both with
other values a `+U` (the new image), a key only in the old one a `-D` (the old image), all with the
snapshot's time as their op time. A snapshot not newer than the source's latest op time is superseded
and skipped; a snapshot landed again changes nothing, since it equals the state it is compared with.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import reduce
from typing import TYPE_CHECKING

from wide_assets.errors import InvalidInputError
from wide_assets.pipelines.specs import SnapshotSpec, SourceSpec
from wide_assets.sql import quote, string_literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from wide_assets.pipelines.landed_file import LandedFile
    from wide_assets.session import SparkSession

__all__ = ["snapshot_records", "snapshot_times"]

logger = logging.getLogger(__name__)

MAX_EXAMPLES = 5
Reader = Callable[["SourceSpec", "LandedFile", int], "DataFrame"]


def snapshot_times(source: SourceSpec, files: Sequence[LandedFile]) -> dict[datetime, list[LandedFile]]:
    """The landed snapshots of `source`, by time, each with its files; refuses a file whose name does
    not give a time."""
    snapshot = source.snapshot
    assert snapshot is not None, "a snapshot source"
    found: dict[datetime, list[LandedFile]] = {}
    for landed in files:
        found.setdefault(_time_of(source.name, snapshot, landed.name), []).append(landed)
    return dict(sorted(found.items()))


def _time_of(source: str, snapshot: SnapshotSpec, name: str) -> datetime:
    match = re.search(snapshot.time_pattern, name)
    if match is None:
        raise InvalidInputError(
            f"Source {source}: landed file {name} does not match the snapshot time_pattern "
            f"{snapshot.time_pattern!r}, so its snapshot's time is unknown; rename the file or fix the pattern."
        )
    try:
        return datetime.strptime(match[1], snapshot.time_format)
    except ValueError as error:
        raise InvalidInputError(
            f"Source {source}: landed file {name}: {match[1]!r} is not a time in the snapshot time_format "
            f"{snapshot.time_format!r} ({error})."
        ) from None


def snapshot_records(
    spark: SparkSession, source: SourceSpec, files: Sequence[LandedFile], path: str | None, read: Reader
) -> DataFrame | None:
    """The change records (as `ingest` reads records: typed columns, `_row_kind`, `_source_file`,
    `_source_hash`, `_file_index`, `_source_line`, `_raw`, `_problems`) between the new snapshots in
    `files` and the state of the source's CDC table at `path` (None: no table yet); None when no
    snapshot is newer than that state. Raises InvalidInputError for a malformed snapshot."""
    snapshot = source.snapshot
    assert snapshot is not None and source.op_time is not None, "a snapshot source has an op time"
    # The files hold every column but the op time, which the snapshot's time fills.
    stored = tuple((n, t) for n, t in source.columns if n != source.op_time)
    shape = replace(source, columns=stored, op_time=None, snapshot=None, feeds={}, aggregates={})
    latest, previous = _latest_state(spark, source, stored, path)
    changes = []
    for index, (time, landed) in enumerate(snapshot_times(source, files).items()):
        if latest is not None and time <= latest:
            logger.info(
                "Source %s: snapshot %s is not newer than %s: superseded, skipped.", source.name, time, latest
            )
            continue
        rows = reduce(lambda a, b: a.unionByName(b), (read(shape, f, index) for f in landed))
        _check_snapshot(spark, source, rows, landed)
        changes.append(_diff(spark, source, stored, previous, rows, time, landed[0], index))
        previous = spark.sql(f"SELECT {_names(stored)} FROM {{rows}}", rows=rows)
    return reduce(lambda a, b: a.unionByName(b), changes) if changes else None


def _names(columns: Sequence[tuple[str, str]], prefix: str = "") -> str:
    return ", ".join(f"{prefix}{quote(n)}" for n, _ in columns)


def _latest_state(
    spark: SparkSession, source: SourceSpec, stored: Sequence[tuple[str, str]], path: str | None
) -> tuple[datetime | None, DataFrame]:
    """The source's newest op time and its rows as of then: each key's latest record, unless a `-D`."""
    empty = spark.createDataFrame([], ", ".join(f"{quote(n)} {t}" for n, t in stored))
    if path is None:
        return None, empty
    cdc = spark.read.format("delta").load(path)
    keys = ", ".join(quote(k) for k in source.primary_key)
    newest = spark.sql(f"SELECT max({quote(source.op_time or '')}) AS t FROM {{cdc}}", cdc=cdc).collect()[0].t
    state = spark.sql(
        f"SELECT {_names(stored)} FROM (SELECT *, row_number() OVER (PARTITION BY {keys} ORDER BY _offset DESC) "
        "AS _n FROM {cdc}) WHERE _n = 1 AND _row_kind <> '-D'",
        cdc=cdc,
    )
    if newest is None:
        return None, empty
    if not isinstance(newest, datetime):  # a date
        return datetime.combine(newest, datetime.min.time()), state
    return newest.replace(tzinfo=None), state


def _check_snapshot(
    spark: SparkSession, source: SourceSpec, rows: DataFrame, landed: Sequence[LandedFile]
) -> None:
    """Refuse a snapshot with a malformed row, a key twice, or no rows (unless `empty: truncate`)."""
    snapshot = source.snapshot
    assert snapshot is not None
    names = [f.name for f in landed]
    bad = spark.sql(
        f"SELECT _source_file, _source_line, _problems FROM {{rows}} WHERE _problems <> '' "
        f"ORDER BY _file_index, _source_line LIMIT {MAX_EXAMPLES}",
        rows=rows,
    ).collect()
    if bad:
        listed = "; ".join(f"{r._source_file} line {r._source_line}: {r._problems}" for r in bad)
        raise InvalidInputError(
            f"Source {source.name}: the snapshot {names} has malformed rows, nothing was ingested: {listed}. "
            "A row left out of a snapshot would delete its key, so fix the files and land them again."
        )
    keys = ", ".join(quote(k) for k in source.primary_key)
    twice = spark.sql(
        f"SELECT concat_ws(', ', {keys}) AS k, collect_list(concat(_source_file, ' line ', _source_line)) AS at "
        f"FROM {{rows}} GROUP BY {keys} HAVING count(*) > 1 LIMIT {MAX_EXAMPLES}",
        rows=rows,
    ).collect()
    if twice:
        listed = "; ".join(f"key ({r.k}) at {sorted(r.at)}" for r in twice)
        raise InvalidInputError(
            f"Source {source.name}: the snapshot {names} holds a key more than once: {listed}."
        )
    if snapshot.empty == "refuse" and rows.count() == 0:
        raise InvalidInputError(
            f"Source {source.name}: the snapshot {names} has no rows. Its rule `empty: refuse` keeps the "
            "table as it is; declare `empty: truncate` if an empty export means every row was deleted, "
            "or land the export again."
        )


def _diff(
    spark: SparkSession,
    source: SourceSpec,
    stored: Sequence[tuple[str, str]],
    previous: DataFrame,
    rows: DataFrame,
    time: datetime,
    first: LandedFile,
    index: int,
) -> DataFrame:
    """The `+I`, `+U` and `-D` records from `previous` to the snapshot `rows`, at `time`."""
    op_type = dict(source.columns)[source.op_time or ""]
    at = f"CAST({string_literal(time.isoformat(sep=' '))} AS {op_type}) AS {quote(source.op_time or '')}"
    join = " AND ".join(f"n.{quote(k)} = o.{quote(k)}" for k in source.primary_key)
    values = [n for n, _ in stored if n not in source.primary_key]
    same = " AND ".join(f"n.{quote(v)} <=> o.{quote(v)}" for v in values) or "true"
    bookkeeping = "'' AS _problems, CAST(NULL AS STRING) AS _raw"
    # A delete has no line of its own: it is recorded in the snapshot's first file, without a line.
    deleted = (
        f"{string_literal(first.name)} AS _source_file, {string_literal(first.sha256)} AS _source_hash, "
        f"CAST({index} AS INT) AS _file_index"
    )
    return spark.sql(
        f"""
SELECT {_names(stored, "n.")}, {at}, CASE WHEN o.{quote(source.primary_key[0])} IS NULL THEN '+I' ELSE '+U' END AS _row_kind,
       n._source_file, n._source_hash, n._file_index, n._source_line, {bookkeeping}
FROM {{rows}} n LEFT JOIN {{previous}} o ON {join}
WHERE o.{quote(source.primary_key[0])} IS NULL OR NOT ({same})
UNION ALL
SELECT {_names(stored, "o.")}, {at}, '-D' AS _row_kind, {deleted},
       CAST(NULL AS BIGINT) AS _source_line, {bookkeeping}
FROM {{previous}} o LEFT ANTI JOIN {{rows}} n ON {join}""",
        rows=rows,
        previous=previous,
    )
