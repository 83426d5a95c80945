"""A key's result depends only on that key's records: one run merges them in op-time order across
sources (each source's in landing order), whatever other keys hold and whatever order the declaration
lists the sources in (docs/semantics.md 0.3).

Oracles: rows derived by hand from Paimon's partial-update (P7, P10, P11; a retraction of a group
advances that group's sequence, `PartialUpdateMergeFunction.retractWithSequenceGroup`), and for the
randomized cases a plain Python fold of each key's records of a run in that order (`fold`), sharing no
code with the pipeline. The planner alone is checked over many seeds by folding each planned commit's
records instead (`planned_table`); keys it reports as unordered are left out there, and the seed of the
end-to-end run has none.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from wide_assets.pipelines import SourceSpec, WideTableSpec
from wide_assets.pipelines.apply import apply_sources, open_wide_table
from wide_assets.pipelines.ingest import ingest, landed_files


def materialize(spark: Any, tmp: Path, declared: WideTableSpec, runs: list[dict[str, str]]) -> set[Any]:
    """The table after applying each run's landed files (source -> the text of its one file)."""
    landing, lake = tmp / "landing", tmp / "lake"
    table = open_wide_table(spark, declared, str(lake / declared.name))
    paths = {s.name: str(lake / s.name) for s in declared.sources}
    for number, run in enumerate(runs, start=1):
        for source in declared.sources:
            if source.name in run:
                suffix = "json" if source.format == "debezium" else "csv"
                (landing / source.name).mkdir(parents=True, exist_ok=True)
                (landing / source.name / f"{number:03}.{suffix}").write_text(run[source.name], "utf-8")
            ingest(spark, source, landed_files(landing, source), paths[source.name])
        apply_sources(spark, declared, table, paths)
    return {tuple(r) for r in table.read().collect()}


BUDGETS = SourceSpec(
    name="budgets",
    description="Campaign budgets from the ads database (Debezium).",
    files=("budgets/*.json",),
    format="debezium",
    columns=(("campaign_id", "bigint"), ("daily_budget", "decimal(12,2)"), ("ts", "timestamp_ntz")),
    primary_key=("campaign_id",),
    feeds={"daily_budget": "daily_budget", "ts": "budget_ts"},
    op_time="ts",
    deletes="clear-columns",
)
DELIVERY = SourceSpec(
    name="delivery",
    description="Spend delivered per campaign.",
    files=("delivery/*.csv",),
    columns=(("campaign_id", "bigint"), ("spend", "decimal(12,4)"), ("ts", "timestamp_ntz")),
    primary_key=("campaign_id",),
    feeds={"spend": "spend", "ts": "stats_ts"},
    op_time="ts",
    deletes="clear-columns",
)


def campaigns(sources: tuple[SourceSpec, ...]) -> WideTableSpec:
    return WideTableSpec(
        name="campaigns",
        description="Per campaign: its budget and its spend.",
        group="campaigns",
        columns=(
            ("campaign_id", "bigint"),
            ("daily_budget", "decimal(12,2)"),
            ("budget_ts", "timestamp_ntz"),
            ("spend", "decimal(12,4)"),
            ("stats_ts", "timestamp_ntz"),
        ),
        primary_key=("campaign_id",),
        options={
            "merge-engine": "partial-update",
            "fields.budget_ts.sequence-group": "daily_budget",
            "fields.stats_ts.sequence-group": "spend",
            "fields.spend.aggregate-function": "sum",
        },
        sources=sources,
    )


@pytest.mark.parametrize("listed", [(BUDGETS, DELIVERY), (DELIVERY, BUDGETS)], ids=["budgets_first", "last"])
def test_a_retraction_after_another_sources_insert_advances_its_group(
    spark: Any, tmp_path: Path, listed: tuple[SourceSpec, ...]
) -> None:
    # Run 1: delivery's spend at 04:00 makes the row; budgets' delete at 05:00 (ts_ms) clears the
    # budget group and moves its sequence to 05:00 (P10). Run 2: a budget of 04:30 is older than that
    # sequence, so it changes nothing (P8).
    delete = {"before": {"campaign_id": 105, "daily_budget": "120.00"}, "after": None, "op": "d"}
    insert = {"before": None, "after": {"campaign_id": 105, "daily_budget": "150.00"}, "op": "c"}
    runs = [
        {
            "budgets": json.dumps({**delete, "ts_ms": 1795410000000}) + "\n",
            "delivery": "campaign_id,spend,ts\n105,26.3293,2026-11-23 04:00:00\n",
        },
        {"budgets": json.dumps({**insert, "ts_ms": 1795408200000}) + "\n"},
    ]
    at = datetime(2026, 11, 23)
    expected = {(105, None, at.replace(hour=5), Decimal("26.3293"), at.replace(hour=4))}
    assert materialize(spark, tmp_path, campaigns(listed), runs) == expected


ACCOUNTS = SourceSpec(
    name="accounts",
    description="Accounts; a delete removes the account.",
    files=("accounts/*.csv",),
    columns=(("id", "bigint"), ("name", "string"), ("ts", "timestamp_ntz")),
    primary_key=("id",),
    feeds={"name": "name", "ts": "acc_ts"},
    op_time="ts",
    deletes="remove-row",
)
PREFS = SourceSpec(
    name="prefs",
    description="An account's preference; a delete clears it.",
    files=("prefs/*.csv",),
    columns=(("id", "bigint"), ("pref", "string"), ("ts", "timestamp_ntz")),
    primary_key=("id",),
    feeds={"pref": "pref", "ts": "pr_ts"},
    op_time="ts",
    deletes="clear-columns",
)


def accounts_wide(sources: tuple[SourceSpec, ...]) -> WideTableSpec:
    return WideTableSpec(
        name="accounts_wide",
        description="Per account: its name and its preference.",
        group="accounts_wide",
        columns=(
            ("id", "bigint"),
            ("name", "string"),
            ("acc_ts", "timestamp_ntz"),
            ("pref", "string"),
            ("pr_ts", "timestamp_ntz"),
        ),
        primary_key=("id",),
        options={
            "merge-engine": "partial-update",
            "fields.acc_ts.sequence-group": "name",
            "fields.pr_ts.sequence-group": "pref",
            "partial-update.remove-record-on-sequence-group": "acc_ts",
        },
        sources=sources,
    )


@pytest.mark.parametrize("listed", [(ACCOUNTS, PREFS), (PREFS, ACCOUNTS)], ids=["accounts_first", "last"])
def test_a_retraction_waits_for_the_insert_that_makes_its_row(
    spark: Any, tmp_path: Path, listed: tuple[SourceSpec, ...]
) -> None:
    # k1: accounts 10:00, prefs 11:00, accounts' delete 12:00 removes the row (P11). k2: accounts
    # 10:30 makes the row, prefs' delete 10:45 clears the preference and moves pr_ts to 10:45 (P10),
    # though accounts lands k2 after k1's delete, which follows prefs' records.
    runs = [
        {
            "accounts": "_row_kind,id,name,ts\n+I,1,ann,2026-01-01 10:00:00\n-D,1,ann,2026-01-01 12:00:00\n"
            "+I,2,bob,2026-01-01 10:30:00\n",
            "prefs": "_row_kind,id,pref,ts\n+I,1,dark,2026-01-01 11:00:00\n-D,2,light,2026-01-01 10:45:00\n",
        }
    ]
    at = datetime(2026, 1, 1)
    expected = {(2, "bob", at.replace(hour=10, minute=30), None, at.replace(hour=10, minute=45))}
    assert materialize(spark, tmp_path, accounts_wide(listed), runs) == expected


# ----------------------------------------------------------------------------- randomized
# Four sources, each its own sequence group of one value column `v_<source>` and its op time
# `ts_<source>` (notes: ungrouped columns, where a retraction changes nothing, P10), covering every
# delete rule.
DELETES = {"orders": "remove-row", "prefs": "clear-columns", "tags": "clear-columns", "notes": "ignore"}
START = datetime(2026, 1, 1)


@dataclass(frozen=True)
class Record:
    source: str
    run: int
    kind: str
    key: int
    value: str | None
    time: datetime | None


def generate(seed: int, keys: int, late: float = 0.2, sparse: bool = False) -> dict[str, list[Record]]:
    """Per source, its records in landing order over two runs: each run's records mostly in op-time
    order, some landed late (after records of their source with later op times), a few without an op
    time, some op times shared across sources. `sparse`: each source touches a sixth to a third of the
    keys per run (many keys only one source touches), with more deletes."""
    rng = random.Random(seed)
    landed: dict[str, list[Record]] = {s: [] for s in DELETES}
    touched = (keys // 6, keys // 3) if sparse else (keys // 2, keys)
    kinds = ["+I", "+I", "+U", "-D", "-D"] if sparse else ["+I", "+I", "+U", "-D"]
    for source in DELETES:
        for run in (1, 2):
            records = []
            for key in rng.sample(range(1, keys + 1), rng.randint(*touched)):
                for _ in range(rng.randint(1, 3)):
                    kind = rng.choice(kinds)
                    minute = rng.randrange(60 * (run - 1), 60 * run + 30)
                    time = None if rng.random() < 0.05 else START + timedelta(minutes=minute)
                    records.append(Record(source, run, kind, key, f"{source[0]}{rng.randrange(1000)}", time))
            records.sort(key=lambda r: (r.time is not None, r.time or START))
            for _ in range(int(len(records) * late)):
                # A late record: moved after records with later op times.
                i = rng.randrange(len(records))
                records.insert(rng.randrange(i, len(records)), records.pop(i))
            landed[source] += records
    return landed


def key_order(records: list[Record]) -> list[Record]:
    """One key's records of one run: per source in landing order, merged by op time (NULL first), then
    source name."""
    streams = {s: [r for r in records if r.source == s] for s in sorted(DELETES)}
    order = []
    while any(streams.values()):
        source = min(
            (s for s in streams if streams[s]),
            key=lambda s: (streams[s][0].time is not None, streams[s][0].time or START, s),
        )
        order.append(streams[source].pop(0))
    return order


Row = dict[str, Any]


def fold(row: Row | None, records: list[Record]) -> Row | None:
    """Paimon's partial-update merge of `records` into the stored `row` (None: no row): P6, P7, P10,
    P11 on each source's group; a retraction met before the row exists still moves its group (the
    merge's state); the row exists when it was stored or an insert/update came (P12)."""
    state: Row = dict(row) if row else {f"{p}_{s}": None for s in DELETES for p in ("v", "ts")}
    exists = row is not None
    for r in records:
        value, seq = f"v_{r.source}", f"ts_{r.source}"
        if DELETES[r.source] == "ignore":
            if r.kind != "-D":
                state.update({value: r.value, seq: r.time})  # ungrouped: the write's value (P1)
                exists = True
            continue
        newer = r.time is not None and (state[seq] is None or r.time >= state[seq])
        if r.kind != "-D":
            exists = True
            if newer:
                state.update({value: r.value, seq: r.time})
        elif newer and DELETES[r.source] == "remove-row":
            state = {c: None for c in state}
            exists = False
        elif newer:
            state.update({value: None, seq: r.time})
    return state if exists else None


def expected_table(landed: dict[str, list[Record]]) -> dict[int, Row]:
    """Each key's run folded in its key order, run after run."""
    table: dict[int, Row] = {}
    for run in (1, 2):
        records = [r for s in DELETES for r in landed[s] if r.run == run]
        for key in sorted({r.key for r in records}):
            row = fold(table.get(key), key_order([r for r in records if r.key == key]))
            table.pop(key, None)
            if row is not None:
                table[key] = row
    return table


def planned_table(landed: dict[str, list[Record]], retracting: str = "") -> tuple[dict[int, Row], set[int]]:
    """The table the pipeline's commits make, simulated: each run's commits in `commit_plan`'s order,
    each merging its records of a key into the stored row (`fold`); and the keys reported unordered.
    The source named `retracting` has its retractions planned as those of an aggregate (`RETRACT`:
    waiting for the row instead of written as inserts)."""
    from wide_assets.pipelines.run_order import CLEAR, INERT, MAKE, REMOVE, RETRACT, Unit, commit_plan

    effect = {"remove-row": REMOVE, "clear-columns": CLEAR, "ignore": INERT}
    table: dict[int, Row] = {}
    unordered: set[int] = set()
    for run in (1, 2):
        at = {s: [(o, r) for o, r in enumerate(landed[s], start=1) if r.run == run] for s in DELETES}
        ranges = {s: (rs[0][0] - 1, rs[-1][0]) for s, rs in at.items() if rs}
        touching: dict[int, set[str]] = {}
        for s, rs in at.items():
            for _, r in rs:
                touching.setdefault(r.key, set()).add(s)
        # As the pipeline plans them: keys several sources touch, and a key of one source whose
        # retraction (of columns, not the row) comes before its first insert, on a key not stored.
        planned = {k for k, sources in touching.items() if len(sources) > 1}
        for s, rs in at.items():
            kinds: dict[int, list[str]] = {}
            for _, r in rs:
                if DELETES[s] == "clear-columns" and len(touching[r.key]) == 1 and r.key not in table:
                    kinds.setdefault(r.key, []).append(r.kind)
            planned |= {k for k, ks in kinds.items() if ks[0] == "-D" and set(ks) != {"-D"}}
        units = {
            s: [
                Unit(
                    o,
                    r.time,
                    {r.key: (RETRACT if s == retracting else effect[DELETES[s]]) if r.kind == "-D" else MAKE},
                )
                for o, r in rs
                if r.key in planned
            ]
            for s, rs in at.items()
        }
        # Listed in reverse name order: the declaration's order must not matter.
        plan = commit_plan(sorted(DELETES, reverse=True), ranges, units, frozenset(table))
        unordered |= {k for keys in plan.unordered.values() for k in keys if isinstance(k, int)}
        for segment in plan.segments:
            inserts = plan.inserts.get(segment.source, frozenset())
            records = [
                replace(r, kind="+I", value=None) if o in inserts else r
                for o, r in at[segment.source]
                if any(first <= o <= last for first, last in segment.offsets)
            ]
            for key in sorted({r.key for r in records}):
                row = fold(table.get(key), [r for r in records if r.key == key])
                table.pop(key, None)
                if row is not None:
                    table[key] = row
    return table, unordered


@pytest.mark.parametrize("retracting", ["", "tags"])
@pytest.mark.parametrize("seed", range(300))
def test_planned_commits_merge_each_key_in_its_order(seed: int, retracting: str) -> None:
    landed = generate(seed, keys=12)
    expected = expected_table(landed)
    table, unordered = planned_table(landed, retracting)
    assert (table, unordered) == (expected, set())


@pytest.mark.parametrize("seed", range(400))
def test_a_retraction_of_a_key_one_source_touches_meets_the_row_its_later_insert_makes(seed: int) -> None:
    # Other keys may cut the source's records into several commits, the retraction in one before the
    # insert's (without the key in the plan, 2 of these seeds lose a retraction).
    landed = generate(seed, keys=24, late=0.3, sparse=True)
    expected = expected_table(landed)
    for retracting in ("", "tags"):
        assert planned_table(landed, retracting) == (expected, set())


@pytest.mark.parametrize("seed", range(300))
def test_a_keys_planned_result_does_not_depend_on_other_keys(seed: int) -> None:
    landed = generate(seed, keys=12)
    alone = {s: [r for r in rs if r.key % 3 == 0] for s, rs in landed.items()}
    together, unordered = planned_table(landed)
    apart, unordered_apart = planned_table(alone)
    assert unordered == unordered_apart == set()
    keys = {r.key for rs in alone.values() for r in rs}
    assert {k: together.get(k) for k in keys} == {k: apart.get(k) for k in keys}


def columns() -> tuple[tuple[str, str], ...]:
    return (
        ("k", "bigint"),
        *((f"{p}_{s}", t) for s in DELETES for p, t in (("v", "string"), ("ts", "timestamp_ntz"))),
    )


def randomized_spec() -> WideTableSpec:
    sources = tuple(
        SourceSpec(
            name=name,
            description=f"Random {name}.",
            files=(f"{name}/*.csv",),
            columns=(("k", "bigint"), ("v", "string"), ("ts", "timestamp_ntz")),
            primary_key=("k",),
            feeds={"v": f"v_{name}", "ts": f"ts_{name}"},
            op_time="ts",
            deletes=deletes,
        )
        for name, deletes in DELETES.items()
    )
    grouped = [s for s, d in DELETES.items() if d != "ignore"]
    return WideTableSpec(
        name="random_wide",
        description="Four sources' random records.",
        group="random_wide",
        columns=columns(),
        primary_key=("k",),
        options={
            "merge-engine": "partial-update",
            **{f"fields.ts_{s}.sequence-group": f"v_{s}" for s in grouped},
            "partial-update.remove-record-on-sequence-group": "ts_orders",
        },
        # Listed against name order: the order must not matter.
        sources=tuple(reversed(sources)),
    )


def csv_runs(landed: dict[str, list[Record]]) -> list[dict[str, str]]:
    def line(r: Record) -> str:
        return f"{r.kind},{r.key},{r.value},{'' if r.time is None else f'{r.time:%Y-%m-%d %H:%M:%S}'}"

    return [
        {
            s: "_row_kind,k,v,ts\n" + "".join(line(r) + "\n" for r in rs if r.run == run)
            for s, rs in landed.items()
        }
        for run in (1, 2)
    ]


def as_rows(table: dict[int, Row]) -> set[tuple[Any, ...]]:
    return {(k, *(row[c] for c, _ in columns()[1:])) for k, row in table.items()}


def test_random_runs_of_four_sources_merge_each_key_in_its_order(spark: Any, tmp_path: Path) -> None:
    # Seed 0: 16 keys, 177 records, a fifth of each run's records landed late: no cut of the sources
    # into offset ranges keeps every key's order, so the runs apply some records ahead of others their
    # source landed before them (the table's progress says so).
    from wide_assets.pipelines.checks import keyed_diff
    from wide_assets.pipelines.convergence import applied_in_commits, expected_rows

    landed = generate(0, keys=16, late=0.2)
    expected = as_rows(expected_table(landed))
    declared = randomized_spec()
    together = materialize(spark, tmp_path / "together", declared, csv_runs(landed))
    assert together == expected
    lake = tmp_path / "together" / "lake"
    table = open_wide_table(spark, declared, str(lake / declared.name))
    assert any(c.txn is not None and c.txn.ahead for c in table.commits())
    # The convergence check reads which commit applied each record from that progress too. (Its oracle
    # orders notes by their declared op time, which no sequence group makes the table's: the last
    # applied note wins there, and the check names that, by design. The other columns must agree.)
    applied = {
        s.name: applied_in_commits(spark, table, s.name, spark.read.format("delta").load(str(lake / s.name)))
        for s in declared.sources
    }
    grouped = [c for c in declared.value_columns if not c.endswith("_notes")]
    expected_by_check = expected_rows(spark, declared, applied)
    diff = keyed_diff(spark, table.read(), expected_by_check, declared.primary_key, grouped)
    assert diff.passed, diff.examples
    # The same keys' records without the other keys' give the same rows.
    alone = {s: [r for r in rs if r.key % 3 == 0] for s, rs in landed.items()}
    apart = materialize(spark, tmp_path / "apart", randomized_spec(), csv_runs(alone))
    assert apart == {row for row in together if row[0] % 3 == 0}


def landed_ahead_case(spark: Any, tmp_path: Path) -> tuple[WideTableSpec, Any, dict[str, str]]:
    """Accounts and prefs ingested with the landing order no cut into offset ranges keeps (below): the
    declaration, its new table and the sources' paths."""
    declared = accounts_wide((ACCOUNTS, PREFS))
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    files = {
        "accounts": "_row_kind,id,name,ts\n+I,1,ann,2026-01-01 00:00:00\n+I,2,bob,2026-01-01 00:00:00\n"
        "-D,1,ann,2026-01-01 17:59:00\n-D,2,bob,2026-01-01 19:00:00\n",
        "prefs": "_row_kind,id,pref,ts\n+I,2,dark,2026-01-01 20:00:00\n+I,1,light,2026-01-01 13:46:00\n",
    }
    paths = {s.name: str(lake / s.name) for s in declared.sources}
    for source in declared.sources:
        (landing / source.name).mkdir(parents=True)
        (landing / source.name / "001.csv").write_text(files[source.name], "utf-8")
        ingest(spark, source, landed_files(landing, source), paths[source.name])
    table = open_wide_table(spark, declared, str(lake / declared.name))
    return declared, table, paths


def test_a_late_record_no_cut_into_ranges_keeps_in_order_is_applied_ahead_and_a_cut_run_resumes(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Key 1's late preference (13:46) precedes accounts' delete of 1 (17:59), but prefs landed it after
    # key 2's of 20:00, which follows accounts' delete of 2 (19:00), landed after that of 1. No cut of
    # the sources into offset ranges keeps both orders: the run applies the late preference ahead of
    # key 2's. Stopped right after that commit, the run leaves prefs' progress at offset 0 with offset 2
    # applied ahead; the next run applies the rest, each record once.
    from wide_assets.pipelines import apply as apply_module
    from wide_assets.pipelines.checks import keyed_diff
    from wide_assets.pipelines.convergence import applied_in_commits, expected_rows

    declared, table, paths = landed_ahead_case(spark, tmp_path)
    commit = apply_module.apply_pending

    def stopping_after_prefs(*args: Any, **kwargs: Any) -> Any:
        applied = commit(*args, **kwargs)
        if applied.source == "prefs":
            raise RuntimeError("the run stops here")
        return applied

    monkeypatch.setattr(apply_module, "apply_pending", stopping_after_prefs)
    with pytest.raises(RuntimeError, match="stops here"):
        apply_sources(spark, declared, table, paths)
    monkeypatch.undo()
    progress = [(c.txn.app_id, c.txn.offset, c.txn.ahead) for c in table.commits() if c.txn is not None]
    assert progress == [("accounts", 2, ()), ("prefs", 0, ((2, 2),))]
    applied = {a.source: a for a in apply_sources(spark, declared, table, paths)}
    assert not applied["prefs"].unordered_keys and not applied["accounts"].unordered_keys
    progress = [(c.txn.app_id, c.txn.offset, c.txn.ahead) for c in table.commits() if c.txn is not None]
    assert progress[2:] == [("accounts", 4, ()), ("prefs", 2, ())]
    assert sum(c.input_records for c in table.commits()) == 6, "each landed record applied once"
    at = datetime(2026, 1, 1)
    assert {tuple(r) for r in table.read().collect()} == {(2, None, None, "dark", at.replace(hour=20))}
    records = {
        s.name: applied_in_commits(spark, table, s.name, spark.read.format("delta").load(paths[s.name]))
        for s in declared.sources
    }
    expected = expected_rows(spark, declared, records)
    diff = keyed_diff(spark, table.read(), expected, declared.primary_key, declared.value_columns)
    assert diff.passed, diff.examples


def test_two_runs_at_once_apply_each_record_once_when_a_record_goes_ahead(spark: Any, tmp_path: Path) -> None:
    # The landed files of the test above, applied by two runs at once: whichever commits a segment
    # first, the other skips it (the progress holds it) or reads again (its input went stale).
    from concurrent.futures import ThreadPoolExecutor

    declared, table, paths = landed_ahead_case(spark, tmp_path)
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: apply_sources(spark, declared, table, paths), range(2)))
    assert sum(c.input_records for c in table.commits()) == 6, "each landed record applied once"
    progress = {c.txn.app_id: (c.txn.offset, c.txn.ahead) for c in table.commits() if c.txn is not None}
    assert progress == {"accounts": (4, ()), "prefs": (2, ())}
    at = datetime(2026, 1, 1)
    assert {tuple(r) for r in table.read().collect()} == {(2, None, None, "dark", at.replace(hour=20))}
