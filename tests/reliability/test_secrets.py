"""A secret in the engine configuration or the environment never reaches run logs, materialization
metadata, run records or the console."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest
from dagster_parts import assets_and_checks

from demos import declared, declared_defs
from wide_assets.pipelines import LandingZone, asset_key
from wide_assets.pipelines.resources import LakeSettings, SparkEngine

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-live-9f8e7d6c5b4a39281706"


def test_secrets_stay_out_of_logs_and_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    shutil.copytree(ROOT / "data" / "landing", tmp_path / "data" / "landing")
    engine = SparkEngine(engine="sail", spark_config={"spark.hadoop.fs.s3a.secret.key": SECRET})
    resources = {
        "spark": engine,
        "lake": LakeSettings(root=str(tmp_path / "lake")),
        "landing": LandingZone(root=str(tmp_path / "data")),
    }
    with dg.DagsterInstance.ephemeral() as instance:
        spec = declared("product_360").spec
        defs = declared_defs("product_360")
        result = dg.materialize(
            assets_and_checks(defs),
            selection=[*(asset_key(spec, s.name) for s in spec.sources), asset_key(spec, spec.name)],
            instance=instance,
            resources=resources,
        )
        assert result.success
        # The secret was in play: the session the assets used carries it.
        assert engine.spark.conf.get("spark.hadoop.fs.s3a.secret.key") == SECRET
        events = [repr(e) for e in instance.all_logs(result.run_id)]
        run = instance.get_run_by_id(result.run_id)
        assert run is not None
        recorded = "\n".join([*events, repr(run), json.dumps(run.run_config, default=str)])
    metadata = [
        repr(m.metadata) for e in result.get_asset_materialization_events() for m in [e.materialization]
    ]
    assert len(metadata) == 6 and any("commits_this_run" in m for m in metadata)
    console = capfd.readouterr()
    for text in (recorded, *metadata, console.out, console.err):
        assert SECRET not in text
