"""The Dagster UI in a real headless Chromium (scripts/ui_check.py): graph, checks and run pages render."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
    reason="needs the chromium package (.ci/run installs it)",
)
def test_ui_shows_the_product_360_graph_checks_and_successful_run(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("ui_check", ROOT / "scripts" / "ui_check.py")
    assert spec is not None and spec.loader is not None
    ui_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ui_check)
    assert ui_check.check_ui(tmp_path) == []
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "asset_graph.png",
        "product_360_checks.png",
        "run.png",
    ]
    assert all(p.stat().st_size > 20_000 for p in tmp_path.glob("*.png"))
