"""`python -m bench.write_phases`: where one `WideTable.write` spends its time, phase by phase.

    .venv/bin/python -m bench.write_phases [--rows 1000000] [--changes 100000] [--base default]
        [--runs 3] [--workdir DIR] [--seed 7] [--engine sail|jvm] [--against-merge] [--hot-keys]
        [--z-order]

On the product_360 workload (`bench.workload`), the batch is written `--runs` times into fresh copies of
one base of `bench.candidates.setup` (`default` or `write_only`) in one warm session: Sail, or with
`--engine jvm` classic JVM Spark + delta-spark (its first run is the JVM's warm-up). The
library's own calls are timed where the write makes them: validation (`prepare_batch`), the merge and
the log append in one atomic commit (`log_frames.append_log`, which computes the merge), the counts
(`commit_counts`) and the table commit (`table_writes.apply_images`: reading the snapshot's files, the
engine writing the new images while the driver finds the rows they replace: these two overlap). The rest of the total is recovery, the
transaction check and metadata reads. Each result is checked against the workload's oracle (read
through Sail: a JVM driver refuses to collect a 10M-row table). `--against-merge` also times, after
each write, the engine's own `MERGE INTO` with deletion vectors of the same batch (reduced in its SQL)
into a copy of the plain Delta base, in the same warm session, and prints our write's ratio to it.
`--hot-keys` draws the batch's keys from the top tenth of the key range (`bench.workload.Layout.hot`);
`--z-order` first Z-orders both bases by the key (untimed: `WideTable.optimize(z_order=...)`, delta-rs
for the plain one), so that their files are clustered by key as a table kept so by its maintenance.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from bench.candidates import (
    WIDE_BASES,
    copied_base,
    engine_merge_into,
    jvm_spark,
    prepared_workload,
    workload_arguments,
)
from bench.workload import KEY, mismatch

# phase: (module or class where the write looks the function up, its name)
PHASES = {
    "validate": ("wide_assets.table.protocol", "prepare_batch"),
    "merge + log append": ("wide_assets.table.protocol", "append_log"),
    "counts": ("wide_assets.table.protocol", "commit_counts"),
    "table apply": ("wide_assets.table.recovery", "apply_images"),
    "  of which: snapshot files": ("wide_assets.table.delta_log", "live_files"),
    "  of which: engine writes images": ("wide_assets.table.table_writes", "write_files"),
    "  of which: replaced rows found": ("wide_assets.table.table_writes", "replaced_rows"),
}


def timed(seconds: dict[str, float], phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, adding its wall-clock time to `seconds[phase]`."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[phase] = seconds.get(phase, 0.0) + time.perf_counter() - started

    return wrapper


def instrument(seconds: dict[str, float]) -> None:
    """Wrap each phase's function where the write looks it up."""
    import importlib

    for phase, (owner, name) in PHASES.items():
        module, _, cls = owner.partition(":")
        target: Any = importlib.import_module(module)
        if cls:
            target = getattr(target, cls)
        setattr(target, name, timed(seconds, phase, getattr(target, name)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workload_arguments(parser, changes=100_000)
    parser.add_argument("--base", choices=sorted(WIDE_BASES), default="default")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engine", choices=["sail", "jvm"], default="sail")
    parser.add_argument("--against-merge", action="store_true")
    parser.add_argument("--z-order", action="store_true")
    args = parser.parse_args(argv)

    from wide_assets import WideTable, get_spark

    with prepared_workload(args) as (layout, expected):
        spark = jvm_spark() if args.engine == "jvm" else get_spark()
        if args.z_order:
            from deltalake import DeltaTable

            WideTable.open(get_spark(), layout.base(args.base)).optimize(z_order=[KEY])
            DeltaTable(str(layout.base("delta_dv"))).optimize.z_order([KEY])
        seconds: dict[str, float] = {}
        instrument(seconds)
        for run in range(args.runs):
            table = WideTable.open(spark, copied_base(layout, args.base, f"run{run}"))
            seconds.clear()
            started = time.perf_counter()
            table.write(spark.read.parquet(str(layout.changes)))
            total = time.perf_counter() - started
            written = WideTable.open(get_spark(), table.path).read().toArrow()
            verdict = mismatch(written, expected) or "agrees with the oracle"
            phases = ", ".join(f"{phase} {seconds.get(phase, 0.0):.2f}" for phase in PHASES)
            print(f"run {run}: {total:.2f} s ({phases}); {verdict}", flush=True)
            if args.against_merge:
                target = copied_base(layout, "delta_dv", f"merge{run}")
                started = time.perf_counter()
                engine_merge_into(spark, layout, target)
                merge = time.perf_counter() - started
                print(
                    f"  the engine's own DV MERGE: {merge:.2f} s; ours / it: {total / merge:.2f}x", flush=True
                )


if __name__ == "__main__":
    main()
