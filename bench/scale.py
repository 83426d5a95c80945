"""Scale figures for product_360: time and memory as N and K grow, on embedded Sail and its local cluster.

    .venv/bin/python -m bench.scale [--sizes 1000000:10000,1000000:100000,10000000:10000,...]
        [--modes local,local-cluster] [--workers 2] [--candidates a,b] [--workdir DIR]
        [--out bench/SCALE.md] [--seed 7] [--initial-load] [--quiet]

The product_360 workload and candidates of `bench.product_360`, on the same generated data per size:
each candidate that runs on Sail runs once per mode (`SAIL_MODE=local`, or `local-cluster` with
`--workers` workers), in a fresh process, and its result is checked against the numpy oracle; the
peers that do not use Sail run once. A size's files are deleted as soon as its last K has run, so the
disk holds one N at a time. Writes a report with a table per size, the growth with N and with K,
where each candidate's memory peaked, and every target of `bench.product_360` evaluated in each mode
(with `--initial-load`, the initial-load targets too): one run prints the whole picture.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bench.candidates import CANDIDATES
from bench.product_360 import (
    LABELS,
    InitialLoad,
    Run,
    environment,
    initial_load_report,
    parse_sizes,
    prepare,
    run_candidate,
    run_initial_load,
    targets,
)
from bench.workload import Layout
from demos.progress import steps

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = "1000000:10000,1000000:100000,10000000:10000,10000000:100000,10000000:1000000"
DEFAULT_CANDIDATES = "wide_assets_default,wide_assets_write_only,sail_merge,deltars_merge"
DEFAULT_MODES = "local,local-cluster"
# Candidates whose engine is Sail, so the mode applies to them.
ON_SAIL = {
    "wide_assets_default",
    "wide_assets_write_only",
    "dagster_default",
    "sail_merge",
    "sail_merge_dv",
    "recompute_sail",
}
# Phases whose growth is reported, per candidate (its `total` always).
GROWN_PHASES = {"wide_assets_write_only": ("total", "compaction", "read_pending", "read_compacted")}

Size = tuple[int, int]
# (candidate, mode) -> its run; the mode is "" for a candidate that does not use Sail.
Runs = dict[tuple[str, str], Run]


def mode_env(mode: str, workers: int) -> dict[str, str]:
    """The environment that puts a Sail candidate in `mode`."""
    if mode == "local":
        return {"SAIL_MODE": "local"}
    if mode == "local-cluster":
        return {"SAIL_MODE": "local-cluster", "SAIL_CLUSTER__WORKER_INITIAL_COUNT": str(workers)}
    raise ValueError(f"unknown mode {mode!r}; known: local, local-cluster")


def runs_of(candidates: list[str], modes: list[str]) -> Iterator[tuple[str, str]]:
    """(candidate, mode) in running order; a candidate that does not use Sail runs once, mode ""."""
    for name in candidates:
        yield from ((name, mode) for mode in modes) if name in ON_SAIL else [(name, "")]


def column(name: str, mode: str) -> str:
    return f"{LABELS[name]}{f' [{mode}]' if mode else ''}"


def seconds(run: Run, phase: str = "total") -> str:
    if run.error is not None:
        return "failed"
    return f"{run.phases[phase]:.2f}" if phase in run.phases else "-"


def size_report(n: int, k: int, runs: Runs) -> list[str]:
    """One size's runs: seconds, peak RSS (whole run and per phase), the oracle's verdict."""
    lines = [
        f"### N = {n:,}, K = {k:,}",
        "",
        "| candidate [mode] | seconds | peak RSS MB (process tree) | details (s) | peak RSS MB per phase (candidate process) | oracle |",
        "|---|---:|---:|---|---|---|",
    ]
    for (name, mode), run in runs.items():
        details = ", ".join(f"{p} {s:.2f}" for p, s in run.phases.items() if p != "total")
        marks = ", ".join(f"{p} {mb:,.0f}" for p, mb in run.high_water.items())
        reason = (run.error or "").strip().splitlines()[-1:] or ["no output (killed)"]
        verdict = "agrees" if run.error is None else "**DIFFERS/FAILED**: " + reason[0][:160]
        lines.append(
            f"| {column(name, mode)} | {seconds(run)} | {run.peak_mb:,.0f} | {details} | {marks} | {verdict} |"
        )
    return [*lines, ""]


def growth_report(results: dict[Size, Runs]) -> list[str]:
    """Time ratios between sizes that differ in one of N and K only (the other equal)."""
    pairs = [
        (small, large)
        for small in results
        for large in results
        if small != large
        and ((small[0] == large[0] and small[1] < large[1]) or (small[1] == large[1] and small[0] < large[0]))
    ]
    # Only neighbours: no pair with a size strictly between them on the same axis.
    pairs = [(s, g) for s, g in pairs if not any((s, m) in pairs and (m, g) in pairs for m in results)]
    if not pairs:
        return []
    lines = [
        "| candidate [mode] | phase | " + " | ".join(f"{describe(s, g)}" for s, g in pairs) + " |",
        "|---|---|" + "---:|" * len(pairs),
    ]
    keys = list(next(iter(results.values())))
    for name, mode in keys:
        for phase in GROWN_PHASES.get(name, ("total",)):
            cells = [
                ratio(results[small].get((name, mode)), results[large].get((name, mode)), phase)
                for small, large in pairs
            ]
            lines.append(f"| {column(name, mode)} | {phase} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def ratio(small: Run | None, large: Run | None, phase: str) -> str:
    """`large`'s seconds of `phase` over `small`'s, or "-" when either failed or lacks the phase."""
    if small is None or large is None or small.error is not None or large.error is not None:
        return "-"
    if phase not in small.phases or phase not in large.phases:
        return "-"
    return f"{large.phases[phase] / small.phases[phase]:.2f}x"


def describe(small: Size, large: Size) -> str:
    (n1, k1), (n2, k2) = small, large
    if n1 == n2:
        return f"K {k1:,} -> {k2:,} ({k2 / k1:g}x) at N={n1:,}"
    return f"N {n1:,} -> {n2:,} ({n2 / n1:g}x) at K={k1:,}"


def in_mode(results: dict[Size, Runs], mode: str) -> dict[Size, list[Run]]:
    """Per size, the runs of the Sail candidates in `mode` and of the peers that do not use Sail."""
    return {size: [run for (_, m), run in runs.items() if m in (mode, "")] for size, runs in results.items()}


def report(command: str, workers: int, results: dict[Size, Runs], load: InitialLoad | None) -> str:
    """The markdown report of the sizes measured so far: the grid, its growth and the #20 targets
    evaluated in each mode."""
    lines = ["# product_360 at scale", "", *environment(command)]
    lines += [f"local-cluster: {workers} workers on this machine.", ""]
    lines += ["## Seconds and memory per size", ""]
    for (n, k), runs in results.items():
        lines += size_report(n, k, runs)
    lines += ["## Growth (time ratio between neighbouring sizes)", "", *growth_report(results)]
    if load is not None:
        lines += initial_load_report(load)
    modes = sorted({mode for runs in results.values() for _, mode in runs if mode})
    for mode in modes:
        lines += [
            f"## Targets, Sail candidates in {mode} mode",
            "",
            *targets(in_mode(results, mode), load),
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[Size, Runs]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated N:K pairs")
    parser.add_argument("--candidates", default=DEFAULT_CANDIDATES, help="comma-separated candidate names")
    parser.add_argument("--modes", default=DEFAULT_MODES, help="Sail modes: local, local-cluster")
    parser.add_argument("--workers", type=int, default=2, help="local-cluster workers")
    parser.add_argument("--workdir", type=Path, help="parent of the temporary data directory")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "SCALE.md")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--initial-load", action="store_true", help="also run bench.initial_load at the largest N <= 1M"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    candidates, modes = args.candidates.split(","), args.modes.split(",")
    unknown = set(candidates) - set(CANDIDATES)
    if unknown:
        parser.error(f"unknown candidates {sorted(unknown)}; known: {list(CANDIDATES)}")
    envs = {mode: mode_env(mode, args.workers) for mode in modes}
    command = shlex.join([".venv/bin/python", "-m", "bench.scale", *(sys.argv[1:] if argv is None else argv)])
    sizes = parse_sizes(args.sizes)
    order = list(runs_of(candidates, modes))
    results: dict[Size, Runs] = {}
    load = None
    with (
        tempfile.TemporaryDirectory(dir=args.workdir) as work,
        steps(len(sizes) * (1 + len(order)) + int(args.initial_load), quiet=args.quiet) as progress,
    ):
        if args.initial_load:
            # First, while the disk holds nothing else: it generates its own initial table.
            progress.set_description("initial load")
            load = run_initial_load(Path(work), sizes, args.seed)
            progress.update()
        for index, (n, k) in enumerate(sizes):
            layout = Layout(Path(work), n, k)
            progress.set_description(f"N={n:,} K={k:,} generate and setup")
            expected = prepare(layout, args.seed)
            progress.update()
            runs: Runs = {}
            for name, mode in order:
                progress.set_description(f"N={n:,} K={k:,} {name} {mode}")
                runs[(name, mode)] = run_candidate(name, layout, expected, envs[mode] if mode else None)
                progress.update()
            results[(n, k)] = runs
            # Written after every size, so that a long run stopped early keeps what it measured.
            args.out.write_text(report(command, args.workers, results, load))
            del expected
            shutil.rmtree(layout.run_dir)
            if all(later != n for later, _ in sizes[index + 1 :]):
                shutil.rmtree(layout.table_dir)
    text = report(command, args.workers, results, load)
    print(text)
    return results


if __name__ == "__main__":
    main()
