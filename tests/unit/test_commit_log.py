"""Commit-log decisions: marker records, the transaction-id decision, and pending commits read from
Delta tables written by delta-rs (no Spark)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, Transaction, write_deltalake

from wide_assets.errors import ConcurrentWriteError
from wide_assets.table.arbiter import APP_ID
from wide_assets.table.log import (
    CommitInfo,
    CommitLog,
    CompactionInfo,
    Markers,
    Origin,
    Resolution,
    Txn,
    changelog_path,
)
from wide_assets.table.progress import advanced, covered, newly_applied
from wide_assets.table.protocol import committed_by, full_compaction_due


def commit(n: int, txn: Txn | None = None, base_version: int = 0, next_id: int | None = None) -> CommitInfo:
    return CommitInfo(n, base_version, txn, "2026-11-23T00:00:00+00:00", 1, None, next_id)


def compaction(through: int) -> CompactionInfo:
    return CompactionInfo(through, through, 1, 0, 1, "2026-11-23T00:00:00+00:00")


def test_commit_marker_round_trips_through_json() -> None:
    info = CommitInfo(3, 7, Txn("orders", 42, 40), "2026-11-23T00:00:00+00:00", 10, ("k", "a"), 5, 2)
    assert CommitInfo.from_json(info.to_json()) == info
    assert json.loads(info.to_json())["txn"] == ["orders", 42, 40]
    # A marker written before key-only deletes were counted reads as none.
    older = {k: v for k, v in json.loads(info.to_json()).items() if k != "key_only_deletes"}
    assert CommitInfo.from_json(json.dumps(older)).key_only_deletes == 0
    ran = replace(info, txn=Txn("orders", 42, 40, "run-1"))
    assert json.loads(ran.to_json())["txn"] == ["orders", 42, 40, "run-1"]
    assert CommitInfo.from_json(ran.to_json()) == ran
    resolution = Resolution(4, 2, 9)
    assert Resolution.from_json(resolution.to_json()) == resolution


def test_markers_summarize_the_log() -> None:
    markers = Markers((commit(1, next_id=4), commit(2), commit(3)), (compaction(2),), (Resolution(3, 1, 5),))
    assert markers.last_commit == 3
    assert markers.compacted_through == 2
    assert markers.unfinished_resolution == Resolution(3, 1, 5)
    assert markers.next_auto_increment == 4
    finished = Markers(markers.commits, (compaction(2),), (Resolution(2, 2, 0),))
    assert finished.unfinished_resolution is None
    assert Markers((), (), ()).last_commit == 0 and Markers((), (), ()).next_auto_increment == 1


def test_a_committed_offset_is_skipped() -> None:
    commits = [commit(1, Txn("a", 5)), commit(2, Txn("b", 9))]
    assert committed_by(commits, Txn("a", 5)) == commits[0]
    assert committed_by(commits, Txn("a", 4)) == commits[0]  # an older offset is covered too
    assert committed_by(commits, Txn("a", 6)) is None
    assert committed_by(commits, Txn("c", 1)) is None


def test_input_read_before_another_writers_commit_is_refused() -> None:
    commits = [commit(1, Txn("a", 5)), commit(2, Txn("a", 8))]
    assert committed_by(commits, Txn("a", 9, after=8)) is None
    with pytest.raises(ConcurrentWriteError, match="after version 5, but version 8"):
        committed_by(commits, Txn("a", 9, after=5))
    assert committed_by([], Txn("a", 1, after=0)) is None


def test_progress_past_a_watermark_by_hand() -> None:
    # Offset 5 applied ahead of 3-4: the watermark stays at 2 until they are applied too.
    assert advanced(2, (), [(5, 5)]) == (2, ((5, 5),))
    assert advanced(2, ((5, 5),), [(3, 4)]) == (5, ())
    assert advanced(2, ((5, 5),), [(7, 8), (3, 3)]) == (3, ((5, 5), (7, 8)))
    assert advanced(0, (), [(2, 2)]) == (0, ((2, 2),))
    assert covered(2, (), 2, ((5, 5),)) and covered(1, ((5, 5),), 2, ((5, 6),))
    assert not covered(3, (), 2, ((5, 5),)) and not covered(2, ((5, 6),), 2, ((5, 5),))
    assert newly_applied((2, ()), (2, ((5, 5),))) == [(5, 5)]
    assert newly_applied((2, ((5, 5),)), (8, ())) == [(3, 4), (6, 8)]
    assert newly_applied((0, ()), (3, ((6, 7),))) == [(1, 3), (6, 7)]


def test_a_commit_applied_ahead_is_skipped_again_and_a_writer_that_read_before_it_is_refused() -> None:
    ahead = Txn("a", 2, 2, "run", ((5, 5),), ())
    commits = [commit(1, Txn("a", 2)), commit(2, ahead)]
    assert committed_by(commits, ahead) == commits[1]
    # Offsets 3-5 after offset 5 went ahead: its progress is not held yet, and it read after it.
    assert committed_by(commits, Txn("a", 5, 2, "run", (), ((5, 5),))) is None
    with pytest.raises(ConcurrentWriteError, match=r"after version 2, but version 2 \(and 5-5\)"):
        committed_by(commits, Txn("a", 4, 2))


def test_full_compaction_windows() -> None:
    assert [n for n in range(1, 10) if full_compaction_due(n, 3)] == [3, 6, 9]


def write_log(table: Path, markers: list[tuple[Origin, str]], applied_through: int | None) -> CommitLog:
    """A wide table that holds the log's commits up to `applied_through` (None: no table commit has
    recorded any) and a log holding `markers`."""
    write_deltalake(str(table), pa.table({"k": [0]}), mode="append")
    if applied_through is not None:
        properties = CommitProperties(app_transactions=[Transaction(APP_ID, applied_through)])
        write_deltalake(str(table), pa.table({"k": [1]}), mode="append", commit_properties=properties)
    rows = pa.table(
        {
            "_commit": pa.array([1] * len(markers), pa.int64()),
            "_origin": [str(o) for o, _ in markers],
            "_commit_info": [text for _, text in markers],
        }
    )
    write_deltalake(changelog_path(str(table)), rows)
    return CommitLog(str(table))


def test_commits_the_table_does_not_hold_are_pending(tmp_path: Path) -> None:
    # The table's application-transaction version says what it holds, whatever its Delta version.
    markers = [(Origin.COMMIT, commit(n).to_json()) for n in (1, 2, 3)]
    log = write_log(tmp_path / "t", markers, 1)
    assert log.markers().last_commit == 3
    assert log.pending(log.markers()) == [2, 3]
    assert write_log(tmp_path / "u", markers, 3).pending(log.markers()) == []
    assert write_log(tmp_path / "v", markers, None).pending(log.markers()) == [1, 2, 3]


def test_markers_are_read_again_for_a_new_version_and_for_a_table_recreated_at_the_same_path(
    tmp_path: Path,
) -> None:
    # Markers are kept per version of a log (`read_markers`): a later version, or another table made at
    # the same path with the same version numbers, must not be answered from what was kept.
    table = tmp_path / "t"
    log = write_log(table, [(Origin.COMMIT, commit(1).to_json())], 1)
    assert log.markers().last_commit == 1
    later = pa.table(
        {
            "_commit": pa.array([2], pa.int64()),
            "_origin": [str(Origin.COMMIT)],
            "_commit_info": [commit(2).to_json()],
        }
    )
    write_deltalake(changelog_path(str(table)), later, mode="append")
    assert log.markers().last_commit == 2
    shutil.rmtree(changelog_path(str(table)))
    log = write_log(table, [(Origin.COMMIT, commit(7).to_json()), (Origin.COMMIT, commit(8).to_json())], 1)
    write_deltalake(changelog_path(str(table)), later.slice(0, 0), mode="append")
    assert [c.commit for c in log.markers().commits] == [7, 8]
