"""The suite on the engine most users run, Apache Spark 4.0 with delta-spark, classic `local[2]`: the
JVM tier (below) in a child pytest with `WIDE_ASSETS_ENGINE=classic`, so that the engine reads every
Delta table with Delta's own reader and appends the source tables with Delta's own writer, while the
commits to the wide table stay ours.

The other JVM shapes have files of their own, so that a parallel run spreads them: a JVM Spark Connect
server in front of a standalone cluster (`test_jvm_connect.py`), and with `WIDE_ASSETS_JVM_TIER=all` a
classic driver on that cluster (`test_jvm_cluster.py`). The
conformance cases and the function tests run on classic JVM Spark with Delta in the main suite
(`test_conformance_jvm.py`, the `engine` fixture's `jvm-delta` parameter), and delta-spark reads,
describes and maintains our tables in `test_delta_spark_interop.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from engine import WHOLE_JVM_TIER
from test_distributed import run_modules

pytestmark = [pytest.mark.jvm, pytest.mark.slow]

# What runs on classic JVM Spark + Delta beyond the main suite's JVM tests, bounded for CI (each killed
# writer is a JVM of its own, and a small JVM write takes seconds): the deletion-vector random rounds,
# exactly-once's clean run and one crash point, the refusals' texts, and one seed's demo materialized
# and compared with the seed's snapshot. `WIDE_ASSETS_JVM_TIER=all` adds every crash point, the
# reliability crash cases, the other demos, write-only tables and compaction, history tables and
# tombstones (longer than CI allows: each of test_write_only.py's 20 random interleavings took about two
# minutes here).
BOUNDED_TIER = (
    # One layout: test_delta_spark_interop.py reads all three with delta-spark in the main suite.
    "tests/test_deletion_vectors.py::test_random_rounds_equal_the_oracle_in_every_reader[deletion-vectors]",
    "tests/test_exactly_once.py::test_clean_run_is_the_hand_computed_table",
    "tests/test_exactly_once.py::test_killed_write_then_rerun_equals_clean_run[after-changelog-commit]",
    "tests/test_merge_refusals.py",
    "tests/test_demo.py::test_wide_table_equals_seed_snapshot",
)
WHOLE_TIER = (
    BOUNDED_TIER[0],
    "tests/test_exactly_once.py",
    "tests/reliability/test_crashes.py",
    "tests/test_merge_refusals.py",
    "tests/test_demo.py",
    "tests/test_customer_accounts.py",
    "tests/test_write_only.py",
    "tests/test_history.py",
    "tests/test_tombstones.py",
)
JVM_TIER = WHOLE_TIER if WHOLE_JVM_TIER else BOUNDED_TIER


def test_the_jvm_tier_on_classic_spark_with_delta(tmp_path: Path) -> None:
    run_modules(tmp_path, {"WIDE_ASSETS_ENGINE": "classic"}, JVM_TIER)
