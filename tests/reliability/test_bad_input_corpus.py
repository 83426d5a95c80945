"""Each malformed input of `bench.bad_inputs` is quarantined with its reason or rejected with a clear
message, and the good records landed around it are ingested."""

from __future__ import annotations

from typing import Any

from bench.bad_inputs import CASES, WRITES, handle_all


def test_every_bad_input_is_handled_and_the_rest_processed(spark: Any) -> None:
    outcomes, good_ingested, good_landed = handle_all(spark, progress=print)
    assert [o for o in outcomes if not o.handled] == []
    assert len(outcomes) == len(CASES) + len(WRITES) >= 30
    assert good_ingested == good_landed > 0
