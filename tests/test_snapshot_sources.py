"""Snapshot sources (docs/semantics.md 7.3) against a plain-Python diff of the landed snapshots: runs
that land snapshots out of order, a snapshot landed twice, a late (superseded) one, an empty one."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from wide_assets.component.declaration import SourceDeclaration, unknown_fields
from wide_assets.errors import InvalidInputError
from wide_assets.pipelines import SourceSpec, WideTableSpec
from wide_assets.pipelines.apply import apply_sources, open_wide_table
from wide_assets.pipelines.ingest import ingest, landed_files
from wide_assets.pipelines.specs import SnapshotSpec

Snapshot = dict[int, tuple[str, int]]  # customer -> (tier, points)

CUSTOMERS = SourceSpec(
    name="customers",
    description="The daily export of every customer.",
    files=("exports/*.csv",),
    columns=(("id", "bigint"), ("tier", "string"), ("points", "int"), ("exported", "timestamp_ntz")),
    primary_key=("id",),
    feeds={"tier": "tier", "points": "points", "exported": "exported"},
    op_time="exported",
    snapshot=SnapshotSpec(time_pattern=r"customers_(\d{8})", time_format="%Y%m%d", empty="truncate"),
)
TABLE = WideTableSpec(
    name="customer_wide",
    description="Per customer: the latest export's values.",
    group="customer_wide",
    columns=(("id", "bigint"), ("tier", "string"), ("points", "int"), ("exported", "timestamp_ntz")),
    primary_key=("id",),
    options={"merge-engine": "deduplicate", "sequence.field": "exported"},
    sources=(CUSTOMERS,),
)
DAY1: Snapshot = {1: ("gold", 10), 2: ("silver", 5), 3: ("bronze", 1)}
DAY2: Snapshot = {1: ("gold", 12), 2: ("silver", 5), 4: ("bronze", 0)}  # 1 updated, 3 gone, 4 new
DAY3: Snapshot = {2: ("gold", 7), 4: ("bronze", 0), 3: ("silver", 2)}  # 1 gone, 3 back
DAY4: Snapshot = {}
# Runs: (file name, snapshot). Run 2 lands day 3 before day 2 by name (out of order); run 3 lands
# day 3 again under another name and day 1 again (late: superseded); run 4 an empty export.
RUNS: list[list[tuple[str, datetime, Snapshot]]] = [
    [("customers_20260101.csv", datetime(2026, 1, 1), DAY1)],
    [
        ("b_customers_20260103.csv", datetime(2026, 1, 3), DAY3),
        ("c_customers_20260102.csv", datetime(2026, 1, 2), DAY2),
    ],
    [
        ("customers_20260103_again.csv", datetime(2026, 1, 3), DAY3),
        ("customers_20260101_late.csv", datetime(2026, 1, 1), DAY1),
    ],
    [("customers_20260104.csv", datetime(2026, 1, 4), DAY4)],
]


def _diff(old: Snapshot, new: Snapshot, at: datetime) -> list[tuple[str, int, Any, Any, datetime]]:
    changes = [("+I" if k not in old else "+U", k, *new[k], at) for k in new if old.get(k) != new[k]]
    return changes + [("-D", k, *old[k], at) for k in old if k not in new]


def _oracle(runs: list[list[tuple[str, datetime, Snapshot]]]) -> tuple[set[Any], Snapshot]:
    """Plain Python: the snapshots newer than every one applied, in time order, each diffed with the
    one before; the table holds the last one."""
    changes: set[Any] = set()
    state: Snapshot = {}
    latest: datetime | None = None
    for run in runs:
        dated = sorted((at, snapshot) for _, at, snapshot in run)
        for at, snapshot in dated:
            if latest is not None and at <= latest:
                continue
            changes |= set(_diff(state, snapshot, at))
            state, latest = snapshot, at
    return changes, state


def _land(folder: Path, name: str, snapshot: Snapshot) -> None:
    lines = ["id,tier,points", *(f"{k},{tier},{points}" for k, (tier, points) in snapshot.items())]
    (folder / name).write_text("\n".join(lines) + "\n", "utf-8")


def test_snapshots_become_the_changes_between_them(spark: Any, tmp_path: Path) -> None:
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    (landing / "exports").mkdir(parents=True)
    table = open_wide_table(spark, TABLE, str(lake / "customer_wide"))
    paths = {"customers": str(lake / "customers")}
    for run in RUNS:
        for name, _, snapshot in run:
            _land(landing / "exports", name, snapshot)
        ingest(spark, CUSTOMERS, landed_files(landing, CUSTOMERS), paths["customers"])
        apply_sources(spark, TABLE, table, paths)
    cdc = spark.read.format("delta").load(paths["customers"]).collect()
    changes = {(r._row_kind, r.id, r.tier, r.points, r.exported) for r in cdc}
    expected_changes, expected_state = _oracle(RUNS)
    assert changes == expected_changes
    assert len(cdc) == len(expected_changes)  # nothing appended twice
    rows = {r.id: (r.tier, r.points) for r in table.read().collect()}
    assert rows == expected_state == {}


def test_an_empty_snapshot_is_refused_unless_declared_a_truncation(spark: Any, tmp_path: Path) -> None:
    source = replace(CUSTOMERS, snapshot=SnapshotSpec(r"customers_(\d{8})", "%Y%m%d", empty="refuse"))
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    (landing / "exports").mkdir(parents=True)
    _land(landing / "exports", "customers_20260101.csv", DAY1)
    ingest(spark, source, landed_files(landing, source), str(lake / "customers"))
    _land(landing / "exports", "customers_20260102.csv", {})
    with pytest.raises(InvalidInputError, match=r"customers_20260102.csv'\] has no rows.*empty: truncate"):
        ingest(spark, source, landed_files(landing, source), str(lake / "customers"))


def test_a_snapshot_file_without_a_time_in_its_name_is_refused(spark: Any, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "exports").mkdir(parents=True)
    _land(landing / "exports", "customers_latest.csv", DAY1)
    with pytest.raises(
        InvalidInputError, match=r"customers_latest\.csv does not match the snapshot time_pattern"
    ):
        ingest(spark, CUSTOMERS, landed_files(landing, CUSTOMERS), str(tmp_path / "lake" / "customers"))


def test_a_snapshot_holding_a_key_twice_is_refused(spark: Any, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "exports").mkdir(parents=True)
    (landing / "exports" / "customers_20260101.csv").write_text("id,tier,points\n1,gold,1\n1,gold,2\n")
    with pytest.raises(InvalidInputError, match=r"holds a key more than once: key \(1\)"):
        ingest(spark, CUSTOMERS, landed_files(landing, CUSTOMERS), str(tmp_path / "lake" / "customers"))


def test_a_misspelled_snapshot_field_is_refused_in_the_yaml() -> None:
    source = SourceDeclaration.model_validate(
        {
            "name": "customers",
            "description": "The daily export.",
            "files": ["exports/*.csv"],
            "columns": {"id": "bigint", "tier": "string", "exported": "timestamp_ntz"},
            "feeds": {"tier": "tier"},
            "op_time": "exported",
            "snapshot": {"time_pattern": r"customers_(\d{8})", "time_format": "%Y%m%d", "emtpy": "truncate"},
        }
    )
    problems = [p.args[0] for p in unknown_fields(source, ("sources", 0))]
    assert problems == ["snapshot has no field 'emtpy' (did you mean 'empty'?)"]
    assert source.spec(["id"]).snapshot == SnapshotSpec(r"customers_(\d{8})", "%Y%m%d", "refuse")


def test_a_folder_of_parquet_files_is_one_snapshot(spark: Any, tmp_path: Path) -> None:
    """One snapshot per dated folder, split over two Parquet files; the second day drops one key and
    changes another, across files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = replace(
        CUSTOMERS,
        format="parquet",
        files=("exports/*/*.parquet",),
        snapshot=SnapshotSpec(r"exports/(\d{4}-\d{2}-\d{2})/", "%Y-%m-%d"),
    )
    landing, path = tmp_path / "landing", str(tmp_path / "lake" / "customers")
    days = {
        "2026-02-01": ({1: ("gold", 1), 2: ("silver", 2)}, {3: ("bronze", 3)}),
        "2026-02-02": ({3: ("gold", 4)}, {1: ("gold", 1)}),
    }
    for day, parts in days.items():
        (landing / "exports" / day).mkdir(parents=True)
        for number, part in enumerate(parts):
            rows = [{"id": k, "tier": tier, "points": points} for k, (tier, points) in part.items()]
            schema = pa.schema([("id", pa.int64()), ("tier", pa.string()), ("points", pa.int32())])
            pq.write_table(
                pa.Table.from_pylist(rows, schema=schema), landing / "exports" / day / f"part{number}.parquet"
            )
    ingest(spark, source, landed_files(landing, source), path)
    cdc = {
        (r._row_kind, r.id, r.tier, r.points, r.exported)
        for r in spark.read.format("delta").load(path).collect()
    }
    first, second = datetime(2026, 2, 1), datetime(2026, 2, 2)
    old = {**days["2026-02-01"][0], **days["2026-02-01"][1]}
    new = {**days["2026-02-02"][0], **days["2026-02-02"][1]}
    assert cdc == set(_diff({}, old, first)) | set(_diff(old, new, second))
