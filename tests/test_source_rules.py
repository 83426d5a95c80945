"""A declared source's rules through ingest and apply: `deletes: ignore` leaves the table alone (CSV and
Parquet alike), and a source that gains a column keeps working (its older records NULL in it).

Oracles: the rows derived by hand from the records written here.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wide_assets.errors import InvalidInputError
from wide_assets.pipelines import SourceSpec, WideTableSpec
from wide_assets.pipelines.apply import apply_sources, open_wide_table
from wide_assets.pipelines.ingest import ingest, landed_files

SUPPORT = SourceSpec(
    name="support",
    description="Support remarks per customer.",
    files=("support/*",),
    columns=(("id", "bigint"), ("remark", "string"), ("ts", "timestamp")),
    primary_key=("id",),
    feeds={"remark": "remark", "ts": "remark_ts"},
    op_time="ts",
    deletes="ignore",
)
CUSTOMERS = WideTableSpec(
    name="customers",
    description="Per customer: the support team's remark.",
    group="customers",
    columns=(("id", "bigint"), ("remark", "string"), ("remark_ts", "timestamp")),
    primary_key=("id",),
    options={"merge-engine": "partial-update", "fields.remark_ts.sequence-group": "remark"},
    sources=(SUPPORT,),
)


def run(spark: Any, tmp_path: Path, spec: WideTableSpec) -> list[tuple[Any, ...]]:
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    table = open_wide_table(spark, spec, str(lake / spec.name))
    paths = {s.name: str(lake / s.name) for s in spec.sources}
    for source in spec.sources:
        ingest(spark, source, landed_files(landing, source), paths[source.name])
    apply_sources(spark, spec, table, paths)
    return sorted(tuple(r) for r in table.read().collect())


@pytest.mark.parametrize("format_", ["csv", "parquet"])
def test_a_delete_of_a_source_declared_ignore_changes_nothing(
    spark: Any, tmp_path: Path, format_: str
) -> None:
    folder = tmp_path / "landing" / "support"
    folder.mkdir(parents=True)
    records = [("+I", 1, "y", "2026-11-23 10:01:00"), ("-D", 1, None, "2026-11-23 10:02:00")]
    if format_ == "csv":
        lines = ["_row_kind,id,remark,ts", *(f"{k},{i},{r or ''},{t}" for k, i, r, t in records)]
        (folder / "s1.csv").write_text("\n".join(lines) + "\n", "utf-8")
    else:
        kinds, ids, remarks, times = zip(*records, strict=True)
        columns = {"_row_kind": kinds, "id": ids, "remark": remarks, "ts": times}
        pq.write_table(pa.table({c: list(v) for c, v in columns.items()}), folder / "s1.parquet")
    spec = replace(CUSTOMERS, sources=(replace(SUPPORT, format=format_),))
    [(key, remark, stamp)] = run(spark, tmp_path, spec)
    assert (key, remark, str(stamp)) == (1, "y", "2026-11-23 10:01:00")


def test_a_source_gaining_a_column_reads_its_older_records_as_null(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "landing" / "apps"
    folder.mkdir(parents=True)
    apps = SourceSpec(
        name="apps",
        description="Apps per customer.",
        files=("apps/*.csv",),
        columns=(("id", "bigint"), ("app", "string"), ("ts", "timestamp")),
        primary_key=("id",),
        feeds={"app": "app", "ts": "app_ts"},
        op_time="ts",
    )
    columns = (("id", "bigint"), ("app", "string"), ("installs", "bigint"), ("app_ts", "timestamp"))
    before = WideTableSpec(
        name="devices",
        description="Per customer: their app.",
        group="devices",
        columns=columns,
        primary_key=("id",),
        options={"merge-engine": "partial-update"},
        sources=(apps,),
    )
    (folder / "a1.csv").write_text("id,app,ts\n1,mail,2026-11-23 10:00:00\n", "utf-8")
    assert run(spark, tmp_path, before)[0][:3] == (1, "mail", None)
    # The source now declares `installs` too; its files carry it from now on.
    grown = replace(apps, columns=(*apps.columns[:2], ("installs", "bigint"), apps.columns[2]))
    grown = replace(grown, feeds={**grown.feeds, "installs": "installs"})
    (folder / "a2.csv").write_text("id,app,installs,ts\n2,chat,7,2026-11-23 11:00:00\n", "utf-8")
    # The older file, without the column, is one that already landed: it is not read again.
    rows = run(spark, tmp_path, replace(before, sources=(grown,)))
    assert [r[:3] for r in rows] == [(1, "mail", None), (2, "chat", 7)]
    cdc = spark.read.format("delta").load(str(tmp_path / "lake" / "apps")).orderBy("_offset").collect()
    assert [(r.id, r.installs) for r in cdc] == [(1, None), (2, 7)]


def test_a_source_losing_or_retyping_a_column_is_refused_naming_it(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "landing" / "support"
    folder.mkdir(parents=True)
    (folder / "s1.csv").write_text("id,remark,ts\n1,y,2026-11-23 10:01:00\n", "utf-8")
    cdc = str(tmp_path / "support")
    ingest(spark, SUPPORT, landed_files(tmp_path / "landing", SUPPORT), cdc)
    retyped = replace(SUPPORT, columns=(("id", "bigint"), ("remark", "int"), ("ts", "timestamp")))
    with pytest.raises(InvalidInputError, match=r"declares \['remark int \(stored: string\)'\]"):
        ingest(spark, retyped, landed_files(tmp_path / "landing", retyped), cdc)
    dropped = replace(SUPPORT, columns=(("id", "bigint"), ("ts", "timestamp")), feeds={"ts": "remark_ts"})
    with pytest.raises(InvalidInputError, match=r"it no longer declares \['remark'\]"):
        ingest(spark, dropped, landed_files(tmp_path / "landing", dropped), cdc)
