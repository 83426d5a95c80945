"""The commit protocol of a write: catch up, decide by transaction id, merge, log, apply; exactly once
with any number of writers on any store.

One attempt: (1) pin the log at its latest version and bring the table up to it (`recovery.catch_up`);
(2) skip the write if its transaction id was already committed, or refuse it if its input went stale;
(3) merge the batch against the rows the pinned table holds; (4) log the commit as the log's next
version: the linearization point, which fails with `Conflict` if any other commit landed since (1),
so nothing computed from a stale state is ever committed; (5) apply it to the table from its logged
images, as a table commit recording that it holds the commit. A conflict at (1)-(4) starts a new
attempt after a backoff; at (5) the commit stands and whoever catches up next applies it.
docs/commit-protocol.md has the argument.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, NoReturn

from pyspark.sql import DataFrame

from wide_assets import faults
from wide_assets.batch import (
    PreparedBatch,
    assign_auto_increment,
    first_failing_key_error,
    merge_batch,
    merge_failure,
    prepare_batch,
)
from wide_assets.changelog import (
    collapsed_transitions,
    input_changelog,
    kind_counts,
    transition_counts,
)
from wide_assets.errors import ConcurrentWriteError, MergeError, StoreError, first_line
from wide_assets.merge import engine_for, logs_unchanged_rows
from wide_assets.table import arbiter
from wide_assets.table.foreign import refuse_foreign_changes
from wide_assets.table.log import CommitInfo, Origin, Txn, now
from wide_assets.table.log_frames import append_log, log_entries, log_rows
from wide_assets.table.logged_images import logged_kind_counts
from wide_assets.table.objects import TableFiles
from wide_assets.table.progress import Spans
from wide_assets.table.reads import Reader
from wide_assets.table.recovery import catch_up
from wide_assets.table.storage import Storage
from wide_assets.table.tombstones import tombstone_rows, without_tombstoned

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WriteResult:
    """What one `write` committed (or found already committed)."""

    commit: int
    version: int  # the wide table's Delta version after the write
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
    # -D records carrying only the key that cannot remove their row under the table's options (ignored,
    # or a retraction of nothing), and why, with the option that would make them remove it.
    key_only_deletes_ignored: int = 0
    note: str | None = None
    # Attempts that lost the race to another writer's commit and were computed again.
    conflicts: int = 0
    # The commit landed but applying or counting it failed (the store or the engine): whoever catches
    # up next applies it (`version`, `changelog_version` are then -1 and the counts 0). Never write it again.
    applied_later: bool = False

    def as_metadata(self) -> dict[str, Any]:
        return asdict(self)


def committed_by(commits: Sequence[CommitInfo], txn: Txn) -> CommitInfo | None:
    """The commit that already applied `txn` (or a later offset of its app), if any: the write is
    skipped. Raises ConcurrentWriteError when the writer's input went stale (`txn.after` is not the
    app's last committed offset): another writer applied input this write would overlap."""
    mine = [c for c in commits if c.txn is not None and c.txn.app_id == txn.app_id]
    done = [c for c in mine if c.txn is not None and c.txn.covers(txn)]
    if done:
        return done[-1]
    if txn.after is not None:
        last = mine[-1].txn if mine else None
        committed = (last.offset, last.ahead) if last is not None else (0, ())
        if committed != (txn.after, txn.after_ahead):
            raise ConcurrentWriteError(
                f"{txn.app_id}: this write read its input after version {_progress(txn.after, txn.after_ahead)}, "
                f"but version {_progress(*committed)} is committed now; read the input again and retry."
            )
    return None


def _progress(offset: int, ahead: Spans) -> str:
    return str(offset) + "".join(f" (and {a}-{b})" for a, b in ahead)


# How the engine's object_store client words a failure to reach the store (`Generic S3 error: Error
# performing GET ...`), as Sail reports it; other engine errors are the query's own.
ENGINE_STORE_FAILURE = re.compile(r"\bGeneric \w+ error\b")
# How long a write that lost touch with the store while logging its commit waits for the store to
# answer again, to find out whether the commit landed.
OUTAGE_WAIT_S = 60.0


def full_compaction_due(commit: int, every: int) -> bool:
    """Whether commit number `commit` closes a window of `full-compaction.delta-commits` commits."""
    return commit % every == 0


def write(
    storage: Storage,
    changes: DataFrame,
    target_columns: Sequence[str] | None,
    txn: Txn | None,
    write_id: str | None = None,
) -> WriteResult:
    """Merge `changes` into the table and its changelog as one commit (see the module docstring);
    `write_id` names the commit in the log (a new one when not given)."""
    batches: list[PreparedBatch] = []

    def prepared() -> PreparedBatch:
        # Validated once, and only when not skipped: the records do not change between attempts.
        if not batches:
            batches.append(prepare_batch(storage.spark, storage.definition, changes, target_columns))
        return batches[0]

    write_id = write_id or uuid.uuid4().hex
    try:
        outcome, conflicts = arbiter.retrying(
            lambda: attempt(storage, prepared, txn, write_id), f"writing to {storage.path}"
        )
    except Exception as error:
        if not is_store_error(error):
            raise
        raise StoreError(
            f"Writing to {storage.path} failed before its commit ({first_line(error)}); nothing was "
            "committed, so the call can be retried.",
            committed=False,
            write_id=write_id,
        ) from error
    if isinstance(outcome, WriteResult):  # skipped: its transaction id was committed before
        return replace(outcome, conflicts=conflicts)
    info, recovered = outcome
    try:
        # Past the commit point nothing may raise: a caller's retry would apply the write twice.
        if not storage.definition.merge.write_only:
            finish(storage, info.commit)
        counted = result(storage, info, commit_counts(storage, info.commit), recovered=recovered)
        return replace(counted, conflicts=conflicts)
    except Exception as error:  # whatever failed, the commit stands and whoever catches up applies it
        logger.warning("%s: commit %d stands; applying it failed: %s", storage.path, info.commit, error)
        return pending_result(storage, info, conflicts, error)


def attempt(
    storage: Storage, prepared: Callable[[], PreparedBatch], txn: Txn | None, write_id: str
) -> WriteResult | tuple[CommitInfo, bool]:
    """Steps (1)-(4) of one attempt: the commit it logged and whether catching up applied anything, or
    the result of the earlier commit of its transaction id (skipped). Raises `Conflict` when another
    commit landed first."""
    spark, spec = storage.spark, storage.definition
    merge = spec.merge
    log = storage.log.snapshot()
    markers = log.markers
    table, recovered = catch_up(storage, markers)
    # Before the commit point: a table another writer changed behind the log is refused, not written.
    refuse_foreign_changes(TableFiles(storage.path), table.version(), storage.definition)
    if txn is not None:
        done = committed_by(markers.commits, txn)
        if done is not None:
            counts = commit_counts(storage, done.commit)
            return result(storage, done, counts, skipped=True, recovered=recovered)
    batch = prepared()
    base_version = table.version()
    merging: tuple[PreparedBatch, DataFrame, bool] | None = None  # what the merge folds, when it runs
    info = CommitInfo(
        commit=markers.last_commit + 1,
        base_version=base_version,
        txn=txn,
        written_at=now(),
        input_records=0,
        target_columns=batch.context.target_columns,
        write_id=write_id,
    )
    if merge.lookup_free_writes:
        # Their fold into the stored rows waits for compaction. Of these engines' checks only a guard
        # and a retraction a function cannot take can fail (on the records alone): run the merge to
        # check them, before the commit.
        refusable_retraction = bool(merge.functions) and not batch.adds_only
        if engine_for(merge).guard(batch.context) is not None or refusable_retraction:
            nothing = storage.rows(version=base_version).limit(0)
            failure = merge_failure(spark, batch, nothing)
            if failure is not None:
                raise_first_failing_key(failure, spark, batch, nothing)
        parts = [log_rows(storage, batch.frame, info.commit, Origin.FRAGMENT)]
    else:
        pending = storage.log.pending(markers, arbiter.applied_through(table))
        stored = Reader(storage).union(storage.rows(version=base_version), pending)
        if merge.auto_increment is not None:
            batch, next_id = assign_auto_increment(spark, batch, stored, markers.next_auto_increment)
            info = replace(info, next_auto_increment=next_id)
        # Durable tombstones (docs/semantics.md 7.2): logged with this commit, read before its merge.
        merged = batch
        if merge.tombstone_retention_s is not None:
            merged = without_tombstoned(storage, batch, info, markers.commits)
        nothing_stored = not pending and not table.file_uris()
        merging = (merged, stored, nothing_stored)
        entries = merge_batch(spark, merged, stored, nothing_stored=nothing_stored)
        parts = [log_rows(storage, entries, info.commit, Origin.MERGED)]
        if merge.tombstone_retention_s is not None and batch.retractions != 0:
            parts.append(log_rows(storage, tombstone_rows(spark, batch), info.commit, Origin.TOMBSTONE))
    if merge.changelog_producer == "input":
        parts.append(log_rows(storage, input_changelog(spark, batch), info.commit, Origin.INPUT))
    every = merge.full_compaction_delta_commits
    if merge.changelog_at_compaction and not merge.write_only and full_compaction_due(info.commit, every):
        # Full compaction every N commits: their changes collapse into one changelog, committed
        # atomically with this commit.
        window = parts[0]
        if every > 1:
            earlier = list(range(info.commit - every + 1, info.commit))
            window = log_entries(storage, earlier, Origin.MERGED).unionByName(window)
        transitions = collapsed_transitions(spark, spec, window)
        parts.append(log_rows(storage, transitions, info.commit, Origin.COMPACTED))
    assert batch.records is not None and batch.key_only_deletes is not None, "prepare_batch counts them"
    info = replace(info, input_records=batch.records, key_only_deletes=batch.key_only_deletes)
    faults.checkpoint("before-changelog-commit")
    try:
        append_log(storage, parts, info.commit, Origin.COMMIT, info.to_json(), log)
    except MergeError as error:
        if merging is None:
            raise
        raise_first_failing_key(error, spark, *merging)
    except Exception as error:
        if not is_store_error(error) or not commit_landed(storage, info, log.version):
            raise
    faults.checkpoint("after-changelog-commit")
    # `info` is exactly the marker just committed: no need to read the log back.
    return info, recovered


def raise_first_failing_key(
    error: MergeError, spark: Any, batch: PreparedBatch, stored: DataFrame, nothing_stored: bool = False
) -> NoReturn:
    """Raise the error of the batch's first failing key in key order, as Paimon reports it
    (`first_failing_key_error`), in place of `error`, whichever key's the engine reached first."""
    first = first_failing_key_error(spark, batch, stored, error, nothing_stored)
    if first is error:
        raise error
    raise first from None


def is_store_error(error: BaseException) -> bool:
    """Whether `error` is the store failing (unreachable, refusing, timing out), not a lost race: raised
    by a store client, or by the engine reporting what its own client (object_store) raised."""
    from deltalake.exceptions import DeltaError
    from obstore.exceptions import BaseError
    from pyspark.errors import PySparkException

    if isinstance(error, arbiter.Conflict):
        return False
    if isinstance(error, PySparkException):
        return ENGINE_STORE_FAILURE.search(first_line(error)) is not None
    return isinstance(error, OSError | DeltaError | BaseError)


def commit_landed(storage: Storage, info: CommitInfo, pinned: int) -> bool:
    """After the store failed during the log append of `info` (computed from log version `pinned`),
    whether that commit landed, read from the log once the store answers again. The log's next version
    decides: ours (it carries this call's write id), another writer's (ours can never land), or none
    (the put never reached the store). Raises StoreError when the store does not answer within
    OUTAGE_WAIT_S."""
    deadline = time.monotonic() + OUTAGE_WAIT_S
    wait = 0.5
    while True:
        try:
            if storage.log.version() <= pinned:
                return False
            return any(c.write_id == info.write_id for c in storage.log.markers().commits)
        except Exception as error:
            if not is_store_error(error):
                raise
            if time.monotonic() > deadline:
                raise StoreError(
                    f"Writing to {storage.path}: the store failed while commit {info.commit} was being "
                    f"logged and has not answered since ({first_line(error)}), so whether it landed is "
                    f"unknown: before retrying, look for write id {info.write_id} in "
                    "WideTable.commits() (or retry with a transaction id, which is never applied twice).",
                    committed=None,
                    write_id=str(info.write_id),
                ) from error
        time.sleep(wait)
        wait = min(wait * 2, 5.0)


def pending_result(storage: Storage, info: CommitInfo, conflicts: int, error: BaseException) -> WriteResult:
    """The result of a commit that landed but could not be applied and counted (the store or the
    engine failed after the commit point)."""
    return WriteResult(
        commit=info.commit,
        version=-1,
        changelog_version=-1,
        inserted=0,
        updated=0,
        deleted=0,
        unchanged=0,
        input_records=info.input_records,
        changelog_rows=0,
        conflicts=conflicts,
        applied_later=True,
        note=(
            f"Commit {info.commit} stands (write id {info.write_id}); applying it failed "
            f"({first_line(error)}), so it is applied by whoever catches up next (a write, a "
            "compaction or recover()) and its counts are unknown: do not write it again."
        ),
    )


def finish(storage: Storage, commit: int) -> None:
    """Step (5): make the table hold `commit` (done by whoever gets there first)."""

    def attempt() -> None:
        log = storage.log.snapshot()
        table = arbiter.open_table(storage.path)
        if arbiter.applied_through(table) < commit:
            catch_up(storage, log.markers, table)

    arbiter.retrying(attempt, f"applying commit {commit} to {storage.path}")
    faults.checkpoint("after-table-commit")


def commit_counts(storage: Storage, commit: int) -> dict[str, int]:
    """Keys inserted, updated, unchanged and deleted by `commit`, and its changelog rows, counted from
    its merged entries in the log (a lookup-free commit has none until its compaction: zeros)."""
    spec = storage.definition
    if spec.merge.lookup_free_writes:
        return dict.fromkeys(("inserted", "updated", "unchanged", "deleted", "changelog_rows"), 0)
    if not engine_for(spec.merge).per_record and not logs_unchanged_rows(spec.merge):
        counted = logged_kind_counts(storage, commit)
        if counted is not None:
            return counted
        return kind_counts(storage.spark, log_entries(storage, [commit], Origin.MERGED))
    entries = log_entries(storage, [commit], Origin.MERGED)
    return {**transition_counts(storage.spark, spec, entries), "changelog_rows": entries.count()}


def result(
    storage: Storage,
    info: CommitInfo,
    counts: dict[str, int],
    skipped: bool = False,
    recovered: bool = False,
) -> WriteResult:
    """The WriteResult of the commit `info` with its `counts` (see `commit_counts`)."""
    merge = storage.definition.merge
    why = engine_for(merge).key_only_delete_ignored(merge) if info.key_only_deletes else None
    note = None
    if why is not None:
        note = (
            f"{info.key_only_deletes} -D record(s) of commit {info.commit} carry only the key and removed no "
            f"row: {why}."
        )
        if not skipped:
            logger.warning("%s: %s", storage.path, note)
    return WriteResult(
        commit=info.commit,
        version=storage.version,
        changelog_version=storage.log.version(),
        input_records=info.input_records,
        skipped=skipped,
        recovered=recovered,
        resolved_at_compaction=merge.lookup_free_writes,
        key_only_deletes_ignored=info.key_only_deletes if why is not None else 0,
        note=note,
        inserted=counts["inserted"],
        updated=counts["updated"],
        deleted=counts["deleted"],
        unchanged=counts["unchanged"],
        changelog_rows=counts["changelog_rows"],
    )
