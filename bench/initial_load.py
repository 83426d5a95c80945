"""`python -m bench.initial_load`: an initial load through `WideTable.write` against a plain Delta append.

    .venv/bin/python -m bench.initial_load [--rows 1000000] [--repeats 3] [--workdir DIR] [--seed 7]
        [--json FILE] [--quiet]

On the product_360 workload's initial table (`bench.workload`: N products, every source loaded), the
same rows are loaded, in turn and each into a fresh directory, by: a plain Delta append on the same
engine (Sail) from Parquet; `write` of that Spark frame into a new partial-update WideTable (a first
write into an empty table); a plain delta-rs append of the rows as a pyarrow Table; and `write` of
that pyarrow Table, of it as a pandas frame and of a Spark frame built from that pandas frame by
`createDataFrame` (untimed). Every result, read back through Spark (delta-rs 1.6's
Arrow reader refuses a table whose protocol has deletion vectors), is compared with the generated rows
as the oracle. Prints the median seconds of each and the ratios of each `write` to the plain load of
the same input, and writes the medians to `--json` (for `bench.product_360`). A progress bar (repeat
and load) is drawn on stderr when it is a terminal, unless `--quiet`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.workload import COLUMNS, KEY, OPTIONS, Layout, generate
from demos.progress import note, steps


def same_rows(rows: Any, expected: pa.Table) -> bool:
    """Whether the Spark DataFrame `rows` holds exactly `expected`'s rows."""
    got = rows.select(*expected.column_names).toArrow().sort_by(KEY)
    return bool(got.cast(expected.schema).equals(expected.sort_by(KEY)))


@dataclass(frozen=True)
class Loaded:
    """One timed load: its seconds, and how to read its result back through Spark."""

    seconds: float
    read: Callable[[], Any]


def plain_append(spark: Any, layout: Layout, expected: pa.Table, target: Path) -> Loaded:
    """Sail appends the Parquet rows to a plain Delta table."""
    start = time.perf_counter()
    spark.read.parquet(str(layout.initial)).write.format("delta").mode("append").save(str(target))
    seconds = time.perf_counter() - start
    return Loaded(seconds, lambda: spark.read.format("delta").load(str(target)))


def wide_write(
    rows: Callable[[Any, Layout, pa.Table], Any],
) -> Callable[[Any, Layout, pa.Table, Path], Loaded]:
    """`WideTable.write` of the rows `rows` hands it, into a new partial-update table."""

    def load(spark: Any, layout: Layout, expected: pa.Table, target: Path) -> Loaded:
        from wide_assets import WideTable

        table = WideTable.create(spark, target, COLUMNS, [KEY], OPTIONS)
        changes = rows(spark, layout, expected)
        start = time.perf_counter()
        table.write(changes)
        return Loaded(time.perf_counter() - start, table.read)

    return load


def deltars_append(spark: Any, layout: Layout, expected: pa.Table, target: Path) -> Loaded:
    """delta-rs appends the Arrow rows to a plain Delta table (the in-process floor)."""
    from deltalake import write_deltalake

    start = time.perf_counter()
    write_deltalake(str(target), expected)
    seconds = time.perf_counter() - start
    return Loaded(seconds, lambda: spark.read.format("delta").load(str(target)))


LOADS: dict[str, Callable[[Any, Layout, pa.Table, Path], Loaded]] = {
    "plain Delta append": plain_append,
    "WideTable.write": wide_write(lambda spark, layout, _: spark.read.parquet(str(layout.initial))),
    "delta-rs append from Arrow": deltars_append,
    "WideTable.write from Arrow": wide_write(lambda spark, layout, expected: expected),
    "WideTable.write from pandas": wide_write(lambda spark, layout, expected: expected.to_pandas()),
    # The frame a user builds from pandas rows: its plan carries them (at 1M rows 140 MB, over gRPC's
    # 128 MB: before the write staged such rows, it could not even send its first query).
    "WideTable.write from createDataFrame": wide_write(
        lambda spark, layout, expected: spark.createDataFrame(expected.combine_chunks().to_pandas())
    ),
}
# (wide_assets load, the plain load of the same input)
RATIOS = (
    ("WideTable.write", "plain Delta append"),
    ("WideTable.write from Arrow", "delta-rs append from Arrow"),
    ("WideTable.write from pandas", "delta-rs append from Arrow"),
    ("WideTable.write from createDataFrame", "plain Delta append"),
)


def main(argv: list[str] | None = None) -> int:
    """Time both loads; 0 when both results are oracle-exact."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None, help="write the median seconds here")
    parser.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)

    from wide_assets import get_spark

    root = args.workdir or Path(tempfile.mkdtemp(prefix="initial_load_"))
    layout = Layout(root, args.rows, 1)
    with steps(1 + len(LOADS) * args.repeats, quiet=args.quiet) as progress:
        progress.set_description("generate")
        generate(layout, args.seed)
        expected = pq.read_table(layout.initial)
        spark = get_spark()
        progress.update()
        timings: dict[str, list[float]] = {name: [] for name in LOADS}
        for repeat in range(args.repeats):
            for name, load in LOADS.items():
                target = root / f"{name.replace(' ', '_')}_{repeat}"
                progress.set_description(f"repeat {repeat + 1}/{args.repeats}: {name}")
                rows = load(spark, layout, expected, target)
                timings[name].append(rows.seconds)
                if not same_rows(rows.read(), expected):
                    note(f"{name}: MISMATCH with the generated rows (repeat {repeat})")
                    return 1
                for path in (target, Path(f"{target}_changelog")):
                    shutil.rmtree(path, ignore_errors=True)
                progress.update()
    medians = {name: statistics.median(seconds) for name, seconds in timings.items()}
    print(f"N={args.rows}, {args.repeats} repeats, every load oracle-exact")
    for name, seconds in timings.items():
        print(f"  {name:34} median {medians[name]:.2f} s  ({', '.join(f'{s:.2f}' for s in seconds)})")
    for wide, plain in RATIOS:
        print(f"  ratio {wide} / {plain}: {medians[wide] / medians[plain]:.2f}x")
    if args.json is not None:
        args.json.write_text(json.dumps(medians))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
