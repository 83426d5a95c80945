"""The compaction job, its sensor (Delta metadata only) and the changelog checks of a write-only table."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from deltalake import DeltaTable

from wide_assets import WideTable
from wide_assets.pipelines.locate import table_path
from wide_assets.pipelines.maintenance import CompactionPolicy, maintenance_defs, table_health
from wide_assets.pipelines.resources import LakeSettings, SparkEngine
from wide_assets.pipelines.specs import LakeTableSpec

SPEC = LakeTableSpec(
    name="events_wide",
    description="Per key: the latest value of a write-only table.",
    group="maintenance_test",
    columns=(("k", "int"), ("v", "string")),
    primary_key=("k",),
    options={"merge-engine": "partial-update", "changelog-producer": "lookup", "write-only": "true"},
)
POLICY = CompactionPolicy(max_pending_commits=2, max_files=3)


@pytest.fixture
def setup(spark: Any, tmp_path: Path) -> tuple[dg.Definitions, dict[str, Any], WideTable, dg.DagsterInstance]:
    lake = LakeSettings(root=str(tmp_path / "lake"))
    table = WideTable.create(
        spark, table_path(lake, SPEC), list(SPEC.columns), list(SPEC.primary_key), dict(SPEC.options)
    )
    for i in range(3):
        table.write(spark.createDataFrame([(i, f"v{i}"), (0, f"again{i}")], "k int, v string"))
    resources = {"spark": SparkEngine(engine="sail"), "lake": lake}
    table_asset = dg.AssetSpec(dg.AssetKey([SPEC.group, SPEC.name]))
    defs = dg.Definitions.merge(
        dg.Definitions(assets=[table_asset], resources=resources), maintenance_defs(SPEC, POLICY)
    )
    return defs, resources, table, dg.DagsterInstance.ephemeral()


def test_sensor_asks_for_compaction_then_stays_quiet(setup: Any) -> None:
    defs, resources, table, instance = setup
    sensor = defs.get_sensor_def(f"{SPEC.name}_compaction_sensor")
    job = defs.get_job_def(f"{SPEC.name}_compaction_job")
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        result = sensor(context)
    assert len(result.run_requests) == 1 and "3 pending commits > 2" in result.run_requests[0].tags["reason"]

    run = job.execute_in_process(instance=instance)
    assert run.success and table.pending_commits() == []
    observation = run.asset_observations_for_node(f"compact_{SPEC.name}")[0].metadata
    assert observation["commits_folded"].value == 3
    assert observation["checksum_before"].value == observation["checksum_after"].value
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        assert sensor(context).skip_reason is not None


def test_table_health_needs_no_spark(setup: Any) -> None:
    _, _, table, _ = setup
    script = textwrap.dedent(
        f"""
        import sys
        from wide_assets.pipelines.maintenance import table_health
        health = table_health({table.path!r})
        from pyspark.sql import SparkSession
        assert SparkSession.getActiveSession() is None and "pysail" not in sys.modules, "Spark was started"
        print(health.pending_commits, health.files)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["3", str(len(DeltaTable(table.path).file_uris()))]


def test_health_and_changelog_version_as_delta_rs_reads_them(setup: Any) -> None:
    """The facade's metadata against delta-rs's own reading of the two Delta tables."""
    _, _, table, _ = setup
    data, log = DeltaTable(table.path), DeltaTable(table.changelog_path)
    health = table.health()
    sizes = data.get_add_actions(flatten=True).column("size_bytes").to_pylist()
    assert (health.files, health.bytes, health.log_files) == (len(sizes), sum(sizes), len(log.file_uris()))
    assert (health.pending_commits, health.last_commit, health.last_compaction) == (3, 3, None)
    assert table.changelog_version == log.version()


def checks(defs: dg.Definitions) -> dict[str, Any]:
    return {spec.name: check for check in defs.asset_checks or [] for spec in check.check_specs}


def test_changelog_checks_pass_and_fail(spark: Any, setup: Any) -> None:
    defs, resources, table, instance = setup
    defs.get_job_def(f"{SPEC.name}_compaction_job").execute_in_process(instance=instance)
    by_name = checks(maintenance_defs(SPEC, POLICY))
    replay = by_name["changelog_replays_to_table"](**resources)
    assert replay.passed
    files = by_name["file_count_health"](lake=resources["lake"])
    assert files.passed == (table_health(table.path).files <= POLICY.max_files)
    assert by_name["compaction_preserved_content"](dg.build_asset_check_context(instance=instance)).passed

    # Corrupt the Delta table behind the engine's back: the replayed changelog no longer matches it.
    spark.createDataFrame([(99, "rogue")], "k int, v string").write.format("delta").mode("append").save(
        table.path
    )
    assert not by_name["changelog_replays_to_table"](**resources).passed
    # A compaction that changed the rows would be caught by the recorded checksums.
    instance.report_runless_asset_event(
        dg.AssetObservation(
            asset_key=dg.AssetKey([SPEC.group, SPEC.name]),
            metadata={"checksum_before": "3:1", "checksum_after": "4:2"},
        )
    )
    assert not by_name["compaction_preserved_content"](dg.build_asset_check_context(instance=instance)).passed


def test_changelog_checks_say_not_judged_before_the_first_compaction(spark: Any, setup: Any) -> None:
    """A write-only table's lookup changelog is produced at compaction: before the first one there is
    nothing to replay (the Delta table and the replay are both empty) and nothing to compare."""
    defs, resources, _, instance = setup
    by_name = checks(maintenance_defs(SPEC, POLICY))
    replay = by_name["changelog_replays_to_table"](**resources)
    assert replay.passed
    reason = "the changelog of events_wide is produced at compaction and no compaction has run yet"
    assert replay.metadata["status"].value == f"not judged: {reason} (3 commit(s), 3 pending)."
    assert replay.description == f"Not judged: {reason} (3 commit(s), 3 pending)."
    assert replay.metadata["pending_commits"].value == 3 and "table_checksum" not in replay.metadata
    preserved = by_name["compaction_preserved_content"](dg.build_asset_check_context(instance=instance))
    assert preserved.passed
    assert (
        preserved.metadata["status"].value
        == "not judged: no compaction of events_wide has been recorded yet."
    )

    defs.get_job_def(f"{SPEC.name}_compaction_job").execute_in_process(instance=instance)
    judged = by_name["changelog_replays_to_table"](**resources)
    # Judged now: 3 keys (0, 1, 2), compared by content.
    assert judged.passed and "status" not in judged.metadata
    assert judged.metadata["table_checksum"].value.startswith("3:")
    preserved = by_name["compaction_preserved_content"](dg.build_asset_check_context(instance=instance))
    assert preserved.passed and "status" not in preserved.metadata


def test_changelog_replay_is_not_judged_before_the_first_commit_or_without_a_changelog(
    spark: Any, tmp_path: Path
) -> None:
    lake = LakeSettings(root=str(tmp_path / "lake"))
    resources = {"spark": SparkEngine(engine="sail"), "lake": lake}
    for options, reason in (
        (dict(SPEC.options), "events_wide has no commit yet."),
        ({"merge-engine": "partial-update"}, "events_wide keeps no changelog (changelog-producer 'none')."),
    ):
        spec = replace(SPEC, options=options)
        path = table_path(lake, spec)
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(path + "_changelog", ignore_errors=True)
        WideTable.create(spark, path, list(spec.columns), list(spec.primary_key), options)
        replay = checks(maintenance_defs(spec, POLICY))["changelog_replays_to_table"](**resources)
        assert replay.passed and replay.metadata["status"].value == f"not judged: {reason}"


def appended(run: dg.ExecuteInProcessResult) -> int:
    [event] = run.get_asset_materialization_events()
    value = event.materialization.metadata["records_appended"].value
    assert isinstance(value, int)
    return value


def test_changelog_export_is_exactly_once(spark: Any, setup: Any) -> None:
    defs, _, table, instance = setup
    export_key = dg.AssetKey([SPEC.group, f"{SPEC.name}_changelog_debezium"])
    job: dg.JobDefinition = defs.get_implicit_global_asset_job_def()
    defs.get_job_def(f"{SPEC.name}_compaction_job").execute_in_process(instance=instance)

    def export() -> dg.ExecuteInProcessResult:
        return job.execute_in_process(instance=instance, asset_selection=[export_key])

    assert appended(export()) == table.changelog().count() == 3, "3 keys inserted by the one compaction"
    assert appended(export()) == 0
    table.write(spark.createDataFrame([(1, "new")], "k int, v string"))
    table.compact()
    assert appended(export()) == 1, "one -U/+U pair becomes one Debezium update"
