"""What the RoaringBitmap boundary UDFs cost: the same merge with an `rbm32` column vs a `sum` column.

    .venv/bin/python bench/rbm_udf.py [--keys 2000] [--records 20000] [--ids 50] [--repeat 3]

Both tables are Paimon aggregation tables on Delta, written through `WideTable.write` on the default
engine; each record carries a bitmap of `--ids` random reviewer ids (rbm32) or a count (sum). Prints
the median seconds of `--repeat` writes and the ratio, measured in this one run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from pyroaring import BitMap

from wide_assets import WideTable, get_spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--ids", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    spark = get_spark()
    records = [
        (rng.randrange(args.keys), BitMap(rng.sample(range(1_000_000), args.ids)).serialize(), args.ids)
        for _ in range(args.records)
    ]
    bitmaps = spark.createDataFrame([(k, b) for k, b, _ in records], "k int, ids binary")
    counts = spark.createDataFrame([(k, n) for k, _, n in records], "k int, n bigint")
    timings: dict[str, list[float]] = {"rbm32": [], "sum": []}
    with tempfile.TemporaryDirectory() as lake:
        for run in range(args.repeat):
            for name, frame, column in (
                ("rbm32", bitmaps, ("ids", "binary")),
                ("sum", counts, ("n", "bigint")),
            ):
                options = {"merge-engine": "aggregation", f"fields.{column[0]}.aggregate-function": name}
                table = WideTable.create(
                    spark, Path(lake) / f"{name}{run}", [("k", "int"), column], ["k"], options
                )
                table.write(frame)  # first write: all inserts; the timed one merges into stored rows
                started = time.perf_counter()
                table.write(frame)
                timings[name].append(time.perf_counter() - started)
    rbm, plain = statistics.median(timings["rbm32"]), statistics.median(timings["sum"])
    print(f"records={args.records} keys={args.keys} ids/bitmap={args.ids} repeat={args.repeat}")
    print(f"rbm32 write: {rbm:.2f} s   sum write: {plain:.2f} s   rbm32/sum = {rbm / plain:.2f}x")


if __name__ == "__main__":
    main()
