"""`python -m demos`: run every demo job through Dagster and print what it built.

Runs the jobs of the project's code location (`definitions.py`, which loads the tables declared in
`wide_assets_defs/`; so run it from the project root, as `make demo` does) against the local Dagster
instance, on the bundled `data/` files, into the git-ignored `lake/`: the Fluss blog's `user_rec_wide`, then the first_row variant
(`first_customer_touch`), the aggregation variant (`product_review_stats` and its averages) and
`product_360`, five CDC sources (Debezium and Flink JSON under `data/landing/`) in one partial-update row.
Running it again ingests and applies nothing new and prints the same. Exits non-zero when a
materialization or a check of any job fails.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg

from demos import declared
from wide_assets.pipelines import LakeTableSpec, table_path
from wide_assets_defs.product_360.component import orders_enriched_spec
from wide_assets_defs.product_review_stats.definitions import (
    PRODUCT_REVIEW_AVERAGES,
    PRODUCT_REVIEW_STATS,
    REVIEWER_IDS,
    stats_with_reviewer_names,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from wide_assets.table import WideTable

# The checks the demo's own data makes fail on purpose, and why: printed beside the failure, so that a
# warning the demo means is told from one it does not.
EXPECTED_WARNINGS = {
    dg.AssetCheckKey(dg.AssetKey(["product_360", "pricing"]), "pricing_quarantine_growth"): (
        "expected: data/landing/pricing/pricing_bad.jsonl holds malformed records on purpose, "
        "quarantined with their reasons in the pricing source's quarantine table"
    ),
}

# Dagster's console logger defaults to DEBUG, which buries the demo's output under step events.
RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


@dataclass(frozen=True)
class Shown:
    """A table the demo prints after its job succeeded; `rows` may render it for reading."""

    spec: LakeTableSpec
    changelog: bool = False
    rows: Callable[[SparkSession, WideTable, Any], DataFrame] | None = None


def _stats_rows(spark: SparkSession, table: WideTable, lake: Any) -> DataFrame:
    from wide_assets.table import WideTable

    ids = WideTable.open(spark, table_path(lake, REVIEWER_IDS)).read()
    return stats_with_reviewer_names(spark, table.read(), ids)


def demos() -> tuple[tuple[str, tuple[Shown, ...]], ...]:
    """(job, the tables to print after it) of every demo, in the order they run."""
    user_rec_wide = declared("user_rec_wide").spec
    first_customer_touch = declared("first_customer_touch").spec
    product_360 = declared("product_360").spec
    return (
        (f"{user_rec_wide.name}_job", (Shown(user_rec_wide, changelog=True),)),
        (f"{first_customer_touch.name}_job", (Shown(first_customer_touch, changelog=True),)),
        (
            f"{PRODUCT_REVIEW_STATS.name}_job",
            (
                Shown(REVIEWER_IDS),
                # The bitmap column printed raw is bytes; decoded, it is the reviewers' names.
                Shown(PRODUCT_REVIEW_STATS, rows=_stats_rows),
                Shown(PRODUCT_REVIEW_AVERAGES),
            ),
        ),
        (f"{product_360.name}_job", (Shown(product_360),)),
        # product_360 is write-only: its dedicated compaction job folds the writers' fragments in.
        (f"{product_360.name}_compaction_job", (Shown(product_360, changelog=True),)),
        ("product_360_serving_job", (Shown(orders_enriched_spec(product_360)),)),
    )


def _instance(project_root: Path) -> dg.DagsterInstance:
    if not os.environ.get("DAGSTER_HOME"):
        home = project_root / ".dagster_home"
        home.mkdir(exist_ok=True)
        os.environ["DAGSTER_HOME"] = str(home)
    return dg.DagsterInstance.get()


def _report(result: dg.ExecuteInProcessResult) -> bool:
    """Print the run's materializations and check results; True when all of them succeeded."""
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        values = {k: v.value for k, v in materialization.metadata.items()}
        summary = {
            k: values[k] for k in ("dagster/row_count", "rows_appended", "commits_this_run") if k in values
        }
        print(f"materialized {materialization.asset_key.to_user_string()}: {summary}")
    checks = result.get_asset_check_evaluations()
    for check in checks:
        name = check.asset_check_key.to_user_string()
        status = "PASSED" if check.passed else f"FAILED ({check.severity.value})"
        if not check.passed and check.asset_check_key in EXPECTED_WARNINGS:
            status += f", {EXPECTED_WARNINGS[check.asset_check_key]}"
        details = {k: v.value for k, v in check.metadata.items()}
        print(f"check {name}: {status} {details}")
    # Warnings (freshness, drift, quarantine growth) are reported; only errors fail the demo.
    errors = [c for c in checks if not c.passed and c.severity == dg.AssetCheckSeverity.ERROR]
    # A job that materializes assets must also have run their checks; the compaction job has none.
    unchecked = bool(result.get_asset_materialization_events()) and not checks
    if not result.success or unchecked or errors:
        print(f"run {result.run_id} failed; see `make dev` for its logs", file=sys.stderr)
        return False
    return True


def _show(spark: SparkSession, lake: Any, shown: Shown) -> None:
    from wide_assets.table import WideTable

    spec = shown.spec
    table = WideTable.open(spark, table_path(lake, spec))
    rows = shown.rows(spark, table, lake) if shown.rows else table.read()
    print(f"\n{spec.name} (Delta version {table.version}, {table.last_commit} commits):")
    rows.orderBy(*spec.primary_key).show(truncate=False)
    if shown.changelog:
        print(f"{spec.name} changelog:")
        table.changelog().orderBy("_commit", "_offset").show(100, truncate=False)


def main() -> int:
    import definitions

    defs = definitions.defs
    succeeded = True
    with _instance(Path(definitions.__file__).resolve().parent) as instance:
        for job, shown in demos():
            print(f"== {job}")
            result = defs.resolve_job_def(job).execute_in_process(
                run_config=RUN_CONFIG, instance=instance, raise_on_error=False
            )
            if not _report(result):
                succeeded = False
                continue
            resources = defs.resources or {}
            for item in shown:
                _show(resources["spark"].spark, resources["lake"], item)
    return 0 if succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
