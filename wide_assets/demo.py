"""`python -m wide_assets.demo`: run the Fluss blog demo through Dagster and print what it built.

Runs the `user_rec_wide` job of the project's code location (`definitions.py`, so run it from the
project root, as `make demo` does) against the local Dagster instance, on the bundled `data/` files,
into the git-ignored `lake/`. Running it again ingests and applies nothing new and prints the same.
Exits non-zero when a materialization or the key check fails.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dagster as dg

from wide_assets.demos.user_rec_wide import USER_REC_WIDE
from wide_assets.pipelines.assets import asset_key, lake_name

JOB = f"{USER_REC_WIDE.name}_job"
# Dagster's console logger defaults to DEBUG, which buries the demo's output under step events.
RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


def _instance(project_root: Path) -> dg.DagsterInstance:
    if not os.environ.get("DAGSTER_HOME"):
        home = project_root / ".dagster_home"
        home.mkdir(exist_ok=True)
        os.environ["DAGSTER_HOME"] = str(home)
    return dg.DagsterInstance.get()


def main() -> int:
    import definitions
    from wide_assets.table import WideTable

    defs = definitions.defs
    with _instance(Path(definitions.__file__).resolve().parent) as instance:
        result = defs.resolve_job_def(JOB).execute_in_process(
            run_config=RUN_CONFIG, instance=instance, raise_on_error=False
        )
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        values = {k: v.value for k, v in materialization.metadata.items()}
        summary = {
            k: values[k] for k in ("dagster/row_count", "rows_appended", "commits_this_run") if k in values
        }
        print(f"materialized {materialization.asset_key.to_user_string()}: {summary}")
    checks = result.get_asset_check_evaluations()
    for check in checks:
        status = "PASSED" if check.passed else "FAILED"
        details = {k: v.value for k, v in check.metadata.items()}
        print(f"check {check.asset_check_key.to_user_string()}: {status} {details}")
    if not result.success or not checks or not all(c.passed for c in checks):
        print(f"run {result.run_id} failed; see `make dev` for its logs", file=sys.stderr)
        return 1

    spark = defs.resources["spark"].spark
    lake = defs.resources["lake"]
    table = WideTable.open(spark, lake.path(lake_name(asset_key(USER_REC_WIDE, USER_REC_WIDE.name))))
    print(f"\n{USER_REC_WIDE.name} (Delta version {table.version}, {table.last_commit} commits):")
    table.read().orderBy(*USER_REC_WIDE.primary_key).show(truncate=False)
    print(f"{USER_REC_WIDE.name} changelog:")
    table.changelog().orderBy("_commit", "_offset").show(100, truncate=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
