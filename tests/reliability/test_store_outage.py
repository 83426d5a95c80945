"""A store that fails around a write's commit: the write raises only when its commit did not land (and
says so), and never when it did, so a caller that retries every error applies each write once. The
oracle is plain arithmetic: a `sum` column written +1 per intended write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from wide_assets import WideTable, batch
from wide_assets.errors import StoreError
from wide_assets.table import arbiter, delta_log, protocol
from wide_assets.table.objects import TableFiles
from wide_assets.table.staging import STAGING_DIR

COLUMNS = [("k", "int"), ("n", "bigint")]
SUM = {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"}


def outage() -> OSError:
    return OSError("Kernel error -> Generic S3 error: error sending request: Connection refused")


# One +1 record as each kind of input a write takes (pandas and Arrow rows are staged in the store).
INPUTS: dict[str, Callable[[Any], Any]] = {
    "spark": lambda spark: spark.createDataFrame([(1, 1)], "k int, n bigint"),
    "pandas": lambda spark: pd.DataFrame({"k": [1], "n": [1]}),
    "arrow": lambda spark: pa.table({"k": [1], "n": [1]}),
}


def retrying_caller(table: WideTable, spark: Any, kind: str = "spark") -> Any:
    """What a user's job does: write +1, and on any error write it again (at most 3 times)."""
    for _ in range(3):
        try:
            return table.write(INPUTS[kind](spark))
        except StoreError as error:
            assert error.committed is False, error  # only then is a retry safe
    raise AssertionError("three failed writes")


def total(table: WideTable) -> int:
    return int(table.read().collect()[0].n)


def engine_outage() -> Exception:
    """What the engine (Sail) raises when the store it reads is down."""
    from pyspark.errors import QueryExecutionException

    return QueryExecutionException(
        message="Generic S3 error: Error performing GET http://127.0.0.1:1/outage/t/_delta_log/"
        "00000000000000000006.json in 3.24s - error sending request"
    )


def failing_once(
    function: Callable[..., Any], after: bool, error: Callable[[], Exception] = outage
) -> Callable[..., Any]:
    """`function`, failing its first call like an unreachable store: before it runs or after it did."""
    calls = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1 and not after:
            raise error()
        value = function(*args, **kwargs)
        if len(calls) == 1:
            raise error()
        return value

    return wrapper


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> WideTable:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], SUM)
    table.write(spark.createDataFrame([(1, 0)], "k int, n bigint"))
    return table


def test_a_store_failure_after_the_commit_landed_is_not_an_error(
    spark: Any, table: WideTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arbiter, "append_files", failing_once(arbiter.append_files, after=True))
    result = retrying_caller(table, spark)
    assert total(table) == 1 and len(table.commits()) == 2
    assert result.commit == 2 and not result.applied_later


def test_a_store_failure_before_the_commit_says_nothing_was_committed(
    spark: Any, table: WideTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arbiter, "append_files", failing_once(arbiter.append_files, after=False))
    with pytest.raises(StoreError, match="nothing was committed") as raised:
        table.write(spark.createDataFrame([(1, 1)], "k int, n bigint"))
    assert raised.value.committed is False
    assert total(table) == 0
    retrying_caller(table, spark)
    assert total(table) == 1


def test_a_store_failure_while_applying_reports_the_commit_pending(
    spark: Any, table: WideTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delta_log, "commit", failing_once(delta_log.commit, after=False))
    result = retrying_caller(table, spark)
    assert result.applied_later and "do not write it again" in str(result.note)
    assert table.pending_commits() == [2]
    monkeypatch.undo()
    table.recover()
    assert total(table) == 1 and table.pending_commits() == []


def test_an_unanswering_store_leaves_the_outcome_unknown_and_says_how_to_find_it(
    spark: Any, table: WideTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arbiter, "append_files", failing_once(arbiter.append_files, after=True))

    def unreachable(*args: Any) -> int:
        raise outage()

    monkeypatch.setattr(type(table._storage.log), "version", unreachable)
    monkeypatch.setattr(protocol, "OUTAGE_WAIT_S", 0.1)
    with pytest.raises(StoreError, match="whether it landed is unknown") as raised:
        table.write(spark.createDataFrame([(1, 1)], "k int, n bigint"))
    assert raised.value.committed is None
    monkeypatch.undo()
    assert [c.write_id for c in table.commits()][-1] == raised.value.write_id


def test_the_engine_reporting_the_store_down_before_the_commit_is_a_store_error(
    spark: Any, table: WideTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine, not the store client, may be the one that finds the store down (reading the input
    or the table): before the commit that too is a StoreError saying nothing was committed."""
    reading = failing_once(batch.prepare_batch, after=False, error=engine_outage)
    monkeypatch.setattr("wide_assets.table.protocol.prepare_batch", reading)
    with pytest.raises(StoreError, match="nothing was committed") as raised:
        table.write(spark.createDataFrame([(1, 1)], "k int, n bigint"))
    assert raised.value.committed is False
    retrying_caller(table, spark)
    assert total(table) == 1 and len(table.commits()) == 2


@pytest.mark.parametrize("kind", ["pandas", "arrow"])
def test_a_store_failure_deleting_the_staged_input_after_the_commit_is_not_an_error(
    spark: Any, table: WideTable, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The staged copy of pandas or Arrow rows is deleted after the commit landed: a store failing
    then must not fail the write (a retry would apply it twice); the file is left to `vacuum`."""
    delete = TableFiles.delete

    def failing_for_staged(self: TableFiles, path: str) -> None:
        if path.startswith(f"{STAGING_DIR}/"):
            raise outage()
        delete(self, path)

    monkeypatch.setattr(TableFiles, "delete", failing_for_staged)
    result = retrying_caller(table, spark, kind)
    assert total(table) == 1 and len(table.commits()) == 2 and result.commit == 2
    monkeypatch.undo()
    assert [f.path for f in TableFiles(table.path).list(STAGING_DIR)], "the staged input is left behind"


@pytest.mark.parametrize("kind", ["pandas", "arrow"])
def test_a_store_failure_staging_the_input_is_a_store_error(
    spark: Any, table: WideTable, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Staging pandas or Arrow rows in a store that is down is a store failure before the commit, not
    invalid input: a StoreError saying nothing was committed, and a retry applies the write once."""
    monkeypatch.setattr(TableFiles, "write_parquet", failing_once(TableFiles.write_parquet, after=False))
    with pytest.raises(StoreError, match="nothing was committed") as raised:
        table.write(INPUTS[kind](spark))
    assert raised.value.committed is False
    assert total(table) == 0
    retrying_caller(table, spark, kind)
    assert total(table) == 1 and len(table.commits()) == 2


WRITER = """
import sys, time
from pathlib import Path
from wide_assets import WideTable, get_spark
path, least, stop, kind = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
spark = get_spark()
def rows():
    if kind == "pandas":
        import pandas
        return pandas.DataFrame({"k": [1], "n": [1]})
    if kind == "arrow":
        import pyarrow
        return pyarrow.table({"k": [1], "n": [1]})
    return spark.createDataFrame([(1, 1)], "k int, n bigint")
def retried(call):
    while True:  # a caller that retries every error, as a job would
        try:
            return call()
        except Exception as error:
            print("retry", type(error).__name__, str(error)[:160], flush=True)
            time.sleep(0.5)
table = retried(lambda: WideTable.create(spark, path, [("k", "int"), ("n", "bigint")], ["k"], SUM))
write = 0
while write < least or not stop.exists():  # writing through every outage, until told to stop
    result = retried(lambda: table.write(rows()))
    write += 1
    print("wrote", write, "commit", result.commit, "pending", result.applied_later, flush=True)
retried(table.recover)
print("done", flush=True)
""".replace("SUM", repr(SUM))


@pytest.mark.slow
def test_writes_through_s3_outages_apply_each_write_once(tmp_path: Path) -> None:
    """Writers that retry every error, without a transaction id, while the S3 server is killed and
    restarted under them (same port, same data): every write is applied exactly once, whatever the
    input (pandas and Arrow rows are staged in the store, and their staged copy deleted after the
    commit). One writer per kind of input, each on a table of its own, all through the same outages;
    the writers go on until the last outage is over, then the table must hold each write they
    reported, once."""
    import os
    import subprocess
    import sys
    import time

    from deltalake import DeltaTable, QueryBuilder
    from servers import free_ports, patched_environ, seaweedfs

    least, outages = 4, 3
    root, ports = tmp_path / "s3", free_ports(8)
    root.mkdir()
    stop = tmp_path / "stop"
    logs = {kind: tmp_path / f"writer-{kind}.log" for kind in INPUTS}
    with seaweedfs(root, "outage", ports) as endpoint:
        env = {**os.environ, **endpoint.env, "RUST_LOG": "error"}
        writers = {
            kind: subprocess.Popen(
                [sys.executable, "-c", WRITER, endpoint.uri(kind), str(least), str(stop), kind],
                stdout=log.open("w"),
                stderr=subprocess.STDOUT,
                env=env,
            )
            for kind, log in logs.items()
        }
        # The first outage comes once every writer has written twice: each is mid-run when it does.
        deadline = time.monotonic() + 600
        while min(lines_starting(log, "wrote ") for log in logs.values()) < 2:
            running = all(writer.poll() is None for writer in writers.values())
            assert running and time.monotonic() < deadline, {
                k: v.read_text()[-2000:] for k, v in logs.items()
            }
            time.sleep(0.5)
    for _ in range(outages):  # killed: down for a while, then back on the same port and data
        time.sleep(3)
        with seaweedfs(root, "outage", ports):
            time.sleep(10)
    with seaweedfs(root, "outage", ports), patched_environ(endpoint.env):
        stop.touch()
        for kind, writer in writers.items():
            exit_code = writer.wait(timeout=900)
            output = f"{kind} writer: {logs[kind].read_text()[-3000:]}"
            assert exit_code == 0 and "done" in output and lines_starting(logs[kind], "retry ") > 0, output
            writes = lines_starting(logs[kind], "wrote ")
            table = WideTable.open(None, endpoint.uri(kind))
            assert [c.commit for c in table.commits()] == list(range(1, writes + 1)), output
            assert table.pending_commits() == [], output
            query = QueryBuilder().register("t", DeltaTable(endpoint.uri(kind))).execute("SELECT n FROM t")
            assert pa.table(query.read_all())["n"].to_pylist() == [writes], output


def lines_starting(log: Path, prefix: str) -> int:
    return sum(line.startswith(prefix) for line in log.read_text().splitlines())
