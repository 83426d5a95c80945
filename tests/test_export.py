"""Changelog encodings for sinks (Flink's dynamic tables) and snapshot diffs, checked against the table itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.errors import InvalidInputError
from wide_assets.export import apply_upserts

KV = [("k", "int"), ("v", "string")]
DDL = "k int, v string, _row_kind string"
WRITES = [
    [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")],
    [(1, "a2", "+I"), (2, None, "-D"), (4, "d", "+I")],
    [(4, "d2", "+I"), (1, None, "-D"), (2, "b3", "+I")],
]


@pytest.fixture(
    params=[{"changelog-producer": "lookup"}, {"table.delete.behavior": "allow"}], ids=["paimon", "fluss"]
)
def table(request: pytest.FixtureRequest, spark: Any, tmp_path: Path) -> WideTable:
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"], request.param)
    for rows in WRITES:
        table.write(spark.createDataFrame(rows, DDL))
    return table


def current(table: WideTable) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.read().collect())


def test_upsert_stream_applied_to_an_empty_table_reproduces_it(spark: Any, table: WideTable) -> None:
    rebuilt = apply_upserts(spark, table.definition, table.export("upsert"))
    assert sorted(tuple(r) for r in rebuilt.collect()) == current(table) == [(2, "b3"), (3, "c"), (4, "d2")]


def test_upsert_encoding_has_tombstones_and_no_update_before(table: WideTable) -> None:
    rows = table.export("upsert", 2, 2).collect()
    assert {(r["k"], r["value"] is None) for r in rows} == {(1, False), (2, True), (4, False)}


def test_debezium_envelopes_replay_to_the_table(table: WideTable) -> None:
    state: dict[int, str] = {}
    for row in table.export("debezium").collect():
        event = json.loads(row["json"])
        if event["op"] == "d":
            assert state.pop(event["before"]["k"]) == event["before"]["v"]
        else:
            if event["op"] == "u":
                assert state[event["before"]["k"]] == event["before"]["v"]
            state[event["after"]["k"]] = event["after"]["v"]
    assert sorted(state.items()) == current(table)


def test_flink_json_and_retract_carry_every_entry(table: WideTable) -> None:
    kinds = [r["_row_kind"] for r in table.changelog().orderBy("_commit", "_offset").collect()]
    flink = [json.loads(r["json"])["rowkind"] for r in table.export("flink-json").collect()]
    retract = [(r["_row_kind"], r["retraction"]) for r in table.export("retract").collect()]
    assert flink == kinds
    assert retract == [(k, k in ("-U", "-D")) for k in kinds]


def test_append_only_rejects_updates(table: WideTable) -> None:
    assert [r["k"] for r in table.export("append", 1, 1).collect()] == [1, 2, 3]
    with pytest.raises(InvalidInputError, match="not append-only"):
        table.export("append")


def test_snapshot_diff_between_versions(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", KV, ["k"])
    versions = [table.write(spark.createDataFrame(rows, DDL)).version for rows in WRITES]
    diff = sorted(tuple(r) for r in table.diff(versions[0], versions[2]).collect())
    # by hand: v0 {1:a, 2:b, 3:c} -> v2 {2:b3, 3:c, 4:d2}
    assert diff == [("+I", 4, "d2"), ("+U", 2, "b3"), ("-D", 1, "a"), ("-U", 2, "b")]
    assert table.diff(versions[2]).collect() == []


def test_read_as_of_a_timestamp_equals_the_version(spark: Any, tmp_path: Path) -> None:
    import time
    from datetime import UTC, datetime

    table = WideTable.create(spark, tmp_path / "t", KV, ["k"])
    table.write(spark.createDataFrame(WRITES[0], DDL))
    # A moment well between the two commits, not the first's `commitInfo.timestamp`: a reader may date
    # a commit by its log file's modification time (Delta's rule without in-commit timestamps), which
    # differs from the timestamp the commit carries by milliseconds (CI once read the version before).
    time.sleep(0.05)
    between = datetime.now(UTC)
    time.sleep(0.05)
    table.write(spark.createDataFrame(WRITES[1], DDL))
    stamp = between.strftime("%Y-%m-%d %H:%M:%S.%f")
    assert sorted(tuple(r) for r in table.read(timestamp=stamp).collect()) == [(1, "a"), (2, "b"), (3, "c")]
