"""Writes whose cost follows the change: a write marks the rows it replaces with Delta deletion vectors
and adds only the new images (or, with `deletion-vectors.enabled: false`, rewrites just the files that
held them); every reader named in the README reads the result exactly as a plain dict of the records
(the oracle) says, after every round, across checkpoints, lost races and a crash before the commit."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from delta_readers import READERS as ALL_READERS
from delta_readers import rows_by_delta_rs
from deltalake import DeltaTable
from engine import ENGINE, WHOLE_JVM_TIER

from wide_assets import WideTable
from wide_assets.table import arbiter, delta_log, table_writes
from wide_assets.table.arbiter import Conflict
from wide_assets.table.deletion_vectors import DV_PREFIX, Descriptor, read_vector
from wide_assets.table.files import DataFile
from wide_assets.table.objects import TableFiles
from wide_assets.table.staging import STAGING_DIR

COLUMNS = [("k", "int"), ("part", "string"), ("v", "string")]
DDL = "k int, part string, v string, _row_kind string"
LAST_ROW = {"merge-engine": "deduplicate"}
LAYOUTS = {
    "deletion-vectors": {},
    "copy-on-write": {"deletion-vectors.enabled": "false"},
    "buckets": {"bucket": "3"},
}


# Random batches after the initial one. Nine cross two checkpoints (every 4 versions). On classic JVM
# Spark (test_jvm_delta.py's bounded tier) a write takes seconds and four still cross one, then read a
# JSON commit after it; `WIDE_ASSETS_JVM_TIER=all` runs nine there too.
RANDOM_ROUNDS = 4 if ENGINE.engine == "classic" and not WHOLE_JVM_TIER else 9


def apply_to_oracle(oracle: dict[tuple[int, str], str], batch: list[tuple[Any, ...]]) -> None:
    """Last row per key in arrival order; -D removes it (Paimon's deduplicate engine)."""
    for k, part, v, kind in batch:
        if kind == "-D":
            oracle.pop((k, part), None)
        else:
            oracle[(k, part)] = v


def read_by_sail(table: WideTable) -> dict[tuple[int, str], str]:
    return {(r.k, r.part): r.v for r in table.read().collect()}


def keyed(rows: list[tuple[Any, ...]]) -> dict[tuple[int, str], str]:
    found = {(k, part): v for k, part, v in rows}
    assert len(found) == len(rows), "a key is live twice"
    return found


def read_by_delta_rs(path: str) -> dict[tuple[int, str], str]:
    return keyed(rows_by_delta_rs(path, "k, part, v"))


def by_key(read: Callable[..., list[tuple[Any, ...]]]) -> Callable[[str], dict[tuple[int, str], str]]:
    return lambda path: keyed(read(path, "k, part, v"))


READERS = {name: by_key(read) for name, read in ALL_READERS.items()}


def log_actions(path: str, version: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def random_batch(rng: random.Random, size: int) -> list[tuple[Any, ...]]:
    return [
        (
            rng.randint(0, 60),
            rng.choice(["a", "b"]),
            f"v{rng.randint(0, 999)}",
            rng.choice(["+I", "+I", "-D"]),
        )
        for _ in range(size)
    ]


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_random_rounds_equal_the_oracle_in_every_reader(
    spark: Any, tmp_path: Path, layout: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkpoint every 4 versions: snapshots are then read from a checkpoint plus JSON commits.
    monkeypatch.setattr(delta_log, "CHECKPOINT_INTERVAL", 4)
    rng = random.Random(11)
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], {**LAST_ROW, **layout})
    oracle: dict[tuple[int, str], str] = {}
    initial = [(k, p, f"init{k}", "+I") for k in range(60) for p in ("a", "b")]
    for batch in [initial, *(random_batch(rng, rng.randint(1, 40)) for _ in range(RANDOM_ROUNDS))]:
        # A key deleted in one batch and written and deleted again in the next is deleted twice.
        table.write(spark.createDataFrame(batch, DDL))
        apply_to_oracle(oracle, batch)
        assert read_by_sail(table) == oracle
        for name, read in READERS.items():
            assert read(table.path) == oracle, name
    if "deletion-vectors.enabled" in layout:
        stored = DeltaTable(table.path).to_pyarrow_table()  # no deletion vector: any reader reads it
        assert {(r["k"], r["part"]): r["v"] for r in stored.to_pylist()} == oracle
    assert any(p.name.endswith(".checkpoint.parquet") for p in (Path(table.path) / "_delta_log").iterdir())


def test_an_update_adds_a_vector_and_one_file_and_rewrites_nothing(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], LAST_ROW)
    table.write(spark.sql("SELECT CAST(id AS INT) AS k, 'a' AS part, 'x' AS v FROM range(400)"))
    before = {f.path: f for f in delta_log.live_files(TableFiles(table.path), table.version)}
    table.write(spark.createDataFrame([(7, "a", "y", "+I"), (8, "a", None, "-D")], DDL))
    actions = log_actions(table.path, table.version)
    removed = [a["remove"]["path"] for a in actions if "remove" in a]
    added = [a["add"] for a in actions if "add" in a]
    holding = [p for p in before if p in removed]
    assert holding and len(removed) == len(holding), "only the files holding keys 7 and 8 are touched"
    re_added = [a for a in added if a["path"] in removed]
    assert [a["size"] for a in re_added] == [before[a["path"]].size for a in re_added], "not rewritten"
    vectors = [Descriptor.from_action(a["deletionVector"]) for a in re_added]
    assert sum(v.cardinality for v in vectors) == 2
    assert all(v.file_path().startswith(f"{DV_PREFIX}/") for v in vectors)
    new_files = [a for a in added if a["path"] not in before]
    assert [json.loads(a["stats"])["numRecords"] for a in new_files] == [1]
    content = (Path(table.path) / vectors[0].file_path()).read_bytes()
    assert len(read_vector(vectors[0], content)) == vectors[0].cardinality


def test_a_row_deleted_twice_is_counted_once(spark: Any, tmp_path: Path) -> None:
    """A key whose old row a vector already hides and that lives again in a newer file: writing it
    again hides the newer row only, and each hidden position is kept once (a vector's cardinality is
    the number of rows readers skip)."""
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], LAST_ROW)
    table.write(spark.sql("SELECT CAST(id AS INT) AS k, 'a' AS part, 'x' AS v FROM range(100)"))
    table.write(spark.createDataFrame([(5, "a", None, "-D")], DDL))
    table.write(spark.createDataFrame([(5, "a", "again", "+I")], DDL))
    actions = log_actions(table.path, table.version)
    assert not any("remove" in a for a in actions), "the hidden row of key 5 is not deleted again"
    table.write(spark.createDataFrame([(5, "a", None, "-D"), (6, "a", "y", "+I"), (6, "a", None, "-D")], DDL))
    live = delta_log.live_files(TableFiles(table.path), table.version)
    vectors = [f.deletion_vector for f in live if f.deletion_vector]
    hidden = [read_vector(v, (Path(table.path) / v.file_path()).read_bytes()) for v in vectors]
    assert [v.cardinality for v in vectors] == [len(positions) for positions in hidden]
    assert sum(v.cardinality for v in vectors) == 2, "the first rows of keys 5 and 6 hidden, each once"
    expected = {(k, "a"): "x" for k in range(100) if k not in (5, 6)}
    assert read_by_sail(table) == expected == read_by_delta_rs(table.path)


def test_copy_on_write_tables_have_no_vector_feature(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(
        spark, tmp_path / "t", COLUMNS, ["k", "part"], {**LAST_ROW, "deletion-vectors.enabled": "false"}
    )
    table.write(spark.sql("SELECT CAST(id AS INT) AS k, 'a' AS part, 'x' AS v FROM range(100)"))
    table.write(spark.createDataFrame([(7, "a", "y", "+I")], DDL))
    assert "deletionVectors" not in (DeltaTable(table.path).protocol().reader_features or [])
    assert not any("deletionVector" in a.get("add", {}) for a in log_actions(table.path, table.version))


def test_a_vector_computed_before_a_concurrent_commit_is_refused(spark: Any, tmp_path: Path) -> None:
    """An apply computed from version N whose files another commit (here an OPTIMIZE) replaced meanwhile
    must not land: its vectors would point at rows of files that are gone."""
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], LAST_ROW)
    for start in range(0, 300, 100):  # three files, so that OPTIMIZE has something to merge
        table.write(
            spark.sql(
                f"SELECT CAST(id AS INT) AS k, 'a' AS part, 'x' AS v FROM range({start}, {start + 100})"
            )
        )
    storage = table._storage
    pinned = arbiter.open_table(table.path)
    images = spark.createDataFrame([("+I", 5, "a", "late")], "_row_kind string, k int, part string, v string")
    DeltaTable(table.path).optimize.compact()  # the concurrent commit: version N + 1
    with pytest.raises(Conflict):
        table_writes.apply_images(storage, images, pinned, arbiter.applied_through(pinned))
    rows = read_by_delta_rs(table.path)
    assert len(rows) == 300 and rows[(5, "a")] == "x"


def test_a_crash_between_files_and_commit_leaves_nothing_readable_and_vacuum_removes_it(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], LAST_ROW)
    table.write(spark.sql("SELECT CAST(id AS INT) AS k, 'a' AS part, 'x' AS v FROM range(50)"))
    table.write(spark.createDataFrame([(1, "a", "y", "+I")], DDL))
    expected = read_by_sail(table)

    def crash(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt("killed before the commit")

    monkeypatch.setattr(delta_log, "commit", crash)
    with pytest.raises(KeyboardInterrupt):
        table.write(spark.createDataFrame([(2, "a", "lost", "+I")], DDL))
    monkeypatch.undo()
    orphans = {str(p.relative_to(table.path)) for p in Path(table.path).rglob("*.parquet")} - {
        f.path for f in delta_log.live_files(TableFiles(table.path), table.version)
    }
    assert orphans, "the crashed write left its files behind"
    assert len(list((Path(table.path) / DV_PREFIX).iterdir())) == 2, "and its vector file"
    table.recover()  # its log commit landed: recovery applies it from the log, with files of its own
    expected[(2, "a")] = "lost"
    assert read_by_sail(table) == expected == read_by_delta_rs(table.path)
    # A killed process's staged Arrow input (a live write deletes its own when it ends).
    TableFiles(table.path).write_parquet(f"{STAGING_DIR}/killed.parquet", pa.table({"k": [1]}))
    for path in (table.path, table.changelog_path):
        DeltaTable(path).alter.set_table_properties(
            {"delta.deletedFileRetentionDuration": "interval 0 hours"}
        )
    table.vacuum(retention_hours=0)
    left = {str(p.relative_to(table.path)) for p in Path(table.path).rglob("*.parquet")}
    assert not (orphans & left), "vacuum removes files no commit names"
    assert read_by_sail(table) == expected == read_by_delta_rs(table.path)
    live = delta_log.live_files(TableFiles(table.path), table.version)
    in_use = {f.deletion_vector.file_path() for f in live if f.deletion_vector}
    assert in_use, "the recovered write marked row 2 of the first file deleted"
    stored = {str(p.relative_to(table.path)) for p in (Path(table.path) / DV_PREFIX).iterdir()}
    assert stored == in_use, "the crashed write's vector file is gone, the ones in use stay"
    assert not list(TableFiles(table.path).list(STAGING_DIR)), "and so is the staged input"


def test_statistics_bound_every_value_and_filtered_reads_find_them(spark: Any, tmp_path: Path) -> None:
    """delta-rs prunes files by the statistics written for the engine's files: a missing or too narrow
    bound would hide live rows from a filtered read."""
    columns = [
        ("k", "int"),
        ("s", "string"),
        ("d", "decimal(38,2)"),
        ("ts", "timestamp"),
        ("dt", "date"),
        ("b", "boolean"),
        ("f", "double"),
    ]
    table = WideTable.create(
        spark, tmp_path / "t", columns, ["k"], {**LAST_ROW, "deletion-vectors.enabled": "false"}
    )
    table.write(
        spark.sql(
            "SELECT CAST(id AS INT) AS k, concat(repeat('x', 40), CAST(id AS STRING)) AS s, "
            "CAST(id AS DECIMAL(38,2)) / 3 AS d, timestamp_micros(1700000000000000 + id * 1001) AS ts, "
            "date_add(DATE'2024-01-01', CAST(id AS INT)) AS dt, id % 2 = 0 AS b, id / 7 AS f "
            "FROM range(20)"
        )
    )
    dataset = DeltaTable(table.path).to_pyarrow_dataset()
    import pyarrow.compute as pc

    every = dataset.to_table()
    for name in columns:
        for value in every.column(name[0]).to_pylist():
            equal = pc.field(name[0]) == pa.scalar(value, every.schema.field(name[0]).type)
            assert dataset.to_table(filter=equal).num_rows == every.filter(equal).num_rows, name


def test_optimize_folds_the_vectors_away_and_keeps_every_live_row(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k", "part"], LAST_ROW)
    oracle: dict[tuple[int, str], str] = {}
    rng = random.Random(5)
    for batch in ([(k, "a", "x", "+I") for k in range(60)], *(random_batch(rng, 30) for _ in range(3))):
        table.write(spark.createDataFrame(batch, DDL))
        apply_to_oracle(oracle, batch)
    files = TableFiles(table.path)
    assert any(f.deletion_vector for f in delta_log.live_files(files, table.version))
    table.optimize()
    assert not any(f.deletion_vector for f in delta_log.live_files(files, table.version))
    assert read_by_sail(table) == oracle == read_by_delta_rs(table.path)
    batch = random_batch(rng, 30)  # and writes go on over the compacted files
    table.write(spark.createDataFrame(batch, DDL))
    apply_to_oracle(oracle, batch)
    assert read_by_sail(table) == oracle == read_by_delta_rs(table.path)


def test_optimize_writes_compressed_files_clustered_by_the_z_order_key(spark: Any, tmp_path: Path) -> None:
    """OPTIMIZE's files are zstd-compressed like the engine's (delta-rs wrote them uncompressed when
    given settings without a codec), and a Z-order by the key clusters them: writes after it stay
    exact against the oracle."""
    import pyarrow.parquet as pq

    table = WideTable.create(spark, tmp_path / "t", [*COLUMNS, ("d", "double")], ["k", "part"], LAST_ROW)
    ddl = "k int, part string, v string, d double, _row_kind string"
    oracle: dict[tuple[int, str], str] = {}
    rng = random.Random(11)
    for batch in ([(k, "a", "x", "+I") for k in range(60)], *(random_batch(rng, 30) for _ in range(3))):
        table.write(spark.createDataFrame([(k, p, v, 0.5, kind) for k, p, v, kind in batch], ddl))
        apply_to_oracle(oracle, batch)
    table.optimize(z_order=["k"])
    files = TableFiles(table.path)
    for live in delta_log.live_files(files, table.version):
        metadata = pq.read_metadata(files.open_parquet(live.path))
        codecs = {metadata.row_group(0).column(i).compression for i in range(metadata.num_columns)}
        assert codecs == {"ZSTD"}, live.path
    for _ in range(3):
        batch = random_batch(rng, 30)
        table.write(spark.createDataFrame([(k, p, v, 0.5, kind) for k, p, v, kind in batch], ddl))
        apply_to_oracle(oracle, batch)
        assert read_by_sail(table) == oracle == read_by_delta_rs(table.path)


ENGINE_KEYS = {
    "long string": "concat(repeat('k', 70), lpad(CAST(id AS STRING), 5, '0'))",
    "timestamp": "timestamp_micros(id * 86400000000 - 62135596800000000 + id)",
    "date": "date_add(DATE'0001-01-01', CAST(id * 3 AS INT))",
    "decimal": "CAST(id * 7 - 9000 AS DECIMAL(38, 10)) / 3",
    "bigint": "id * 3074457345618258 - 4611686018427387904",
}


@pytest.mark.parametrize("key", ENGINE_KEYS)
def test_rows_replaced_in_engine_written_row_groups_are_every_match(
    spark: Any, tmp_path: Path, key: str
) -> None:
    """The rows a commit replaces, found through the row groups' key bounds in files the engine wrote
    (small row groups; string keys longer than the 64 characters the engine keeps of a bound, whose
    upper bound it rounds up; extreme dates, instants and decimals): exactly the rows a membership
    test over every stored key finds."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    frame = spark.sql(f"SELECT {ENGINE_KEYS[key]} AS k, id AS n FROM range(0, 3000)")
    frame.write.option("max_row_group_size", "400").parquet(str(tmp_path / "t" / "part"))
    files = TableFiles(str(tmp_path / "t"))
    written = [f for f in files.list("part") if f.path.endswith(".parquet")]
    assert sum(pq.read_metadata(files.open_parquet(f.path)).num_row_groups for f in written) > 3
    every_key = spark.sql(f"SELECT {ENGINE_KEYS[key]} AS k FROM range(0, 6000)").toArrow().column("k")
    rng = random.Random(3)
    for stored in written:
        data_file = DataFile(stored.path, stored.size, 0, {}, None)
        in_file = pq.read_table(files.open_parquet(stored.path), columns=["k"]).column("k")
        for trial in range(20):
            start = rng.randrange(3000)
            wanted = every_key.slice(start, 5).to_pylist() if trial % 2 else []
            wanted += [every_key[rng.randrange(6000)].as_py() for _ in range(rng.randrange(4))]
            keys = pa.table({"k": pa.array(wanted, in_file.type)})
            replaced = table_writes._replaced_in(files, data_file, keys, {})
            found = set() if replaced is None else set(replaced.replaced)
            expected = set(pc.indices_nonzero(pc.is_in(in_file, value_set=keys.column("k"))).to_pylist())
            assert found == expected, wanted
