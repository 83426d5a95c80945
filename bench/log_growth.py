"""Whether small writes slow down as a table's history grows: seconds per write, block by block.

    python -m bench.log_growth [--engine sail] [--writes 80] [--block 20] [--rows 20]

Creates a partial-update table with a lookup changelog in a temporary folder and writes `--rows` rows
`--writes` times through `WideTable.write` (half of them updates of keys written before). Prints the
mean seconds per write of each block of `--block` writes, and the ratio of the last block's mean to
the first's: 1.0 when a write's cost does not depend on how many commits came before it. Every write
reads the commit log and the table, which gain files with each commit; a read that touched all of
them, or a Delta log replayed from its first commit, shows as a ratio that grows with `--writes`.
The table is checked against a plain dictionary of the rows written (exit status 1 when it differs).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from wide_assets import WideTable
from wide_assets.session import EngineSettings, get_spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="sail", choices=["sail", "classic"])
    parser.add_argument("--writes", type=int, default=80)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--rows", type=int, default=20)
    args = parser.parse_args(argv)
    spark = get_spark(EngineSettings(engine=args.engine))
    oracle: dict[int, str] = {}
    seconds: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        table = WideTable.create(
            spark,
            Path(folder) / "t",
            [("k", "bigint"), ("v", "string")],
            ["k"],
            {"merge-engine": "partial-update", "changelog-producer": "lookup"},
        )
        for write in range(args.writes):
            # Half new keys, half keys of the write before: every write updates rows of older files.
            keys = [write * args.rows // 2 + i for i in range(args.rows)]
            rows = [(key, f"w{write}") for key in keys]
            frame = spark.createDataFrame(rows, "k bigint, v string")
            started = time.perf_counter()
            table.write(frame)
            seconds.append(time.perf_counter() - started)
            oracle.update(rows)
        held = {row.k: row.v for row in table.read().collect()}
    blocks = [seconds[i : i + args.block] for i in range(0, len(seconds), args.block)]
    for number, block in enumerate(blocks):
        first = number * args.block
        print(f"writes {first}-{first + len(block) - 1}: {statistics.mean(block):.3f} s per write")
    print(f"last block / first block: {statistics.mean(blocks[-1]) / statistics.mean(blocks[0]):.2f}")
    if held != oracle:
        print("the table differs from the rows written")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
