"""Schedules and sensors that start a pipeline's job. They never start Spark.

A sensor ticks every minute inside the Dagster daemon, so it only lists the landing zone (names, sizes,
modification times) and asks delta-rs for Delta versions; the job itself works out exactly which
records are new. Its cursor holds what the last tick saw.

No `from __future__ import annotations` here: Dagster inspects the sensor function's annotations.
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import dagster as dg

from wide_assets.pipelines.landing import LandingZone
from wide_assets.pipelines.locate import LakeLocator, table_path
from wide_assets.pipelines.specs import LakeTableSpec, SourceSpec

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

__all__ = ["HOURLY", "SensorCursor", "hourly_schedule", "new_data_sensor", "run_failure_logger"]

HOURLY = "0 * * * *"
SENSOR_INTERVAL_SECONDS = 60
# A run of the job that has not finished yet may still ingest what this tick sees. Not NOT_STARTED:
# a run created but never launched stays so forever and would silence the sensor.
ACTIVE_RUN_STATUSES = (
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
)
NO_TABLE = -1


def hourly_schedule(job: "UnresolvedAssetJobDefinition", cron: str = HOURLY) -> dg.ScheduleDefinition:
    """Run `job` at the top of every hour (`<job>_hourly`), or on another `cron` (`<job>_schedule`); the
    job is incremental, so a run without new data is a no-op."""
    hourly = cron == HOURLY
    return dg.ScheduleDefinition(
        name=f"{job.name}_hourly" if hourly else f"{job.name}_schedule",
        job=job,
        cron_schedule=cron,
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description=f"{'Hourly incremental' if hourly else f'Incremental ({cron})'} run of {job.name}: "
        "ingests and applies whatever landed since the last run.",
    )


@dataclass(frozen=True)
class SensorCursor:
    """What a sensor tick saw: landed file fingerprints and the sources' CDC table versions."""

    files: Mapping[str, str] = field(default_factory=dict)
    versions: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str | None) -> "SensorCursor":
        if not text:
            return cls()
        data = json.loads(text)
        return cls(files=data["files"], versions=data["versions"])

    def to_json(self) -> str:
        return json.dumps({"files": dict(self.files), "versions": dict(self.versions)}, sort_keys=True)


def _delta_version(path: str) -> int:
    from wide_assets.table import delta_tables

    version = delta_tables.version(path)
    return NO_TABLE if version is None else version


def _applied_versions(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str, int]:
    """Source -> the CDC table version the target's latest materialization read (`<source>/source_version`)."""
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return {}
    suffix = "/source_version"
    return {
        name.removesuffix(suffix): int(str(value.value))
        for name, value in event.asset_materialization.metadata.items()
        if name.endswith(suffix)
    }


def new_data_sensor(
    spec: LakeTableSpec,
    sources: Sequence[SourceSpec],
    job: "UnresolvedAssetJobDefinition",
    applied_by: dg.AssetKey,
    name: str | None = None,
) -> dg.SensorDefinition:
    """A sensor that runs `job` when a source's file lands or changes, or when a source's CDC table has
    a Delta version that neither the last tick nor `applied_by`'s latest materialization has seen."""

    @dg.sensor(
        name=name or f"{spec.name}_new_data_sensor",
        job=job,
        minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=f"Runs {job.name} when {', '.join(s.name for s in sources)} have new landed files "
        "or unapplied Delta versions.",
    )
    def _sensor(
        context: dg.SensorEvaluationContext, landing: LandingZone, lake: dg.ResourceParam[LakeLocator]
    ) -> dg.SensorResult:
        """New source data is applied within a minute of landing instead of at the next scheduled run."""
        active = context.instance.get_runs(
            filters=dg.RunsFilter(job_name=job.name, statuses=list(ACTIVE_RUN_STATUSES)), limit=1
        )
        if active:
            # Keep the cursor: what landed meanwhile is judged again once that run has finished.
            return dg.SensorResult(skip_reason=f"Run {active[0].run_id} of {job.name} has not finished.")
        seen = SensorCursor.parse(context.cursor)
        now = SensorCursor(
            files={name: fp for source in sources for name, fp in landing.fingerprints(source).items()},
            versions={s.name: _delta_version(table_path(lake, spec, s.name)) for s in sources},
        )
        applied = _applied_versions(context.instance, applied_by)
        landed = sorted(name for name, fp in now.files.items() if seen.files.get(name) != fp)
        # A version our own run created is recorded as applied by it; only others' appends count.
        unapplied = sorted(
            name
            for name, version in now.versions.items()
            if version > max(applied.get(name, NO_TABLE), seen.versions.get(name, NO_TABLE))
        )
        cursor = now.to_json()
        if not landed and not unapplied:
            return dg.SensorResult(
                skip_reason=f"No new files for {', '.join(s.name for s in sources)} and no unapplied versions.",
                cursor=cursor,
            )
        reasons = [f"landed {', '.join(landed)}"] if landed else []
        reasons += [f"unapplied versions of {', '.join(unapplied)}"] if unapplied else []
        context.log.info(f"{job.name}: {'; '.join(reasons)}")
        return dg.SensorResult(
            # The same observed state never starts two runs, even if a cursor update is lost.
            run_requests=[dg.RunRequest(run_key=hashlib.sha256(cursor.encode()).hexdigest()[:16])],
            cursor=cursor,
        )

    return _sensor


def run_failure_logger(name: str, jobs: Sequence["UnresolvedAssetJobDefinition"]) -> dg.SensorDefinition:
    """A sensor that logs, for every failed run of `jobs`, which steps failed, why, and what to do."""

    @dg.run_failure_sensor(
        name=name,
        monitored_jobs=list(jobs),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Logs a clear message when a run of {', '.join(j.name for j in jobs)} fails.",
    )
    def _on_failure(context: dg.RunFailureSensorContext) -> None:
        """A failed run must be noticed: its message says what failed and that a re-run is safe."""
        run = context.dagster_run
        steps = sorted({e.step_key for e in context.get_step_failure_events() if e.step_key})
        context.log.error(
            f"Run {run.run_id} of job {run.job_name} FAILED in step(s) {', '.join(steps) or '(none)'}: "
            f"{(context.failure_event.message or 'no message').rstrip('.')}. Every step commits exactly once, so nothing was half "
            "applied: fix the cause (see the run's logs) and re-run the job."
        )

    return _on_failure
