"""History tables (SCD type 2): the intervals a declared wide table's history holds after several runs of
late, out-of-order and duplicate records, maintained exactly once; and its two checks.

Oracle: plain Python over the landed records: each key's records folded in (op time, source, arrival)
order, the row removed by an orders delete and cleared column by a payments delete, one interval
whenever the tracked columns' values change (docs/semantics.md section 8). It shares no code with
`wide_assets.table.history`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster.components.testing import DefsFolderSandbox, create_defs_folder_sandbox
from dagster_parts import assets_and_checks
from deltalake import DeltaTable
from engine import spark_resource
from pyspark.sql import functions as F
from test_component import build, evaluations, lake, messages, scaffold
from test_run_order import COLUMNS, OPTIONS, ORDERS, PAYMENTS, spec

from bench.product_360_oracle import SOURCES, records
from demos import declared_defs
from demos.generate import generate
from wide_assets.pipelines import LandingZone, WideTableSpec
from wide_assets.pipelines.apply import apply_sources, open_wide_table
from wide_assets.pipelines.checks import keyed_diff
from wide_assets.pipelines.history import (
    NO_OVERLAP_CHECK,
    OPEN_EQUALS_TABLE_CHECK,
    history_problem,
    history_table,
    overlaps,
    source_events,
)
from wide_assets.pipelines.ingest import ingest, landed_files
from wide_assets.pipelines.resources import LakeSettings
from wide_assets.pipelines.specs import HistorySpec
from wide_assets.table import arbiter, delta_log
from wide_assets.table.history import HistoryTable

TRACKED = ("status", "amount")
Record = tuple[str, int, Any, int]  # row kind, order, status or amount, minute past 10:00

# Per run, per source: records in landing order. Order 1 gets a status older than all but its first
# (run 3) and one inside a closed interval (run 2), a duplicate of its 10:05 status, and a newer
# payment. Order 2's payment is cleared by a late payments delete (run 2) and it changes status back
# to an earlier value. Order 3 is deleted in run 1 and created again in run 3.
RUNS: list[dict[str, list[Record]]] = [
    {
        "orders": [
            ("+I", 1, "new", 1),
            ("+I", 2, "new", 1),
            ("+U", 1, "paid", 5),
            ("+I", 3, "new", 2),
            ("-D", 3, "new", 6),
        ],
        "payments": [("+I", 1, 10, 3), ("+I", 2, 7, 2)],
    },
    {
        "orders": [
            ("+U", 1, "packed", 4),
            ("+U", 2, "shipped", 8),
            ("+U", 2, "new", 9),
            ("+U", 1, "paid", 5),
        ],
        "payments": [("+I", 1, 12, 7), ("-D", 2, 7, 3)],
    },
    {
        "orders": [("+I", 3, "again", 10), ("+U", 1, "late", 2)],
        "payments": [("+I", 3, 5, 11), ("+I", 3, 5, 11)],
    },
]


def at(minute: int | None) -> datetime | None:
    return None if minute is None else datetime(2026, 1, 1, 10, minute)


def oracle(runs: list[dict[str, list[Record]]]) -> set[tuple[Any, ...]]:
    """(order, status, amount, start, end) of every interval: the fold described in the module doc."""
    records: list[tuple[Any, ...]] = []  # (minute, source, arrival, kind, order, value)
    for run in runs:
        for source, lines in run.items():
            for kind, order, value, minute in lines:
                records.append((minute, source, len(records), kind, order, value))
    states: dict[int, dict[int, tuple[Any, ...] | None]] = {}  # order -> minute -> state after it
    rows: dict[int, dict[str, Any] | None] = {}
    for minute, source, _, kind, order, value in sorted(records, key=lambda r: (r[0], r[1], r[2])):
        row = rows.get(order)
        if source == "orders" and kind == "-D":
            row = None
        elif source == "orders":
            row = {**(row or {"amount": None}), "status": value}
        elif row is not None or kind in ("+I", "+U"):
            row = {**(row or {"status": None}), "amount": value if kind in ("+I", "+U") else None}
        rows[order] = row
        states.setdefault(order, {})[minute] = None if row is None else (row["status"], row["amount"])
    return {(*i[:-2], at(i[-2]), at(i[-1])) for i in intervals_of(states)}


def intervals_of(states: dict[Any, dict[Any, tuple[Any, ...] | None]]) -> set[tuple[Any, ...]]:
    """(key, *state, start, end) of each run of one state of a key while its row exists, from each key's
    state after every time (None: no row)."""
    intervals = set()
    for key, by_time in states.items():
        changes: list[tuple[Any, tuple[Any, ...] | None]] = []
        for time in sorted(by_time):
            if by_time[time] != (changes[-1][1] if changes else None):
                changes.append((time, by_time[time]))
        for (start, state), following in zip(changes, [*changes[1:], (None, None)], strict=True):
            if state is not None:
                intervals.add((key, *state, start, following[0]))
    return intervals


class Lake:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, name: str) -> str:
        return str(self.root / name)


HISTORY = HistorySpec(track=TRACKED)


def declared(history: HistorySpec | None = HISTORY) -> WideTableSpec:
    return replace(spec((ORDERS, PAYMENTS)), history=history)


class Pipeline:
    """The declared table in a temporary lake: land and apply a run, maintain the history."""

    def __init__(self, spark: Any, root: Path) -> None:
        self.spark, self.landing, self.lake = spark, root / "landing", Lake(root / "lake")
        self.spec = declared()
        self.table = open_wide_table(spark, self.spec, self.lake.path("orders_wide/orders_wide"))
        self.history = history_table(spark, self.spec, self.table.path)
        self.runs = 0

    def apply(self, run: dict[str, list[Record]]) -> None:
        self.runs += 1
        for source, lines in run.items():
            column = "status" if source == "orders" else "amount"
            text = [f"_row_kind,order_id,{column},ts"]
            text += [
                f"{kind},{order},{value},2026-01-01 10:{minute:02}:00" for kind, order, value, minute in lines
            ]
            (self.landing / source).mkdir(parents=True, exist_ok=True)
            (self.landing / source / f"{source}_{self.runs}.csv").write_text("\n".join(text) + "\n", "utf-8")
        paths = {s.name: self.lake.path(f"orders_wide/{s.name}") for s in self.spec.sources}
        for declared in self.spec.sources:
            ingest(self.spark, declared, landed_files(self.landing, declared), paths[declared.name])
        apply_sources(self.spark, self.spec, self.table, paths)

    def maintain(self, history: HistoryTable | None = None) -> Any:
        return (history or self.history).maintain(
            lambda: source_events(self.spark, self.spec, self.table, self.lake)
        )

    def intervals(self) -> set[tuple[Any, ...]]:
        return {tuple(r) for r in self.history.rows().collect()}


def test_history_folds_late_out_of_order_and_duplicate_records_across_runs(
    spark: Any, tmp_path: Path
) -> None:
    pipeline = Pipeline(spark, tmp_path)
    assert history_problem(pipeline.spec) is None
    pipeline.apply(RUNS[0])
    pipeline.maintain()
    assert pipeline.intervals() == oracle(RUNS[:1])
    # Runs 2 and 3 in one maintenance: several commits consumed at once.
    pipeline.apply(RUNS[1])
    pipeline.apply(RUNS[2])
    result = pipeline.maintain()
    assert result.through == pipeline.table.last_commit
    assert pipeline.intervals() == oracle(RUNS)
    # The history's present is the table (the open-interval check's comparison), and nothing overlaps.
    open_rows = {(o, s, a) for o, s, a, _, end in pipeline.intervals() if end is None}
    assert open_rows == {(r.order_id, r.status, r.amount) for r in pipeline.table.read().collect()}
    assert overlaps(spark, pipeline.history.rows(), ("order_id",)) == (0, [])


def test_a_run_applied_twice_or_cut_short_changes_nothing(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = Pipeline(spark, tmp_path)
    pipeline.apply(RUNS[0])
    consumed = pipeline.maintain().through
    pipeline.apply(RUNS[1])
    # A run cut short after writing its files, before its commit: nothing of it is in the history.
    version = DeltaTable(pipeline.history.path).version()

    def crash(*args: Any) -> None:
        raise KeyboardInterrupt("killed before the commit")

    with monkeypatch.context() as patched:
        patched.setattr(delta_log, "commit", crash)
        with pytest.raises(KeyboardInterrupt):
            pipeline.maintain()
    assert DeltaTable(pipeline.history.path).version() == version
    assert pipeline.intervals() == oracle(RUNS[:1])
    # Its retry applies run 2 once; applying it again commits nothing.
    assert pipeline.maintain().commits == pipeline.table.last_commit - consumed > 0
    version = DeltaTable(pipeline.history.path).version()
    again = pipeline.maintain()
    assert again.skipped
    assert DeltaTable(pipeline.history.path).version() == version
    assert pipeline.intervals() == oracle(RUNS[:2])


def test_a_concurrent_run_that_committed_first_is_not_applied_again(spark: Any, tmp_path: Path) -> None:
    pipeline = Pipeline(spark, tmp_path)
    pipeline.apply(RUNS[0])
    consumed = pipeline.maintain().through
    pipeline.apply(RUNS[1])
    pipeline.apply(RUNS[2])
    other = history_table(spark, pipeline.spec, pipeline.table.path)
    raced: list[Any] = []

    def events_then_race() -> Any:
        found = source_events(spark, pipeline.spec, pipeline.table, pipeline.lake)
        if not raced:  # another run commits between this one's read and its commit
            raced.append(pipeline.maintain(other))
        return found

    result = pipeline.history.maintain(events_then_race)
    assert raced[0].commits == pipeline.table.last_commit - consumed
    assert (result.conflicts, result.commits) == (1, 0)  # its retry finds the commits applied
    assert arbiter.applied_through(arbiter.open_table(pipeline.history.path)) == pipeline.table.last_commit
    assert pipeline.intervals() == oracle(RUNS)


def test_a_record_older_than_a_delete_landed_after_it_differs_from_the_table(
    spark: Any, tmp_path: Path
) -> None:
    """H9: the table brings order 4 back with the late payment (P11); its history ends at the delete."""
    runs: list[dict[str, list[Record]]] = [
        {"orders": [("+I", 4, "new", 1), ("-D", 4, "new", 5)], "payments": []},
        {"orders": [], "payments": [("+I", 4, 3, 3)]},
    ]
    pipeline = Pipeline(spark, tmp_path)
    for run in runs:
        pipeline.apply(run)
    pipeline.maintain()
    assert (
        pipeline.intervals() == oracle(runs) == {(4, "new", None, at(1), at(3)), (4, "new", 3, at(3), at(5))}
    )
    assert [tuple(r) for r in pipeline.table.read().select("order_id", "status", "amount").collect()] == [
        (4, None, 3)
    ]
    current = pipeline.history.rows().where("__END_AT IS NULL")
    diff = keyed_diff(spark, pipeline.table.read(), current, ("order_id",), TRACKED)
    assert (diff.passed, diff.unexpected, diff.examples) == (False, 1, ("unexpected row order_id=4",))


def test_the_checks_fail_an_overlap_and_a_table_changed_behind_the_history(
    spark: Any, tmp_path: Path
) -> None:
    pipeline = Pipeline(spark, tmp_path)
    pipeline.apply(RUNS[0])
    pipeline.maintain()
    current = pipeline.history.rows().where("__END_AT IS NULL")
    assert keyed_diff(spark, pipeline.table.read(), current, ("order_id",), TRACKED).passed
    DeltaTable(pipeline.table.path).update(predicate="order_id = 2", updates={"status": "'lost'"})
    diff = keyed_diff(spark, pipeline.table.read(), current, ("order_id",), TRACKED)
    assert dict(diff.differing) == {"status": 1}
    # Order 1's first interval stretched past the start of its second.
    rows = pipeline.history.rows()
    stretched = rows.where("order_id = 1 AND __START_AT = '2026-01-01 10:01:00'").withColumn(
        "__END_AT", rows["__START_AT"] + F.expr("INTERVAL 3 MINUTES")
    )
    count, examples = overlaps(
        spark,
        rows.where("NOT (order_id = 1 AND __START_AT = '2026-01-01 10:01:00')").unionByName(stretched),
        ("order_id",),
    )
    assert count == 1 and "order_id=1" in examples[0]


def test_a_history_declaration_is_refused_where_it_cannot_hold() -> None:
    with pytest.raises(ValueError, match=r"track names 'stauts'.*did you mean 'status'"):
        declared(HistorySpec(track=("stauts",)))
    with pytest.raises(ValueError, match="not both"):
        HistorySpec(track=("status",), track_except=("amount",))
    with pytest.raises(ValueError, match="no column is tracked"):
        declared(HistorySpec(track_except=tuple(c for c, _ in COLUMNS[1:])))
    untimed = (replace(ORDERS, op_time=None), PAYMENTS)
    with pytest.raises(ValueError, match="source orders has no op_time"):
        replace(declared(None), sources=untimed, history=HistorySpec())
    summed = replace(declared(), options={**OPTIONS, "fields.amount.aggregate-function": "sum"})
    assert "tracked column amount has the aggregate function sum" in (history_problem(summed) or "")


# ------------------------------------------------------------------------------------------ declared
@pytest.fixture
def folder() -> Iterator[DefsFolderSandbox]:
    with create_defs_folder_sandbox() as sandbox:
        yield sandbox


def ts(text: str) -> datetime:
    return datetime.fromisoformat(f"2025-01-05 {text}:00")


# By hand from the scaffold's sample files: (customer, name, points, start, end).
SCAFFOLD_HISTORY = {
    ("c1", "Ada", None, ts("09:00"), ts("09:30")),
    ("c1", "Ada", 10, ts("09:30"), ts("10:00")),
    ("c1", "Ada Lovelace", 10, ts("10:00"), ts("11:00")),
    ("c1", "Ada Lovelace", 25, ts("11:00"), None),
    ("c2", "Grace", None, ts("09:01"), ts("09:31")),
    ("c2", "Grace", 5, ts("09:31"), ts("12:00")),
    ("c2", "Grace", None, ts("12:00"), None),
}


def test_a_declared_history_is_an_asset_with_its_checks(
    spark: Any, folder: DefsFolderSandbox, tmp_path: Path
) -> None:
    path, doc = scaffold(folder)
    doc["attributes"]["history"] = {"track_except": ["profile_ts", "points_ts"]}
    deployment = lake(spark, folder, build(folder, path, doc), tmp_path)
    assert dg.AssetKey(["my_table", "my_table_history"]) in deployment.defs.resolve_all_asset_keys()
    result = deployment.run()
    assert result.success
    history = {
        tuple(r)
        for r in spark.read.format("delta").load(deployment.path("my_table/my_table_history")).collect()
    }
    assert history == SCAFFOLD_HISTORY
    passed = {name: e.passed for name, e in evaluations(result).items()}
    assert passed[NO_OVERLAP_CHECK] and passed[OPEN_EQUALS_TABLE_CHECK]
    DeltaTable(deployment.path("my_table/my_table")).update(
        predicate="customer_id = 'c1'", updates={"points": "26"}
    )
    checks = dg.AssetSelection.checks_for_assets(dg.AssetKey(["my_table", "my_table_history"]))
    verdict = evaluations(deployment.run(checks))[OPEN_EQUALS_TABLE_CHECK]
    assert not verdict.passed
    assert verdict.metadata["examples"].value == ["customer_id='c1': points table=26 expected=25"]


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ({"trak": ["name"]}, "history has no field 'trak' (did you mean 'track'?)"),
        ({"track": ["nmae"]}, "table my_table: history: track names 'nmae', which is not a value column"),
        ({"track": ["name"], "track_except": ["points"]}, "not both"),
    ],
)
def test_a_bad_history_declaration_fails_loading(
    folder: DefsFolderSandbox, history: dict[str, Any], message: str
) -> None:
    path, doc = scaffold(folder)
    doc["attributes"]["history"] = history
    with pytest.raises(Exception) as raised:
        build(folder, path, doc)
    assert message in messages(raised.value)


# ------------------------------------------------------------------------------------------ product_360
# Its tracked columns, per source that feeds them; reviews and questions only make the row exist.
PRODUCT_360_TRACKED = {
    "catalog": ("product_name", "brand"),
    "pricing": ("price", "sale_ends"),
    "lifecycle": ("discontinue_date",),
}


PRODUCT_360_COLUMNS = ("product_id", *(c for tracked in PRODUCT_360_TRACKED.values() for c in tracked))


def product_360_oracle(landing: Path) -> set[tuple[Any, ...]]:
    """(product, name, brand, price, sale end, discontinuation, start ms, end ms) of every interval: the
    fold of the module doc over the landed records (a catalog delete removes the product)."""
    events = []  # (op time ms, source, arrival, kind, fields)
    for source in SOURCES:
        events += [
            (ms, source, arrival, kind, fields)
            for arrival, (kind, ms, fields) in enumerate(records(landing, source))
        ]
    columns = [c for tracked in PRODUCT_360_TRACKED.values() for c in tracked]
    rows: dict[int, dict[str, Any] | None] = {}
    states: dict[int, dict[int, tuple[Any, ...] | None]] = {}
    for ms, source, _, kind, fields in sorted(events, key=lambda e: (e[0], e[1], e[2])):
        product, row = fields["product_id"], rows.get(fields["product_id"])
        if source == "catalog" and kind == "-D":
            row = None
        elif source in PRODUCT_360_TRACKED:
            if row is not None or kind in ("+I", "+U"):
                live = kind in ("+I", "+U")
                row = {
                    **(row or dict.fromkeys(columns)),
                    **{c: fields.get(c) if live else None for c in PRODUCT_360_TRACKED[source]},
                }
        else:
            row = row or dict.fromkeys(columns)
        rows[product] = row
        states.setdefault(product, {})[ms] = None if row is None else tuple(row[c] for c in columns)
    return intervals_of(states)


def test_product_360_keeps_its_history_over_late_and_deleted_products(spark: Any, tmp_path: Path) -> None:
    generated = tmp_path / "generated" / "landing"
    generate(30, 300, seed=5, out=generated, late_share=0.3, delete_share=0.1, files=3, quiet=True)
    defs = declared_defs("product_360")
    landing, lake_root = tmp_path / "data", tmp_path / "lake"
    resources = {
        "spark": spark_resource(),
        "lake": LakeSettings(root=str(lake_root)),
        "landing": LandingZone(root=str(landing)),
    }
    instance = dg.DagsterInstance.ephemeral()
    history = lake_root / "product_360" / "product_360_history"
    for batch in range(3):
        for source in SOURCES:
            (landing / "landing" / source).mkdir(parents=True, exist_ok=True)
            name = f"{source}_{batch:03d}.jsonl"
            shutil.copy(generated / source / name, landing / "landing" / source / name)
        result = dg.materialize(
            assets_and_checks(defs), instance=instance, resources=resources, raise_on_error=False
        )
        checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
        assert result.success and checks[NO_OVERLAP_CHECK] and checks[OPEN_EQUALS_TABLE_CHECK], batch
        rows = (
            spark.read.format("delta")
            .load(str(history))
            .selectExpr(*PRODUCT_360_COLUMNS, "unix_millis(__START_AT)", "unix_millis(__END_AT)")
        )
        assert {tuple(r) for r in rows.collect()} == product_360_oracle(landing), batch
