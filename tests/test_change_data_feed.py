"""Delta's Change Data Feed on a wide table (`delta.enableChangeDataFeed`): delta-rs's `load_cdf` and
delta-spark's `readChangeFeed` return exactly our changelog (+I insert, -U update_preimage, +U
update_postimage, -D delete), each change at the table version that applied its commit (a catch-up
applies two commits in one version), and replaying the feed in version order gives the plain dict of
the records (the oracle); a feed turned on later by delta-spark's ALTER TABLE counts from then on."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from test_deletion_vectors import COLUMNS, DDL, LAST_ROW, apply_to_oracle, log_actions

from wide_assets import WideTable
from wide_assets.errors import InvalidOptionError, TableStateError
from wide_assets.session import activate
from wide_assets.table import protocol

CHANGE_TYPES = {"+I": "insert", "-U": "update_preimage", "+U": "update_postimage", "-D": "delete"}
FEED = {**LAST_ROW, "changelog-producer": "lookup", "delta.enableChangeDataFeed": "true"}
# (k, part, v, _change_type, _commit_version)
Change = tuple[int, str, str, str, int]
Oracle = dict[tuple[int, str], str]

FIRST = [(k, p, f"init{k}", "+I") for k in range(6) for p in ("a", "b")]
# Updates, a delete, an insert, an update of a key inserted in the same batch, a delete of nothing.
SECOND = [(0, "a", "x0", "+I"), (1, "b", "x1", "+I"), (2, "a", "", "-D"), (7, "a", "n7", "+I"),
          (7, "a", "n7'", "+I"), (9, "b", "", "-D")]  # fmt: skip
THIRD = [(0, "a", "y0", "+I"), (3, "b", "", "-D"), (8, "b", "n8", "+I")]
FOURTH = [(7, "a", "", "-D"), (4, "a", "z4", "+I"), (8, "b", "z8", "+I")]


def changelog_feed(table: WideTable, versions: dict[int, int], start_commit: int = 1) -> Counter[Change]:
    """Our changelog from `start_commit` on as Delta's change types, each entry at the table version its
    commit was applied in (`versions`: commit -> table version)."""
    rows = table.changelog(start_commit).select("_row_kind", "k", "part", "v", "_commit").collect()
    return Counter((r.k, r.part, r.v, CHANGE_TYPES[r._row_kind], versions[r._commit]) for r in rows)


def delta_rs_feed(path: Path, start: int = 0) -> tuple[Counter[Change], dict[int, Any]]:
    """delta-rs's `load_cdf`: the changes, and the commit timestamp of each version."""
    changes = pa.table(DeltaTable(str(path)).load_cdf(starting_version=start)).to_pylist()
    found = Counter((r["k"], r["part"], r["v"], r["_change_type"], r["_commit_version"]) for r in changes)
    return found, {r["_commit_version"]: r["_commit_timestamp"] for r in changes}


def delta_spark_feed(jvm: Any, path: Path, start: int = 0) -> tuple[Counter[Change], dict[int, Any]]:
    """delta-spark's `readChangeFeed`: the changes, and the commit timestamp of each version."""
    reader = activate(jvm).read.format("delta").option("readChangeFeed", "true")
    rows = reader.option("startingVersion", start).load(str(path)).collect()
    found = Counter((r.k, r.part, r.v, r._change_type, r._commit_version) for r in rows)
    return found, {r._commit_version: r._commit_timestamp for r in rows}


def epoch_ms(timestamp: datetime) -> int:
    """Milliseconds since the epoch of a reader's `_commit_timestamp` (delta-spark's is naive, in the
    session's time zone, UTC here)."""
    aware = timestamp if timestamp.tzinfo is not None else timestamp.replace(tzinfo=UTC)
    return round(aware.timestamp() * 1000)


def replayed(feed: Counter[Change]) -> Oracle:
    """The rows a feed leaves, replayed version by version; each preimage and delete must name the row
    as it was, and an insert a key that was absent."""
    state: Oracle = {}
    for version in sorted({c[4] for c in feed}):
        changes = [c for c in feed.elements() if c[4] == version]
        for k, part, v, kind, _ in sorted(changes, key=lambda c: c[3] not in ("update_preimage", "delete")):
            if kind in ("update_preimage", "delete"):
                assert state.pop((k, part)) == v, f"version {version}: {kind} of {(k, part)} is not the row"
        for k, part, v, kind, _ in changes:
            if kind in ("insert", "update_postimage"):
                assert (k, part) not in state, f"version {version}: {kind} of the live key {(k, part)}"
                state[(k, part)] = v
    return state


def write_all(spark: Any, table: WideTable, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[int, int], Oracle]:
    """Four writes; the second is logged but not applied (its writer stopped after the commit point),
    so the third catches it up in a table version of its own before applying its own commit.
    Returns commit -> table version, and the oracle of the records."""
    oracle: Oracle = {}
    results = []
    for number, batch in enumerate((FIRST, SECOND, THIRD, FOURTH), start=1):
        with monkeypatch.context() as patch:
            if number == 2:
                patch.setattr(protocol, "finish", lambda storage, commit: None)
            results.append(table.write(activate(spark).createDataFrame(batch, DDL)))
        apply_to_oracle(oracle, batch)
    first, _, third, fourth = results
    assert [r.commit for r in results] == [1, 2, 3, 4]
    # The catch-up is the version before the third write's own.
    assert [a["txn"]["version"] for a in log_actions(table.path, third.version - 1) if "txn" in a] == [2]
    return {1: first.version, 2: third.version - 1, 3: third.version, 4: fourth.version}, oracle


def cdc_files(path: Path, version: int) -> list[dict[str, Any]]:
    return [a["cdc"] for a in log_actions(str(path), version) if "cdc" in a]


@pytest.mark.parametrize("layout", [{}, {"bucket": "2"}], ids=["deletion-vectors", "buckets"])
def test_delta_rs_change_feed_is_our_changelog(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: dict[str, str]
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], {**FEED, **layout})
    versions, oracle = write_all(spark, table, monkeypatch)
    expected = changelog_feed(table, versions)
    assert {c[3] for c in expected} == set(CHANGE_TYPES.values()), "the writes cover every change type"
    found, timestamps = delta_rs_feed(tmp_path / "t")
    assert found == expected
    assert replayed(found) == oracle
    assert sorted(timestamps) == sorted(set(versions.values()))
    for version in set(versions.values()):
        files = cdc_files(tmp_path / "t", version)
        assert files and all(f["path"].startswith("_change_data/") and not f["dataChange"] for f in files)
    # From a later version on: only the changes of the versions from it.
    later, _ = delta_rs_feed(tmp_path / "t", start=versions[2])
    assert later == Counter({c: n for c, n in expected.items() if c[4] >= versions[2]})


def test_a_compaction_feeds_the_changelog_of_every_commit_it_applies(spark: Any, tmp_path: Path) -> None:
    options = {**FEED, "write-only": "true", "changelog-producer": "input"}
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], options)
    oracle: Oracle = {}
    for batch in (FIRST, SECOND, THIRD):
        assert table.write(activate(spark).createDataFrame(batch, DDL)).commit > 0
        apply_to_oracle(oracle, batch)
    before = DeltaTable(str(tmp_path / "t")).version()
    table.compact()
    version = DeltaTable(str(tmp_path / "t")).version()
    assert version == before + 1, "one table version applies the three commits"
    expected = changelog_feed(table, dict.fromkeys((1, 2, 3), version))
    assert len({c for c in table.changelog().select("_commit").collect()}) == 3
    assert delta_rs_feed(tmp_path / "t", start=version)[0] == expected
    assert {(r.k, r.part): r.v for r in table.read().collect()} == oracle


def test_the_feed_needs_a_changelog_and_is_spelled_as_delta_spells_it(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match=r"changelog-producer.*'none'"):
        WideTable.create(
            spark, tmp_path / "a", COLUMNS, ["k", "part"], {**FEED, "changelog-producer": "none"}
        )
    assert not (tmp_path / "a").exists(), "nothing was created"
    with pytest.raises(InvalidOptionError, match=r"did you mean 'delta\.enableChangeDataFeed'"):
        WideTable.create(
            spark, tmp_path / "b", COLUMNS, ["k", "part"], {**LAST_ROW, "delta.enableChangeDataFeeds": "true"}
        )


@pytest.mark.parametrize("layout", [{}, {"bucket": "2"}], ids=["deletion-vectors", "buckets"])
def test_a_commit_that_changes_no_row_feeds_nothing(
    spark: Any, tmp_path: Path, layout: dict[str, str]
) -> None:
    """`rebuild()` rewrites every file and applies no commit: its one change file is empty, so Delta's
    readers do not read its removes and adds as deletes and inserts."""
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], {**FEED, **layout})
    table.write(activate(spark).createDataFrame(FIRST, DDL))
    table.rebuild()
    version = DeltaTable(str(tmp_path / "t")).version()
    actions = log_actions(str(tmp_path / "t"), version)
    assert any("remove" in a for a in actions) and any("add" in a for a in actions)
    assert len(cdc_files(tmp_path / "t", version)) == 1
    assert delta_rs_feed(tmp_path / "t", start=version)[0] == Counter()


def test_a_feed_turned_on_for_a_table_without_changelog_stops_its_commits_by_name(
    spark: Any, tmp_path: Path
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], LAST_ROW)
    table.write(activate(spark).createDataFrame(FIRST, DDL))
    DeltaTable(str(tmp_path / "t")).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    version = DeltaTable(str(tmp_path / "t")).version()
    result = table.write(activate(spark).createDataFrame(SECOND, DDL))
    assert result.applied_later
    assert "UNSET TBLPROPERTIES ('delta.enableChangeDataFeed')" in (result.note or "")
    assert DeltaTable(str(tmp_path / "t")).version() == version, "no table commit without its changes"
    with pytest.raises(TableStateError, match=r"changelog-producer.*'none'"):
        table.write(activate(spark).createDataFrame(THIRD, DDL))
    DeltaTable(str(tmp_path / "t")).alter.set_table_properties({"delta.enableChangeDataFeed": "false"})
    table.write(activate(spark).createDataFrame(THIRD, DDL))
    oracle: Oracle = {}
    for batch in (FIRST, SECOND, THIRD):
        apply_to_oracle(oracle, batch)
    assert {(r.k, r.part): r.v for r in table.read().collect()} == oracle


@pytest.mark.jvm
def test_delta_spark_change_feed_is_our_changelog(
    spark: Any, jvm_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], FEED)
    versions, oracle = write_all(spark, table, monkeypatch)
    expected = changelog_feed(table, versions)
    found, timestamps = delta_spark_feed(jvm_spark, tmp_path / "t")
    assert found == expected
    assert replayed(found) == oracle
    # The commit's time: delta-spark takes the commit file's modification time (PROTOCOL.md, without
    # in-commit timestamps), delta-rs the commitInfo's `timestamp`, taken as the file is put (the file system clock is coarser: it may read a few ms earlier).
    _, by_delta_rs = delta_rs_feed(tmp_path / "t")
    assert set(timestamps) == set(by_delta_rs) == set(versions.values())
    for version in timestamps:
        commit_file = tmp_path / "t" / "_delta_log" / f"{version:020d}.json"
        modified_ms = commit_file.stat().st_mtime_ns // 1_000_000
        info = next(a["commitInfo"] for a in log_actions(str(tmp_path / "t"), version) if "commitInfo" in a)
        assert epoch_ms(timestamps[version]) == modified_ms
        assert epoch_ms(by_delta_rs[version]) == info["timestamp"]
        assert abs(modified_ms - info["timestamp"]) < 2000, "both are the time of the commit"


@pytest.mark.jvm
def test_a_feed_turned_on_by_delta_spark_counts_from_then_on(
    spark: Any, jvm_spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    options = {**LAST_ROW, "changelog-producer": "lookup"}
    table = WideTable.create(spark, path, COLUMNS, ["k", "part"], options)
    table.write(activate(spark).createDataFrame(FIRST, DDL))
    activate(jvm_spark).sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
    )
    result = table.write(activate(spark).createDataFrame(SECOND, DDL))
    table.rebuild()  # a table commit that changes no row: an empty change file, nothing in the feed
    assert DeltaTable(str(path)).version() == result.version + 1
    expected = changelog_feed(table, {2: result.version}, start_commit=2)
    assert delta_spark_feed(jvm_spark, path, start=result.version)[0] == expected
    assert delta_rs_feed(path, start=result.version)[0] == expected
