"""`python -m bench.multi_writer`: several writer processes on one wide table at once, with no lock
between them, on local disk or object storage; every trial checked against what the writers wrote.

    .venv/bin/python -m bench.multi_writer --trials 20 --seed 3            # local disk
    .venv/bin/python -m bench.multi_writer --trials 20 --root s3://bucket/multi   # AWS_* variables set

Each trial creates a table, then 2-4 long-lived worker processes (one engine session each) start
writing it at the same instant, the table lock turned off:
- `sum` (Paimon aggregation): every write adds 1 to each of KEYS keys, so each key must end at the
  number of writes: a lost update shows as less, a doubled one as more;
- `partial-update`: worker i owns column `c<i>` and its j-th write sets it to j on every key, so each
  column must end at its worker's last write;
- write-only variants of both, whose workers also compact between their writes.
Afterwards the table (compacted, read by delta-rs, not by the code under test) must be exactly that,
and the commit numbers in the log exactly 1..writes, each once.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.reliability import Worker
from wide_assets.locking import LOCAL_LOCK_ENV

KEYS = 20
MAX_WORKERS = 4
KINDS: dict[str, dict[str, str]] = {
    "sum": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "partial-update": {"merge-engine": "partial-update"},
    "sum, write-only": {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "write-only": "true",
    },
    "partial-update, write-only": {"merge-engine": "partial-update", "write-only": "true"},
}
COLUMNS = [("k", "int"), ("v", "bigint"), *((f"c{i}", "int") for i in range(MAX_WORKERS))]


@dataclass(frozen=True)
class Trial:
    """One trial's plan and outcome."""

    kind: str
    writers: int
    writes: int  # in all
    compactions: int
    conflicts: int  # attempts that lost the race, computed again
    seconds: float
    problems: tuple[str, ...]


def _worker(root: str) -> None:
    """`python -m bench.multi_writer worker <root>`: per stdin JSON line, `create` a trial's table or
    `write` to it (at `start_at`, wall clock), answering with the conflicts its writes retried."""
    from wide_assets import WideTable
    from wide_assets.session import get_spark

    spark = get_spark()
    for line in sys.stdin:
        task = json.loads(line)
        reply: dict[str, Any] = {"conflicts": 0}
        try:
            path = task["path"]
            if task["do"] == "create":
                WideTable.create(spark, path, COLUMNS, ["k"], KINDS[task["kind"]])
            else:
                table = WideTable.open(spark, path)
                time.sleep(max(0.0, task["start_at"] - time.time()))
                for number in range(1, task["writes"] + 1):
                    column = f"c{task['worker']}"
                    rows = spark.createDataFrame(
                        [(k, 1, number) for k in range(KEYS)], f"k int, v bigint, {column} int"
                    )
                    reply["conflicts"] += table.write(rows).conflicts
                    if task["compact"]:
                        table.compact()
                if task["compact"]:
                    table.compact()
        except Exception as error:
            reply["error"] = f"{type(error).__name__}: {error}"
        print("RESULT " + json.dumps(reply), flush=True)


def check(path: str, kind: str, plans: list[int]) -> list[str]:
    """What is wrong with the table at `path` after workers wrote `plans[i]` times each (read with
    delta-rs, independently of the code under test)."""
    from wide_assets.table.arbiter import open_table

    problems = []
    import pyarrow as pa
    from deltalake import QueryBuilder

    # delta-rs's DataFusion reader: it applies the table's deletion vectors.
    stored = QueryBuilder().register("t", open_table(path)).execute("SELECT * FROM t").read_all()
    rows = {r["k"]: r for r in pa.table(stored).to_pylist()}
    if sorted(rows) != list(range(KEYS)):
        problems.append(f"keys {sorted(rows)} instead of 0..{KEYS - 1}")
    for key, row in rows.items():
        if kind.startswith("sum") and row["v"] != sum(plans):
            problems.append(f"key {key}: sum {row['v']}, {sum(plans)} writes")
            break
        if kind.startswith("partial-update"):
            got = [row[f"c{i}"] for i in range(len(plans))]
            if got != plans:
                problems.append(f"key {key}: columns {got}, last writes {plans}")
                break
    log = open_table(path + "_changelog").to_pyarrow_table(
        columns=["_commit"], filters=[("_origin", "=", "commit")]
    )
    numbers = sorted(log.column("_commit").to_pylist())
    if numbers != list(range(1, sum(plans) + 1)):
        problems.append(f"commit numbers {numbers}, expected 1..{sum(plans)} once each")
    return problems


@contextmanager
def workers(root: str, logs: Path, count: int = MAX_WORKERS) -> Iterator[list[Worker]]:
    """`count` workers with the table lock off, closed afterwards."""
    unlocked = {LOCAL_LOCK_ENV: "off"}
    with ExitStack() as stack:
        started = [
            Worker(root, logs / f"worker{i}.log", module="bench.multi_writer", env=unlocked)
            for i in range(count)
        ]
        for worker in started:
            stack.callback(worker.close)
        yield started


def run_trials(
    root: str, pool: list[Worker], count: int, rng: random.Random, progress: Callable[[str], None] = print
) -> list[Trial]:
    """`count` trials under `root` (a directory or an object-store URL), kinds in turn, 2-4 writers
    of 1-3 writes each."""
    trials = []
    kinds = list(KINDS)
    for number in range(count):
        kind = kinds[number % len(kinds)]
        plans = [rng.randint(1, 3) for _ in range(rng.randint(2, len(pool)))]
        path = f"{root.rstrip('/')}/trial{number}"
        compact = kind.endswith("write-only")
        pool[0].send(json.dumps({"do": "create", "path": path, "kind": kind}))
        replies = [pool[0].receive()]
        started = time.time()
        if "error" not in replies[0]:
            start_at = started + 1.0  # every worker has its task before the first one starts
            for i, writes in enumerate(plans):
                task = {"do": "write", "path": path, "worker": i, "writes": writes, "compact": compact}
                pool[i].send(json.dumps({**task, "start_at": start_at}))
            replies = [pool[i].receive() for i in range(len(plans))]
        problems = [r["error"] for r in replies if "error" in r]
        if not problems:
            problems = check(path, kind, plans)
        trial = Trial(
            kind=kind,
            writers=len(plans),
            writes=sum(plans),
            compactions=(sum(plans) + len(plans)) if compact else 0,
            conflicts=sum(r["conflicts"] for r in replies),
            seconds=time.time() - started,
            problems=tuple(problems),
        )
        trials.append(trial)
        progress(
            f"trial {number + 1}/{count} {kind}, {trial.writers} writers, {trial.writes} writes: "
            f"{trial.conflicts} conflicts retried, {trial.seconds:.1f} s: {'; '.join(problems) or 'ok'}"
        )
    return trials


def summary(trials: list[Trial]) -> str:
    """One line of figures for the README."""
    clean = sum(not t.problems for t in trials)
    return (
        f"{clean}/{len(trials)} trials without a lost or doubled update, commit numbers dense and unique; "
        f"{sum(t.writes for t in trials)} writes and {sum(t.compactions for t in trials)} compactions by "
        f"2-4 writer processes per trial, {sum(t.conflicts for t in trials)} conflicts "
        "detected and retried"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--root", help="directory or s3:// URL for the trial tables (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.root or scratch
        with workers(root, Path(scratch)) as pool:
            trials = run_trials(root, pool, args.trials, random.Random(args.seed))
    print(summary(trials))
    sys.exit(0 if all(not t.problems for t in trials) else 1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        _worker(sys.argv[2])
    else:
        main()
