"""`python -m bench.reliability`: fault injection against the product_360 pipeline and a shared table,
every result checked against an independent oracle; prints the figures the README quotes.

    .venv/bin/python -m bench.reliability --crashes 20 --concurrent 50 --seed 7 [--quiet]

- Crashes: product_360's job, then its compaction job, run in a child process that is SIGKILLed after
  a random delay drawn over a clean run's duration, or at a named checkpoint of `wide_assets.faults`,
  then run again to completion. The wide table must equal the oracle (`bench.product_360_oracle`, the
  latest source states joined, in plain Python); its changelog, commit log, CDC and quarantine tables a
  clean run's; the changelog must hold no entry twice and replay to the table.
- Replays: a re-run on the same files, every file delivered again under a new name, sources' CDC
  tables rebuilt from scratch, a whole backfill after an incremental history: the same table.
- Concurrency: two long-lived worker processes write one table at once, either two runs of the
  pipeline's apply step with new records landing between them, or a run and a compaction. No lost
  update and no double apply: after each trial the table equals the sum of every landed record.
- Bad input: the corpus of `bench.bad_inputs`.

`tests/reliability/` runs the same trials with small counts. A progress bar (trials done, phase) is drawn
on stderr when it is a terminal, unless `--quiet`; each trial's outcome is printed on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import dagster as dg

from bench.product_360_oracle import SOURCES, Row, oracle, table_rows
from demos import declared, declared_defs
from demos.generate import generate
from demos.progress import note, steps
from wide_assets.errors import ConcurrentWriteError
from wide_assets.faults import CRASH_POINT
from wide_assets.pipelines import LandingZone, SourceSpec, WideTableSpec, table_path
from wide_assets.pipelines.ingest import quarantine_path
from wide_assets.pipelines.resources import LakeSettings, SparkEngine
from wide_assets.table import WideTable
from wide_assets.table.progress import Spans

if TYPE_CHECKING:
    from bench.bad_inputs import Handled
    from wide_assets.session import SparkSession

__all__ = [
    "COUNTERS",
    "ConcurrentTrial",
    "CrashTrial",
    "LakeState",
    "Replay",
    "concurrent_trials",
    "crash_trials",
    "lake_state",
    "landing_set",
    "main",
    "replays",
    "run_pipeline",
]

ROOT = Path(__file__).resolve().parents[1]
PRODUCT_360 = declared("product_360").spec
JOBS = (f"{PRODUCT_360.name}_job", f"{PRODUCT_360.name}_compaction_job")
# Console logging of the runs this process makes in-process; the child runs log at DEBUG (step starts).
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
STEP_START = re.compile(r'Started execution of step "([^"]+)"')
# How often a clean run reaches each checkpoint: ingest and every write once per source, compaction once.
CHECKPOINTS = {
    "ingest_before_commit": len(SOURCES),
    "before-changelog-commit": len(SOURCES),
    "after-changelog-commit": len(SOURCES),
    "after-table-commit": len(SOURCES),
    "after-compaction-merge": 1,
}


# ------------------------------------------------------------------------------------------ pipeline
def landing_set(root: Path, seed: int, products: int = 30, changes: int = 240, files: int = 3) -> Path:
    """Generated product_360 landing files under `root`/landing (late, out-of-order, deletes, malformed)."""
    generate(
        products, changes, seed, root / "landing", late_share=0.2, delete_share=0.08, files=files, malformed=4
    )
    return root


def run_pipeline(landing: Path, lake: Path, run_config: dict[str, Any] | None = None) -> bool:
    """product_360's job, then its compaction job, in this process; True when both succeeded."""
    resources = {
        "spark": SparkEngine(engine="sail"),
        "lake": LakeSettings(root=str(lake)),
        "landing": LandingZone(root=str(landing)),
    }
    defs = dg.Definitions.merge(declared_defs("product_360"), dg.Definitions(resources=resources))
    succeeded = True
    with dg.DagsterInstance.ephemeral() as instance:
        for job in JOBS:
            result = defs.resolve_job_def(job).execute_in_process(
                run_config=run_config, instance=instance, raise_on_error=False
            )
            succeeded = succeeded and result.success
    return succeeded


def sums(rows: Iterable[Row]) -> tuple[int, int]:
    """The aggregates: review_cnt and open_question_cnt summed over product_360 rows."""
    columns = PRODUCT_360.column_names
    review, question = columns.index("review_cnt"), columns.index("open_question_cnt")
    listed = list(rows)
    return sum(r[review] or 0 for r in listed), sum(r[question] or 0 for r in listed)


# The parts of a lake a crashed-and-re-run pipeline must leave exactly as a clean run does.
COMPARED = ("changelog", "commits", "compactions", "pending", "cdc", "quarantine")


@dataclass(frozen=True)
class LakeState:
    """Everything a product_360 run leaves in its lake, comparable between runs."""

    rows: frozenset[Row]
    changelog: Counter[tuple[Any, ...]]
    duplicate_entries: int
    replays_to_table: bool
    commits: tuple[Any, ...]
    compactions: tuple[Any, ...]
    pending: tuple[int, ...]
    cdc: dict[str, Counter[tuple[Any, ...]]]
    quarantine: dict[str, Counter[tuple[Any, ...]]]


def lake_state(spark: SparkSession, lake: Path) -> LakeState:
    """The wide table (oracle form), its changelog and commit log, and every source's CDC and quarantine."""
    from deltalake import DeltaTable

    locator = LakeSettings(root=str(lake))
    table = WideTable.open(spark, table_path(locator, PRODUCT_360))
    columns = PRODUCT_360.column_names
    entries = table.changelog().orderBy("_commit", "_offset").collect()
    # The changelog replayed from an empty table (in Python) must give the table back.
    replayed: dict[Any, tuple[Any, ...]] = {}
    for entry in entries:
        values = tuple(entry[c] for c in columns)
        if entry._row_kind in ("+I", "+U"):
            replayed[values[0]] = values
        elif entry._row_kind == "-D":
            replayed.pop(values[0], None)
    positions = Counter((e._commit, e._offset) for e in entries)
    cdc, quarantine = {}, {}
    for source in SOURCES:
        path = table_path(locator, PRODUCT_360, source)
        cdc[source] = Counter(tuple(r) for r in spark.read.format("delta").load(path).collect())
        bad = quarantine_path(path)
        rows = spark.read.format("delta").load(bad).collect() if DeltaTable.is_deltatable(bad) else []
        quarantine[source] = Counter(tuple(r) for r in rows)
    return LakeState(
        rows=frozenset(table_rows(table)),
        changelog=Counter(tuple(e) for e in entries),
        duplicate_entries=sum(n - 1 for n in positions.values()),
        replays_to_table=set(replayed.values()) == {tuple(r) for r in table.read().collect()},
        # Without the run's id, which names each run anew (`Txn.run`): a re-run makes the same commits.
        commits=tuple((c.commit, c.txn and c.txn._replace(run=None)) for c in table.commits()),
        compactions=tuple((c.through, c.commits) for c in table.compactions()),
        pending=tuple(table.pending_commits()),
        cdc=cdc,
        quarantine=quarantine,
    )


def differences(
    state: LakeState, expected: set[Row], clean: LakeState | None = None, compared: tuple[str, ...] = COMPARED
) -> list[str]:
    """What is wrong with `state`: against the oracle's rows, its own changelog, and the `compared`
    parts of a clean run's state."""
    problems = []
    if state.rows != expected:
        problems.append(
            f"table != oracle: {len(expected - state.rows)} expected row(s) missing, "
            f"{len(state.rows - expected)} unexpected"
        )
    if state.duplicate_entries:
        problems.append(f"{state.duplicate_entries} duplicate changelog entries")
    if not state.replays_to_table:
        problems.append("the changelog does not replay to the table")
    if clean is not None:
        for name in compared:
            if getattr(state, name) != getattr(clean, name):
                problems.append(f"{name} differs from a clean run")
    return problems


# ------------------------------------------------------------------------------------------ crashes
class ChildRun:
    """product_360's jobs in a child process, with the steps it started and when (from its log)."""

    def __init__(self, landing: Path, lake: Path, crash_at: str | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if k != CRASH_POINT}
        env["PYTHONPATH"] = str(ROOT)
        if crash_at:
            env[CRASH_POINT] = crash_at
        self.started = time.monotonic()
        self.steps: list[tuple[float, str]] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.reliability", "run", str(landing), str(lake)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        self._reader = threading.Thread(target=self._read, args=(self.process.stderr,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        """Record each step start the child logs, with its time."""
        for line in stream:
            match = STEP_START.search(line)
            if match:
                self.steps.append((time.monotonic() - self.started, match.group(1)))

    def wait(self, timeout: float = 600) -> int:
        """The child's exit code, once it has exited and its log is read."""
        code = self.process.wait(timeout)
        self._reader.join()
        return code

    def kill_after(self, delay: float) -> int:
        """SIGKILL the child `delay` seconds after it started (unless it finished first); its exit code."""
        try:
            return self.wait(max(0.0, self.started + delay - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGKILL)
            return self.wait()

    @property
    def step(self) -> str:
        """The step running when the child stopped."""
        return self.steps[-1][1].removeprefix(f"{PRODUCT_360.group}__") if self.steps else "startup"


@dataclass(frozen=True)
class CrashTrial:
    """One killed run: how it was killed, where, and what differed after the re-run (nothing, ideally)."""

    how: str
    landed: str
    killed: bool
    problems: tuple[str, ...]


def _progress(lake: Path) -> str:
    """How far a killed run got, from the commit log (delta-rs, no Spark)."""
    from deltalake import DeltaTable

    path = table_path(LakeSettings(root=str(lake)), PRODUCT_360)
    if not DeltaTable.is_deltatable(path):
        return "no wide table yet"
    table = WideTable.open(None, path)
    return f"{len(table.commits())} commit(s) logged, {len(table.compactions())} compaction(s)"


def crash_plan(rng: random.Random, trial: int, duration: tuple[float, float]) -> tuple[str, float | None]:
    """Even trials: a SIGKILL at a random time over the clean run's steps; odd: a random checkpoint."""
    if trial % 2 == 0:
        return "", rng.uniform(*duration)
    point = rng.choice(sorted(CHECKPOINTS))
    return f"{point}:{rng.randint(1, CHECKPOINTS[point])}", None


def crash_trials(
    spark: SparkSession, work: Path, count: int, rng: random.Random, progress: Callable[[str], None] = print
) -> tuple[list[CrashTrial], LakeState, set[Row]]:
    """`count` killed-and-re-run trials on one landing set; also the clean run's state and the oracle."""
    landing = landing_set(work / "data", rng.randint(0, 10**6))
    expected = oracle(landing)
    clean_run = ChildRun(landing, work / "clean")
    if clean_run.wait() != 0 or not clean_run.steps:
        raise RuntimeError("the clean run failed")
    clean = lake_state(spark, work / "clean")
    wrong = differences(clean, expected)
    if wrong:
        raise RuntimeError(f"the clean run is wrong: {wrong}")
    # Kills land between the first step's start and the end of the run (the start-up is no target).
    duration = (clean_run.steps[0][0], time.monotonic() - clean_run.started)
    trials: list[CrashTrial] = []
    # A run may finish before its random kill time: such a trial is not a crash, so another is drawn.
    while sum(t.killed for t in trials) < count and len(trials) < 2 * count:
        number = len(trials)
        crash_at, delay = crash_plan(rng, number, duration)
        lake = work / f"crash{number}"
        child = ChildRun(landing, lake, crash_at or None)
        code = child.wait() if delay is None else child.kill_after(delay)
        how = f"at {crash_at}" if crash_at else f"after {delay:.1f} s"
        killed = code == -signal.SIGKILL
        landed = f"{child.step}; {_progress(lake)}" if killed else ""
        run_pipeline(landing, lake, QUIET)
        problems = tuple(differences(lake_state(spark, lake), expected, clean))
        trials.append(CrashTrial(how, landed, killed, problems))
        outcome = f"killed {how} during {landed}" if killed else f"not killed {how}: the run had finished"
        progress(f"trial {number + 1}: {outcome}: {'; '.join(problems) or 'recovered'}")
        shutil.rmtree(lake, ignore_errors=True)
    return trials, clean, expected


# ------------------------------------------------------------------------------------------ replays
@dataclass(frozen=True)
class Replay:
    """One replay scenario and what differed from the expected table (nothing, ideally)."""

    name: str
    problems: tuple[str, ...]


def _redeliver(landing: Path) -> None:
    """Every landed file delivered once more, under a new name (as a producer's retry would)."""
    for path in sorted((landing / "landing").glob("*/*.jsonl")):
        shutil.copy(path, path.with_name(f"{path.stem}_again.jsonl"))


def replays(
    spark: SparkSession, work: Path, landing: Path, clean: LakeState, expected: set[Row]
) -> list[Replay]:
    """Replay scenarios on copies of a clean run's lake (`work`/clean) and its landing files."""
    results = []

    def scenario(name: str, lake: Path, landing: Path, compared: tuple[str, ...] = COMPARED) -> None:
        run_pipeline(landing, lake, QUIET)
        results.append(Replay(name, tuple(differences(lake_state(spark, lake), expected, clean, compared))))

    rerun = work / "rerun"
    shutil.copytree(work / "clean", rerun)
    scenario("re-run on the same files", rerun, landing)

    rebuilt = work / "rebuilt"
    shutil.copytree(work / "clean", rebuilt)
    for source in SOURCES:
        path = Path(table_path(LakeSettings(root=str(rebuilt)), PRODUCT_360, source))
        shutil.rmtree(path)
        shutil.rmtree(quarantine_path(str(path)), ignore_errors=True)
    scenario("every source re-materialized from scratch", rebuilt, landing)

    again = work / "again"
    shutil.copytree(work / "clean", again / "lake")
    shutil.copytree(landing / "landing", again / "data" / "landing")
    _redeliver(again / "data")
    # The copies' records are duplicates: nothing is appended or committed; only the quarantine grows.
    redelivered = tuple(c for c in COMPARED if c != "quarantine")
    scenario("every file delivered twice (new names)", again / "lake", again / "data", redelivered)

    # An incremental history (one run per batch of files), then the lake deleted and rebuilt at once.
    history = work / "history"
    batches = sorted({p.name.rsplit("_", 1)[1] for p in (landing / "landing").glob("*/*.jsonl")})
    for batch in batches:
        for path in (landing / "landing").glob(f"*/*_{batch}"):
            target = history / "data" / path.relative_to(landing)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
        run_pipeline(history / "data", history / "lake", QUIET)
    results.append(
        Replay("incremental history", tuple(differences(lake_state(spark, history / "lake"), expected)))
    )
    shutil.rmtree(history / "lake")
    scenario("the same history backfilled from scratch", history / "lake", history / "data")
    return results


# ------------------------------------------------------------------------------------------ concurrency
def _source(name: str, column: tuple[str, str], feeds: str) -> SourceSpec:
    """A source of COUNTERS feeding one column; the trial driver appends to its CDC table itself."""
    return SourceSpec(
        name=name,
        description=f"Records of {name}, appended by the trial driver.",
        files=(f"{name}/*.csv",),
        columns=(("k", "bigint"), column),
        primary_key=("k",),
        feeds={column[0]: feeds},
    )


COUNTERS = WideTableSpec(
    name="counters",
    description="Per key: the sum of every amount and the latest label, written by two sources.",
    group="reliability",
    columns=(("k", "bigint"), ("total", "bigint"), ("label", "string")),
    primary_key=("k",),
    options={
        "merge-engine": "aggregation",
        "fields.total.aggregate-function": "sum",
        "fields.label.aggregate-function": "last_non_null_value",
        "write-only": "true",
    },
    sources=(
        _source("amounts", ("amount", "bigint"), "total"),
        _source("labels", ("label", "string"), "label"),
    ),
)


def _worker(root: Path) -> None:
    """`python -m bench.reliability worker <root>`: per stdin line `apply` (the wide asset's apply step) or
    `compact` on COUNTERS, answering a JSON line with commits made, ranges skipped and conflicts retried."""
    from wide_assets.pipelines import apply as source_apply
    from wide_assets.session import get_spark

    spark = get_spark()
    table = source_apply.open_wide_table(spark, COUNTERS, str(root / COUNTERS.name))
    paths = {s.name: str(root / s.name) for s in COUNTERS.sources}
    conflicts = [0]
    apply_pending = source_apply.apply_pending

    def counted(*args: Any, **kwargs: Any) -> source_apply.SourceApplied:
        try:
            return apply_pending(*args, **kwargs)
        except ConcurrentWriteError:
            conflicts[0] += 1
            raise

    source_apply.apply_pending = (
        counted  # apply_with_retries looks it up at call time: every attempt is counted
    )
    for line in sys.stdin:
        before = conflicts[0]
        reply: dict[str, Any] = {}
        try:
            if line.strip() == "apply":
                applied = source_apply.apply_sources(spark, COUNTERS, table, paths)
                reply["commits"] = sum(a.result is not None for a in applied)
                reply["skipped"] = sum(a.result is None and a.to_offset > a.from_offset for a in applied)
            else:
                folded = table.compact()
                reply["folded"] = folded.commits if folded else 0
        except Exception as error:
            reply["error"] = f"{type(error).__name__}: {error}"
        reply["conflicts"] = conflicts[0] - before
        print("RESULT " + json.dumps(reply), flush=True)


class Worker:
    """A long-lived `python -m <module> worker <root>` child process (one Spark session across trials)
    answering each line it is sent with a `RESULT <json>` line."""

    def __init__(
        self,
        root: Path | str,
        log: Path,
        module: str = "bench.reliability",
        env: dict[str, str] | None = None,
    ) -> None:
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, "worker", str(root)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )

    def send(self, command: str) -> None:
        """Start `command` (one line); the reply comes with `receive`."""
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        """The reply to the last command."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("RESULT "):
                reply: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
                return reply
        raise RuntimeError(f"worker {self.process.pid} exited; see {self._log.name}")

    def close(self) -> None:
        """End the worker (end of input) and wait for it."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)
        self._log.close()


@dataclass
class _Landed:
    """The records landed in COUNTERS' sources so far, and the table they add up to."""

    root: Path
    offsets: dict[str, int] = field(default_factory=dict)
    totals: dict[int, int] = field(default_factory=dict)
    labels: dict[int, str] = field(default_factory=dict)

    def land(self, rng: random.Random, name: str) -> None:
        """A few new records in each source's CDC table, as an ingest run would append them."""
        import pyarrow as pa
        from deltalake import write_deltalake

        for source in COUNTERS.sources:
            column, type_ = source.columns[1]
            keys = [rng.randint(1, 12) for _ in range(rng.randint(1, 4))]
            if type_ == "bigint":
                values: list[Any] = [rng.randint(-5, 20) for _ in keys]
                for key, value in zip(keys, values, strict=True):
                    self.totals[key] = self.totals.get(key, 0) + value
            else:
                values = [f"{name}.{i}" for i in range(len(keys))]
                self.labels.update(zip(keys, values, strict=True))
            first = self.offsets.get(source.name, 0) + 1
            self.offsets[source.name] = first + len(keys) - 1
            rows = {
                "k": pa.array(keys, pa.int64()),
                column: pa.array(values, pa.int64() if type_ == "bigint" else pa.string()),
                "_row_kind": pa.array(["+I"] * len(keys)),
                "_offset": pa.array(range(first, first + len(keys)), pa.int64()),
            }
            write_deltalake(str(self.root / source.name), pa.table(rows), mode="append")

    def expected(self) -> dict[int, tuple[int | None, str | None]]:
        """Key -> (total, label) the table must hold now."""
        keys = self.totals.keys() | self.labels.keys()
        return {k: (self.totals.get(k), self.labels.get(k)) for k in keys}


@dataclass(frozen=True)
class ConcurrentTrial:
    """Two writers at once: what each did, and what was wrong afterwards (nothing, ideally)."""

    kind: str
    conflicts: int
    skipped: int
    problems: tuple[str, ...]


def _chain_problems(table: WideTable) -> list[str]:
    """Each source's commits must read on exactly where the previous one ended: no overlap, no gap."""
    problems = []
    last: dict[str, tuple[int, Spans]] = {}
    for commit in table.commits():
        txn = commit.txn
        if txn is None:
            continue
        before = last.get(txn.app_id, (0, ()))
        if (txn.after, txn.after_ahead) != before:
            problems.append(
                f"commit {commit.commit} of {txn.app_id} read after {(txn.after, txn.after_ahead)}, not {before}"
            )
        last[txn.app_id] = (txn.offset, txn.ahead)
    return problems


@contextlib.contextmanager
def _workers(root: Path) -> Iterator[tuple[Worker, Worker]]:
    """Two workers on COUNTERS under `root`, closed afterwards."""
    workers = (Worker(root, root / "worker0.log"), Worker(root, root / "worker1.log"))
    try:
        yield workers
    finally:
        for worker in workers:
            worker.close()


def concurrent_trials(
    spark: SparkSession, work: Path, count: int, rng: random.Random, progress: Callable[[str], None] = print
) -> list[ConcurrentTrial]:
    """`count` trials of two writers on one table; even trials two runs (new records land between
    their starts), odd trials a run and a compaction. Each is checked against the landed records."""
    from wide_assets.pipelines.apply import open_wide_table

    root = work / "concurrent"
    root.mkdir(parents=True)
    table = open_wide_table(spark, COUNTERS, str(root / COUNTERS.name))
    landed = _Landed(root)
    landed.land(rng, "initial")  # the workers' sources exist before they start
    trials = []
    with _workers(root) as (first, second):
        for number in range(count):
            kind = "two runs" if number % 2 == 0 else "run + compaction"
            landed.land(rng, f"t{number}a")
            first.send("apply")
            time.sleep(rng.uniform(0, 0.5))
            if kind == "two runs":
                landed.land(rng, f"t{number}b")
            second.send("apply" if kind == "two runs" else "compact")
            replies = [first.receive(), second.receive()]
            problems = [r["error"] for r in replies if "error" in r]
            rows = {r.k: (r.total, r.label) for r in table.read().collect()}
            expected = landed.expected()
            lost = sum(rows.get(k) != v for k, v in expected.items()) + len(rows.keys() - expected.keys())
            if lost:
                problems.append(f"{lost} key(s) differ from the landed records (lost or doubled update)")
            problems += _chain_problems(table)
            trial = ConcurrentTrial(
                kind,
                conflicts=sum(r["conflicts"] for r in replies),
                skipped=sum(r.get("skipped", 0) for r in replies),
                problems=tuple(problems),
            )
            trials.append(trial)
            progress(
                f"concurrent {number + 1}/{count} {kind}: conflicts {trial.conflicts}, "
                f"skipped {trial.skipped}: {'; '.join(problems) or 'ok'}"
            )
    return trials


# ------------------------------------------------------------------------------------------ main
def _phase(step: str) -> str:
    """The part of the pipeline a step belongs to."""
    if step in SOURCES:
        return "ingest"
    if step == PRODUCT_360.name:
        return "wide-table commits"
    if step.startswith("compact_"):
        return "compaction"
    return "checks" if step.startswith(PRODUCT_360.name) else step


def _figures(
    crashes: list[CrashTrial],
    replayed: list[Replay],
    concurrent: list[ConcurrentTrial],
    bad: tuple[list[Any], int, int],
    expected: set[Row],
) -> list[str]:
    killed = [t for t in crashes if t.killed]
    phases = Counter(_phase(t.landed.split(";")[0]) for t in killed)
    outcomes, good_ingested, good_landed = bad
    reviews, questions = sums(expected)
    conflicted = [t for t in concurrent if t.conflicts or t.skipped]
    return [
        f"crashes survived: {sum(not t.problems for t in killed)}/{len(killed)} SIGKILLs "
        f"(killed during: {', '.join(f'{p} {n}' for p, n in sorted(phases.items()))}; "
        f"{len(crashes) - len(killed)} more trial(s) finished before their kill time, also checked)",
        f"replays identical: {sum(not r.problems for r in replayed)}/{len(replayed)}",
        f"concurrent trials without a lost or doubled update: {sum(not t.problems for t in concurrent)}/"
        f"{len(concurrent)} ({len(conflicted)} saw the other writer commit first: "
        f"{sum(t.conflicts for t in concurrent)} conflicts retried, {sum(t.skipped for t in concurrent)} "
        "ranges skipped as already applied; the rest serialized by the table lock)",
        f"bad inputs handled: {sum(o.handled for o in outcomes)}/{len(outcomes)}; good records around them "
        f"ingested: {good_ingested}/{good_landed}",
        f"aggregates (the oracle's; every table above equals it): review_cnt {reviews}, open_question_cnt {questions}",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run every trial, print the figures; exit code 1 when anything was lost or mishandled."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashes", type=int, default=20, help="SIGKILLed runs")
    parser.add_argument("--concurrent", type=int, default=50, help="trials of two writers at once")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    from bench.bad_inputs import handle_all
    from wide_assets.session import get_spark

    rng = random.Random(args.seed)
    spark = get_spark()
    started = time.monotonic()
    # One step per crash trial, the replays, each concurrent trial, and the bad-input corpus.
    with (
        tempfile.TemporaryDirectory(prefix="reliability_") as tmp,
        steps(args.crashes + 1 + args.concurrent + 1, quiet=args.quiet) as progress,
    ):

        def trial_done(line: str) -> None:
            note(line)
            progress.update()

        work = Path(tmp)
        progress.set_description("crash trials")
        crashes, clean, expected = crash_trials(spark, work, args.crashes, rng, trial_done)
        # A run that finished before its kill time was not a crash, and another trial was drawn.
        progress.total = len(crashes) + 1 + args.concurrent + 1
        progress.set_description("replays")
        replayed = replays(spark, work, work / "data", clean, expected)
        progress.update()
        for replay in replayed:
            note(f"replay {replay.name}: {'; '.join(replay.problems) or 'identical'}")
        progress.set_description("concurrent writers")
        concurrent = concurrent_trials(spark, work, args.concurrent, rng, trial_done)
        progress.set_description("bad inputs")
        bad = handle_all(spark, note)
        progress.update()
    figures = _figures(crashes, replayed, concurrent, bad, expected)
    print(f"\nreliability figures (seed {args.seed}, {time.monotonic() - started:.0f} s):")
    for line in figures:
        print(f"- {line}")
    failed: list[CrashTrial | Replay | ConcurrentTrial | Handled] = [t for t in crashes if t.problems]
    failed += [r for r in replayed if r.problems]
    failed += [t for t in concurrent if t.problems] + [o for o in bad[0] if not o.handled]
    return 1 if failed or bad[1] != bad[2] else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        sys.exit(0 if run_pipeline(Path(sys.argv[2]), Path(sys.argv[3])) else 1)
    if sys.argv[1:2] == ["worker"]:
        _worker(Path(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
