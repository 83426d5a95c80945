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
from wide_assets.errors import MergeError
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
# No aggregate function that checks its accumulator: write-only writers of these tables never look up
# the stored rows.
LOOKUP_FREE = {
    "merge-engine": "partial-update",
    "fields.name_ts.sequence-group": "name",
    "fields.cnt_ts.sequence-group": "cnt",
    "changelog-producer": "lookup",
}
LOOKUP_FREE_FUNCTIONS = {
    **LOOKUP_FREE,
    "fields.name.aggregate-function": "last_non_null_value",
    "fields.cnt.aggregate-function": "last_value",
}
DEDUPLICATE = {"merge-engine": "deduplicate", "changelog-producer": "lookup"}
# Retractions filtered out before the merge: a key whose pending records are all retractions keeps
# its stored row in a union read.
IGNORING_DELETES = {**LOOKUP_FREE, "ignore-delete": "true"}
FIRST_ROW = {"merge-engine": "first-row", "ignore-delete": "true", "changelog-producer": "lookup"}


def random_batch(rng: random.Random, retractions: bool = True, keys: int = 5) -> list[tuple[Any, ...]]:
    """Partial updates of either group, out-of-order sequences, and some retractions (unless not)."""
    rows: list[tuple[Any, ...]] = []
    for _ in range(rng.randint(1, 6)):
        k, ts = rng.randint(1, keys), rng.randint(1, 9)
        if rng.random() < 0.5:
            kind = rng.choice(["+I", "+I", "-D"]) if retractions else "+I"
            rows.append((k, rng.choice(["a", "b", None]), ts, None, None, kind))
        else:
            kind = rng.choice(["+I", "+I", "-U"]) if retractions else "+I"
            rows.append((k, None, None, rng.randint(-3, 9), ts, kind))
    return rows


def rows(table: WideTable) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.read().collect())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "options",
    [PAIMON, FLUSS, LOOKUP_FREE, LOOKUP_FREE_FUNCTIONS, DEDUPLICATE, IGNORING_DELETES, FIRST_ROW],
    ids=[
        "paimon",
        "fluss",
        "lookup-free-partial-update",
        "lookup-free-functions",
        "lookup-free-deduplicate",
        "lookup-free-ignoring-deletes",
        "lookup-free-first-row",
    ],
)
def test_write_only_reads_like_copy_on_write_under_random_interleavings(
    spark: Any, tmp_path: Path, options: dict[str, str], seed: int
) -> None:
    rng = random.Random(seed)
    eager = WideTable.create(spark, tmp_path / "cow", COLUMNS, ["k"], options)
    lazy = WideTable.create(spark, tmp_path / "wo", COLUMNS, ["k"], {**options, "write-only": "true"})
    assert lazy.definition.merge.lookup_free_writes == (options is not PAIMON and options is not FLUSS)
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


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("options", [LOOKUP_FREE, LOOKUP_FREE_FUNCTIONS], ids=["partial-update", "functions"])
def test_a_union_read_of_adds_only_keeps_every_untouched_row(
    spark: Any, tmp_path: Path, options: dict[str, str], seed: int
) -> None:
    """Pending commits without retractions fold column by column (`merge.plan._column_folded`); the
    stored rows of the keys they do not touch must come back as stored (`folded_into_query`). The
    random interleavings above almost always hold a retraction, so they do not reach this path."""
    rng = random.Random(seed)
    eager = WideTable.create(spark, tmp_path / "cow", COLUMNS, ["k"], options)
    lazy = WideTable.create(spark, tmp_path / "wo", COLUMNS, ["k"], {**options, "write-only": "true"})
    for step in range(5):
        if step == 1 or rng.random() < 0.3:
            lazy.compact()
        batch = spark.createDataFrame(random_batch(rng, retractions=False, keys=12), DDL)
        eager.write(batch)
        lazy.write(batch)
        assert lazy.pending_commits() and rows(lazy) == rows(eager)


def test_a_union_read_passes_stored_rows_through_under_a_composite_floating_point_key(
    spark: Any, tmp_path: Path
) -> None:
    """The adds-only union read joins every stored row with the pending folds in one scan; an untouched
    row keeps its key exactly as stored (-0.0, NaN, infinities), a touched one is folded, a new one
    is added: the same rows as the copy-on-write table written with the same batches."""
    columns = [("x", "double"), ("tag", "string"), *COLUMNS[1:]]
    ddl = "x double, tag string, name string, name_ts int, cnt bigint, cnt_ts int, _row_kind string"
    eager = WideTable.create(spark, tmp_path / "cow", columns, ["x", "tag"], LOOKUP_FREE)
    lazy = WideTable.create(
        spark, tmp_path / "wo", columns, ["x", "tag"], {**LOOKUP_FREE, "write-only": "true"}
    )
    edges = [-0.0, 0.0, float("nan"), float("inf"), float("-inf"), 1e308, -5e-324]
    stored = [(x, t, f"n{i}", 1, i, 1, "+I") for i, (x, t) in enumerate((x, t) for x in edges for t in "ab")]
    pending = [
        (-0.0, "a", "m", 2, None, None, "+I"),
        (float("nan"), "b", None, None, 7, 2, "+I"),
        (1e308, "c", "new", 1, 3, 1, "+I"),
        (float("inf"), "a", "old", 0, None, None, "+I"),
    ]
    for batch in (stored, pending):
        frame = spark.createDataFrame(batch, ddl)
        eager.write(frame)
        lazy.write(frame)
        if batch is stored:
            lazy.compact()
    assert lazy.pending_commits()

    def exact(table: WideTable) -> list[tuple[Any, ...]]:
        # repr tells -0.0 from 0.0 and lets NaN keys sort
        return sorted(tuple(repr(v) for v in r) for r in table.read().collect())

    assert exact(lazy) == exact(eager)
    # -0.0 and 0.0 are one key: 6 stored values of x per tag, and one new key
    assert len(exact(lazy)) == 6 * 2 + 1


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


@pytest.mark.parametrize(
    ("options", "point", "kinds"),
    [
        # The resolution logged commit 1's changelog before the crash; commit 2 updates key 1.
        (PAIMON, "after-compaction-merge", ["+I", "+I", "+U", "-U"]),
        (LOOKUP_FREE, "after-resolution", ["+I", "+I", "+U", "-U"]),
        (LOOKUP_FREE, "after-compaction-merge", ["+I", "+I", "+U", "-U"]),
    ],
    ids=["lookup", "lookup-free-before-merge", "lookup-free-after-merge"],
)
def test_compaction_killed_after_its_merge_is_finished_once(
    spark: Any, tmp_path: Path, options: dict[str, str], point: str, kinds: list[str]
) -> None:
    path = tmp_path / "t"
    table = WideTable.create(spark, path, COLUMNS, ["k"], {**options, "write-only": "true"})
    table.write(spark.createDataFrame([(1, "a", 1, 5, 1, "+I"), (2, "b", 1, 1, 1, "+I")], DDL))
    env = {**os.environ, CRASH_POINT: point}
    killed = subprocess.run(
        [sys.executable, "-c", COMPACTOR, str(path)], env=env, capture_output=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL
    assert table.compactions() == [], "the marker was never written"
    assert rows(table) == [(1, "a", 1, 5, 1), (2, "b", 1, 1, 1)]
    # The next write finishes a cut-short resolution first; then both commits are in the table.
    table.write(spark.createDataFrame([(1, "c", 2, None, None, "+I")], DDL))
    assert table.compact() is not None
    assert table.compactions()[-1].through == 2 and table.pending_commits() == []
    assert sorted(r["_row_kind"] for r in table.changelog().collect()) == kinds
    assert rows(table) == [(1, "c", 2, 5, 1), (2, "b", 1, 1, 1)]
    assert sorted(tuple(r) for r in spark.read.format("delta").load(table.path).collect()) == rows(table)


def test_a_lookup_free_write_of_unmergeable_records_commits_nothing(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(
        spark, tmp_path / "t", COLUMNS, ["k"], {"merge-engine": "first-row", "write-only": "true"}
    )
    assert table.definition.merge.lookup_free_writes
    table.write(spark.createDataFrame([(1, "a", 1, None, None, "+I")], DDL))
    with pytest.raises(MergeError, match="can not accept DELETE"):
        table.write(spark.createDataFrame([(2, "a", 1, None, None, "-D")], DDL))
    assert [c.commit for c in table.commits()] == [1]
    assert rows(table) == [(1, "a", 1, None, None)]


def test_a_lookup_free_write_of_a_retraction_a_function_refuses_commits_nothing(
    spark: Any, tmp_path: Path
) -> None:
    options = {**LOOKUP_FREE, "fields.cnt.aggregate-function": "max", "write-only": "true"}
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    assert table.definition.merge.lookup_free_writes
    table.write(spark.createDataFrame([(1, None, None, 5, 1, "+I")], DDL))
    with pytest.raises(MergeError, match="'max' does not support retraction"):
        table.write(spark.createDataFrame([(1, None, None, 5, 2, "-U")], DDL))
    assert [c.commit for c in table.commits()] == [1]
    assert rows(table) == [(1, None, None, 5, 1)]


def test_writers_look_up_stored_rows_where_a_check_needs_them(spark: Any, tmp_path: Path) -> None:
    # Whether a delete may merge with a stored row is only known by looking it up.
    options = {"merge-engine": "partial-update", "write-only": "true"}
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    assert not table.definition.merge.lookup_free_writes
    table.write(spark.createDataFrame([(1, "a", 1, None, None, "+I")], DDL))
    with pytest.raises(MergeError, match="can not accept delete records"):
        table.write(spark.createDataFrame([(1, "a", 1, None, None, "-D")], DDL))
    assert table.compact() is not None and rows(table) == [(1, "a", 1, None, None)]


def test_fragments_arriving_at_the_bigint_bounds_fold_in_commit_then_offset_order(
    spark: Any, tmp_path: Path
) -> None:
    """A write-only table folds its pending fragments in commit order, then `_offset` order within a
    commit, whatever the offsets: within +-2^58 (numbered from commit and offset) and out to the
    BIGINT bounds (ranked). Written out by hand: the last record of a key in that order wins, in the
    union read with the commits pending and in the compacted table."""
    table = WideTable.create(
        spark, tmp_path / "t", [("k", "int"), ("v", "string")], ["k"], {"write-only": "true"}
    )
    schema = "k int, v string, _offset bigint"
    near = [[(1, "a", 2**58), (1, "b", -(2**58))], [(1, "c", -(2**58)), (2, "d", 2**58)]]
    far = [[(3, "e", 2**63 - 1), (3, "f", -(2**63)), (4, "g", 2**63 - 2)], [(4, "h", -(2**63))]]
    after_near = {1: "c", 2: "d"}
    for commits, expected in ((near, after_near), (far, {**after_near, 3: "e", 4: "h"})):
        for rows in commits:
            table.write(spark.createDataFrame(rows, schema))
        assert {r.k: r.v for r in table.read().collect()} == expected, "the union read"
        table.compact()
        assert {r.k: r.v for r in table.read().collect()} == expected, "the compacted table"


@pytest.mark.parametrize("counted_by", ["driver", "engine"])
def test_pending_fragments_are_counted_on_the_driver_or_else_by_the_engine(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted_by: str
) -> None:
    """A union read and a compaction number the pending fragments from their retractions and offset
    bounds, counted from the log files on the driver (`logged_images.fragment_counts`) or, where the
    driver gives none, by an engine query: either way the table reads as a copy-on-write one."""
    from wide_assets.table import images, logged_images

    asked = []
    on_the_driver = logged_images.fragment_counts

    def counted(storage: Any, first: int, last: int) -> Any:
        asked.append((first, last))
        return on_the_driver(storage, first, last) if counted_by == "driver" else None

    monkeypatch.setattr(images, "fragment_counts", counted)
    rng = random.Random(5)
    eager = WideTable.create(spark, tmp_path / "cow", COLUMNS, ["k"], LOOKUP_FREE)
    lazy = WideTable.create(spark, tmp_path / "wo", COLUMNS, ["k"], {**LOOKUP_FREE, "write-only": "true"})
    for _ in range(4):
        batch = spark.createDataFrame(random_batch(rng), DDL)
        eager.write(batch)
        lazy.write(batch)
        assert rows(lazy) == rows(eager)
    lazy.compact()
    assert lazy.pending_commits() == [] and rows(lazy) == rows(eager)
    assert (1, 4) in asked
