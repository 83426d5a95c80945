"""Incremental partial-update apply vs full recompute and peer MERGEs on a product_360-like table.

    .venv/bin/python -m bench.product_360 [--sizes 1000000:10000,1000000:100000,10000000:10000]
        [--candidates a,b] [--repeats 1] [--workdir DIR] [--out bench/RESULTS.md] [--seed 7]
        [--initial-load] [--quiet]

Per size N:K, on the same generated data (see `bench.workload`), every candidate (`bench.candidates`)
runs in a fresh process whose whole process tree's RSS is sampled every 50 ms; its result is read back
and compared to an independent oracle. With `--repeats R`, the candidates run R rounds in turn (so that
a slower stretch of the machine falls on every candidate) and each is reported by its median run,
with every run's seconds beside it: one fresh process's time varied by up to 2x on this machine.
With `--initial-load`, `bench.initial_load` also runs once at the largest N <= 1,000,000. Prints a table per size and the targets (PASS/MISS), and writes them to
`--out` with the command, machine and versions. A progress bar (step and candidate) is drawn on stderr
when it is a terminal, unless `--quiet`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Never

import psutil
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable

from bench.candidates import BUCKETS, CANDIDATES
from bench.initial_load import RATIOS
from bench.workload import KEY, Layout, generate, mismatch, oracle
from demos.progress import note, steps

if TYPE_CHECKING:
    from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = "1000000:10000,1000000:100000,10000000:10000"
SAMPLE_SECONDS = 0.05
BASELINE = "deltars_merge"
LABELS = {
    "wide_assets_default": "wide_assets write, default options",
    "wide_assets_write_only": f"wide_assets write, write-only (bucket={BUCKETS})",
    "dagster_default": "wide_assets default write via Dagster materialize",
    "deltars_merge": "delta-rs MERGE",
    "sail_merge": "Sail MERGE INTO, copy-on-write",
    "sail_merge_dv": "Sail MERGE INTO, deletion vectors",
    "duckdb_merge": "DuckDB MERGE INTO + COPY to Parquet",
    "recompute_sail": "full recompute (N-way join), Sail",
    "recompute_jvm": "full recompute (N-way join), JVM Spark local[2]",
    "wide_assets_jvm": "wide_assets write, default options, JVM Spark + delta-spark",
    "delta_spark_merge": "delta-spark MERGE INTO, copy-on-write, JVM Spark local[2]",
    "delta_spark_merge_dv": "delta-spark MERGE INTO, deletion vectors, JVM Spark local[2]",
    "pyarrow_floor": "floor: pyarrow touched rows -> new file",
}
PARQUET_OUTPUTS = {"recompute_sail", "recompute_jvm", "duckdb_merge"}
# Candidates whose rows were saved through Spark as Parquet (their Delta table may hold deletion vectors).
SPARK_ROWS = {
    "wide_assets_default",
    "wide_assets_jvm",
    "wide_assets_write_only",
    "dagster_default",
    "sail_merge",
    "sail_merge_dv",
    "delta_spark_merge",
    "delta_spark_merge_dv",
}
LIBRARY = ("wide_assets_default", "wide_assets_write_only")
# A peer that is meant to write deletion vectors and is wrong when it does not.
WRITES_DELETION_VECTORS = {"sail_merge_dv"}
MEMORY_LIMIT_MB = 1536
# The targets are stated for this size; they are evaluated at every size that ran.
TARGET_SIZE = (1_000_000, 100_000)
INITIAL_LOAD_MAX_ROWS = 1_000_000
# A candidate whose processes use no CPU time for this long is killed and reported as stalled: Sail
# 0.7.2's local cluster was seen to stall for good mid-query (every thread idle), which must not stall
# the whole run. Progress is more than STALL_CPU_S of CPU time since the last progress: a stalled
# process still spends about 1 s of CPU per 90 s (gRPC and runtime timers).
STALL_TIMEOUT_S = 90.0
STALL_CPU_S = 5.0


@dataclass
class Run:
    """One candidate's measurement at one size."""

    candidate: str
    seconds: float
    peak_mb: float
    error: str | None
    phases: dict[str, float] = field(default_factory=dict)
    # Add actions carrying a deletion vector in the result's Delta log; None without a Delta result.
    deletion_vectors: int | None = None
    # The candidate process's peak RSS (MB) in each phase (`bench.candidates.Timings`).
    high_water: dict[str, float] = field(default_factory=dict)
    # With repeats: every run's seconds, in order (this Run holds their medians).
    repeated: list[float] = field(default_factory=list)
    # The candidate process's system CPU seconds in its timed `total` (`Timings.system`); with repeats,
    # every run's, in order.
    system: list[float] = field(default_factory=list)

    def time(self, phase: str = "total") -> float:
        """Seconds of one timed phase."""
        return self.phases[phase]


@dataclass(frozen=True)
class Target:
    """A PASS/MISS target over one size's runs: the `needs` candidates' `value`, formatted by `unit`."""

    name: str
    needs: tuple[str, ...]
    value: Callable[[dict[str, Run]], float]
    passes: Callable[[float], bool]
    unit: str = "{:.2f}x"
    at: tuple[int, int] | None = None  # the one size it is stated for; None: every size


def _peak(name: str) -> Callable[[dict[str, Run]], float]:
    """A target value: the peak RSS (MB) of candidate `name`."""
    return lambda runs: runs[name].peak_mb


TARGETS = (
    Target(
        "default write at most 1.0x delta-rs MERGE (default / delta-rs)",
        ("wide_assets_default", "deltars_merge"),
        lambda r: r["wide_assets_default"].time() / r["deltars_merge"].time(),
        lambda v: v <= 1,
    ),
    Target(
        "default write at most 1.5x Sail MERGE with deletion vectors (default / Sail)",
        ("wide_assets_default", "sail_merge_dv"),
        lambda r: r["wide_assets_default"].time() / r["sail_merge_dv"].time(),
        lambda v: v <= 1.5,
    ),
    Target(
        "default write into a 10M-row table at most 0.25x delta-rs MERGE (default / delta-rs)",
        ("wide_assets_default", "deltars_merge"),
        lambda r: r["wide_assets_default"].time() / r["deltars_merge"].time(),
        lambda v: v <= 0.25,
        at=(10_000_000, 10_000),
    ),
    Target(
        "write-only write + compaction at most 1.0x delta-rs MERGE ((write + compaction) / delta-rs)",
        ("wide_assets_write_only", "deltars_merge"),
        lambda r: (
            (r["wide_assets_write_only"].time() + r["wide_assets_write_only"].time("compaction"))
            / r["deltars_merge"].time()
        ),
        lambda v: v <= 1,
    ),
    Target(
        "write-only write alone < 0.2 s",
        ("wide_assets_write_only",),
        lambda r: r["wide_assets_write_only"].time(),
        lambda v: v < 0.2,
        "{:.3f} s",
    ),
    Target(
        "union read with the commit pending within 2x of reading the compacted table (pending / compacted)",
        ("wide_assets_write_only",),
        lambda r: (
            r["wide_assets_write_only"].time("read_pending")
            / r["wide_assets_write_only"].time("read_compacted")
        ),
        lambda v: v <= 2,
    ),
    *(
        Target(
            f"{LABELS[name].removeprefix('wide_assets write, ')}: peak RSS < {MEMORY_LIMIT_MB} MB",
            (name,),
            _peak(name),
            lambda v: v < MEMORY_LIMIT_MB,
            "{:,.0f} MB",
        )
        for name in LIBRARY
    ),
    Target(
        "on JVM Spark, default write at most 0.5x delta-spark MERGE with deletion vectors (ours / delta-spark)",
        ("wide_assets_jvm", "delta_spark_merge_dv"),
        lambda r: r["wide_assets_jvm"].time() / r["delta_spark_merge_dv"].time(),
        lambda v: v <= 0.5,
    ),
    Target(
        "Dagster adds <= 2 s over the raw default write",
        ("dagster_default", "wide_assets_default"),
        lambda r: r["dagster_default"].time() - r["wide_assets_default"].time(),
        lambda v: v <= 2,
        "{:+.2f} s",
    ),
)


@dataclass(frozen=True)
class Growth:
    """A target on how `candidate`'s `phase` grows when the same K goes into a larger table."""

    small: tuple[int, int]
    large: tuple[int, int]
    candidate: str
    phase: str
    what: str
    limit: float


_1M, _10M, _30M = ((n, 10_000) for n in (1_000_000, 10_000_000, 30_000_000))
GROWTH = (
    Growth(_1M, _10M, "wide_assets_write_only", "total", "write-only write", 2),
    Growth(_1M, _10M, "wide_assets_default", "total", "default write", 1.5),
    Growth(_1M, _30M, "wide_assets_default", "total", "default write", 2),
    Growth(_1M, _10M, "wide_assets_write_only", "compaction", "write-only compaction", 3),
)


@dataclass
class InitialLoad:
    """`bench.initial_load` at N rows: median seconds per method, or its error."""

    n: int
    medians: dict[str, float]
    error: str | None


def parse_sizes(text: str) -> list[tuple[int, int]]:
    return [(int(n), int(k)) for n, k in (part.split(":") for part in text.split(","))]


def run_process(
    name: str, layout: Layout, engine_env: dict[str, str] | None = None
) -> tuple[dict[str, dict[str, float]], float, str | None]:
    """Run `bench.candidates <name>` in a fresh process (`engine_env` added to its environment, e.g.
    `SAIL_MODE`); its report (`seconds` and `high_water_mb` per phase), the tree's peak RSS (MB), any
    error."""
    with tempfile.NamedTemporaryFile(suffix=".json") as result, tempfile.TemporaryFile() as log:
        command = [
            sys.executable,
            "-m",
            "bench.candidates",
            name,
            str(layout.root),
            str(layout.n),
            str(layout.k),
        ]
        # Sail's shutdown warnings would bury a traceback.
        env = {**os.environ, "RUST_LOG": "error", **(engine_env or {})}
        process = psutil.Popen(
            [*command, result.name], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        peak = 0
        cpu, progressed = 0.0, time.monotonic()
        while process.poll() is None:
            total, used = 0, 0.0
            members = [process, *process.children(recursive=True)]
            for member in members:
                with contextlib.suppress(psutil.NoSuchProcess):
                    total += member.memory_info().rss
                    times = member.cpu_times()
                    used += times.user + times.system
            peak = max(peak, total)
            if used > cpu + STALL_CPU_S:
                cpu, progressed = used, time.monotonic()
            elif time.monotonic() - progressed > STALL_TIMEOUT_S:
                for member in members:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        member.kill()
                process.wait()
                return {}, peak / 2**20, f"stalled: no CPU time used for {STALL_TIMEOUT_S:.0f} s; killed"
            time.sleep(SAMPLE_SECONDS)
        if process.returncode != 0:
            log.seek(0)
            return {}, peak / 2**20, log.read().decode(errors="replace")[-3000:]
        return json.loads(Path(result.name).read_text()), peak / 2**20, None


def result_table(name: str, layout: Layout) -> pa.Table:
    """The table state a candidate left behind."""
    output = layout.output(name)
    if name == "pyarrow_floor":
        images = pq.read_table(output)
        base = pq.read_table(layout.initial)
        kept = base.filter(pc.invert(pc.is_in(base[KEY], images[KEY])))
        return pa.concat_tables([kept, images.cast(base.schema)])
    if name in PARQUET_OUTPUTS:
        return pq.read_table(output)
    if name in SPARK_ROWS:
        return pq.read_table(output / "rows")
    return DeltaTable(str(output / "wide")).to_pyarrow_table()


def deletion_vectors(name: str, layout: Layout) -> int | None:
    """How many add actions in the log of a candidate's Delta result carry a deletion vector (the bases
    hold none); None when the candidate leaves no Delta table."""
    log = layout.output(name) / "wide" / "_delta_log"
    if not log.exists():
        return None
    actions = (json.loads(line) for commit in log.glob("*.json") for line in commit.read_text().splitlines())
    return sum(1 for action in actions if action.get("add", {}).get("deletionVector"))


def prepare(layout: Layout, seed: int) -> pa.Table:
    """Generate one size's data and build its bases (each once per N); return the oracle's table."""
    generate(layout, seed)
    _, _, error = run_process("setup", layout)
    if error:
        raise RuntimeError(f"setup failed:\n{error}")
    return oracle(layout)


def run_candidate(
    name: str, layout: Layout, expected: pa.Table, engine_env: dict[str, str] | None = None
) -> Run:
    """Run one candidate in a fresh process on a prepared size and verify its result against `expected`
    (a previous run's output of the same candidate is removed first)."""
    shutil.rmtree(layout.output(name), ignore_errors=True)
    report, peak, error = run_process(name, layout, engine_env)
    if error is None:
        error = mismatch(result_table(name, layout), expected)
    vectors = deletion_vectors(name, layout)
    if error is None and name in WRITES_DELETION_VECTORS and not vectors:
        error = "its MERGE wrote no deletion vector"
    phases = report.get("seconds", {})
    system = report.get("system_seconds", {})
    run = Run(
        name,
        phases.get("total", float("nan")),
        peak,
        error,
        phases,
        vectors,
        report.get("high_water_mb", {}),
        system=[system["total"]] if "total" in system else [],
    )
    status = "ok" if error is None else f"FAILED: {error.splitlines()[-1] if error else ''}"
    mode = " ".join(f"{k}={v}" for k, v in (engine_env or {}).items())
    note(f"  N={layout.n} K={layout.k} {name} {mode}: {run.seconds:.2f} s, {peak:.0f} MB, {status}")
    return run


def measure(
    layout: Layout, candidates: list[str], seed: int, progress: tqdm[Never], repeats: int = 1
) -> list[Run]:
    """Prepare one size and run and verify every candidate on it, `repeats` rounds of every candidate
    in turn, each reported by `median_run`; `progress` (a `demos.progress.steps` bar) advances by one
    per step: preparation (two steps), each candidate's run."""
    size = f"N={layout.n:,} K={layout.k:,}"
    progress.set_description(f"{size} generate and setup")
    expected = prepare(layout, seed)
    progress.update(2)
    runs: dict[str, list[Run]] = {name: [] for name in candidates}
    for round_ in range(repeats):
        for name in candidates:
            progress.set_description(f"{size} {name}" + (f" ({round_ + 1}/{repeats})" if repeats > 1 else ""))
            runs[name].append(run_candidate(name, layout, expected))
            progress.update()
    return [median_run(runs[name]) for name in candidates]


def median_run(runs: list[Run]) -> Run:
    """One candidate's repeated runs as one: the median seconds of every phase, the highest memory, and
    every run's seconds (`repeated`); a run that failed or disagreed with the oracle stands for them all."""
    failed = next((run for run in runs if run.error is not None), None)
    if len(runs) == 1 or failed is not None:
        return failed or runs[0]
    phases = {phase: statistics.median(run.phases[phase] for run in runs) for phase in runs[0].phases}
    high_water = {phase: max(run.high_water.get(phase, 0.0) for run in runs) for phase in runs[0].high_water}
    return Run(
        candidate=runs[0].candidate,
        seconds=phases["total"],
        peak_mb=max(run.peak_mb for run in runs),
        error=None,
        phases=phases,
        deletion_vectors=runs[-1].deletion_vectors,
        high_water=high_water,
        repeated=[run.seconds for run in runs],
        system=[seconds for run in runs for seconds in run.system],
    )


def size_report(n: int, k: int, runs: list[Run]) -> list[str]:
    """The markdown table of one size."""
    base = next((r.seconds for r in runs if r.candidate == BASELINE), None)
    lines = [
        f"### N = {n:,} rows, K = {k:,} changes",
        "",
        "| candidate | seconds | rows/s | peak RSS MB | time vs delta-rs | oracle | detail (s) |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for run in runs:
        details = [f"{p} {s:.2f}" for p, s in run.phases.items() if p != "total"]
        if run.repeated:
            details.insert(0, "runs " + " / ".join(f"{s:.2f}" for s in run.repeated))
        if run.system:
            details.append("system CPU " + " / ".join(f"{s:.2f}" for s in run.system))
        if run.deletion_vectors is not None:
            details.append(f"files with a deletion vector: {run.deletion_vectors}")
        detail = ", ".join(details)
        verdict = "agrees" if run.error is None else "**DIFFERS**: " + run.error.splitlines()[-1][:120]
        lines.append(
            f"| {LABELS[run.candidate]} | {run.seconds:.2f} | {k / run.seconds:,.0f} | {run.peak_mb:,.0f} "
            f"| {'-' if base is None else f'{run.seconds / base:.2f}x'} | {verdict} | {detail} |"
        )
    return [*lines, ""]


def targets(results: dict[tuple[int, int], list[Run]], initial_load: InitialLoad | None) -> list[str]:
    """PASS/MISS per target, evaluated on every size that ran (they are stated for `TARGET_SIZE`, which
    comes first); a target whose candidate failed or disagrees with the oracle is a MISS."""
    lines = ["| target | size | measured | result |", "|---|---|---|---|"]

    def check(name: str, size: str, measured: str, ok: bool) -> None:
        lines.append(f"| {name} | {size} | {measured} | {'PASS' if ok else 'MISS'} |")

    def failed(runs: list[Run]) -> str:
        return "failed: " + ", ".join(r.candidate for r in runs if r.error is not None)

    for n, k in sorted(results, key=lambda size: size != TARGET_SIZE):
        runs = {r.candidate: r for r in results[(n, k)]}
        for target in TARGETS:
            if not all(name in runs for name in target.needs) or target.at not in (None, (n, k)):
                continue
            needed = [runs[name] for name in target.needs]
            if any(r.error is not None for r in needed):
                check(target.name, f"N={n:,} K={k:,}", failed(needed), False)
                continue
            value = target.value(runs)
            check(target.name, f"N={n:,} K={k:,}", target.unit.format(value), target.passes(value))
    for growth in GROWTH:
        if growth.small not in results or growth.large not in results:
            continue
        small, large = ({r.candidate: r for r in results[size]} for size in (growth.small, growth.large))
        if growth.candidate not in small or growth.candidate not in large:
            continue
        (small_n, k), (large_n, _) = growth.small, growth.large
        size = f"N={small_n:,} -> {large_n:,}, K={k:,}"
        what = f"{growth.what}: {large_n // small_n}x the table costs <= {growth.limit:g}x"
        pair = [small[growth.candidate], large[growth.candidate]]
        if any(run.error is not None for run in pair):
            check(what, size, failed(pair), False)
            continue
        ratio = pair[1].time(growth.phase) / pair[0].time(growth.phase)
        check(what, size, f"{ratio:.2f}x", ratio <= growth.limit)
    if initial_load is not None:
        for wide, plain in RATIOS:
            load = f"initial load within 2x of a plain append ({wide} / {plain})"
            if initial_load.error is not None:
                check(load, f"N={initial_load.n:,}", "failed", False)
            else:
                ratio = initial_load.medians[wide] / initial_load.medians[plain]
                check(load, f"N={initial_load.n:,}", f"{ratio:.2f}x", ratio <= 2)
    return lines


def run_initial_load(work: Path, sizes: list[tuple[int, int]], seed: int) -> InitialLoad | None:
    """`bench.initial_load` (3 repeats, fresh process) at the largest N <= 1,000,000 that ran, on the
    same generated initial table; None when no such N ran."""
    n = max((n for n, _ in sizes if n <= INITIAL_LOAD_MAX_ROWS), default=None)
    if n is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        command = [sys.executable, "-m", "bench.initial_load", "--rows", str(n), "--workdir", str(work)]
        command += ["--seed", str(seed), "--json", result.name]
        env = {**os.environ, "RUST_LOG": "error"}
        process = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if process.returncode != 0:
            return InitialLoad(n, {}, (process.stdout + process.stderr)[-3000:])
        medians = json.loads(Path(result.name).read_text())
    note(f"  initial load N={n}: " + ", ".join(f"{name} {s:.2f} s" for name, s in medians.items()))
    return InitialLoad(n, medians, None)


def initial_load_report(load: InitialLoad) -> list[str]:
    """The initial load's medians, or its error."""
    lines = [f"### Initial load, N = {load.n:,} rows (`bench.initial_load`, median of 3)", ""]
    if load.error is not None:
        return [*lines, f"**FAILED**: {load.error.strip().splitlines()[-1]}", ""]
    return [*lines, *(f"- {name}: {seconds:.2f} s" for name, seconds in load.medians.items()), ""]


def environment(command: str) -> list[str]:
    """Command, date, machine and versions."""
    packages = ["pyspark", "pysail", "deltalake", "duckdb", "pyarrow", "dagster", "psutil"]
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in packages)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return [
        f"Command: `{command}`",
        "",
        f"Date: {datetime.now(UTC).isoformat(timespec='seconds')}; machine: {os.cpu_count()} cores ({cpu}), "
        f"{psutil.virtual_memory().total / 2**30:.1f} GiB RAM, {platform.platform()}",
        "",
        f"Versions: Python {platform.python_version()}, {versions}, {java[0] if java else 'no java'}",
        "",
    ]


METHOD = """\
## Workload

N products, five sources each owning 1-2 value columns of the wide table plus its op time (`<source>_ts`,
the source's Paimon `sequence-group` field), and `fields.default-aggregate-function` =
`last_non_null_value`: a NULL value means "no opinion". The initial table has every key in every
source, fully filled. The batch has K records, each of one source, each of its value columns NULL with
probability 0.2: 10% are older than the stored row (they must lose), 5% are for new keys, the rest are
newer updates of uniform random keys, which repeat. Per key, source and column, the newest non-NULL
value of the batch records not older than the stored row wins, else the stored value stays; the op time
becomes the newest one (what Paimon's fold gives on this workload, see `bench.workload`).

## What is timed

Every candidate runs in a fresh process; setup is untimed: engine start, copying the base table,
imports. A candidate on classic JVM Spark first runs its timed operation once on a second copy of the
base, untimed (`warm_up` detail): a long-lived driver is warm, and a cold JVM's class loading and code
generation took most of the first run. Seconds are the timed part only (with `--repeats`, the
median of the candidate's runs, and of each detail; "runs" lists every run's seconds); "system CPU"
is each run's system time of the candidate's own process in the timed part (an in-process engine's
included, a JVM's not): on a virtual machine whose host takes back the memory its guest frees, a fresh
process's first touches of memory fault on the host, which shows as system time (docs/performance.md,
"A fresh process's memory"); rows/s = K / seconds; "time vs delta-rs" divides by the
delta-rs MERGE's seconds; peak RSS is the sum of the RSS of the candidate's whole process tree (Python,
and the JVM for classic Spark), sampled every 50 ms over the process's whole life (so it includes
setup). Before any candidate ran, the initial table was written once as Parquet and appended by Sail
to each base: the WideTables (default options, write-only), their rows appended
to the Delta table as `WideTable.rebuild` writes them (the changelog starts empty), and two plain Delta
tables (no table properties; `delta.enableDeletionVectors`, created by delta-rs). Each Delta candidate
copies its base. After each run its persisted result is read back and compared with an oracle computed
with numpy indexing; results that may hold deletion vectors (which delta-rs 1.6 cannot read) are saved
through Spark as Parquet after timing and read from there. "files with a deletion vector" counts the
add actions of the result's Delta log that carry one.

- wide_assets: one `WideTable.write(spark.read.parquet(changes))` on Sail (validation, merge against
  the stored rows, changelog commit, and the Delta MERGE unless write-only), into a table created with
  the workload's options only (the library's default storage). The write-only table (16 fixed buckets; its writers log the records and do not read the
  table) is then, timed apart (details, not in seconds), read with the commit pending (`read()` as a
  union of the Delta table and the logged commit, computed into Spark's `noop` sink: `read_pending`),
  compacted (`compaction`) and read again (`read_compacted`); the compacted table is what is verified.
- Dagster: the default write as the body of an asset, `dagster.materialize` on a sqlite instance
  (`DagsterInstance.local_temp`); the Sail session is started before timing.
- delta-rs: reduce the batch to one row per key in pyarrow (timed, `reduce` detail: per source and
  column the newest non-NULL value with its op time, and the newest op time), then `DeltaTable.merge`
  into the plain Delta table with one `CASE` per column: the reduced value when it is not NULL and not
  older than the stored row's op time, else the stored value.
- Sail MERGE INTO: the same reduction as one `GROUP BY` in Sail SQL (`max_by`) and `MERGE INTO
  delta.<path>` with the same `CASE`s, then `collect()`, into the plain Delta table without or with
  deletion vectors (the latter must write some). The reduction alone, computed into the `noop` sink
  after the MERGE, is the `reduce_alone` detail (not in seconds).
- DuckDB: the base table is loaded into an in-memory DuckDB table untimed; timed are `MERGE INTO` from
  the batch reduced in SQL as for Sail (`merge` detail) plus `COPY` of the whole table to Parquet.
- Full recompute: read the five source state tables (initial rows plus the batch appended), per key the
  newest non-NULL value of each column and the newest op time (`GROUP BY` with `max_by`), five-way full
  outer join, overwrite the whole table as Parquet.
- pyarrow floor: reduce the batch, read the touched keys' rows from the base Parquet file (uniform
  keys hit every row group, so it reads the file and filters), compute their new images, write them to
  one new Parquet file. No transaction log, no changelog, old rows are not removed: a lower bound, not
  a usable table format.
- Initial load (`--initial-load`): `bench.initial_load`, the N initial rows written by a plain Delta
  append on Sail and by `WideTable.write` into a new empty WideTable with the workload's options.
"""


def main(argv: list[str] | None = None) -> dict[tuple[int, int], list[Run]]:
    """Run the benchmark; returns every measurement by (N, K)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated N:K pairs")
    parser.add_argument("--candidates", default=",".join(CANDIDATES), help="comma-separated candidate names")
    parser.add_argument(
        "--workdir", type=Path, help="parent of the temporary data directory (deleted at the end)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS.md")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repeats", type=int, default=1, help="rounds of every candidate; each reported by its median"
    )
    parser.add_argument(
        "--initial-load",
        action="store_true",
        help=f"also run bench.initial_load at the largest N <= {INITIAL_LOAD_MAX_ROWS:,} that ran",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    candidates = args.candidates.split(",")
    unknown = set(candidates) - set(CANDIDATES)
    if unknown:
        parser.error(f"unknown candidates {sorted(unknown)}; known: {list(CANDIDATES)}")
    command = shlex.join(
        [".venv/bin/python", "-m", "bench.product_360", *(sys.argv[1:] if argv is None else argv)]
    )
    sizes = parse_sizes(args.sizes)
    total = len(sizes) * (2 + len(candidates) * args.repeats) + int(args.initial_load)
    with (
        tempfile.TemporaryDirectory(dir=args.workdir) as work,
        steps(total, quiet=args.quiet) as progress,
    ):
        results = {
            (n, k): measure(Layout(Path(work), n, k), candidates, args.seed, progress, args.repeats)
            for n, k in sizes
        }
        load = None
        if args.initial_load:
            progress.set_description("initial load")
            load = run_initial_load(Path(work), list(results), args.seed)
            progress.update()
    report = ["# product_360 benchmark", "", *environment(command)]
    for (n, k), runs in results.items():
        report += size_report(n, k, runs)
    if load is not None:
        report += initial_load_report(load)
    report += ["## Targets", "", *targets(results, load), "", METHOD]
    text = "\n".join(report)
    print(text)
    args.out.write_text(text)
    return results


if __name__ == "__main__":
    main()
