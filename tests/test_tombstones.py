"""Durable tombstones (`wide-assets.tombstone-retention`, docs/semantics.md 7.2) against a plain-Python
fold of the written records: late, out-of-order and repeated records, over several commits and an
OPTIMIZE of the table and its log; without the option, P11 (nothing remembers a removed row)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from test_convergence import EXPECTED, SUMMED, merged, verdict
from test_convergence import spec as convergence_spec

from wide_assets import WideTable
from wide_assets.errors import InvalidOptionError
from wide_assets.faults import CRASH_POINT
from wide_assets.pipelines.convergence import convergence_problem
from wide_assets.session import is_connect

Row = dict[str, Any]
COLUMNS = [("k", "int"), ("status", "string"), ("order_ts", "int"), ("amount", "bigint"), ("pay_ts", "int")]
GROUPS = {
    "merge-engine": "partial-update",
    "fields.order_ts.sequence-group": "status",
    "fields.pay_ts.sequence-group": "amount",
    "partial-update.remove-record-on-sequence-group": "order_ts",
}
SCHEMA = pa.schema(
    [
        ("k", pa.int32()),
        ("status", pa.string()),
        ("order_ts", pa.int32()),
        ("amount", pa.int64()),
        ("pay_ts", pa.int32()),
        ("_row_kind", pa.string()),
    ]
)


def _commits(rng: random.Random) -> list[list[Row]]:
    """Five commits over keys 1-3: order inserts and deletes, payments, at random times (so many
    arrive late), and records of earlier commits delivered again."""
    commits: list[list[Row]] = []
    sent: list[Row] = []
    for _ in range(5):
        records = []
        for _ in range(rng.randint(4, 8)):
            if sent and rng.random() < 0.15:
                records.append(dict(rng.choice(sent)))
                continue
            key, at = rng.randint(1, 3), rng.randint(0, 30)
            kind = rng.choice(["order", "order", "delete", "payment"])
            record: Row = {"k": key, "status": None, "order_ts": None, "amount": None, "pay_ts": None}
            if kind == "order":
                record.update(status=f"s{at}", order_ts=at, _row_kind="+I")
            elif kind == "delete":
                record.update(order_ts=at, _row_kind="-D")
            else:
                record.update(amount=rng.randint(1, 99), pay_ts=at, _row_kind="+I")
            records.append(record)
        sent += records
        commits.append(records)
    return commits


def _time(record: Row) -> int | None:
    times = [t for t in (record["order_ts"], record["pay_ts"]) if t is not None]
    return max(times) if times else None


def _newer(incoming: int | None, stored: int | None) -> bool:
    return incoming is not None and (stored is None or incoming >= stored)


def _fold(commits: list[list[Row]], tombstones: bool) -> dict[int, Row]:
    """Plain Python, per key in arrival order: P7 per group, P11 for an order -D at least as new as
    the stored order time. With tombstones, first drop every insert not newer than the latest delete
    time of its key seen so far or in its own commit."""
    rows: dict[int, Row] = {}
    latest_delete: dict[int, int] = {}
    for records in commits:
        for record in records:
            if record["_row_kind"] == "-D":
                latest_delete[record["k"]] = max(latest_delete.get(record["k"], -1), record["order_ts"])
        for record in records:
            key, at = record["k"], _time(record)
            row = rows.get(key)
            if record["_row_kind"] == "-D":
                if row is None or _newer(record["order_ts"], row["order_ts"]):
                    rows.pop(key, None)
                continue
            if tombstones and key in latest_delete and (at is None or at <= latest_delete[key]):
                continue
            row = rows.setdefault(key, {c: None for c, _ in COLUMNS[1:]})
            for value, sequence in (("status", "order_ts"), ("amount", "pay_ts")):
                if _newer(record[sequence], row[sequence]):
                    row[sequence], row[value] = record[sequence], record[value]
    return rows


@pytest.mark.parametrize("tombstones", [True, False], ids=["tombstones", "p11"])
@pytest.mark.parametrize("seed", [3, 4])
def test_a_deleted_key_stays_deleted_for_older_records(
    spark: Any, tmp_path: Path, tombstones: bool, seed: int
) -> None:
    options = {**GROUPS, "wide-assets.tombstone-retention": "30 d"} if tombstones else GROUPS
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    commits = _commits(random.Random(seed))
    for number, records in enumerate(commits):
        table.write(spark.createDataFrame(pa.Table.from_pylist(records, schema=SCHEMA)))
        if number == 2:
            table.optimize()  # rewrites the table's and the log's files: tombstones survive it
    rows = {r.k: {c: r[c] for c, _ in COLUMNS[1:]} for r in table.read().collect()}
    assert rows == _fold(commits, tombstones)


def _one(spark: Any, **record: Any) -> Any:
    row = {"k": 1, "status": None, "order_ts": None, "amount": None, "pay_ts": None, **record}
    return spark.createDataFrame(pa.Table.from_pylist([row], schema=SCHEMA))


def test_a_late_payment_brings_the_key_back_once_the_tombstone_expired(spark: Any, tmp_path: Path) -> None:
    # The tombstone must outlive one write: a small write on classic JVM Spark takes about ten seconds.
    retention_s = 2 if is_connect(spark) else 40
    options = {**GROUPS, "wide-assets.tombstone-retention": f"{retention_s} s"}
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    table.write(_one(spark, status="new", order_ts=10, _row_kind="+I"))
    table.write(_one(spark, order_ts=20, _row_kind="-D"))
    table.write(_one(spark, amount=5, pay_ts=15, _row_kind="+I"))
    assert table.read().count() == 0  # 15 is not newer than the delete at 20
    time.sleep(retention_s + 1.5)
    table.write(_one(spark, amount=7, pay_ts=16, _row_kind="+I"))
    assert [(r.k, r.amount, r.status) for r in table.read().collect()] == [(1, 7, None)]


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        (
            {"merge-engine": "partial-update", "fields.order_ts.sequence-group": "status"},
            "no delete removes a row",
        ),
        ({"merge-engine": "deduplicate"}, "the table has no sequence"),
        ({"table.delete.behavior": "allow"}, "a Fluss table has no sequence"),
        ({"merge-engine": "deduplicate", "sequence.field": "order_ts"}, None),
    ],
)
def test_the_option_is_refused_where_a_delete_has_no_time(
    spark: Any, tmp_path: Path, options: dict[str, str], refusal: str | None
) -> None:
    options = {**options, "wide-assets.tombstone-retention": "7 d"}
    if refusal is None:
        WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
        return
    with pytest.raises(InvalidOptionError, match=refusal):
        WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)


def test_a_misspelled_retention_is_refused(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match=r"did you mean 'wide-assets\.tombstone-retention'"):
        WideTable.create(
            spark, tmp_path / "t", COLUMNS, ["k"], {**GROUPS, "wide-assets.tombstone-retension": "7 d"}
        )
    with pytest.raises(InvalidOptionError, match="write a positive duration"):
        WideTable.create(
            spark, tmp_path / "u", COLUMNS, ["k"], {**GROUPS, "wide-assets.tombstone-retention": "7 weeks"}
        )


@pytest.mark.parametrize(("retention", "expected"), [("1 d", []), (None, [(1, 5, None)])])
def test_a_delete_also_holds_for_older_records_after_it_in_its_own_commit(
    spark: Any, tmp_path: Path, retention: str | None, expected: list[tuple[Any, ...]]
) -> None:
    options = {**GROUPS, "wide-assets.tombstone-retention": retention} if retention else GROUPS
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    table.write(_one(spark, status="new", order_ts=10, _row_kind="+I"))
    late = [
        {"k": 1, "status": None, "order_ts": 20, "amount": None, "pay_ts": None, "_row_kind": "-D"},
        {"k": 1, "status": None, "order_ts": None, "amount": 5, "pay_ts": 15, "_row_kind": "+I"},
    ]
    table.write(spark.createDataFrame(pa.Table.from_pylist(late, schema=SCHEMA)))
    assert [(r.k, r.amount, r.status) for r in table.read().collect()] == expected


def test_racing_writers_keep_each_tombstone_once_in_commit_order(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three writers at once, no lock: whatever order their commits land in, the table is the fold of
    the records in that order (read back from the commits' transaction ids), and a replayed write adds
    nothing."""
    monkeypatch.setenv("WIDE_ASSETS_LOCAL_LOCK", "off")
    options = {**GROUPS, "wide-assets.tombstone-retention": "30 d"}
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    # Seed 14: in every order the writers may commit in, some record is dropped only by an earlier
    # commit's tombstone.
    commits = _commits(random.Random(14))[:4]
    writes = {("w1", 1): commits[0], ("w2", 1): commits[1], ("w1", 2): commits[2], ("w3", 1): commits[3]}

    def writer(name: str) -> None:
        for (app, offset), records in writes.items():
            if app == name:
                frame = spark.createDataFrame(pa.Table.from_pylist(records, schema=SCHEMA))
                table.write(frame, txn=(app, offset))

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("w1", "w2", "w3")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer("w2")  # replayed: skipped by its transaction id
    landed = [(c.txn.app_id, c.txn.offset) for c in table.commits() if c.txn is not None]
    assert sorted(landed) == sorted(writes)
    rows = {r.k: {c: r[c] for c, _ in COLUMNS[1:]} for r in table.read().collect()}
    assert rows == _fold([writes[txn] for txn in landed], tombstones=True)


def test_the_convergence_oracle_drops_what_a_tombstone_drops(spark: Any, tmp_path: Path) -> None:
    """test_convergence's two runs with tombstones: order 1, deleted at 10:05, is not built again by
    its 10:03 status and 10:04 payment of run 2 (P11 would); order 2 is as without them. The oracle
    (no merge) agrees with the table, and not with a table merged without tombstones."""
    tombstoned = convergence_spec({**SUMMED, "wide-assets.tombstone-retention": "30 d"})
    assert convergence_problem(tombstoned) is None
    table, applied = merged(spark, tmp_path / "with", tombstoned)
    assert {tuple(r) for r in table.read().collect()} == {row for row in EXPECTED if row[0] != 1}
    assert verdict(spark, tombstoned, table, applied).passed
    forgetting, applied = merged(spark, tmp_path / "without", convergence_spec(SUMMED))
    diff = verdict(spark, tombstoned, forgetting, applied)
    assert (diff.passed, diff.unexpected) == (False, 1)


KILLED_DELETE = textwrap.dedent(
    """
    import sys
    from wide_assets import WideTable, get_spark
    spark = get_spark()
    delete = spark.createDataFrame([(1, None, 20, None, None, "-D")], sys.argv[2])
    WideTable.open(spark, sys.argv[1]).write(delete, txn=("orders", 2))
    """
)
DDL = "k int, status string, order_ts int, amount bigint, pay_ts int, _row_kind string"


@pytest.mark.parametrize("crash_point", ["before-changelog-commit", "after-changelog-commit"])
def test_a_delete_killed_around_its_commit_leaves_its_tombstone_once(
    spark: Any, tmp_path: Path, crash_point: str
) -> None:
    """The writer of a delete is killed just before or just after logging it; the delete is written
    again with the same transaction id (applied, or skipped as committed), and a late payment after
    it is dropped either way; the tombstone is in the log exactly once."""
    path = tmp_path / "t"
    table = WideTable.create(
        spark, path, COLUMNS, ["k"], {**GROUPS, "wide-assets.tombstone-retention": "1 d"}
    )
    table.write(_one(spark, status="new", order_ts=10, _row_kind="+I"), txn=("orders", 1))
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_DELETE, str(path), DDL],
        env={**os.environ, CRASH_POINT: crash_point},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    table = WideTable.open(spark, path)
    again = table.write(spark.createDataFrame([(1, None, 20, None, None, "-D")], DDL), txn=("orders", 2))
    assert again.skipped == (crash_point == "after-changelog-commit")
    table.write(_one(spark, amount=5, pay_ts=15, _row_kind="+I"), txn=("payments", 1))
    assert table.read().count() == 0
    log = spark.read.format("delta").load(table.changelog_path)
    assert log.where("_origin = 'tombstone'").count() == 1
