"""The benchmark's candidates; each runs in a fresh process: `python -m bench.candidates <name> <root> <n> <k> <result.json>`.

A candidate does its untimed setup (engine start, table copy, loading a base it keeps in memory), then
the timed incremental apply, and leaves the new table state persisted at `Layout.output(name)`: a Delta
table `wide` (plus its rows saved through Spark as Parquet `rows` where delta-rs 1.6 cannot read it:
deletion vectors) or Parquet, which the driver reads and compares to the oracle.

Every candidate applies the workload's semantics (`bench.workload`): per key, source and column the
newest non-NULL value of the batch wins unless it is older than the stored row's op time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from bench.workload import (
    COLUMN_NAMES,
    COLUMNS,
    KEY,
    OPTIONS,
    SCHEMA,
    SOURCES,
    Layout,
    Source,
    generate,
    oracle,
)

if TYPE_CHECKING:
    import pyarrow as pa

# The write-only candidate's bucket count (a storage option: Paimon's `bucket`).
BUCKETS = 16
# A JVM candidate first runs its timed operation once, untimed, on a second copy of its base: a cold
# JVM (class loading, JIT, codegen) took 35-55 s for a write a warm one does in a fraction of that, and
# a deployment's long-lived driver is warm. The detail column shows the cold run's seconds.
WARM_UP = "warm_up"
# Set to 1 where only the results count, not the times (tests/test_bench.py): no warm-up run.
SKIP_WARM_UP = "WIDE_ASSETS_BENCH_SKIP_WARM_UP"
# The WideTable bases by name: options added to the workload's.
WIDE_BASES = {
    "default": {},
    "write_only": {"write-only": "true", "bucket": str(BUCKETS)},
}
# The plain Delta bases by name: their Delta table properties.
PLAIN_BASES = {"delta": {}, "delta_dv": {"delta.enableDeletionVectors": "true"}}


class RssSamples:
    """This process's RSS (Sail runs inside it) sampled every 50 ms by a daemon thread, so that any
    stretch of the run has a peak. (`ru_maxrss` cannot serve: Linux carries it across `exec`, so a
    candidate would report the benchmark driver's own peak.)"""

    def __init__(self) -> None:
        self.samples: list[tuple[float, int]] = []
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        process = psutil.Process()
        while True:
            self.samples.append((time.perf_counter(), process.memory_info().rss))
            time.sleep(0.05)

    def peak_mb(self, since: float, until: float) -> float:
        """The largest RSS (MB) sampled in [since, until] (the latest sample before it when none)."""
        inside = [rss for t, rss in self.samples if since <= t <= until]
        before = [rss for t, rss in self.samples if t < since][-1:]
        return max(inside or before or [0]) / 2**20


class Timings(dict[str, float]):
    """Named wall-clock phases in seconds; `total` is what the benchmark reports. `high_water` holds
    each phase's peak RSS (MB), and `setup`'s: from the process start to the first phase. `system`
    holds each phase's system CPU seconds of this process (an in-process engine's included, a JVM's
    not): on a virtual machine whose host takes back the memory a guest frees, a run that touches
    fresh memory pays its page faults there (docs/performance.md)."""

    def __init__(self) -> None:
        super().__init__()
        self.high_water: dict[str, float] = {}
        self.system: dict[str, float] = {}
        self.rss = RssSamples()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started, system = time.perf_counter(), os.times().system
        if not self.high_water:
            self.high_water["setup"] = self.rss.peak_mb(0.0, started)
        yield
        ended = time.perf_counter()
        self[name] = self.get(name, 0.0) + ended - started
        self.high_water[name] = max(self.high_water.get(name, 0.0), self.rss.peak_mb(started, ended))
        self.system[name] = self.system.get(name, 0.0) + os.times().system - system


# ------------------------------------------------------------------------------------------ shared SQL
def value_ts(source: Source, column: str) -> str:
    """The reduced batch's column holding the op time of `column`'s reduced value (`source.ts` itself
    for the op time column)."""
    return source.ts if column == source.ts else f"{column}__ts"


# The reduced batch: one row per key; per source its newest op time and per value column the newest
# non-NULL value with that value's op time (NULL where the key has none).
REDUCED_COLUMNS = [*COLUMN_NAMES, *(value_ts(s, c) for s in SOURCES for c, _ in s.values)]


def newest_non_null(column: str, ts: str) -> str:
    """SQL aggregate: the non-NULL `column` of the group's row with the largest `ts`. `max_by` skips rows
    whose ordering is NULL; it picks any of tied rows, and within a key and source the op times tie
    only among late records, which lose to the stored row anyway."""
    return f"max_by({column}, CASE WHEN {column} IS NOT NULL THEN {ts} END)"


def reduce_sql(changes: str) -> str:
    """The sparse batch relation `changes` reduced to `REDUCED_COLUMNS` by one GROUP BY of the key (a
    record's columns outside its source are NULL, so every aggregate sees its own source's records)."""
    aggregates = []
    for source in SOURCES:
        for column, _ in source.values:
            aggregates.append(f"{newest_non_null(column, source.ts)} AS {column}")
            aggregates.append(
                f"max(CASE WHEN {column} IS NOT NULL THEN {source.ts} END) AS {value_ts(source, column)}"
            )
        aggregates.append(f"max({source.ts}) AS {source.ts}")
    return f"SELECT {KEY}, {', '.join(aggregates)} FROM {changes} GROUP BY {KEY}"


def latest_join_sql(relations: dict[str, str]) -> str:
    """Each source's state reduced per key (the newest non-NULL value of each column by op time, the
    newest op time), full-outer-joined on the key (the N-way join)."""
    ctes = []
    for source in SOURCES:
        values = ", ".join(f"{newest_non_null(c, source.ts)} AS {c}" for c, _ in source.values)
        ctes.append(
            f"latest_{source.name} AS (SELECT {KEY}, {values}, max({source.ts}) AS {source.ts} "
            f"FROM {relations[source.name]} GROUP BY {KEY})"
        )
    joined = f"latest_{SOURCES[0].name}"
    keys = [f"latest_{SOURCES[0].name}.{KEY}"]
    for source in SOURCES[1:]:
        joined += f" FULL OUTER JOIN latest_{source.name} ON latest_{source.name}.{KEY} = coalesce({', '.join(keys)})"
        keys.append(f"latest_{source.name}.{KEY}")
    values = ", ".join(f"latest_{s.name}.{c}" for s in SOURCES for c in s.columns)
    return f"WITH {', '.join(ctes)} SELECT coalesce({', '.join(keys)}) AS {KEY}, {values} FROM {joined}"


def merge_assignments() -> dict[str, str]:
    """MERGE update expressions (target `t`, reduced batch `s`): a value column takes the reduced value
    when there is one and its op time is newer or equal to the stored row's (Paimon's sequence-group
    rule), and the op time takes the newer one; the same text for delta-rs, DuckDB and Sail."""
    updates = {}
    for source in SOURCES:
        for column in source.columns:
            newer = f"t.{source.ts} IS NULL OR s.{value_ts(source, column)} >= t.{source.ts}"
            updates[column] = (
                f"CASE WHEN s.{column} IS NOT NULL AND ({newer}) THEN s.{column} ELSE t.{column} END"
            )
    return updates


def merge_sql(target: str, reduced: str) -> str:
    """`MERGE INTO target` from the reduced batch (a parenthesized query) in DuckDB's and Spark's SQL."""
    sets = ", ".join(f"{c} = {e}" for c, e in merge_assignments().items())
    return (
        f"MERGE INTO {target} AS t USING {reduced} AS s ON t.{KEY} = s.{KEY} "
        f"WHEN MATCHED THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED THEN INSERT ({', '.join(COLUMN_NAMES)}) "
        f"VALUES ({', '.join(f's.{c}' for c in COLUMN_NAMES)})"
    )


def reduced_batch(layout: Layout) -> Any:
    """The reduced batch (`REDUCED_COLUMNS`) in pyarrow: each source's reduced records, full-outer-joined
    on the key."""
    import pyarrow.parquet as pq

    changes = pq.read_table(layout.changes)
    reduced = _reduced_source(changes, SOURCES[0])
    for source in SOURCES[1:]:
        reduced = reduced.join(_reduced_source(changes, source), KEY, join_type="full outer")
    return reduced.select(REDUCED_COLUMNS)


def _reduced_source(changes: Any, source: Source) -> Any:
    """One source's records of the batch sorted by key and op time, then per key the last non-NULL
    value of each column, its op time and the newest op time."""
    import pyarrow.compute as pc

    records = changes.filter(pc.is_valid(changes[source.ts])).select([KEY, *source.columns])
    for column, _ in source.values:
        records = records.append_column(
            value_ts(source, column), pc.if_else(pc.is_valid(records[column]), records[source.ts], None)
        )
    records = records.sort_by([(KEY, "ascending"), (source.ts, "ascending")])
    # "last" skips NULLs and needs the rows in order (no threads); sort_by is stable.
    aggregates = [(c, "last") for c, _ in source.values]
    aggregates += [(value_ts(source, c), "max") for c in source.columns]
    latest = records.group_by(KEY, use_threads=False).aggregate(aggregates)
    return latest.rename_columns({f"{c}_{f}": c for c, f in aggregates})


# ------------------------------------------------------------------------------------------ candidates
def copied_base(layout: Layout, base: str, candidate: str) -> Path:
    """A private copy of the `base` table (and a WideTable's changelog) as `candidate`'s output table:
    writes change it in place."""
    source, target = layout.base(base), layout.output(candidate) / "wide"
    for suffix in ("", "_changelog") if base in WIDE_BASES else ("",):
        shutil.copytree(f"{source}{suffix}", f"{target}{suffix}")
    # The copy's writeback (about 1 GB at N=10M) must not compete with the timed write.
    os.sync()
    return target


def _save_rows(rows: Any, layout: Layout, candidate: str) -> None:
    """Save a result's rows through Spark as Parquet (untimed): delta-rs 1.6 cannot read a table whose
    protocol has deletion vectors."""
    rows.write.parquet(str(layout.output(candidate) / "rows"))


def _materialize(rows: Any) -> None:
    """Compute every row and drop it (Spark's `noop` sink)."""
    rows.write.format("noop").mode("overwrite").save()


def jvm_spark() -> Any:
    """Classic JVM Spark local[2] with delta-spark (the jars `make jars` fetched), 4 GB driver."""
    from wide_assets.session import EngineSettings, get_spark

    settings = EngineSettings(
        engine="classic", master="local[2]", with_delta=True, spark_conf={"spark.driver.memory": "4g"}
    )
    return get_spark(settings)


def _wide_write(layout: Layout, base: str, candidate: str, timings: Timings, spark: Any | None = None) -> Any:
    """Time one `WideTable.write` of the batch into `candidate`'s copy of the `base` WideTable, on
    `spark` (default: the engine the environment names)."""
    from wide_assets import WideTable, get_spark

    spark = spark or get_spark()
    table = _timed_on_a_copy(
        spark,
        layout,
        base,
        candidate,
        timings,
        lambda copy: WideTable.open(spark, copy).write(spark.read.parquet(str(layout.changes))),
    )
    return WideTable.open(spark, table)


def _timed_on_a_copy(
    spark: Any, layout: Layout, base: str, candidate: str, timings: Timings, operation: Callable[[Path], Any]
) -> Path:
    """Time `operation` on `candidate`'s copy of the `base` table and return that copy's path. On JVM
    Spark it first runs once untimed on a second copy: a cold JVM spends most of a first run loading
    classes and generating code, which a long-running job pays once."""
    from wide_assets.session import is_connect

    if not is_connect(spark) and os.environ.get(SKIP_WARM_UP) != "1":
        with timings.phase(WARM_UP):
            operation(copied_base(layout, base, f"{candidate}_{WARM_UP}"))
    table = copied_base(layout, base, candidate)
    with timings.phase("total"):
        operation(table)
    return table


def wide_assets_default(layout: Layout, timings: Timings) -> None:
    """`WideTable.write` into a table created with the workload's options only: the library's default
    storage (merge, changelog append, MERGE into Delta)."""
    wide = _wide_write(layout, "default", "wide_assets_default", timings)
    _save_rows(wide.read(), layout, "wide_assets_default")


def wide_assets_jvm(layout: Layout, timings: Timings) -> None:
    """The default `WideTable.write` on classic JVM Spark with delta-spark (Delta's own reader)."""
    wide = _wide_write(layout, "default", "wide_assets_jvm", timings, jvm_spark())
    _save_rows(wide.read(), layout, "wide_assets_jvm")


def wide_assets_write_only(layout: Layout, timings: Timings) -> None:
    """`WideTable.write` into a write-only table (merge + changelog append); timed apart: the union read
    with the commit pending, compaction, the same read of the compacted table."""
    wide = _wide_write(layout, "write_only", "wide_assets_write_only", timings)
    with timings.phase("read_pending"):
        _materialize(wide.read())
    with timings.phase("compaction"):
        wide.compact()
    with timings.phase("read_compacted"):
        _materialize(wide.read())
    _save_rows(wide.read(), layout, "wide_assets_write_only")


def dagster_default(layout: Layout, timings: Timings) -> None:
    """The default `WideTable.write` as the body of a Dagster asset, materialized on a sqlite instance."""
    import dagster as dg

    from wide_assets import WideTable, get_spark

    table = copied_base(layout, "default", "dagster_default")
    spark = get_spark()

    @dg.asset(name="product_360_bench")
    def product_360_bench() -> Any:
        wide = WideTable.open(spark, table)
        return dg.MaterializeResult(
            metadata=wide.write(spark.read.parquet(str(layout.changes))).as_metadata()
        )

    with tempfile.TemporaryDirectory() as home:
        instance = dg.DagsterInstance.local_temp(home)
        with timings.phase("total"):
            result = dg.materialize([product_360_bench], instance=instance)
        instance.dispose()
    if not result.success:
        raise RuntimeError("the Dagster materialization failed")
    _save_rows(WideTable.open(spark, table).read(), layout, "dagster_default")


def _reduced_batch(spark: Any, layout: Layout) -> tuple[Any, str]:
    """(the batch as a frame, SQL over `{changes}` reducing it to one row per key)."""
    return spark.read.parquet(str(layout.changes)), f"({reduce_sql('{changes}')})"


def engine_merge_into(spark: Any, layout: Layout, table: Path) -> None:
    """The engine's own `MERGE INTO` of the batch, reduced in its SQL, into the plain Delta `table`."""
    changes, reduced = _reduced_batch(spark, layout)
    spark.sql(merge_sql(f"delta.`{table}`", reduced), changes=changes).collect()


def _engine_merge(spark: Any, layout: Layout, base: str, candidate: str, timings: Timings) -> None:
    """`engine_merge_into` a copy of the plain Delta `base`; the reduction alone is timed apart
    afterwards (`reduce_alone`, not in the total)."""
    table = _timed_on_a_copy(
        spark, layout, base, candidate, timings, lambda copy: engine_merge_into(spark, layout, copy)
    )
    changes, reduced = _reduced_batch(spark, layout)
    with timings.phase("reduce_alone"):
        _materialize(spark.sql(reduced, changes=changes))
    _save_rows(spark.read.format("delta").load(str(table)), layout, candidate)


def sail_merge(layout: Layout, timings: Timings) -> None:
    """Sail `MERGE INTO` a plain Delta table (copy-on-write: touched files are rewritten)."""
    from wide_assets import get_spark

    _engine_merge(get_spark(), layout, "delta", "sail_merge", timings)


def sail_merge_dv(layout: Layout, timings: Timings) -> None:
    """Sail `MERGE INTO` a plain Delta table with deletion vectors enabled."""
    from wide_assets import get_spark

    _engine_merge(get_spark(), layout, "delta_dv", "sail_merge_dv", timings)


def delta_spark_merge(layout: Layout, timings: Timings) -> None:
    """delta-spark's `MERGE INTO` on classic JVM Spark into a plain Delta table (copy-on-write)."""
    _engine_merge(jvm_spark(), layout, "delta", "delta_spark_merge", timings)


def delta_spark_merge_dv(layout: Layout, timings: Timings) -> None:
    """delta-spark's `MERGE INTO` on classic JVM Spark into a Delta table with deletion vectors."""
    _engine_merge(jvm_spark(), layout, "delta_dv", "delta_spark_merge_dv", timings)


def _recompute(spark: Any, layout: Layout, output: Path) -> None:
    """Full recompute: the N-way join of every source's latest state, overwriting the whole table."""
    frames = {s.name: spark.read.parquet(*layout.source_files(s)) for s in SOURCES}
    relations = {name: "{" + name + "}" for name in frames}
    spark.sql(latest_join_sql(relations), **frames).write.mode("overwrite").parquet(str(output))


def recompute_sail(layout: Layout, timings: Timings) -> None:
    """Full recompute on Sail (embedded), written as Parquet."""
    from wide_assets import get_spark

    spark = get_spark()
    with timings.phase("total"):
        _recompute(spark, layout, layout.output("recompute_sail"))


def recompute_jvm(layout: Layout, timings: Timings) -> None:
    """Full recompute on classic JVM Spark local[2] (2 GB driver), written as Parquet."""
    from wide_assets.session import EngineSettings, get_spark

    settings = EngineSettings(
        engine="classic", master="local[2]", with_delta=False, spark_conf={"spark.driver.memory": "2g"}
    )
    spark = get_spark(settings)
    with timings.phase("total"):
        _recompute(spark, layout, layout.output("recompute_jvm"))


def deltars_merge(layout: Layout, timings: Timings) -> None:
    """delta-rs MERGE into a copy of the plain Delta base of the batch reduced in pyarrow (timed)."""
    from deltalake import DeltaTable

    table = copied_base(layout, "delta", "deltars_merge")
    with timings.phase("total"):
        with timings.phase("reduce"):
            reduced = reduced_batch(layout)
        (
            DeltaTable(str(table))
            .merge(reduced, predicate=f"t.{KEY} = s.{KEY}", source_alias="s", target_alias="t")
            .when_matched_update(updates=merge_assignments())
            .when_not_matched_insert(updates={c: f"s.{c}" for c in COLUMN_NAMES})
            .execute()
        )


def duckdb_merge(layout: Layout, timings: Timings) -> None:
    """DuckDB: the base loaded into an in-memory table (untimed); MERGE INTO of the batch reduced in SQL,
    then COPY of the whole table to Parquet (both timed)."""
    import duckdb

    connection = duckdb.connect()
    connection.execute(f"CREATE TABLE wide AS SELECT * FROM read_parquet('{layout.initial}')")
    reduced = "(" + reduce_sql(f"read_parquet('{layout.changes}')") + ")"
    output = layout.output("duckdb_merge")
    output.mkdir(parents=True)
    with timings.phase("total"):
        with timings.phase("merge"):
            connection.execute(merge_sql("wide", reduced))
        connection.execute(f"COPY wide TO '{output / 'wide.parquet'}' (FORMAT parquet)")


def pyarrow_floor(layout: Layout, timings: Timings) -> None:
    """The floor: pyarrow reads the touched keys' rows of the base, computes their new images and writes
    them as one new Parquet file (no transaction log, no changelog, old rows not removed)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    output = layout.output("pyarrow_floor")
    output.mkdir(parents=True)
    with timings.phase("total"):
        reduced = reduced_batch(layout)
        # Uniform keys hit every row group, so the floor reads the file and keeps the touched rows (a
        # dataset filter gives the same rows, 4x slower).
        base = pq.read_table(layout.initial)
        stored = base.filter(pc.is_in(base[KEY], reduced[KEY]))
        joined = reduced.join(stored, KEY, join_type="left outer", right_suffix="_stored")
        images = {KEY: joined[KEY]}
        for source in SOURCES:
            stored_ts = joined[f"{source.ts}_stored"]
            for column in source.columns:
                # As `merge_assignments`: a reduced value wins unless older than the stored row.
                newer = pc.or_kleene(
                    pc.is_null(stored_ts), pc.greater_equal(joined[value_ts(source, column)], stored_ts)
                )
                wins = pc.fill_null(pc.and_kleene(pc.is_valid(joined[column]), newer), False)
                images[column] = pc.if_else(wins, joined[column], joined[f"{column}_stored"])
        pq.write_table(pa.table(images), output / "images.parquet")


CANDIDATES: dict[str, Callable[[Layout, Timings], None]] = {
    f.__name__: f
    for f in (
        wide_assets_default,
        wide_assets_jvm,
        wide_assets_write_only,
        dagster_default,
        deltars_merge,
        sail_merge,
        sail_merge_dv,
        delta_spark_merge,
        delta_spark_merge_dv,
        duckdb_merge,
        recompute_sail,
        recompute_jvm,
        pyarrow_floor,
    )
}


def workload_arguments(parser: argparse.ArgumentParser, changes: int) -> None:
    """The options of a script that runs on one generated workload: --rows, --changes, --workdir, --seed,
    --hot-keys."""
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=changes)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--hot-keys", action="store_true", help="the batch's keys from the top tenth of the key range"
    )


@contextmanager
def prepared_workload(args: argparse.Namespace) -> Iterator[tuple[Layout, pa.Table]]:
    """A temporary directory (under `args.workdir`) holding the workload of `workload_arguments`' options,
    the bases of `setup`, and the oracle's table, which is yielded with the layout."""
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        layout = Layout(Path(work), args.rows, args.changes, args.hot_keys)
        generate(layout, args.seed)
        setup(layout)
        yield layout, oracle(layout)


def setup(layout: Layout) -> None:
    """Create the bases holding the initial table: the WideTables of `WIDE_BASES`, loaded by one
    `WideTable.write` of the initial rows (a write-only base compacted after it), and the plain Delta
    tables of `PLAIN_BASES`, appended by Sail (created by delta-rs first when they have table
    properties)."""
    from deltalake import DeltaTable

    from wide_assets import WideTable, get_spark

    spark = get_spark()
    rows = spark.read.parquet(str(layout.initial))
    for name, extra in WIDE_BASES.items():
        path = layout.base(name)
        if path.exists():
            continue
        wide = WideTable.create(spark, path, COLUMNS, [KEY], {**OPTIONS, **extra})
        wide.write(rows)
        if wide.definition.merge.write_only:
            wide.compact()
    for name, configuration in PLAIN_BASES.items():
        path = layout.base(name)
        if path.exists():
            continue
        if configuration:
            DeltaTable.create(str(path), schema=SCHEMA, configuration=configuration)
        rows.write.format("delta").mode("append").save(str(path))


def main(argv: list[str]) -> None:
    """Run one candidate (or `setup`) and write its timings and per-phase peak RSS as JSON."""
    name, root, n, k, result = argv
    layout = Layout(Path(root), int(n), int(k))
    timings = Timings()
    if name == "setup":
        setup(layout)
    else:
        CANDIDATES[name](layout, timings)
    Path(result).write_text(
        json.dumps(
            {"seconds": timings, "high_water_mb": timings.high_water, "system_seconds": timings.system}
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
