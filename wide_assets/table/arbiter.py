"""Commits the store arbitrates: each lands exactly one version after the snapshot it was computed
from, or fails with `Conflict`; and the bounded retry loop around them.

Every Delta commit of a wide table and its log goes through here, on delta-rs with no retry of its
own (`max_commit_retries=0`): writing version N+1 of the Delta log is a put-if-absent, so of two
writers that read version N exactly one lands and the other gets `Conflict`, on local disk and on
object storage alike (see docs/commit-protocol.md). Spark computes; delta-rs commits.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from wide_assets.errors import ConcurrentWriteError

if TYPE_CHECKING:
    from deltalake import DeltaTable

    from wide_assets.table.files import DataFile

# The table's Delta application-transaction id: its version is the last commit the table holds.
APP_ID = "wide_assets"
MAX_ATTEMPTS = 30
FIRST_BACKOFF_S = 0.05
MAX_BACKOFF_S = 2.0

T = TypeVar("T")


class Conflict(Exception):
    """Another writer committed to the same Delta table after the snapshot this commit was computed
    from: nothing was committed, and whatever was computed from that snapshot must be thrown away."""


def storage_options(path: str) -> dict[str, str] | None:
    """delta-rs settings for `path`'s store beyond the standard AWS_* environment variables: on S3 a
    commit must be a conditional put, which object_store only does when asked to."""
    if path.startswith(("s3://", "s3a://")):
        return {"conditional_put": "etag"}
    return None


def open_table(path: str, version: int | None = None) -> DeltaTable:
    """The Delta table at `path`, as of `version` (default: the latest), pinned to that snapshot."""
    from deltalake import DeltaTable

    return DeltaTable(path, version=version, storage_options=storage_options(path))


def exists(path: str) -> bool:
    """Whether a Delta table is at `path`."""
    from deltalake import DeltaTable

    return bool(DeltaTable.is_deltatable(path, storage_options=storage_options(path)))


def applied_through(table: DeltaTable) -> int:
    """The last commit of the log that the table snapshot `table` holds (0: none)."""
    return table.transaction_version(APP_ID) or 0


@contextlib.contextmanager
def arbitrated() -> Iterator[None]:
    """Turn delta-rs's refusal of a commit whose version was taken into `Conflict`."""
    from deltalake.exceptions import CommitFailedError

    try:
        yield
    except CommitFailedError as error:
        raise Conflict(str(error)) from error


def commit_properties(through: int | None = None) -> Any:
    """No retry inside delta-rs (its retry would rebase the commit onto a state it was not computed
    from), and, for a table commit, the last log commit it makes the table hold."""
    from deltalake import CommitProperties, Transaction

    transactions = [Transaction(APP_ID, through)] if through is not None else None
    return CommitProperties(max_commit_retries=0, app_transactions=transactions)


def append_files(table: DeltaTable, written: Sequence[DataFile], through: int | None = None) -> None:
    """Commit files the engine wrote (`files.write_files`) as an append right after `table`'s snapshot,
    or raise `Conflict`."""
    from deltalake.transaction import AddAction, RemoveAction

    adds: list[AddAction | RemoveAction] = [
        AddAction(
            path=w.add_action()["add"]["path"],
            size=w.size,
            partition_values=w.partition_values,
            modification_time=w.modification_time,
            data_change=True,
            stats=w.stats or "{}",
        )
        for w in written
    ]
    with arbitrated():
        table.create_write_transaction(
            adds, mode="append", schema=table.schema(), commit_properties=commit_properties(through)
        )


def retrying(attempt: Callable[[], T], what: str) -> tuple[T, int]:
    """Run `attempt` until it does not raise `Conflict` (at most MAX_ATTEMPTS times, with jittered
    exponential backoff so that racing writers spread out); returns its result and the conflicts seen."""
    backoff = FIRST_BACKOFF_S
    for conflicts in range(MAX_ATTEMPTS):
        try:
            return attempt(), conflicts
        except Conflict:
            time.sleep(random.uniform(0, backoff))
            backoff = min(backoff * 2, MAX_BACKOFF_S)
    raise ConcurrentWriteError(
        f"{what}: other writers committed first {MAX_ATTEMPTS} times in a row; nothing of this call "
        "was committed. Retry later or serialize the writers (a Dagster pool)."
    )
