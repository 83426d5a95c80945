"""Write-only mode (Paimon 'write-only'): writers append merged fragments, a compaction folds them in,
and readers see the same rows as copy-on-write at every point (union read)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable
from wide_assets.faults import CRASH_POINT

COLUMNS = [("k", "int"), ("name", "string"), ("name_ts", "int"), ("cnt", "bigint"), ("cnt_ts", "int")]
DDL = "k int, name string, name_ts int, cnt bigint, cnt_ts int, _row_kind string"
PAIMON = {
    "merge-engine": "partial-update",
    "fields.name_ts.sequence-group": "name",
    "fields.cnt_ts.sequence-group": "cnt",
    "fields.cnt.aggregate-function": "sum",
    "changelog-producer": "lookup",
}
FLUSS = {"table.delete.behavior": "allow"}


def random_batch(rng: random.Random) -> list[tuple[Any, ...]]:
    """Partial updates of either group, out-of-order sequences, and some retractions."""
    rows = []
    for _ in range(rng.randint(1, 6)):
        k, ts = rng.randint(1, 5), rng.randint(1, 9)
        if rng.random() < 0.5:
            rows.append((k, rng.choice(["a", "b", None]), ts, None, None, rng.choice(["+I", "+I", "-D"])))
        else:
            rows.append((k, None, None, rng.randint(-3, 9), ts, rng.choice(["+I", "+I", "-U"])))
    return rows


def rows(table: WideTable) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.read().collect())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("options", [PAIMON, FLUSS], ids=["paimon", "fluss"])
def test_write_only_reads_like_copy_on_write_under_random_interleavings(
    spark: Any, tmp_path: Path, options: dict[str, str], seed: int
) -> None:
    rng = random.Random(seed)
    eager = WideTable.create(spark, tmp_path / "cow", COLUMNS, ["k"], options)
    lazy = WideTable.create(spark, tmp_path / "wo", COLUMNS, ["k"], {**options, "write-only": "true"})
    for _ in range(6):
        if rng.random() < 0.3:
            lazy.compact()
        batch = spark.createDataFrame(random_batch(rng), DDL)
        eager.write(batch)
        lazy.write(batch)
        assert rows(lazy) == rows(eager)
    lazy.compact()
    assert lazy.pending_commits() == []
    assert sorted(tuple(r) for r in spark.read.format("delta").load(lazy.path).collect()) == rows(eager)


def test_writes_leave_the_table_alone_until_compaction(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], {**PAIMON, "write-only": "true"})
    version = table.version
    table.write(spark.createDataFrame([(1, "a", 1, 5, 1, "+I")], DDL))
    table.write(spark.createDataFrame([(1, "b", 2, 2, 2, "+I"), (2, "c", 1, None, None, "+I")], DDL))
    assert table.version == version and table.pending_commits() == [1, 2]
    assert rows(table) == [(1, "b", 2, 7, 2), (2, "c", 1, None, None)]
    assert table.changelog().collect() == [], "a write-only lookup changelog appears at compaction"
    info = table.compact()
    assert info is not None and (info.through, info.commits, info.applied_rows) == (2, 2, 2)
    assert table.version > version and table.pending_commits() == [] and table.compact() is None
    # Two commits of key 1 collapse into one transition; key 2 is new.
    entries = sorted(tuple(r)[:-1] for r in table.changelog().collect())
    assert entries == [("+I", 1, "b", 2, 7, 2, 2), ("+I", 2, "c", 1, None, None, 2)]
    table.write(spark.createDataFrame([(1, "d", 3, 1, 3, "+I")], DDL))
    table.compact()
    assert sorted(tuple(r)[:-1] for r in table.changelog(3, 3).collect()) == [
        ("+U", 1, "d", 3, 8, 3, 3),
        ("-U", 1, "b", 2, 7, 2, 3),
    ]


COMPACTOR = textwrap.dedent(
    """
    import sys
    from wide_assets import WideTable, get_spark
    WideTable.open(get_spark(), sys.argv[1]).compact()
    """
)


def test_compaction_killed_after_its_merge_is_finished_once(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = WideTable.create(spark, path, COLUMNS, ["k"], {**PAIMON, "write-only": "true"})
    table.write(spark.createDataFrame([(1, "a", 1, 5, 1, "+I"), (2, "b", 1, 1, 1, "+I")], DDL))
    env = {**os.environ, CRASH_POINT: "after-compaction-merge"}
    killed = subprocess.run(
        [sys.executable, "-c", COMPACTOR, str(path)], env=env, capture_output=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL
    assert table.pending_commits() == [1], "the marker was never written"
    assert rows(table) == [(1, "a", 1, 5, 1), (2, "b", 1, 1, 1)]
    table.compact()
    assert [c.through for c in table.compactions()] == [1]
    assert sorted(r["_row_kind"] for r in table.changelog().collect()) == ["+I", "+I"]
    assert rows(table) == [(1, "a", 1, 5, 1), (2, "b", 1, 1, 1)]


def test_optimize_merges_small_files_and_vacuum_keeps_recent_versions(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], PAIMON)
    for i in range(4):
        table.write(spark.createDataFrame([(i, "x", 1, 1, 1, "+I")], DDL))
    before = len(DeltaTable(table.path).file_uris())
    table.optimize()
    assert len(DeltaTable(table.path).file_uris()) < before
    assert table.vacuum(dry_run=True) == [], "nothing is older than the 7-day retention"
    with pytest.raises(Exception, match="retention"):
        table.vacuum(retention_hours=0)
    assert rows(table) == [(i, "x", 1, 1, 1) for i in range(4)]
