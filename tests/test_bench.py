"""The product_360 benchmark at a tiny size: the same code path as the full run, every candidate verified."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from bench.candidates import CANDIDATES
from bench.product_360 import main
from bench.workload import KEY, Layout, generate, mismatch, oracle


def test_every_candidate_agrees_with_the_oracle(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    results = main(["--sizes", "2000:300", "--workdir", str(tmp_path), "--out", str(out)])
    runs = results[(2000, 300)]
    assert [r.candidate for r in runs] == list(CANDIDATES)
    assert {r.candidate: r.error for r in runs} == dict.fromkeys(CANDIDATES)
    assert all(r.seconds > 0 and r.peak_mb > 0 for r in runs)
    report = out.read_text()
    assert "## Targets" in report and "Versions: Python" in report


def test_the_verification_can_fail(tmp_path: Path) -> None:
    layout = Layout(tmp_path, 500, 100)
    generate(layout, seed=1)
    expected = oracle(layout)
    # The batch holds late records that must lose, new keys and repeated keys.
    assert expected.num_rows > layout.n
    assert mismatch(expected.sort_by([(KEY, "descending")]), expected) is None
    price = expected.column("price").to_pylist()
    price[7] = (price[7] or 0) + 1
    changed = expected.set_column(expected.schema.get_field_index("price"), "price", pa.array(price))
    assert mismatch(changed, expected) == "rows differ in columns {'price': 1}"
    assert mismatch(expected.slice(1), expected) is not None
