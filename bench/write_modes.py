"""Deletion vectors (the default) vs copy-on-write vs write-only (+ one compaction), without and with
fixed buckets: seconds and files.

    .venv/bin/python bench/write_modes.py [--rows 1000000] [--batch 10000] [--batches 5] [--buckets 16]

A Paimon partial-update table with two sequence groups is loaded with `--rows` keys, then receives
`--batches` incremental writes of `--batch` records (90% updates of random existing keys, 10% new
keys), once in each mode; the write-only tables are compacted at the end. `files_rewritten` counts the
table's data files a write replaced: with buckets, only the buckets its keys hash to. Every table's
rows are compared with the copy-on-write table's (they must be equal). All numbers come from this run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable

from wide_assets import WideTable, get_spark

COLUMNS = [
    ("id", "bigint"),
    ("name", "string"),
    ("name_ts", "bigint"),
    ("price", "double"),
    ("price_ts", "bigint"),
]
OPTIONS = {
    "merge-engine": "partial-update",
    "fields.name_ts.sequence-group": "name",
    "fields.price_ts.sequence-group": "price",
}


def files(path: str) -> int:
    return len(DeltaTable(path).file_uris())


def data_files(path: str) -> dict[str, int]:
    """The table's live data files and their sizes (a file with a new deletion vector stays live)."""
    actions = pa.table(DeltaTable(path).get_add_actions(flatten=True))
    return dict(zip(actions["path"].to_pylist(), actions["size_bytes"].to_pylist(), strict=True))


def batch(spark: Any, rows: int, size: int, seed: int) -> Any:
    """`size` records: mostly updates of existing keys, one group each, some with an older timestamp."""
    return spark.sql(
        f"""SELECT CASE WHEN rand({seed}) < 0.9 THEN CAST(rand({seed + 1}) * {rows} AS BIGINT)
                        ELSE {rows} + {seed} * {size} + id END AS id,
                   CASE WHEN id % 2 = 0 THEN concat('n', id, '_', {seed}) END AS name,
                   CASE WHEN id % 2 = 0 THEN {seed} + 1 END AS name_ts,
                   CASE WHEN id % 2 = 1 THEN rand({seed + 2}) * 100 END AS price,
                   CASE WHEN id % 2 = 1 THEN {seed} + 1 END AS price_ts
            FROM range({size})"""
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--buckets", type=int, default=16)
    args = parser.parse_args()
    spark = get_spark()
    initial = spark.sql(
        f"SELECT id, concat('n', id) AS name, 0L AS name_ts, CAST(id % 100 AS DOUBLE) AS price, 0L AS price_ts "
        f"FROM range({args.rows})"
    )
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as lake:
        # Both modes must receive identical records: materialize the random batches once.
        batches = []
        for seed in range(1, args.batches + 1):
            batch(spark, args.rows, args.batch, seed).write.parquet(f"{lake}/batch{seed}")
            batches.append(spark.read.parquet(f"{lake}/batch{seed}"))
        tables = {}
        bucketed = {"bucket": str(args.buckets)}
        modes = {
            "deletion-vectors": {},
            "copy-on-write": {"deletion-vectors.enabled": "false"},
            "write-only": {"write-only": "true"},
            f"dv-{args.buckets}-buckets": bucketed,
            f"w-o-{args.buckets}-buckets": {"write-only": "true", **bucketed},
        }
        for mode, extra in modes.items():
            table = WideTable.create(spark, Path(lake) / mode, COLUMNS, ["id"], {**OPTIONS, **extra})
            started = time.perf_counter()
            table.write(initial)
            table.compact()
            load = time.perf_counter() - started
            writes = 0.0
            rewritten = 0
            written = 0
            for records in batches:
                before = data_files(table.path)
                started = time.perf_counter()
                table.write(records)
                writes += time.perf_counter() - started
                after = data_files(table.path)
                rewritten += len(before.keys() - after.keys())
                written += sum(size for path, size in after.items() if path not in before)
            files_before = files(table.path)
            started = time.perf_counter()
            table.compact()
            compaction = time.perf_counter() - started
            results[mode] = {
                "load_s": load,
                "writes_s": writes,
                "per_write_s": writes / args.batches,
                "table_files_after_writes": files_before,
                "files_rewritten_per_write": rewritten / args.batches,
                "mb_written_per_write": written / args.batches / 1e6,
                "log_files": files(table.changelog_path),
                "compaction_s": compaction,
                "table_files_after_compaction": files(table.path),
            }
            tables[mode] = table

        # Prices rounded: Sail 0.7.2 reads a double that is constant within a file from the file's JSON
        # statistics, which delta-rs's writer can write 1 ULP off.
        def content(table: WideTable) -> Any:
            return table.read().selectExpr("id", "name", "name_ts", "round(price, 9) AS price", "price_ts")

        expected = content(tables["copy-on-write"])
        equal = all(
            content(t).exceptAll(expected).count() == 0 and expected.exceptAll(content(t)).count() == 0
            for t in tables.values()
        )
    print(f"rows={args.rows} batch={args.batch} batches={args.batches} equal_results={equal}")
    keys = list(next(iter(results.values())))
    print(f"{'metric':<30}" + "".join(f"{mode:>22}" for mode in results))
    for key in keys:
        print(f"{key:<30}" + "".join(f"{results[mode][key]:>22.2f}" for mode in results))
    for mode in ("copy-on-write", "write-only"):
        ratio = results[mode]["per_write_s"] / results["deletion-vectors"]["per_write_s"]
        print(f"a {mode} write takes {ratio:.2f}x a default (deletion-vector) write")


if __name__ == "__main__":
    main()
