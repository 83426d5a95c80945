"""Every public Paimon/Fluss conformance case through the public API on classic JVM Spark `local[2]`
with delta-spark: the engine reads the Delta tables with Delta's own reader, our commits land beside.

A file of its own so that a parallel run (`make test`) gives the JVM its own worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conformance import case_params
from test_conformance import run_case


@pytest.mark.jvm
@pytest.mark.parametrize("case", case_params())
def test_case_through_wide_table_on_jvm_delta(jvm_spark: Any, tmp_path: Path, case: dict[str, Any]) -> None:
    run_case(jvm_spark, tmp_path, case)
