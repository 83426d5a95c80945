"""Maintenance of a wide table (Paimon's "write-only writers + one dedicated compaction job"): the
compaction job, its off-peak schedule, a sensor on Delta metadata, and the changelog checks.

The sensor reads only the commit log and Delta metadata through delta-rs (pending commits, files,
bytes, how long the oldest pending commit has waited); it never starts Spark. The compaction op runs in
the table's concurrency pool, so it never races a MERGE of the table's asset.

No `from __future__ import annotations` here: Dagster inspects the op and sensor annotations.
"""

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg

from wide_assets.pipelines.checks import not_judged
from wide_assets.pipelines.locate import LakeLocator, SparkProvider, asset_key, lake_name, table_path
from wide_assets.pipelines.specs import LakeTableSpec

if TYPE_CHECKING:
    from wide_assets.table import TableHealth

__all__ = ["CompactionPolicy", "is_write_only", "maintenance_defs", "table_health"]

CHECKSUM_BEFORE, CHECKSUM_AFTER = "checksum_before", "checksum_after"


@dataclass(frozen=True)
class CompactionPolicy:
    """When the sensor asks for a compaction, and when the file-count check warns."""

    cron: str = "0 3 * * *"  # off-peak
    max_pending_commits: int = 10
    max_files: int = 50
    max_pending_minutes: float = 60.0
    z_order: tuple[str, ...] = ()

    def reasons(self, health: "TableHealth") -> list[str]:
        """Why a table in `health` needs a compaction now (empty: it does not)."""
        reasons = []
        if health.pending_commits > self.max_pending_commits:
            reasons.append(f"{health.pending_commits} pending commits > {self.max_pending_commits}")
        if health.pending_commits and health.oldest_pending_minutes > self.max_pending_minutes:
            reasons.append(f"oldest pending commit waited {health.oldest_pending_minutes:.0f} min")
        if health.files > self.max_files:
            reasons.append(f"{health.files} files > {self.max_files}")
        return reasons


def table_health(path: str) -> "TableHealth":
    """The health of the wide table at `path` (a path that holds none fails); without Spark."""
    from wide_assets.table import WideTable

    return WideTable.open(None, path).health()


def _content_checksum(spark: Any, rows: Any, names: tuple[str, ...]) -> str:
    """Row count and an order-independent hash of every row: equal content, equal checksum."""
    from wide_assets.sql import columns

    hashed = columns(names)
    row = spark.sql(f"SELECT count(*) AS n, sum(xxhash64({hashed})) AS h FROM {{rows}}", rows=rows).collect()[
        0
    ]
    return f"{row.n}:{row.h}"


def is_write_only(spec: LakeTableSpec) -> bool:
    """Whether `spec`'s writers only append fragments that a compaction must fold in (Paimon `write-only`)."""
    return spec.definition().merge.write_only


def compaction_job(
    spec: LakeTableSpec, policy: CompactionPolicy, pool: str | None = None
) -> dg.JobDefinition:
    """A job that folds pending commits into the table, then merges small files (in `pool`, by default
    the table's own, so it never races a write of the table)."""
    key = asset_key(spec, spec.name)

    @dg.op(name=f"compact_{spec.name}", pool=pool or lake_name(key))
    def _compact(
        context: dg.OpExecutionContext,
        spark: dg.ResourceParam[SparkProvider],
        lake: dg.ResourceParam[LakeLocator],
    ) -> None:
        """Applies pending write-only fragments and rewrites small files, leaving the rows unchanged."""
        from wide_assets.table import WideTable

        path = table_path(lake, spec)
        session = spark.spark
        table = WideTable.open(session, path)
        before = table.health()
        checksum_before = _content_checksum(session, table.read(), table.definition.column_names)
        started = time.monotonic()
        folded = table.compact()
        table.optimize(policy.z_order or None)
        duration = time.monotonic() - started
        after = table.health()
        checksum_after = _content_checksum(session, table.read(), table.definition.column_names)
        metadata: dict[str, Any] = {
            "commits_folded": folded.commits if folded else 0,
            "rows_applied": folded.applied_rows if folded else 0,
            "files_before": before.files,
            "files_after": after.files,
            "bytes_before": before.bytes,
            "bytes_after": after.bytes,
            "duration_s": round(duration, 3),
            CHECKSUM_BEFORE: checksum_before,
            CHECKSUM_AFTER: checksum_after,
            "delta_version": table.version,
        }
        context.log_event(dg.AssetObservation(asset_key=key, metadata=metadata))
        context.log.info(f"compacted {spec.name}: {metadata}")

    @dg.job(
        name=f"{spec.name}_compaction_job",
        executor_def=dg.in_process_executor,
        description=f"Compacts {spec.name}: applies pending commits and merges small files.",
    )
    def _job() -> None:
        _compact()

    return _job


def compaction_schedule(
    spec: LakeTableSpec, job: dg.JobDefinition, policy: CompactionPolicy
) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name=f"{spec.name}_compaction_nightly",
        job=job,
        cron_schedule=policy.cron,
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description=f"Off-peak compaction of {spec.name}.",
    )


def compaction_sensor(
    spec: LakeTableSpec, job: dg.JobDefinition, policy: CompactionPolicy
) -> dg.SensorDefinition:
    @dg.sensor(
        name=f"{spec.name}_compaction_sensor",
        job=job,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=f"Compacts {spec.name} when pending commits, files or commit lag cross the policy.",
    )
    def _sensor(context: dg.SensorEvaluationContext, lake: dg.ResourceParam[LakeLocator]) -> dg.SensorResult:
        """Keeps reads fast: compaction runs as soon as the table's metadata says it is due."""
        health = table_health(table_path(lake, spec))
        reasons = policy.reasons(health)
        if not reasons:
            return dg.SensorResult(skip_reason=f"{spec.name} is healthy: {asdict(health)}")
        context.log.info(f"{spec.name} needs compaction: {'; '.join(reasons)}")
        # One run per observed state, even if the sensor ticks again before the run starts.
        run_key = f"{health.last_commit}-{health.files}-{health.pending_commits}"
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=run_key, tags={"reason": "; ".join(reasons)})]
        )

    return _sensor


def changelog_replay_check(spec: LakeTableSpec) -> dg.AssetChecksDefinition:
    """Checks that the table's changelog, replayed as upserts from an empty table, gives the table back:
    what a downstream consumer of the changelog rebuilds is what the table holds."""

    @dg.asset_check(
        asset=asset_key(spec, spec.name),
        name="changelog_replays_to_table",
        blocking=False,
        description=f"Replaying the changelog of {spec.name} as upserts from an empty table gives the "
        "table back (not judged before the first commit, or before the first compaction of a table "
        "whose changelog is produced at compaction).",
    )
    def _replay(
        spark: dg.ResourceParam[SparkProvider], lake: dg.ResourceParam[LakeLocator]
    ) -> dg.AssetCheckResult:
        """Replaying the changelog's upserts from an empty table gives the table back."""
        from wide_assets.export import apply_upserts
        from wide_assets.table import WideTable

        session = spark.spark
        table = WideTable.open(session, table_path(lake, spec))
        merge = table.definition.merge
        if not merge.produces_changelog:
            return not_judged(f"{spec.name} keeps no changelog (changelog-producer 'none').")
        if table.last_commit == 0:
            return not_judged(f"{spec.name} has no commit yet.", commits=0)
        # Write-only: its compaction job; otherwise every `full-compaction.delta-commits` commits.
        compacted = (
            bool(table.compactions())
            if merge.write_only
            else table.last_commit >= merge.full_compaction_delta_commits
        )
        if merge.changelog_at_compaction and not compacted:
            pending = len(table.pending_commits())
            return not_judged(
                f"the changelog of {spec.name} is produced at compaction and no compaction has run yet "
                f"({table.last_commit} commit(s), {pending} pending).",
                commits=table.last_commit,
                pending_commits=pending,
            )
        # A changelog produced at compaction covers what the Delta table holds, not pending commits.
        current = (
            session.read.format("delta").load(table.path) if merge.changelog_at_compaction else table.read()
        )
        replayed = apply_upserts(session, table.definition, table.export("upsert"))
        columns = table.definition.column_names
        want, got = (
            _content_checksum(session, frame.select(*columns), columns) for frame in (current, replayed)
        )
        return dg.AssetCheckResult(
            passed=want == got, metadata={"table_checksum": want, "replayed_checksum": got}
        )

    return _replay


def compaction_preserved_check(spec: LakeTableSpec) -> dg.AssetChecksDefinition:
    """Checks that the last compaction left the table's rows as they were, from the checksums the
    compaction job observed before and after."""
    key = asset_key(spec, spec.name)

    @dg.asset_check(
        asset=key,
        name="compaction_preserved_content",
        blocking=False,
        description=f"The last compaction of {spec.name} left its rows exactly as they were (not judged "
        "before the first compaction).",
    )
    def _preserved(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        """The last compaction left the rows exactly as they were (checksum before = after)."""
        records = context.instance.fetch_observations(key, limit=1).records
        observation = records[0].asset_observation if records else None
        metadata = observation.metadata if observation else {}
        if CHECKSUM_BEFORE not in metadata:
            return not_judged(f"no compaction of {spec.name} has been recorded yet.")
        before, after = metadata[CHECKSUM_BEFORE].value, metadata[CHECKSUM_AFTER].value
        return dg.AssetCheckResult(
            passed=before == after, metadata={CHECKSUM_BEFORE: before, CHECKSUM_AFTER: after}
        )

    return _preserved


def file_count_check(spec: LakeTableSpec, policy: CompactionPolicy) -> dg.AssetChecksDefinition:
    """Warns when the table holds more files than `policy` allows (reads open every file)."""

    @dg.asset_check(asset=asset_key(spec, spec.name), name="file_count_health", blocking=False)
    def _files(lake: dg.ResourceParam[LakeLocator]) -> dg.AssetCheckResult:
        """The table keeps few enough files for fast reads (warns above the compaction policy)."""
        health = table_health(table_path(lake, spec))
        return dg.AssetCheckResult(
            passed=health.files <= policy.max_files,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={**asdict(health), "max_files": policy.max_files},
        )

    return _files


def changelog_export_asset(
    spec: LakeTableSpec, encoding: str = "debezium", pool: str | None = None
) -> dg.AssetsDefinition:
    """An asset that appends each new commit's changelog, in a sink encoding, to its own Delta table.

    Exactly once (`WideTable.publish_changelog`): the export table itself records the last exported
    commit (its largest `_commit`), and each run appends the commits after it in one Delta commit, in
    the table's pool."""
    table_key = asset_key(spec, spec.name)
    key = asset_key(spec, f"{spec.name}_changelog_{encoding.replace('-', '_')}")

    @dg.asset(
        key=key,
        group_name=spec.group,
        deps=[table_key],
        kinds={"spark", "delta"},
        pool=pool or lake_name(table_key),
        description=f"The changelog of {spec.name} as {encoding} records for downstream sinks, one commit at a time.",
        automation_condition=dg.AutomationCondition.eager(),
    )
    def _export(
        spark: dg.ResourceParam[SparkProvider], lake: dg.ResourceParam[LakeLocator]
    ) -> dg.MaterializeResult[Any]:
        """Every change of the wide table, in order, exported exactly once."""
        from wide_assets.table import WideTable, delta_tables

        session = spark.spark
        table = WideTable.open(session, table_path(lake, spec))
        published = table.publish_changelog(lake.path(lake_name(key)), encoding)  # type: ignore[arg-type]
        counts = {
            r["_row_kind"]: r["n"]
            for r in session.sql(
                "SELECT _row_kind, count(*) AS n FROM {c} GROUP BY _row_kind",
                c=table.changelog(published.start_commit),
            ).collect()
        }
        return dg.MaterializeResult[Any](
            metadata={
                "dagster/row_count": delta_tables.row_count(published.path),
                "records_appended": published.appended,
                "commits": f"({published.start_commit - 1}, {table.last_commit}]",
                "changelog_rows_by_kind": dg.MetadataValue.md(
                    "| kind | rows |\n|---|---|\n"
                    + "".join(f"| {k} | {n} |\n" for k, n in sorted(counts.items()))
                ),
                "encoding": encoding,
            }
        )

    return _export


def maintenance_defs(
    spec: LakeTableSpec,
    policy: CompactionPolicy | None = None,
    export_encoding: str | None = "debezium",
    pool: str | None = None,
) -> dg.Definitions:
    """The compaction job, its schedule and sensor, the changelog checks and export of one table (its
    job and export in `pool`, by default the table's own)."""
    policy = policy or CompactionPolicy()
    job = compaction_job(spec, policy, pool)
    return dg.Definitions(
        assets=[changelog_export_asset(spec, export_encoding, pool)] if export_encoding else [],
        jobs=[job],
        schedules=[compaction_schedule(spec, job, policy)],
        sensors=[compaction_sensor(spec, job, policy)],
        asset_checks=[
            changelog_replay_check(spec),
            compaction_preserved_check(spec),
            file_count_check(spec, policy),
        ],
    )
