"""The benchmark's candidates; each runs in a fresh process: `python -m bench.candidates <name> <root> <n> <k> <result.json>`.

A candidate does its untimed setup (engine start, table copy, loading a base it keeps in memory), then
the timed incremental apply, and leaves the new table state persisted at `Layout.output(name)`
(Delta or Parquet), which the driver reads and compares to the oracle.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.workload import COLUMN_NAMES, COLUMNS, KEY, OPTIONS, SOURCES, Layout

# The write-only candidate's bucket count (a storage option: Paimon's `bucket`).
BUCKETS = 16


class Timings(dict[str, float]):
    """Named wall-clock phases in seconds; `total` is what the benchmark reports."""

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self[name] = self.get(name, 0.0) + time.perf_counter() - started


# ------------------------------------------------------------------------------------------ shared SQL
def latest_join_sql(relations: dict[str, str]) -> str:
    """Each source's newest row per key by op time, full-outer-joined on the key (the N-way join)."""
    ctes = []
    for source in SOURCES:
        columns = ", ".join((KEY, *source.columns))
        ctes.append(
            f"latest_{source.name} AS (SELECT {columns} FROM (SELECT {columns}, row_number() OVER "
            f"(PARTITION BY {KEY} ORDER BY {source.ts} DESC) AS _rank FROM {relations[source.name]}) "
            "AS ranked WHERE _rank = 1)"
        )
    joined = f"latest_{SOURCES[0].name}"
    keys = [f"latest_{SOURCES[0].name}.{KEY}"]
    for source in SOURCES[1:]:
        joined += f" FULL OUTER JOIN latest_{source.name} ON latest_{source.name}.{KEY} = coalesce({', '.join(keys)})"
        keys.append(f"latest_{source.name}.{KEY}")
    values = ", ".join(f"latest_{s.name}.{c}" for s in SOURCES for c in s.columns)
    return f"WITH {', '.join(ctes)} SELECT coalesce({', '.join(keys)}) AS {KEY}, {values} FROM {joined}"


def merge_assignments() -> dict[str, str]:
    """MERGE update expressions (target `t`, reduced batch `s`): a source's columns change when its op
    time is newer or equal (Paimon's sequence-group rule); the same text for delta-rs and DuckDB."""
    updates = {}
    for source in SOURCES:
        newer = f"s.{source.ts} IS NOT NULL AND (t.{source.ts} IS NULL OR s.{source.ts} >= t.{source.ts})"
        for column in source.columns:
            updates[column] = f"CASE WHEN {newer} THEN s.{column} ELSE t.{column} END"
    return updates


def reduced_batch(layout: Layout) -> Any:
    """The batch as one row per key in pyarrow: each source's newest record, NULL where it has none."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    changes = pq.read_table(layout.changes)
    reduced = None
    for source in SOURCES:
        records = changes.filter(pc.is_valid(changes[source.ts])).select([KEY, *source.columns])
        records = records.sort_by([(KEY, "ascending"), (source.ts, "descending")])
        keys = records[KEY].to_numpy()
        latest = records.take(np.flatnonzero(np.append(True, keys[1:] != keys[:-1])))
        reduced = latest if reduced is None else reduced.join(latest, KEY, join_type="full outer")
    return reduced.select(COLUMN_NAMES)


# ------------------------------------------------------------------------------------------ candidates
def _wide_write(layout: Layout, mode: str, timings: Timings) -> Any:
    """Copy the `mode` base WideTable to this candidate's output (untimed) and time one `write`."""
    from wide_assets import WideTable, get_spark

    table = _copied_base(layout, mode, layout.output(f"wide_assets_{mode}"))
    spark = get_spark()
    wide = WideTable.open(spark, table)
    with timings.phase("total"):
        wide.write(spark.read.parquet(str(layout.changes)))
    return wide


def _copied_base(layout: Layout, mode: str, output: Path) -> Path:
    """A private copy of the base table and its changelog (writes change them in place)."""
    base = layout.base(mode)
    for suffix in ("", "_changelog"):
        shutil.copytree(f"{base}{suffix}", f"{output / 'wide'}{suffix}")
    # The copy's writeback (about 1 GB at N=10M) must not compete with the timed write.
    os.sync()
    return output / "wide"


def wide_assets_cow(layout: Layout, timings: Timings) -> None:
    """`WideTable.write` into a copy-on-write table: merge, changelog append, MERGE into Delta."""
    _wide_write(layout, "cow", timings)


def wide_assets_write_only(layout: Layout, timings: Timings) -> None:
    """`WideTable.write` into a write-only table (merge + changelog append); compaction timed apart."""
    wide = _wide_write(layout, "write_only", timings)
    with timings.phase("compaction"):
        wide.compact()


def wide_assets_cow_dv(layout: Layout, timings: Timings) -> None:
    """`WideTable.write` into a copy-on-write table whose MERGE writes deletion vectors instead of
    rewriting files; its rows are saved through Spark afterwards (untimed) for the check."""
    wide = _wide_write(layout, "cow_dv", timings)
    wide.read().write.parquet(str(layout.output("wide_assets_cow_dv") / "rows"))


def dagster_cow(layout: Layout, timings: Timings) -> None:
    """The copy-on-write `WideTable.write` as the body of a Dagster asset, materialized on a sqlite instance."""
    import dagster as dg

    from wide_assets import WideTable, get_spark

    table = _copied_base(layout, "cow", layout.output("dagster_cow"))
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
    """delta-rs MERGE of the batch reduced to one row per key (in pyarrow, timed)."""
    from deltalake import DeltaTable

    table = _copied_base(layout, "cow", layout.output("deltars_merge"))
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
    relations = {
        s.name: f"(SELECT {KEY}, {', '.join(s.columns)} FROM read_parquet('{layout.changes}') "
        f"WHERE {s.ts} IS NOT NULL)"
        for s in SOURCES
    }
    sets = ", ".join(f"{c} = {e}" for c, e in merge_assignments().items())
    output = layout.output("duckdb_merge")
    output.mkdir(parents=True)
    with timings.phase("total"):
        with timings.phase("merge"):
            connection.execute(
                f"MERGE INTO wide AS t USING ({latest_join_sql(relations)}) AS s ON t.{KEY} = s.{KEY} "
                f"WHEN MATCHED THEN UPDATE SET {sets} "
                f"WHEN NOT MATCHED THEN INSERT ({', '.join(COLUMN_NAMES)}) "
                f"VALUES ({', '.join(f's.{c}' for c in COLUMN_NAMES)})"
            )
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
        joined = reduced.join(stored, KEY, join_type="left outer", right_suffix="__t")
        images = {KEY: joined[KEY]}
        for source in SOURCES:
            new, old = joined[source.ts], joined[f"{source.ts}__t"]
            newer = pc.and_kleene(pc.is_valid(new), pc.or_kleene(pc.is_null(old), pc.greater_equal(new, old)))
            for column in source.columns:
                images[column] = pc.if_else(
                    pc.fill_null(newer, False), joined[column], joined[f"{column}__t"]
                )
        pq.write_table(pa.table(images), output / "images.parquet")


CANDIDATES: dict[str, Callable[[Layout, Timings], None]] = {
    f.__name__: f
    for f in (
        wide_assets_cow,
        wide_assets_write_only,
        wide_assets_cow_dv,
        dagster_cow,
        recompute_sail,
        recompute_jvm,
        deltars_merge,
        duckdb_merge,
        pyarrow_floor,
    )
}


def setup(layout: Layout) -> None:
    """Create the copy-on-write and write-only base WideTables holding the initial table: its rows are
    appended to the Delta table directly (as `WideTable.rebuild` writes them), so 10M rows load fast."""
    from wide_assets import WideTable, get_spark
    from wide_assets.spec import BUCKET_COLUMN

    spark = get_spark()
    modes = {
        "cow": {},
        "write_only": {"write-only": "true", "bucket": str(BUCKETS)},
        "cow_dv": {"deletion-vectors.enabled": "true"},
    }
    for mode, extra in modes.items():
        path = layout.base(mode)
        if path.exists():
            continue
        bucketing = WideTable.create(spark, path, COLUMNS, [KEY], {**OPTIONS, **extra}).spec.bucketing
        rows = spark.read.parquet(str(layout.initial))
        if bucketing is None:
            rows.write.format("delta").mode("append").save(str(path))
        else:
            rows = rows.selectExpr("*", f"{bucketing.expression()} AS {BUCKET_COLUMN}")
            rows.write.format("delta").mode("append").partitionBy(BUCKET_COLUMN).save(str(path))


def main(argv: list[str]) -> None:
    """Run one candidate (or `setup`) and write its timings as JSON."""
    name, root, n, k, result = argv
    layout = Layout(Path(root), int(n), int(k))
    timings = Timings()
    if name == "setup":
        setup(layout)
    else:
        CANDIDATES[name](layout, timings)
    Path(result).write_text(json.dumps(timings))


if __name__ == "__main__":
    main(sys.argv[1:])
