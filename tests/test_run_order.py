"""A run merges its sources' records in op-time order across sources: the declaration's order of the
sources does not change the table.

Oracle: plain Python over the landed records: each run's records sorted by (op time, source name),
folded one at a time under the table's rules (P7 per sequence group, P11 for the orders group's
delete), sharing no code with the pipeline.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from wide_assets.pipelines import SourceSpec, WideTableSpec
from wide_assets.pipelines.apply import apply_sources, open_wide_table
from wide_assets.pipelines.ingest import ingest, landed_files
from wide_assets.pipelines.run_order import CLEAR, MAKE, REMOVE, RETRACT, Segment, Unit, commit_plan

START = datetime(2026, 1, 1)
ORDERS = SourceSpec(
    name="orders",
    description="Order status changes; a delete removes the order.",
    files=("orders/*.csv",),
    columns=(("order_id", "bigint"), ("status", "string"), ("ts", "timestamp_ntz")),
    primary_key=("order_id",),
    feeds={"status": "status", "ts": "order_ts"},
    op_time="ts",
    deletes="remove-row",
)
PAYMENTS = SourceSpec(
    name="payments",
    description="The amount paid per order.",
    files=("payments/*.csv",),
    columns=(("order_id", "bigint"), ("amount", "bigint"), ("ts", "timestamp_ntz")),
    primary_key=("order_id",),
    feeds={"amount": "amount", "ts": "pay_ts"},
    op_time="ts",
    deletes="clear-columns",
)
COLUMNS = (
    ("order_id", "bigint"),
    ("status", "string"),
    ("order_ts", "timestamp_ntz"),
    ("amount", "bigint"),
    ("pay_ts", "timestamp_ntz"),
)
OPTIONS = {
    "merge-engine": "partial-update",
    "fields.order_ts.sequence-group": "status",
    "fields.pay_ts.sequence-group": "amount",
    "partial-update.remove-record-on-sequence-group": "order_ts",
}
GROUPS = {"orders": ("status", "order_ts"), "payments": ("amount", "pay_ts")}


def spec(sources: tuple[SourceSpec, ...], options: dict[str, str] = OPTIONS) -> WideTableSpec:
    return WideTableSpec(
        name="orders_wide",
        description="Per order: its status and its payments.",
        group="orders_wide",
        columns=COLUMNS,
        primary_key=("order_id",),
        options=options,
        sources=sources,
    )


Record = tuple[str, str, int, Any, datetime]  # source, kind, key, value, op time


def generate(seed: int, keys: int = 25) -> list[list[Record]]:
    """Two runs of records, each source's in op-time order: orders are created, change status, are
    deleted and sometimes created again; payments arrive at any time, before or after a delete."""
    rng = random.Random(seed)
    runs: list[list[Record]] = [[], []]
    for key in range(1, keys + 1):
        times = sorted(rng.sample(range(200), 8))
        # The first time creates the order; the others go to either source, so payments fall before
        # and after the order's changes and deletes.
        events: list[Record] = [("orders", "+I", key, "new", START + timedelta(seconds=times[0]))]
        for t in times[1:]:
            at = START + timedelta(seconds=t)
            if rng.random() < 0.5:
                kind = rng.choice(["+U", "+U", "-D"])
                events.append(("orders", kind, key, rng.choice(["paid", "shipped"]), at))
            else:
                # Some payments share their op time with the order's latest record: ties go by source name.
                same = events[-1][0] == "orders" and rng.random() < 0.3
                events.append(("payments", "+I", key, rng.randrange(1, 500), events[-1][4] if same else at))
        rng.shuffle(events)
        for event in events:
            runs[rng.random() < 0.5].append(event)
    return [sorted(run, key=lambda r: r[4]) for run in runs]


def oracle(runs: list[list[Record]]) -> set[tuple[Any, ...]]:
    rows: dict[int, dict[str, Any]] = {}
    for run in runs:
        for source, kind, key, value, ts in sorted(run, key=lambda r: (r[4], r[0])):
            value_column, seq = GROUPS[source]
            row = rows.get(key)
            newer = row is None or row[seq] is None or ts >= row[seq]
            if kind == "-D":
                if row is not None and newer:
                    del rows[key]  # P11 (orders is the only deleting source here)
                continue
            row = rows.setdefault(key, {c: None for c, _ in COLUMNS[1:]})
            if newer:
                row.update({value_column: value, seq: ts})  # P7
    return {(k, *(r[c] for c, _ in COLUMNS[1:])) for k, r in rows.items()}


def land(landing: Path, run: int, records: list[Record]) -> None:
    for source, value_column in (("orders", "status"), ("payments", "amount")):
        lines = [f"_row_kind,order_id,{value_column},ts"]
        lines += [f"{k},{key},{v},{ts:%Y-%m-%d %H:%M:%S}" for s, k, key, v, ts in records if s == source]
        folder = landing / source
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{source}_{run:03}.csv").write_text("\n".join(lines) + "\n", "utf-8")


def materialize(spark: Any, tmp: Path, sources: tuple[SourceSpec, ...], runs: list[list[Record]]) -> set[Any]:
    declared = spec(sources)
    landing, lake = tmp / "landing", tmp / "lake"
    table = open_wide_table(spark, declared, str(lake / declared.name))
    paths = {s.name: str(lake / s.name) for s in sources}
    for number, records in enumerate(runs, start=1):
        land(landing, number, records)
        for source in sources:
            ingest(spark, source, landed_files(landing, source), paths[source.name])
        apply_sources(spark, declared, table, paths)
    return {tuple(r) for r in table.read().collect()}


@pytest.mark.parametrize("seed", [1])
def test_the_deleting_source_listed_first_or_last_gives_the_time_ordered_table(
    spark: Any, tmp_path: Path, seed: int
) -> None:
    runs = generate(seed)
    expected = oracle(runs)
    first = materialize(spark, tmp_path / "first", (ORDERS, PAYMENTS), runs)
    last = materialize(spark, tmp_path / "last", (PAYMENTS, ORDERS), runs)
    assert first == expected
    assert last == expected


def segments(
    sources: list[str], ranges: dict[str, tuple[int, int]], units: dict[str, list[Unit]]
) -> list[Segment]:
    plan = commit_plan(sources, ranges, units)
    assert not plan.unordered
    return plan.segments


def test_segments_interleave_sources_only_where_a_shared_key_needs_it() -> None:
    # Key 1: a (t=1), b's removal (t=2), a (t=3): a's second record needs a commit after b's.
    units = {
        "a": [Unit(11, 1, {1: MAKE}), Unit(13, 3, {1: MAKE})],
        "b": [Unit(21, 2, {1: REMOVE})],
    }
    ranges = {"a": (10, 15), "b": (20, 25)}
    assert segments(["a", "b"], ranges, units) == [
        Segment("a", 11, 12),
        Segment("b", 21, 25),
        Segment("a", 13, 15),
    ]
    # Listed the other way round: the same order of the shared key's records.
    assert segments(["b", "a"], ranges, units) == [
        Segment("a", 11, 12),
        Segment("b", 21, 25),
        Segment("a", 13, 15),
    ]
    # Without a shared key, or when no record of it may remove the row (upserts of two sources write
    # different columns and commute): one commit per source.
    upserts = {
        s: [Unit(u.offset, u.op_time, dict.fromkeys(u.effects, MAKE)) for u in us] for s, us in units.items()
    }
    whole = [Segment("a", 11, 15), Segment("b", 21, 25)]
    assert segments(["a", "b"], ranges, {}) == whole
    assert segments(["a", "b"], ranges, upserts) == whole


def test_an_equal_op_time_goes_to_the_source_name_first_and_no_op_time_comes_first() -> None:
    # b's removal and a's record at the same op time: a, by name, whatever the listed order.
    tied = {"a": [Unit(11, 5, {1: MAKE})], "b": [Unit(1, 5, {1: REMOVE})]}
    ranges = {"a": (10, 11), "b": (0, 1)}
    assert segments(["b", "a"], ranges, tied) == [Segment("a", 11, 11), Segment("b", 1, 1)]
    # A record without an op time sorts before every timed one.
    untimed = {"a": [Unit(11, 5, {1: REMOVE})], "b": [Unit(1, None, {1: MAKE})]}
    assert segments(["a", "b"], ranges, untimed) == [Segment("b", 1, 1), Segment("a", 11, 11)]


T = {
    name: datetime(2026, 1, 1, int(name[:2]), int(name[2:]))
    for name in ("0000", "0039", "1346", "1730", "1759", "1900", "2000")
}


def test_a_late_record_keeps_its_keys_order_whatever_other_keys_hold() -> None:
    # Key X: orders +I 00:39 and -D 17:59; payments 13:46, 17:30 and, landed after a payment of key Y
    # at 20:00, a late one of 13:46: every payment precedes the delete, so payments commit first,
    # though the late one landed after records later than the delete.
    units = {
        "orders": [
            Unit(1, T["0039"], {"X": MAKE}),
            Unit(2, T["1759"], {"X": REMOVE}),
            Unit(3, T["1900"], {"Y": MAKE}),
        ],
        "payments": [
            Unit(11, T["1346"], {"X": MAKE}),
            Unit(12, T["1730"], {"X": MAKE}),
            Unit(13, T["2000"], {"Y": MAKE}),
            Unit(14, T["1346"], {"X": MAKE}),
        ],
    }
    ranges = {"orders": (0, 3), "payments": (10, 14)}
    assert segments(["orders", "payments"], ranges, units) == [
        Segment("orders", 1, 1),
        Segment("payments", 11, 14),
        Segment("orders", 2, 3),
    ]


def test_a_late_record_whose_keys_order_no_cut_into_ranges_keeps_is_applied_ahead_of_its_landing() -> None:
    # X's late payment (13:46) must precede orders' -D X (17:59); Y's payment (20:00), landed before it,
    # must follow orders' -D Y (19:00), landed after -D X: no cut of the two sources into offset ranges
    # keeps both. The late payment is applied on its own, ahead of the payment landed before it (and of
    # offset 13, a key no other source touches, which stays with the records landed around it).
    units = {
        "orders": [
            Unit(1, T["0000"], {"X": MAKE}),
            Unit(2, T["0000"], {"Y": MAKE}),
            Unit(3, T["1759"], {"X": REMOVE}),
            Unit(4, T["1900"], {"Y": REMOVE}),
        ],
        "payments": [Unit(11, T["2000"], {"Y": MAKE}), Unit(12, T["1346"], {"X": MAKE})],
    }
    plan = commit_plan(["payments", "orders"], {"orders": (0, 4), "payments": (10, 13)}, units)
    assert plan.segments == [
        Segment("payments", 12, 12),
        Segment("orders", 1, 4),
        Segment("payments", 11, 13, ((11, 11), (13, 13))),
    ]
    assert plan.unordered == {}
    # Whatever the declaration's order.
    plan = commit_plan(["orders", "payments"], {"orders": (0, 4), "payments": (10, 13)}, units)
    assert plan.segments == [
        Segment("orders", 1, 2),
        Segment("payments", 12, 12),
        Segment("orders", 3, 4),
        Segment("payments", 11, 13, ((11, 11), (13, 13))),
    ]


def test_a_retraction_that_would_meet_no_row_waits_for_it_or_is_written_as_an_insert() -> None:
    # Key 1 is new: b's retraction (t=1) comes before a's insert (t=2), which makes the row.
    ranges = {"a": (10, 11), "b": (0, 1)}
    clear = {"a": [Unit(11, 2, {1: MAKE})], "b": [Unit(1, 1, {1: CLEAR})]}
    plan = commit_plan(["b", "a"], ranges, clear)
    # Clearing function-less columns: the same as an insert of NULLs, in any order.
    assert plan.segments == [Segment("b", 1, 1), Segment("a", 11, 11)]
    assert plan.inserts == {"b": frozenset({1})}
    # A retraction of an aggregated column waits for the commit that makes the row.
    retract = {"a": clear["a"], "b": [Unit(1, 1, {1: RETRACT})]}
    plan = commit_plan(["b", "a"], ranges, retract)
    assert (plan.segments, plan.inserts) == ([Segment("a", 11, 11), Segment("b", 1, 1)], {})
    # A key the table holds already has its row: nothing to wait for.
    plan = commit_plan(["b", "a"], ranges, retract, stored=frozenset({1}))
    assert (plan.segments, plan.inserts) == ([Segment("b", 1, 1), Segment("a", 11, 11)], {})
