"""`python -m bench.repeated_writes`: one size's default write repeated, each in a fresh process, in one
Sail mode; how many finished equal to the oracle, failed, or stalled.

    .venv/bin/python -m bench.repeated_writes [--size 1000000:100000] [--repeats 20]
        [--mode local-cluster] [--workers 2] [--workdir DIR] [--seed 7]

Sail 0.7.2's local-cluster mode stalled for good in 3 of 6 such writes before the engine wrote the
table's files itself (issue #20); a stall is a candidate process tree that used no CPU time for
`bench.product_360.STALL_TIMEOUT_S` seconds, killed and counted. Exit status 0 when every repeat
finished equal to the oracle.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench.product_360 import parse_sizes, prepare, run_candidate
from bench.scale import mode_env
from bench.workload import Layout

CANDIDATE = "wide_assets_default"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1000000:100000", help="N:K")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--mode", default="local-cluster", choices=["local", "local-cluster"])
    parser.add_argument("--workers", type=int, default=2, help="local-cluster workers")
    parser.add_argument("--workdir", type=Path, help="parent of the temporary data directory")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    [(n, k)] = parse_sizes(args.size)
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        layout = Layout(Path(work), n, k)
        expected = prepare(layout, args.seed)
        runs = [
            run_candidate(CANDIDATE, layout, expected, mode_env(args.mode, args.workers))
            for _ in range(args.repeats)
        ]
    stalled = [r for r in runs if r.error is not None and r.error.startswith("stalled")]
    failed = [r for r in runs if r.error is not None and r not in stalled]
    finished = [r for r in runs if r.error is None]
    median = statistics.median(r.seconds for r in finished) if finished else float("nan")
    print(
        f"N={n} K={k} mode={args.mode}: {len(finished)}/{args.repeats} finished equal to the oracle "
        f"(median {median:.2f} s), {len(stalled)} stalled, {len(failed)} failed"
    )
    for run in failed:
        print(f"  failed: {(run.error or '').splitlines()[-1]}")
    return 0 if len(finished) == args.repeats else 1


if __name__ == "__main__":
    raise SystemExit(main())
