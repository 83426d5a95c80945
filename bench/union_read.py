"""`python -m bench.union_read`: a write-only table's union read with a commit pending, against the same
read of the compacted table.

    .venv/bin/python -m bench.union_read [--rows 1000000] [--changes 10000] [--reads 3] [--workdir DIR]
        [--seed 7]

On the product_360 workload (`bench.workload`), the batch is written into a fresh copy of the
write-only base of `bench.candidates.setup` (16 buckets, lookup-free) in one warm Sail session. The
table is then read `--reads` times with the commit pending, compacted, and read `--reads` times
again; every read is computed into Spark's `noop` sink. Both results are compared with the workload's
oracle. Prints each read's seconds, the compaction's, the ratio of the median pending read to the
median compacted read.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from bench.candidates import copied_base, prepared_workload, workload_arguments
from bench.workload import mismatch


def timed_reads(table: Any, reads: int) -> list[float]:
    """Seconds of each of `reads` union reads of `table`, computed into the `noop` sink."""
    seconds = []
    for _ in range(reads):
        started = time.perf_counter()
        table.read().write.format("noop").mode("overwrite").save()
        seconds.append(time.perf_counter() - started)
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workload_arguments(parser, changes=10_000)
    parser.add_argument("--reads", type=int, default=3)
    args = parser.parse_args(argv)

    from wide_assets import WideTable, get_spark

    with prepared_workload(args) as (layout, expected):
        spark = get_spark()
        copy = copied_base(layout, "write_only", "union_read")
        table = WideTable.open(spark, copy)
        table.write(spark.read.parquet(str(layout.changes)))
        pending = timed_reads(table, args.reads)
        pending_verdict = mismatch(table.read().toArrow(), expected) or "agrees with the oracle"
        started = time.perf_counter()
        table.compact()
        compaction = time.perf_counter() - started
        compacted = timed_reads(table, args.reads)
        compacted_verdict = mismatch(table.read().toArrow(), expected) or "agrees with the oracle"
        print(f"union read, commit pending: {' '.join(f'{s:.2f}' for s in pending)} s; {pending_verdict}")
        print(f"compaction: {compaction:.2f} s")
        print(
            f"read of the compacted table: {' '.join(f'{s:.2f}' for s in compacted)} s; {compacted_verdict}"
        )
        ratio = statistics.median(pending) / statistics.median(compacted)
        print(f"pending / compacted (medians): {ratio:.2f}x")


if __name__ == "__main__":
    main()
