"""Delta's reference implementation, delta-spark on JVM Spark, on the tables wide_assets writes (on Sail):
- it reads every layout (deletion vectors, copy-on-write, buckets, across checkpoints, after
  `optimize()`) exactly as a plain dict of the records (the oracle) says, and the commit log as
  delta-rs reads it;
- its DESCRIBE HISTORY and DESCRIBE DETAIL show our commits and protocol, and its time travel agrees
  with the oracle of each version and with `WideTable.read(version=...)`;
- another Delta job maintaining the table (OPTIMIZE, VACUUM, SET TBLPROPERTIES) between and during our
  writes loses and doubles nothing; one that changes rows (INSERT) is refused by name, `verify()` says
  what to do, and `rebuild()` is the way out;
- it reads a declared table's history (SCD type 2) as test_history.py's oracle of the records says.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from engine import JVM
from test_deletion_vectors import (
    COLUMNS,
    DDL,
    LAST_ROW,
    LAYOUTS,
    apply_to_oracle,
    random_batch,
    read_by_delta_rs,
    read_by_sail,
)
from test_history import RUNS, Pipeline
from test_history import oracle as history_oracle

from wide_assets import WideTable
from wide_assets.errors import TableStateError
from wide_assets.session import activate
from wide_assets.table import delta_log

pytestmark = pytest.mark.jvm

Oracle = dict[tuple[int, str], str]


def read_by_delta_spark(jvm: Any, path: str, **options: Any) -> Oracle:
    """delta-spark's own reader (deletion vectors, checkpoints, time travel options)."""
    reader = activate(jvm).read.format("delta")
    for key, value in options.items():
        reader = reader.option(key, value)
    rows = reader.load(path).select("k", "part", "v").collect()
    found = {(r.k, r.part): r.v for r in rows}
    assert len(found) == len(rows), "a key is live twice"
    return found


def write(spark: Any, table: WideTable, oracle: Oracle, batch: list[tuple[Any, ...]]) -> int:
    result = table.write(activate(spark).createDataFrame(batch, DDL))
    apply_to_oracle(oracle, batch)
    return result.version


def sail_rows(spark: Any, table: WideTable) -> Oracle:
    activate(spark)
    return read_by_sail(table)


FIRST_WRITE = [(k, p, f"init{k}", "+I") for k in range(60) for p in ("a", "b")]


def first_written(spark: Any, tmp_path: Path) -> tuple[WideTable, Oracle]:
    """A deduplicate table on Sail after its first write, and the oracle of its rows."""
    table = WideTable.create(activate(spark), tmp_path / "t", COLUMNS, ["k", "part"], LAST_ROW)
    oracle: Oracle = {}
    write(spark, table, oracle, FIRST_WRITE)
    return table, oracle


def sorted_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(sorted(row.items())) for row in rows), key=repr)


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_delta_spark_reads_every_layout_as_the_oracle(
    spark: Any, jvm_spark: Any, tmp_path: Path, layout: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkpoint every 3 versions: delta-spark then reads our checkpoints plus JSON commits.
    monkeypatch.setattr(delta_log, "CHECKPOINT_INTERVAL", 3)
    rng = random.Random(3)
    table = WideTable.create(activate(spark), tmp_path / "t", COLUMNS, ["k", "part"], {**LAST_ROW, **layout})
    oracle: Oracle = {}
    for batch in [FIRST_WRITE, *(random_batch(rng, rng.randint(1, 40)) for _ in range(5))]:
        write(spark, table, oracle, batch)
        assert read_by_delta_spark(jvm_spark, table.path) == oracle
    assert any(p.name.endswith(".checkpoint.parquet") for p in (Path(table.path) / "_delta_log").iterdir())
    table.optimize()
    assert read_by_delta_spark(jvm_spark, table.path) == oracle == sail_rows(spark, table)
    # The commit log (the changelog users read) as delta-spark and delta-rs read it, row for row.
    log_rows = activate(jvm_spark).read.format("delta").load(table.changelog_path).collect()
    by_delta_rs = pa.table(
        QueryBuilder().register("t", DeltaTable(table.changelog_path)).execute("SELECT * FROM t").read_all()
    ).to_pylist()
    assert sorted_rows([r.asDict() for r in log_rows]) == sorted_rows(by_delta_rs)
    assert len(log_rows) > len(oracle)


def test_history_detail_and_time_travel_agree_with_each_version(
    spark: Any, jvm_spark: Any, tmp_path: Path
) -> None:
    rng = random.Random(8)
    table = WideTable.create(activate(spark), tmp_path / "t", COLUMNS, ["k", "part"], LAST_ROW)
    oracle: Oracle = {}
    as_of: dict[int, Oracle] = {}
    for batch in [FIRST_WRITE, *(random_batch(rng, 30) for _ in range(3))]:
        version = write(spark, table, oracle, batch)
        as_of[version] = dict(oracle)
    jvm = activate(jvm_spark)
    history = {h.version: h for h in jvm.sql(f"DESCRIBE HISTORY delta.`{table.path}`").collect()}
    assert sorted(history) == list(range(table.version + 1))
    assert [v for v, h in sorted(history.items()) if h.engineInfo == delta_log.ENGINE_INFO] == sorted(as_of)
    assert {history[v].operation for v in as_of} == {"MERGE"}
    [detail] = jvm.sql(f"DESCRIBE DETAIL delta.`{table.path}`").collect()
    assert (detail.format, detail.minReaderVersion, detail.minWriterVersion) == ("delta", 3, 7)
    assert "deletionVectors" in detail.tableFeatures
    assert detail.numFiles == len(DeltaTable(table.path).file_uris())
    for version, expected in as_of.items():
        assert read_by_delta_spark(jvm_spark, table.path, versionAsOf=version) == expected, version
        stamp = history[version].timestamp.strftime("%Y-%m-%d %H:%M:%S.%f")
        assert read_by_delta_spark(jvm_spark, table.path, timestampAsOf=stamp) == expected, stamp
        ours = {(r.k, r.part): r.v for r in table.read(version=version).collect()}
        assert ours == expected, version


def test_delta_spark_reads_a_history_table_as_its_oracle(spark: Any, jvm_spark: Any, tmp_path: Path) -> None:
    pipeline = Pipeline(activate(spark), tmp_path)
    for run in RUNS:
        pipeline.apply(run)
        pipeline.maintain()
    columns = pipeline.history.definition.column_names
    intervals = (
        activate(jvm_spark).read.format("delta").load(pipeline.history.path).select(*columns).collect()
    )
    assert len(intervals) == len(history_oracle(RUNS))
    assert {tuple(r) for r in intervals} == history_oracle(RUNS)


def test_a_platform_jobs_optimize_vacuum_and_properties_between_writes_lose_nothing(
    spark: Any, jvm_spark: Any, tmp_path: Path
) -> None:
    rng = random.Random(13)
    table, oracle = first_written(spark, tmp_path)
    jvm = activate(jvm_spark)
    jvm.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    for statement in (
        f"OPTIMIZE delta.`{table.path}`",
        f"ALTER TABLE delta.`{table.path}` SET TBLPROPERTIES ('owner.team' = 'platform')",
        f"VACUUM delta.`{table.path}` RETAIN 0 HOURS",
    ):
        write(spark, table, oracle, random_batch(rng, 30))
        activate(jvm_spark).sql(statement).collect()
        write(spark, table, oracle, random_batch(rng, 30))
        assert read_by_delta_spark(jvm_spark, table.path) == oracle, statement
        assert sail_rows(spark, table) == oracle, statement
    table.verify()
    assert DeltaTable(table.path).metadata().configuration["owner.team"] == "platform"


def test_a_foreign_insert_is_refused_by_name_until_a_rebuild(
    spark: Any, jvm_spark: Any, tmp_path: Path
) -> None:
    rng = random.Random(21)
    table, oracle = first_written(spark, tmp_path)
    activate(jvm_spark).sql(f"INSERT INTO delta.`{table.path}` VALUES (1, 'a', 'foreign')").collect()
    foreign = table.version
    before = DeltaTable(table.path).version()
    with pytest.raises(
        TableStateError, match=rf"version {foreign} \(WRITE by Apache-Spark.*adds or removes rows"
    ):
        write(spark, table, {}, random_batch(rng, 10))
    assert DeltaTable(table.path).version() == before, "a refused write committed to the table"
    with pytest.raises(TableStateError, match=r"WideTable.rebuild\(\)"):
        table.verify()
    table.rebuild()
    batch = random_batch(rng, 10)
    write(spark, table, oracle, batch)
    table.verify()
    assert read_by_delta_spark(jvm_spark, table.path) == oracle == sail_rows(spark, table)


OPTIMIZER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from wide_assets.session import EngineSettings, get_spark
    path, stop, master = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    spark = get_spark(EngineSettings(engine="classic", master=master, with_delta=True))
    outcomes = {"optimized": 0, "conflict": 0}
    Path(stop.with_suffix(".ready")).touch()
    while not stop.exists():
        try:
            spark.sql(f"OPTIMIZE delta.`{path}`").collect()
            outcomes["optimized"] += 1
        except Exception as error:  # Delta's own conflict checks refuse an OPTIMIZE that lost a race
            if "Concurrent" not in type(error).__name__ + str(error):
                raise
            outcomes["conflict"] += 1
    print(outcomes, flush=True)
    """
)


@pytest.mark.slow
def test_a_concurrent_foreign_optimize_loses_and_doubles_nothing(spark: Any, tmp_path: Path) -> None:
    """A platform team's OPTIMIZE loop, in a JVM of its own, racing our writes on the same table."""
    rng = random.Random(34)
    table, oracle = first_written(spark, tmp_path)
    stop = tmp_path / "stop"
    optimizer = subprocess.Popen(
        [sys.executable, "-c", OPTIMIZER, table.path, str(stop), JVM.master],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not stop.with_suffix(".ready").exists():
            assert optimizer.poll() is None, optimizer.communicate()[1][-3000:]
            time.sleep(0.5)
        for _ in range(8):
            write(spark, table, oracle, random_batch(rng, 25))
    finally:
        stop.touch()
        out, err = optimizer.communicate(timeout=300)
    assert optimizer.returncode == 0, err[-3000:]
    history = Counter(h["operation"] for h in DeltaTable(table.path).history())
    assert history["OPTIMIZE"] >= 1, (out, history)
    assert sail_rows(spark, table) == oracle == read_by_delta_rs(table.path)
    table.verify()
