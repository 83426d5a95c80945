"""`python -m bench.initial_load`: an initial load through `WideTable.write` against a plain Delta append.

    .venv/bin/python -m bench.initial_load [--rows 1000000] [--repeats 3] [--workdir DIR] [--seed 7]
        [--json FILE] [--quiet]

On the product_360 workload's initial table (`bench.workload`: N products, every source loaded), the
same rows are written once by a plain Delta append on the same engine (Sail) and once through
`write` into a new partial-update WideTable (a first write into an empty table), alternately, each in
a fresh directory; both results, read back through Spark (delta-rs 1.6 cannot read a table whose
protocol has deletion vectors), are compared with the generated rows as the oracle. Prints the median
seconds of each and their ratio, and writes the medians to `--json` (for `bench.product_360`). A
progress bar (repeat and load) is drawn on stderr when it is a terminal, unless `--quiet`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.workload import COLUMNS, KEY, OPTIONS, Layout, generate
from wide_assets.progress import note, steps


def same_rows(rows: Any, expected: pa.Table) -> bool:
    """Whether the Spark DataFrame `rows` holds exactly `expected`'s rows."""
    got = rows.select(*expected.column_names).toArrow().sort_by(KEY)
    return bool(got.cast(expected.schema).equals(expected.sort_by(KEY)))


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

    from wide_assets import WideTable, get_spark

    root = args.workdir or Path(tempfile.mkdtemp(prefix="initial_load_"))
    layout = Layout(root, args.rows, 1)
    with steps(1 + 2 * args.repeats, quiet=args.quiet) as progress:
        progress.set_description("generate")
        generate(layout, args.seed)
        expected = pq.read_table(layout.initial)
        spark = get_spark()
        progress.update()
        timings: dict[str, list[float]] = {"plain Delta append": [], "WideTable.write": []}
        for repeat in range(args.repeats):
            plain, wide = root / f"plain_{repeat}", root / f"wide_{repeat}"
            progress.set_description(f"repeat {repeat + 1}/{args.repeats}: plain Delta append")
            start = time.perf_counter()
            spark.read.parquet(str(layout.initial)).write.format("delta").mode("append").save(str(plain))
            timings["plain Delta append"].append(time.perf_counter() - start)
            progress.update()
            progress.set_description(f"repeat {repeat + 1}/{args.repeats}: WideTable.write")
            table = WideTable.create(spark, wide, COLUMNS, [KEY], OPTIONS)
            start = time.perf_counter()
            table.write(spark.read.parquet(str(layout.initial)))
            timings["WideTable.write"].append(time.perf_counter() - start)
            results = {
                "plain Delta append": spark.read.format("delta").load(str(plain)),
                "WideTable.write": table.read(),
            }
            for name, rows in results.items():
                if not same_rows(rows, expected):
                    note(f"{name}: MISMATCH with the generated rows (repeat {repeat})")
                    return 1
            for path in (plain, wide, Path(f"{wide}_changelog")):
                shutil.rmtree(path, ignore_errors=True)
            progress.update()
    medians = {name: statistics.median(seconds) for name, seconds in timings.items()}
    print(f"N={args.rows}, {args.repeats} repeats, both oracle-exact")
    for name, seconds in timings.items():
        print(f"  {name:20} median {medians[name]:.2f} s  ({', '.join(f'{s:.2f}' for s in seconds)})")
    print(f"  ratio write/append: {medians['WideTable.write'] / medians['plain Delta append']:.2f}x")
    if args.json is not None:
        args.json.write_text(json.dumps(medians))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
