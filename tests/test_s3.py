"""The lake on a real S3 endpoint (SeaweedFS on 127.0.0.1), reached through the standard AWS_* variables
only: the store arbitrates racing Delta commits, and the seed demo and exactly-once replay give on S3
what they give on local disk.

No call below passes storage options: delta-rs and Sail take the endpoint and credentials from the
environment the `s3` fixture sets, as a deployment would.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from servers import S3Endpoint
from test_demo import SPEC, _by_key, _changelog, _deploy, _rows, load_seed
from test_exactly_once import CRASH_POINTS, EXPECTED_ROWS, clean_run_at, killed_then_rerun_at

RACERS = 6
ROUNDS = 3


def race(actions: list[Callable[[], None]]) -> list[BaseException | None]:
    """Run every action at once (one thread each, released together); each one's error or None."""
    barrier = threading.Barrier(len(actions))
    outcomes: list[BaseException | None] = [None] * len(actions)

    def run(index: int) -> None:
        barrier.wait()
        try:
            actions[index]()
        except BaseException as error:  # reported to the caller, which asserts on it
            outcomes[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(actions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def append_without_retry(path: str, writer: int) -> Callable[[], None]:
    """A delta-rs append of one row, `writer`, on the table's version now, committed when called and
    never retried at a later version."""
    from deltalake import CommitProperties, DeltaTable, write_deltalake

    table, data = DeltaTable(path), pa.table({"writer": [writer]})
    no_retry = CommitProperties(max_commit_retries=0)
    return lambda: write_deltalake(table, data, mode="append", commit_properties=no_retry)


def test_racing_delta_rs_commits_of_one_version_have_one_winner(s3: S3Endpoint) -> None:
    """Every writer read version 0 and commits version 1 without retrying: the store's put-if-absent
    lets exactly one log entry in (a store that ignores If-None-Match lets several overwrite it)."""
    from deltalake import DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError

    for round_number in range(ROUNDS):
        path = s3.uri("race", f"delta-rs-{round_number}")
        write_deltalake(path, pa.table({"writer": [-1]}))
        outcomes = race([append_without_retry(path, writer) for writer in range(RACERS)])
        winners = [writer for writer, error in enumerate(outcomes) if error is None]
        assert len(winners) == 1, outcomes
        assert all(isinstance(e, CommitFailedError) for e in outcomes if e is not None), outcomes
        table = DeltaTable(path)
        assert table.version() == 1
        assert sorted(table.to_pyarrow_table()["writer"].to_pylist()) == [-1, winners[0]]


def test_concurrent_sail_appends_all_land_in_dense_versions(spark: Any, s3: S3Endpoint) -> None:
    """Sail writes each Delta log entry with put-if-absent and retries a blind append that lost the
    race at the next version: every append is kept, one version each."""
    from deltalake import DeltaTable

    path = s3.uri("race", "sail")
    spark.createDataFrame([(0,)], "writer int").write.format("delta").save(path)
    frames = [spark.createDataFrame([(writer,)], "writer int") for writer in range(1, RACERS + 1)]

    def append(frame: Any) -> Callable[[], None]:
        return lambda: frame.write.format("delta").mode("append").save(path)

    assert race([append(frame) for frame in frames]) == [None] * RACERS
    rows = spark.read.format("delta").load(path).collect()
    assert sorted(r.writer for r in rows) == list(range(RACERS + 1))
    history = DeltaTable(path).history()
    assert sorted(entry["version"] for entry in history) == list(range(RACERS + 1))


def test_seed_demo_on_s3_equals_the_seed(spark: Any, s3: S3Endpoint, tmp_path: Path) -> None:
    seed = load_seed()
    deployment = _deploy(spark, tmp_path, lake=s3.uri("demo"))
    result = deployment.run()
    assert result.success
    assert {e.check_name: e.passed for e in result.get_asset_check_evaluations()} == {
        "primary_key_unique_not_null": True,
        "converges_to_source_join": True,
    }
    table = deployment.table()
    assert table.path == s3.uri("demo", SPEC.group, SPEC.name)
    assert _rows(table.read()) == seed.snapshot
    changelog = _changelog(table)
    assert [_by_key(changelog[c]) for c in sorted(changelog)] == [_by_key(stage) for stage in seed.stages]
    assert not (tmp_path / "lake").exists()


@pytest.fixture(scope="module")
def clean_run_on_s3(spark: Any, s3: S3Endpoint) -> tuple[list[Any], list[Any]]:
    return clean_run_at(spark, s3.uri("exactly-once", "clean"))


def test_clean_run_on_s3_is_the_hand_computed_table(clean_run_on_s3: tuple[list[Any], list[Any]]) -> None:
    rows, _ = clean_run_on_s3
    assert rows == EXPECTED_ROWS


@pytest.mark.slow
@pytest.mark.parametrize("crash_point", CRASH_POINTS)
def test_killed_write_on_s3_then_rerun_equals_clean_run(
    spark: Any, s3: S3Endpoint, crash_point: str, clean_run_on_s3: tuple[list[Any], list[Any]]
) -> None:
    path = s3.uri("exactly-once", crash_point)
    assert killed_then_rerun_at(spark, path, crash_point) == clean_run_on_s3


def test_racing_table_commits_written_by_wide_assets_have_one_winner(s3: S3Endpoint) -> None:
    """The table commits wide_assets writes itself (they carry deletion vectors, which delta-rs's
    writer cannot): of racers that all read version 0, exactly one lands version 1 on S3."""
    from deltalake import write_deltalake

    from wide_assets.table import delta_log
    from wide_assets.table.arbiter import Conflict
    from wide_assets.table.objects import TableFiles

    for round_number in range(ROUNDS):
        path = s3.uri("race", f"wide-assets-{round_number}")
        write_deltalake(path, pa.table({"writer": [-1]}))
        files = TableFiles(path)
        commits: list[Callable[[], None]] = [
            functools.partial(delta_log.commit, files, 1, [delta_log.txn_action(writer)], "WRITE")
            for writer in range(RACERS)
        ]
        outcomes = race(commits)
        assert [e is None for e in outcomes].count(True) == 1, outcomes
        assert all(isinstance(e, Conflict) for e in outcomes if e is not None), outcomes


def test_deletion_vectors_and_verify_on_s3(spark: Any, s3: S3Endpoint) -> None:
    """A write on S3 marks replaced rows with a deletion vector; `verify` checks the files through
    the store (healthy: passes) and names a file really removed from the bucket."""
    import obstore
    from deltalake import DeltaTable, QueryBuilder

    from wide_assets import WideTable
    from wide_assets.errors import TableStateError
    from wide_assets.table import delta_log
    from wide_assets.table.objects import TableFiles, _store

    path = s3.uri("vectors", "t")
    table = WideTable.create(
        spark, path, [("k", "int"), ("v", "string")], ["k"], {"merge-engine": "deduplicate"}
    )
    table.write(spark.sql("SELECT CAST(id AS INT) AS k, 'x' AS v FROM range(100)"))
    table.write(spark.createDataFrame([(3, "y", "+I"), (4, None, "-D")], "k int, v string, _row_kind string"))
    live = delta_log.live_files(TableFiles(path), table.version)
    assert sum(f.deletion_vector.cardinality for f in live if f.deletion_vector) == 2
    expected = {k: "x" for k in range(100) if k != 4} | {3: "y"}
    assert {r.k: r.v for r in table.read().collect()} == expected
    read = pa.table(QueryBuilder().register("t", DeltaTable(path)).execute("SELECT k, v FROM t").read_all())
    assert dict(zip(read["k"].to_pylist(), read["v"].to_pylist(), strict=True)) == expected
    table.verify()
    obstore.delete(_store(path), live[0].path)
    with pytest.raises(TableStateError, match=f"Data file .*{live[0].path}.* is missing"):
        table.verify()
