"""The public Paimon/Fluss conformance cases through the public API on classic JVM Spark `local[2]` with
delta-spark: the engine reads the Delta tables with Delta's own reader, our commits land beside.

A JVM commit of a small table costs seconds (Delta replays both tables' logs for every read), about
half a minute a case on this 2-core machine, so `make test` runs every fifth case (8 of 40, the
cases' own order mixes engines and options); `WIDE_ASSETS_JVM_CASES=all` runs all of them, as the
Sail suite (`test_conformance.py`) always does. A file of its own so that a parallel run gives the
JVM its own worker.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conformance import case_params
from test_conformance import run_case

EVERY = 1 if os.environ.get("WIDE_ASSETS_JVM_CASES") == "all" else 5


@pytest.mark.jvm
@pytest.mark.parametrize("case", case_params()[::EVERY])
def test_case_through_wide_table_on_jvm_delta(jvm_spark: Any, tmp_path: Path, case: dict[str, Any]) -> None:
    run_case(jvm_spark, tmp_path, case)
