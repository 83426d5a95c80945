"""Where a small write's time goes on classic JVM Spark with delta-spark: seconds and Spark jobs per write.

    python -m bench.jvm_write_jobs [--writes 4] [--rows 20]

Creates a partial-update table in a temporary folder, writes `--rows` rows `--writes` times through
`WideTable.write` on `local[2]` with Delta's jars (`make jars`), and prints each write's seconds and the
number of Spark jobs it started, then the first stage name of every job of the last write (Delta's
snapshot state reconstruction shows as `recordDeltaOperationInternal` and `CompletableFuture` stages).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from wide_assets import WideTable
from wide_assets.session import EngineSettings, get_spark


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=4)
    parser.add_argument("--rows", type=int, default=20)
    args = parser.parse_args(argv)
    spark = get_spark(EngineSettings(engine="classic", master="local[2]", with_delta=True))
    tracker = spark.sparkContext.statusTracker()
    with tempfile.TemporaryDirectory() as folder:
        columns = [("k", "bigint"), ("a", "string"), ("b", "bigint")]
        table = WideTable.create(
            spark, Path(folder) / "t", columns, ["k"], {"merge-engine": "partial-update"}
        )
        jobs: list[int] = []
        for write in range(args.writes):
            rows = [(key, f"a{write}", write) for key in range(args.rows)]
            frame = spark.createDataFrame(rows, "k bigint, a string, b bigint")
            before = set(tracker.getJobIdsForGroup(None))
            started = time.perf_counter()
            table.write(frame)
            seconds = time.perf_counter() - started
            jobs = sorted(set(tracker.getJobIdsForGroup(None)) - before)
            print(f"write {write}: {seconds:.2f} s, {len(jobs)} Spark jobs")
        print("jobs of the last write (first stage of each):")
        for job in jobs:
            info = tracker.getJobInfo(job)
            stage = tracker.getStageInfo(info.stageIds[0]) if info and info.stageIds else None
            print(f"  {job}: {stage.name if stage else '?'}")


if __name__ == "__main__":
    main()
