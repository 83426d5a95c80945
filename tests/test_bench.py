"""The product_360 benchmark at a tiny size: the same code path as the full run, every candidate verified."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.candidates import CANDIDATES, SKIP_WARM_UP
from bench.product_360 import Run, main, median_run, size_report
from bench.workload import KEY, Layout, generate, mismatch, oracle

# Every candidate but two of the four that start a JVM of their own (about a minute each here): our write
# on JVM Spark and delta-spark's deletion-vector MERGE stay; the full run (`python -m bench.product_360`)
# checks all of them.
CHECKED = [c for c in CANDIDATES if c not in ("delta_spark_merge", "recompute_jvm")]


def test_every_candidate_agrees_with_the_oracle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The JVM candidates' untimed warm-up runs would check nothing more (the candidates inherit this).
    monkeypatch.setenv(SKIP_WARM_UP, "1")
    out = tmp_path / "RESULTS.md"
    candidates = ",".join(CHECKED)
    results = main(
        ["--sizes", "2000:300", "--candidates", candidates, "--workdir", str(tmp_path), "--out", str(out)]
    )
    runs = results[(2000, 300)]
    assert [r.candidate for r in runs] == CHECKED
    assert {r.candidate: r.error for r in runs} == dict.fromkeys(CHECKED)
    assert all(r.seconds > 0 and r.peak_mb > 0 and len(r.system) == 1 for r in runs)
    report = out.read_text()
    assert "## Targets" in report and "Versions: Python" in report


def test_repeated_runs_report_their_medians_and_any_failure() -> None:
    runs = [
        Run(
            "c",
            seconds,
            100.0 + seconds,
            None,
            {"total": seconds, "merge": seconds / 2},
            3,
            system=[seconds / 4],
        )
        for seconds in (4.0, 1.0, 1.5)
    ]
    combined = median_run(runs)
    assert (combined.seconds, combined.phases, combined.peak_mb) == (
        1.5,
        {"total": 1.5, "merge": 0.75},
        104.0,
    )
    assert combined.repeated == [4.0, 1.0, 1.5]
    # Every run's own system time, in order: the run that paid page faults is the one to discount.
    assert combined.system == [1.0, 0.25, 0.375]
    assert (
        "runs 4.00 / 1.00 / 1.50, merge 0.75, system CPU 1.00 / 0.25 / 0.38"
        in size_report(1000, 100, [replace(combined, candidate="wide_assets_default")])[4]
    )
    wrong = Run("c", 0.5, 90.0, "rows differ in columns {'price': 1}", {"total": 0.5})
    assert median_run([*runs, wrong]) is wrong


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


def test_the_scale_run_checks_every_candidate_in_every_mode(tmp_path: Path) -> None:
    from bench.scale import main as scale

    out = tmp_path / "SCALE.md"
    sizes = "2000:300,4000:300,4000:600"
    candidates = "wide_assets_default,wide_assets_write_only,deltars_merge"
    results = scale(
        ["--sizes", sizes, "--candidates", candidates, "--workdir", str(tmp_path), "--out", str(out)]
    )
    expected = [
        ("wide_assets_default", "local"),
        ("wide_assets_default", "local-cluster"),
        ("wide_assets_write_only", "local"),
        ("wide_assets_write_only", "local-cluster"),
        ("deltars_merge", ""),
    ]
    for runs in results.values():
        assert list(runs) == expected
        assert {key: run.error for key, run in runs.items()} == dict.fromkeys(expected)
        # The write-only run reports where its memory peaked, phase by phase.
        assert list(runs[("wide_assets_write_only", "local")].high_water) == [
            "setup",
            "total",
            "read_pending",
            "compaction",
            "read_compacted",
        ]
    report = out.read_text()
    assert "N 2,000 -> 4,000 (2x) at K=300" in report and "K 300 -> 600 (2x) at N=4,000" in report


def test_the_phase_profile_checks_its_writes_and_times_the_engines_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.write_phases import main as write_phases

    write_phases(
        ["--rows", "2000", "--changes", "300", "--runs", "1", "--against-merge", "--workdir", str(tmp_path)]
    )
    printed = capsys.readouterr().out
    assert "run 0: " in printed and "agrees with the oracle" in printed
    assert "the engine's own DV MERGE: " in printed and "ours / it: " in printed


def test_a_batch_of_hot_keys_into_z_ordered_bases_agrees_with_the_oracle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.write_phases import main as write_phases

    options = ["--runs", "1", "--against-merge", "--hot-keys", "--z-order", "--workdir", str(tmp_path)]
    write_phases(["--rows", "2000", "--changes", "300", *options])
    printed = capsys.readouterr().out
    assert "run 0: " in printed and "agrees with the oracle" in printed and "ours / it: " in printed
    hot = Layout(tmp_path, 2000, 300, hot=True)
    generate(hot, 7)
    keys = pq.read_table(hot.changes, columns=[KEY]).column(KEY).to_pylist()
    assert min(keys) >= 1800 and len(set(keys)) > 100
