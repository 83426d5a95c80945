"""Batches of inserts and updates on a partial-update table with sequence groups, against a plain Python
transcription of Paimon's fold (docs/semantics.md P1, P6-P8, A-rules): out-of-order op times, equal op
times, NULLs, several records per key and group, stored rows."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest
from conftest import Factory

from wide_assets.schema import Column

COLUMNS = [
    Column("k", "bigint", nullable=False),
    Column("a_ts", "bigint"),
    Column("a_text", "string"),
    Column("a_plain", "bigint"),
    Column("b_ts", "bigint"),
    Column("b_max", "bigint"),
    Column("free", "string"),
]
OPTIONS = {
    "merge-engine": "partial-update",
    # The changelog says which keys each write inserted and changed (without row-deduplicate, Paimon
    # logs -U/+U for a key whose row a record left as it was, too).
    "changelog-producer": "lookup",
    "changelog-producer.row-deduplicate": "true",
    "fields.a_ts.sequence-group": "a_text,a_plain",
    "fields.a_text.aggregate-function": "last_non_null_value",
    "fields.b_ts.sequence-group": "b_max",
    "fields.b_max.aggregate-function": "max",
}
NAMES = [c.name for c in COLUMNS]
Row = dict[str, Any]


def paimon_fold(stored: Row | None, records: list[Row]) -> Row:
    """One key's row after `records` (arrival order), folded one by one as Paimon does."""
    row = dict(stored) if stored is not None else dict.fromkeys(NAMES)
    for record in records:
        row["k"] = record["k"]
        if record["free"] is not None:  # P1: outside groups a non-NULL value overwrites
            row["free"] = record["free"]
        if record["a_ts"] is not None:  # P6: a NULL sequence leaves the group alone
            if row["a_ts"] is None or record["a_ts"] >= row["a_ts"]:  # P7: equal or newer
                row["a_ts"], row["a_plain"] = record["a_ts"], record["a_plain"]
                row["a_text"] = record["a_text"] if record["a_text"] is not None else row["a_text"]
            elif row["a_text"] is None:  # older: last_non_null_value's reversed step
                row["a_text"] = record["a_text"]
        if record["b_ts"] is not None:
            if row["b_ts"] is None or record["b_ts"] >= row["b_ts"]:
                row["b_ts"] = record["b_ts"]
            present = [v for v in (row["b_max"], record["b_max"]) if v is not None]
            row["b_max"] = max(present) if present else None
    return row


def random_batch(rng: random.Random, start: int, one_per_key: bool = False) -> list[Row]:
    """40 records of 12 keys, or (`one_per_key`) one record of each of 8 of them: the merge then
    neither groups by key nor, into an empty table, tells inserts from updates (merge_query)."""

    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.3 else value

    keys = rng.sample(range(12), 8) if one_per_key else [rng.randrange(12) for _ in range(40)]
    return [
        {
            "k": key,
            "a_ts": maybe(rng.randrange(6)),
            "a_text": maybe(f"t{start + i}"),
            "a_plain": maybe(start + i),
            "b_ts": maybe(rng.randrange(6)),
            "b_max": maybe(rng.randrange(100)),
            "free": maybe(f"f{start + i}"),
        }
        for i, key in enumerate(keys)
    ]


@pytest.mark.parametrize(("seed", "one_per_key"), [(0, False), (1, False), (2, False), (3, True), (4, True)])
def test_batches_of_adds_fold_as_paimon_does(
    engine: tuple[Any, Factory], seed: int, one_per_key: bool
) -> None:
    spark, make = engine
    rng = random.Random(seed)
    table = make(COLUMNS, ["k"], OPTIONS)
    expected: dict[int, Row] = {}
    for write in range(3):
        batch = random_batch(rng, write * 100, one_per_key)
        changes = spark.createDataFrame(pa.Table.from_pylist(batch, schema=_arrow_schema()))
        commit = table.write(changes).commit
        entries = table.changelog(commit, commit).collect()
        before = dict(expected)
        for key in {r["k"] for r in batch}:
            expected[key] = paimon_fold(before.get(key), [r for r in batch if r["k"] == key])
        got = {r["k"]: r.asDict() for r in table.read().collect()}
        assert got == expected, f"write {write}"
        inserted = {e["k"] for e in entries if e["_row_kind"] == "+I"}
        updated = {e["k"] for e in entries if e["_row_kind"] == "+U"}
        assert inserted == set(expected) - set(before)
        assert updated == {k for k in before if expected[k] != before[k]}


def _arrow_schema() -> pa.Schema:
    types = {"bigint": pa.int64(), "string": pa.string()}
    return pa.schema([(c.name, types[c.type]) for c in COLUMNS])
