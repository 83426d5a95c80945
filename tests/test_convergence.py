"""The convergence check's oracle states docs/semantics.md: it passes a correctly merged table where an
older update after a delete brings the row back (P11) and where a column is a `sum`, and fails a table
merged otherwise. It replays `listagg` and `rbm32` in the order applied (an older record prepended),
over hand-written runs and random ones with late records, retractions and blank values.

Oracle of the oracle: the rows written here by hand from the landed records, and a plain-Python fold
of the random runs (`replayed_by_hand`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from test_run_order import OPTIONS, ORDERS, PAYMENTS
from test_run_order import spec as declared_by

from wide_assets.pipelines import SourceSpec, WideTableSpec
from wide_assets.pipelines.apply import apply_sources, open_wide_table
from wide_assets.pipelines.checks import keyed_diff
from wide_assets.pipelines.convergence import (
    applied_in_commits,
    convergence_problem,
    delete_rule_disagreements,
    expected_rows,
)
from wide_assets.pipelines.ingest import ingest, landed_files
from wide_assets.table import WideTable


def t(minute: int) -> datetime:
    return datetime(2026, 1, 1, 10, minute)


# Two runs. Order 1 is deleted in run 1; in run 2 an older status update and an older payment arrive:
# each brings the row back with only what arrived after the delete (P11). Order 2's payments are
# summed, a retracted one subtracted (-D of a `sum` column, P10). Order 3 is deleted and stays so.
RUNS = [
    {
        "orders": ["+I,1,new,10:01", "+I,2,new,10:01", "+I,3,new,10:01", "-D,1,new,10:05", "-D,3,new,10:09"],
        "payments": ["+I,1,10,10:02", "+I,2,7,10:02", "+I,2,5,10:03", "+I,3,4,10:02"],
    },
    {
        "orders": ["+U,1,late,10:03"],
        "payments": ["+I,1,20,10:04", "-D,2,7,10:06"],
    },
]
EXPECTED = {
    (1, "late", t(3), 20, t(4)),
    (2, "new", t(1), 5, t(6)),
}
SUMMED = {**OPTIONS, "fields.amount.aggregate-function": "sum"}


def spec(options: dict[str, str]) -> WideTableSpec:
    return declared_by((ORDERS, PAYMENTS), options)


def apply_runs(
    spark: Any, tmp_path: Path, declared: WideTableSpec, runs: int, land: Callable[[Path, int], None]
) -> tuple[WideTable, dict[str, Any]]:
    """`declared`'s table after `runs` runs, each landing its files (`land(landing, number)`), ingesting
    them and applying its sources; and each source's applied records with their commits."""
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    table = open_wide_table(spark, declared, str(lake / declared.name))
    paths = {s.name: str(lake / s.name) for s in declared.sources}
    for number in range(1, runs + 1):
        for source in declared.sources:
            (landing / source.name).mkdir(parents=True, exist_ok=True)
        land(landing, number)
        for source in declared.sources:
            ingest(spark, source, landed_files(landing, source), paths[source.name])
        apply_sources(spark, declared, table, paths)
    applied = {
        name: applied_in_commits(spark, table, name, spark.read.format("delta").load(path))
        for name, path in paths.items()
    }
    return table, applied


def merged(spark: Any, tmp_path: Path, declared: WideTableSpec) -> tuple[WideTable, dict[str, Any]]:
    """The table after RUNS, and each source's applied records with their commits."""

    def land(landing: Path, number: int) -> None:
        for name, lines in RUNS[number - 1].items():
            column = "status" if name == "orders" else "amount"
            text = "\n".join(
                [
                    f"_row_kind,order_id,{column},ts",
                    *(f"{line.replace(',10:', ',2026-01-01 10:')}:00" for line in lines),
                ]
            )
            (landing / name / f"{name}_{number}.csv").write_text(text + "\n", "utf-8")

    return apply_runs(spark, tmp_path, declared, len(RUNS), land)


def verdict(spark: Any, declared: WideTableSpec, table: WideTable, applied: dict[str, Any]) -> Any:
    expected = expected_rows(spark, declared, applied)
    return keyed_diff(spark, table.read(), expected, declared.primary_key, declared.value_columns)


def test_passes_a_correct_table_with_a_row_back_after_its_delete_and_a_sum(
    spark: Any, tmp_path: Path
) -> None:
    declared = spec(SUMMED)
    assert convergence_problem(declared) is None
    table, applied = merged(spark, tmp_path, declared)
    assert {tuple(r) for r in table.read().collect()} == EXPECTED
    diff = verdict(spark, declared, table, applied)
    assert diff.passed, diff.examples
    assert diff.rows == len(EXPECTED)


def test_names_the_sources_whose_deletes_the_options_do_not_mean() -> None:
    """orders removes its row (P11 on its group), payments clears its group (P10): which options agree."""
    assert delete_rule_disagreements(spec(SUMMED)) == []
    [orders] = delete_rule_disagreements(
        spec({k: v for k, v in SUMMED.items() if not k.startswith("partial-update.")})
    )
    assert orders.startswith("source orders declares deletes: remove-row") and "add order_ts" in orders
    both = {**SUMMED, "partial-update.remove-record-on-sequence-group": "order_ts,pay_ts"}
    [payments] = delete_rule_disagreements(spec(both))
    assert (
        payments.startswith("source payments declares deletes: clear-columns") and "leave pay_ts" in payments
    )
    ignoring = {k: v for k, v in SUMMED.items() if not k.startswith("partial-update.")}
    dropped = delete_rule_disagreements(spec({**ignoring, "ignore-delete": "true"}))
    assert [d.split(",")[0] for d in dropped] == [
        "source orders declares deletes: remove-row",
        "source payments declares deletes: clear-columns",
    ]


def test_fails_a_table_changed_behind_the_engine(spark: Any, tmp_path: Path) -> None:
    declared = spec(SUMMED)
    table, applied = merged(spark, tmp_path, declared)
    DeltaTable(table.path).update(predicate="order_id = 2", updates={"amount": "12"})
    diff = verdict(spark, declared, table, applied)
    assert not diff.passed
    assert (dict(diff.differing), diff.rows, diff.missing, diff.unexpected) == (
        {"amount": 1},
        len(EXPECTED),
        0,
        0,
    )


@pytest.mark.parametrize(
    ("options", "differing"),
    [
        # Without the sum the last payment wins: order 2 holds NULL (the retraction's) instead of 5.
        (OPTIONS, ({"amount": 1}, 0)),
        # Without P11 the deletes only clear the orders group: order 3 stays, and order 1 keeps its
        # first payment and ignores the status update older than its delete (P8).
        (
            {k: v for k, v in SUMMED.items() if not k.startswith("partial-update.")},
            ({"status": 1, "order_ts": 1, "amount": 1}, 1),
        ),
    ],
)
def test_fails_a_table_whose_options_merge_otherwise(
    spark: Any, tmp_path: Path, options: dict[str, str], differing: tuple[dict[str, int], int]
) -> None:
    merged_by, applied = merged(spark, tmp_path, spec(options))
    # Judged against the declaration with the summed column and P11.
    diff = verdict(spark, spec(SUMMED), merged_by, applied)
    assert not diff.passed
    assert (dict(diff.differing), diff.unexpected) == differing


# A listagg column in a sequence group and an rbm32 column of an aggregation-free group, fed by two
# sources whose records land out of op-time order across and within runs. Paimon folds a record older
# than its group's sequence in reverse (`aggReversed`: prepended), and ORs bitmaps in any order.
REMARKS = SourceSpec(
    name="remarks",
    description="Free-text remarks per order.",
    files=("remarks/*.csv",),
    columns=(("order_id", "bigint"), ("remark", "string"), ("ts", "timestamp_ntz")),
    primary_key=("order_id",),
    feeds={"remark": "remarks", "ts": "remark_ts"},
    op_time="ts",
    deletes="clear-columns",
)
VISITS = SourceSpec(
    name="visits",
    description="The pages seen per order, as RoaringBitmap32s.",
    files=("visits/*.parquet",),
    format="parquet",
    columns=(("order_id", "bigint"), ("pages", "binary"), ("ts", "timestamp_ntz")),
    primary_key=("order_id",),
    feeds={"pages": "pages", "ts": "visit_ts"},
    op_time="ts",
    deletes="clear-columns",
)
REPLAYED = WideTableSpec(
    name="order_notes",
    description="Per order: its remarks, in op-time order, and the pages seen.",
    group="order_notes",
    columns=(
        ("order_id", "bigint"),
        ("remarks", "string"),
        ("remark_ts", "timestamp_ntz"),
        ("pages", "binary"),
        ("visit_ts", "timestamp_ntz"),
    ),
    primary_key=("order_id",),
    options={
        "merge-engine": "partial-update",
        "fields.remark_ts.sequence-group": "remarks",
        "fields.remarks.aggregate-function": "listagg",
        "fields.remarks.ignore-retract": "true",
        "fields.visit_ts.sequence-group": "pages",
        "fields.pages.aggregate-function": "rbm32",
        "fields.pages.ignore-retract": "true",
    },
    sources=(REMARKS, VISITS),
)
# Per run and source: (kind, order, remark or pages, minute).
REPLAYED_RUNS: list[dict[str, list[tuple[str, int, Any, int]]]] = [
    {
        "remarks": [("+I", 1, "a", 2), ("+I", 1, "b", 5), ("+I", 2, "x", 4), ("+I", 2, "y", 1)],
        "visits": [("+I", 1, [3, 2**31 + 7], 3), ("+I", 2, [1], 9)],
    },
    {
        "remarks": [("+I", 1, "c", 3), ("-D", 1, "b", 7), ("+I", 1, "d", 6), ("+I", 2, "z", 8)],
        "visits": [("+I", 1, [2, 5], 1), ("-D", 2, [1], 10)],
    },
]
# By hand: order 1's "c" (10:03) is older than "b" (10:05) and is prepended; its retraction at 10:07
# advances the group's sequence, so "d" (10:06) is prepended too; order 2's "y" lands after "x".
REPLAYED_EXPECTED = {
    (1, "d,c,a,b", t(7), (2, 3, 5, 2**31 + 7), t(3)),
    (2, "y,x,z", t(8), (1,), t(10)),
}


def replayed_table(
    spark: Any, tmp_path: Path, runs: list[dict[str, list[tuple[str, int, Any, int]]]] = REPLAYED_RUNS
) -> tuple[WideTable, dict[str, Any]]:
    """REPLAYED after `runs`, and each source's applied records with their commits."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyroaring import BitMap

    def land(landing: Path, number: int) -> None:
        remarks, visits = runs[number - 1]["remarks"], runs[number - 1]["visits"]
        lines = [f"{k},{o},{v},2026-01-01 10:{m:02d}:00" for k, o, v, m in remarks]
        text = "\n".join(["_row_kind,order_id,remark,ts", *lines]) + "\n"
        (landing / "remarks" / f"remarks_{number}.csv").write_text(text, "utf-8")
        frame = pa.table(
            {
                "_row_kind": [k for k, *_ in visits],
                "order_id": [o for _, o, _, _ in visits],
                "pages": pa.array([BitMap(v).serialize() for _, _, v, _ in visits], pa.binary()),
                "ts": pa.array([t(m) for *_, m in visits], pa.timestamp("us")),
            }
        )
        pq.write_table(frame, landing / "visits" / f"visits_{number}.parquet")

    return apply_runs(spark, tmp_path, REPLAYED, len(runs), land)


def test_replays_listagg_and_rbm32_in_the_order_applied_and_fails_another_order(
    spark: Any, tmp_path: Path
) -> None:
    from pyroaring import BitMap

    assert convergence_problem(REPLAYED) is None
    table, applied = replayed_table(spark, tmp_path)
    rows = {
        (r.order_id, r.remarks, r.remark_ts, tuple(BitMap.deserialize(bytes(r.pages))), r.visit_ts)
        for r in table.read().collect()
    }
    assert rows == REPLAYED_EXPECTED
    diff = verdict(spark, REPLAYED, table, applied)
    assert diff.passed, diff.examples
    assert diff.rows == len(REPLAYED_EXPECTED)
    # The same remarks appended in op-time order, and a bitmap missing a page, are not what was declared.
    DeltaTable(table.path).update(predicate="order_id = 1", updates={"remarks": "'a,b,c,d'"})
    page_2 = "X'3A3000000100000000000000100000000200'"  # BitMap([2]).serialize()
    DeltaTable(table.path).update(predicate="order_id = 2", updates={"pages": page_2})
    diff = verdict(spark, REPLAYED, table, applied)
    assert (diff.passed, dict(diff.differing)) == (False, {"remarks": 1, "pages": 1})


def random_runs(seed: int, keys: int = 12) -> list[dict[str, list[tuple[str, int, Any, int]]]]:
    """Three runs of REPLAYED's sources: remarks and pages at random minutes (so records land late,
    within a run and across runs), an op time repeated, blank remarks, retractions."""
    rng = random.Random(seed)
    runs: list[dict[str, list[tuple[str, int, Any, int]]]] = [{"remarks": [], "visits": []} for _ in range(3)]
    for key in range(1, keys + 1):
        for _ in range(rng.randint(1, 6)):
            run = runs[rng.randrange(3)]
            kind = "-D" if rng.random() < 0.15 else "+I"
            minute = rng.randrange(20)
            if rng.random() < 0.6:
                remark = rng.choice(["a", "b", "c", " ", "d e"])
                run["remarks"].append((kind, key, remark, minute))
            else:
                run["visits"].append((kind, key, rng.sample([0, 1, 2, 2**31, 2**32 - 1], 2), minute))
    return runs


def listagg(held: str | None, value: str | None) -> str | None:
    """Paimon's `FieldListaggAgg.agg`: a NULL or blank value keeps what is held, a NULL or blank held
    value is replaced; an older record's fold is `listagg(value, held)` (`aggReversed`)."""
    if value is None or not value.strip():
        return held
    if held is None or not held.strip():
        return value
    return f"{held},{value}"


def replayed_by_hand(runs: list[dict[str, list[tuple[str, int, Any, int]]]]) -> set[tuple[Any, ...]]:
    """REPLAYED's rows, folded here one record at a time per key and source in landing order: a record
    older than the group's sequence so far is prepended (listagg) or ORed (rbm32); a retraction only
    advances the sequence (ignore-retract), and is lost on a key with no row before its run and no
    insert in it (P12); a record identical to one landed before is a redelivery (ingest drops it); no insert, no row."""
    state: dict[int, dict[str, Any]] = {}
    landed: set[tuple[Any, ...]] = set()
    for run in runs:
        inserted = {key for records in run.values() for kind, key, *_ in records if kind == "+I"}
        for source, records in run.items():
            for kind, key, value, minute in records:
                if (source, kind, key, str(value), minute) in landed:
                    continue
                landed.add((source, kind, key, str(value), minute))
                if key not in state and key not in inserted:
                    continue
                row = state.setdefault(
                    key, {"remarks": None, "remark_ts": None, "pages": None, "visit_ts": None}
                )
                seq_name = "remark_ts" if source == "remarks" else "visit_ts"
                newer = row[seq_name] is None or t(minute) >= row[seq_name]
                if newer:
                    row[seq_name] = t(minute)
                if kind == "-D":
                    continue
                if source == "visits":
                    row["pages"] = sorted(set(row["pages"] or []) | set(value))
                    continue
                held = row["remarks"]
                # An older blank remark is skipped too (V1: a blank input never becomes the value).
                older = held if value is None or not value.strip() else listagg(value, held)
                row["remarks"] = listagg(held, value) if newer else older
    return {
        (key, r["remarks"], r["remark_ts"], None if r["pages"] is None else tuple(r["pages"]), r["visit_ts"])
        for key, r in state.items()
    }


@pytest.mark.parametrize("seed", [3, 11, 23])
def test_random_late_records_replay_as_folded_by_hand(spark: Any, tmp_path: Path, seed: int) -> None:
    from pyroaring import BitMap

    runs = random_runs(seed)
    table, applied = replayed_table(spark, tmp_path, runs)
    rows = {
        (
            r.order_id,
            r.remarks,
            r.remark_ts,
            None if r.pages is None else tuple(BitMap.deserialize(bytes(r.pages))),
            r.visit_ts,
        )
        for r in table.read().collect()
    }
    assert rows == replayed_by_hand(runs)
    diff = verdict(spark, REPLAYED, table, applied)
    assert diff.passed, diff.examples


# `clear-columns` retractions of payments (`run_order.CLEAR`) on keys no row holds. In run 1, order 5's
# is alone in its run, so its commit meets no row and loses it (P12), even though run 2 then creates the
# order; order 6's shares its run with the order's creation, so it is written as an insert of NULLs and
# its op time holds (P10); order 7's is lost too, and a later run's older payment is kept. Order 9's
# delete cuts run 1's payments into two commits (the 10:01 payment before it, the 10:04 one after):
# order 8's retraction, in the first, must still meet the row its own later (older) payment makes.
LOST_RETRACTION_RUNS = [
    {
        "orders": ["+I,6,new,10:07", "+I,9,new,10:00", "-D,9,new,10:02"],
        "payments": [
            "-D,5,7,10:05",
            "-D,6,3,10:05",
            "-D,7,4,10:05",
            "-D,8,2,10:05",
            "+I,9,1,10:01",
            "+I,9,2,10:04",
            "+I,8,6,10:03",
        ],
    },
    {
        "orders": ["+I,5,new,10:01"],
        "payments": ["+I,7,9,10:03"],
    },
]
LOST_RETRACTION_EXPECTED = {
    (5, "new", t(1), None, None),
    (6, "new", t(7), None, t(5)),
    (7, None, None, 9, t(3)),
    (8, None, None, None, t(5)),
    (9, None, None, 2, t(4)),
}


def test_a_retraction_meets_its_row_when_its_run_makes_it_and_is_lost_otherwise(
    spark: Any, tmp_path: Path
) -> None:
    def land(landing: Path, number: int) -> None:
        for name, lines in LOST_RETRACTION_RUNS[number - 1].items():
            column = "status" if name == "orders" else "amount"
            rows = [f"{line.replace(',10:', ',2026-01-01 10:')}:00" for line in lines]
            text = "\n".join([f"_row_kind,order_id,{column},ts", *rows]) + "\n"
            (landing / name / f"{name}_{number}.csv").write_text(text, "utf-8")

    declared = spec(OPTIONS)
    table, applied = apply_runs(spark, tmp_path, declared, len(LOST_RETRACTION_RUNS), land)
    payments = [c for c in table.commits() if c.txn is not None and c.txn.app_id == "payments"]
    assert len(payments) == 3, "run 1 cuts the payments into two commits"
    assert {tuple(r) for r in table.read().collect()} == LOST_RETRACTION_EXPECTED
    diff = verdict(spark, declared, table, applied)
    assert diff.passed, diff.examples
