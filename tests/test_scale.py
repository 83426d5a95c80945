"""Tens of thousands of keys: more groups than one engine record batch (Sail: 16,384 rows), where
engine bugs hide that small cases never reach. The oracle is plain Python over the same records."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from wide_assets import WideTable

KEYS = 40_000
COLUMNS = [("k", "bigint"), ("a", "string"), ("b", "bigint")]
DDL = "k bigint, a string, b bigint, _offset bigint"


def batches(seed: int) -> list[list[tuple[Any, ...]]]:
    """A full load, then two batches of partial updates with repeated keys and some new keys."""
    rng = random.Random(seed)
    load = [(k, f"a{k}", k) for k in range(KEYS)]
    updates = []
    for round_ in range(2):
        rows = []
        for _ in range(KEYS // 2):
            k = rng.randrange(KEYS + 5_000)
            rows.append((k, rng.choice([None, f"x{round_}{k}"]), rng.choice([None, rng.randrange(1000)])))
        updates.append(rows)
    return [load, *updates]


def expected(batches_: list[list[tuple[Any, ...]]], null_is_no_change: bool) -> list[tuple[Any, ...]]:
    state: dict[int, tuple[Any, Any]] = {}
    for rows in batches_:
        for k, a, b in rows:
            old = state.get(k, (None, None))
            state[k] = (
                a if a is not None or not null_is_no_change else old[0],
                b if b is not None or not null_is_no_change else old[1],
            )
    return sorted((k, a, b) for k, (a, b) in state.items())


@pytest.mark.parametrize(
    ("options", "null_is_no_change"),
    [
        ({"merge-engine": "partial-update", "changelog-producer": "lookup"}, True),
        ({"merge-engine": "partial-update", "write-only": "true"}, True),
        ({"table.delete.behavior": "allow"}, False),
    ],
    ids=["paimon-partial-update", "paimon-write-only", "fluss-last-row"],
)
def test_many_keys_match_a_python_oracle(
    spark: Any, tmp_path: Path, options: dict[str, str], null_is_no_change: bool
) -> None:
    table = WideTable.create(spark, tmp_path / "t", COLUMNS, ["k"], options)
    data = batches(seed=11)
    offset = 0
    for rows in data:
        table.write(spark.createDataFrame([(*row, offset + i) for i, row in enumerate(rows)], DDL))
        offset += len(rows)
    want = expected(data, null_is_no_change)
    assert sorted(tuple(r) for r in table.read().collect()) == want
    if options.get("write-only") == "true":
        table.compact()
        assert sorted(tuple(r) for r in spark.read.format("delta").load(table.path).collect()) == want
    if options.get("changelog-producer") == "lookup":
        # Paimon lookup: one transition per touched key per commit; +I rows = keys never seen before.
        inserts = (
            spark.sql("SELECT count_if(_row_kind = '+I') AS n FROM {c}", c=table.changelog()).collect()[0].n
        )
        assert inserts == len(want)
