"""The same writes on Sail and on classic JVM Spark with delta-spark: each engine's table equals a plain
dict of the records (the oracle) after every write, each `WriteResult` counts what the oracle's states
before and after the write say, and both engines commit the same changelog."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from test_deletion_vectors import COLUMNS, DDL, apply_to_oracle, random_batch, read_by_sail

from wide_assets import WideTable
from wide_assets.session import activate

pytestmark = pytest.mark.jvm

Oracle = dict[tuple[int, str], str]
OPTIONS = {"merge-engine": "deduplicate", "changelog-producer": "lookup"}


def expected_counts(before: Oracle, after: Oracle, batch: list[tuple[Any, ...]]) -> dict[str, int]:
    """A key is inserted when the write brings its row, deleted when it takes it away, and of the keys the
    batch names that have a row before and after, updated when the row differs and unchanged when not
    (a lookup changelog shows every key a write names)."""
    named = {(k, part) for k, part, _, _ in batch}
    kept = [key for key in named if key in before and key in after]
    return {
        "inserted": len(after.keys() - before.keys()),
        "deleted": len(before.keys() - after.keys()),
        "updated": sum(before[key] != after[key] for key in kept),
        "unchanged": sum(before[key] == after[key] for key in kept),
        "input_records": len(batch),
    }


def counts(result: Any) -> dict[str, int]:
    return {
        name: getattr(result, name)
        for name in ("inserted", "deleted", "updated", "unchanged", "input_records")
    }


def changelog(spark: Any, table: WideTable) -> list[tuple[Any, ...]]:
    activate(spark)
    rows = table.changelog().collect()
    return sorted((r["_commit"], r["_row_kind"], r["k"], r["part"], r["v"]) for r in rows)


def test_sail_and_jvm_delta_write_the_same_rows_counts_and_changelog(
    spark: Any, jvm_spark: Any, tmp_path: Path
) -> None:
    engines = {"sail": spark, "jvm-delta": jvm_spark}
    tables = {
        name: WideTable.create(activate(session), tmp_path / name, COLUMNS, ["k", "part"], OPTIONS)
        for name, session in engines.items()
    }
    rng = random.Random(29)
    oracle: Oracle = {}
    initial = [(k, p, f"init{k}", "+I") for k in range(0, 60, 2) for p in ("a", "b")]
    batches = [initial, *(random_batch(rng, rng.randint(5, 40)) for _ in range(3))]
    for number, drawn in enumerate(batches):
        # Rows written again as they are (unchanged), keys written twice, written then deleted in one
        # batch, deletes of keys never written.
        batch = drawn + [
            (k, part, v, "+I")
            for (k, part), v in rng.sample(sorted(oracle.items()), min(number * 3, len(oracle)))
        ]
        before = dict(oracle)
        apply_to_oracle(oracle, batch)
        for name, session in engines.items():
            result = tables[name].write(activate(session).createDataFrame(batch, DDL))
            assert counts(result) == expected_counts(before, oracle, batch), name
            assert read_by_sail(tables[name]) == oracle, name
    assert changelog(spark, tables["sail"]) == changelog(jvm_spark, tables["jvm-delta"])
