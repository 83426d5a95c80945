"""Storage layouts: fixed buckets (`bucket` / `bucket.num`: rows placed by hash(bucket key) mod N, a write
touches only the buckets its keys hash to) hold what a plain table holds; a copy-on-write table
(`deletion-vectors.enabled: false`) rewrites the files holding replaced rows, and delta-rs's Arrow
reader reads it (tests/test_deletion_vectors.py has the default layout)."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from test_write_only import COLUMNS, DDL, FLUSS, PAIMON, random_batch, rows

from wide_assets import WideTable
from wide_assets.errors import InvalidOptionError
from wide_assets.session import activate


def files_by_bucket(table: WideTable) -> dict[int, set[str]]:
    actions = pa.table(DeltaTable(table.path).get_add_actions(flatten=True)).to_pylist()
    buckets: dict[int, set[str]] = {}
    for action in actions:
        buckets.setdefault(int(action["partition._bucket"]), set()).add(action["path"])
    return buckets


LAYOUTS = [
    (PAIMON, {"bucket": "3"}),
    (FLUSS, {"bucket.num": "3"}),
]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("options", "layout"), LAYOUTS, ids=["paimon-buckets", "fluss-buckets"])
def test_laid_out_tables_hold_what_a_plain_table_holds(
    spark: Any, tmp_path: Path, options: dict[str, str], layout: dict[str, str], seed: int
) -> None:
    rng = random.Random(seed)
    plain = WideTable.create(spark, tmp_path / "plain", COLUMNS, ["k"], options)
    eager = WideTable.create(spark, tmp_path / "cow", COLUMNS, ["k"], {**options, **layout})
    lazy = WideTable.create(
        spark, tmp_path / "wo", COLUMNS, ["k"], {**options, **layout, "write-only": "true"}
    )
    for _ in range(5):
        batch = spark.createDataFrame(random_batch(rng), DDL)
        for table in (plain, eager, lazy):
            table.write(batch)
        if rng.random() < 0.4:
            lazy.compact()
        assert rows(eager) == rows(plain) and rows(lazy) == rows(plain)
    keys = spark.createDataFrame([(k,) for k in range(1, 6)], "k int")
    assert sorted(map(tuple, eager.lookup(keys).collect())) == rows(plain)
    eager.rebuild()
    assert rows(eager) == rows(plain)


@pytest.mark.jvm
def test_rows_sit_in_the_bucket_jvm_spark_computes(spark: Any, jvm_spark: Any, tmp_path: Path) -> None:
    # JVM Spark's xxhash64 is the reference implementation: Sail must place every row where it would.
    activate(spark)
    table = WideTable.create(
        spark, tmp_path / "t", [("k", "bigint"), ("s", "string"), ("v", "int")], ["k", "s"], {"bucket": "7"}
    )
    keys = [(k, f"naïve-{k % 13}", k) for k in range(-50, 250, 3)]
    table.write(spark.createDataFrame(keys, "k bigint, s string, v int"))
    stored = {(r.k, r.s): r._bucket for r in spark.read.format("delta").load(table.path).collect()}
    activate(jvm_spark)
    reference = jvm_spark.sql(
        "SELECT k, s, CAST(pmod(xxhash64(k, s), 7) AS INT) AS b FROM {keys}",
        keys=jvm_spark.createDataFrame(keys, "k bigint, s string, v int"),
    ).collect()
    assert stored == {(r.k, r.s): r.b for r in reference}
    assert len(set(stored.values())) == 7


def test_a_write_rewrites_only_the_buckets_its_keys_hash_to(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], {**PAIMON, "bucket": "8"})
    table.write(spark.sql("SELECT CAST(id AS INT) AS k, 'a' AS name, 1 AS name_ts FROM range(400)"))
    before = files_by_bucket(table)
    assert len(before) == 8
    table.write(spark.createDataFrame([(7, "b", 2, None, None, "+I")], DDL))
    after = files_by_bucket(table)
    changed = {b for b in before if before[b] != after.get(b)}
    hit = spark.sql("SELECT CAST(pmod(xxhash64(CAST(7 AS INT)), 8) AS INT) AS b").collect()[0].b
    assert changed == {hit}
    assert [r.k for r in table.read().where("name = 'b'").collect()] == [7]


def test_a_copy_on_write_table_rewrites_the_rest_of_a_file_and_delta_rs_reads_it(
    spark: Any, tmp_path: Path
) -> None:
    options = {**PAIMON, "deletion-vectors.enabled": "false"}
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    table.write(spark.sql("SELECT CAST(id AS INT) AS k, 'a' AS name, 1 AS name_ts FROM range(400)"))
    before = set(DeltaTable(table.path).file_uris())
    table.write(spark.createDataFrame([(7, "b", 2, None, None, "+I")], DDL))
    after = set(DeltaTable(table.path).file_uris())
    assert len(before - after) == 1 and len(after - before) == 2, "the file holding key 7, rewritten"
    stored = DeltaTable(table.path).to_pyarrow_table().sort_by("k")
    assert stored.num_rows == 400 and stored.slice(7, 1).to_pylist()[0]["name"] == "b"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bucket": "0"}, "The number of buckets needs to be greater than 0."),
        ({"bucket": "many"}, "Could not parse value 'many' for key 'bucket'."),
        ({"bucket.num": "-1", "table.delete.behavior": "allow"}, "positive number of buckets"),
        ({"bucket": "4", "bucket-key": "name"}, "should contains all bucket keys [name]."),
    ],
)
def test_bad_bucket_options_fail_at_create(
    spark: Any, tmp_path: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=re.escape(message)):
        WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    assert not (tmp_path / "t").exists()


def test_dynamic_bucket_mode_is_unbucketed(spark: Any, tmp_path: Path) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], {"bucket": "-1"})
    assert table.definition.bucketing is None
    assert DeltaTable(table.path).metadata().partition_columns == []
