"""The customer_accounts demo (docs/semantics.md section 7) through Dagster: a snapshot source and an
event source whose closures are durable tombstones. Oracle: the rows worked out by hand from the
bundled files (data/customer_accounts), with and without the tombstone."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
from engine import spark_resource

from demos import declared_defs
from wide_assets.pipelines import LandingZone
from wide_assets.pipelines.resources import LakeSettings
from wide_assets.table import WideTable

DATA = Path(__file__).resolve().parents[1] / "data"
JOB = "customer_accounts_job"


def t(text: str) -> datetime:
    return datetime.fromisoformat(text)


# Run 1: the export of 1 March and the first events: customer 3 is closed on 2 March, 12:00.
# Run 2: the exports of 2 and 3 March (landed together), and late events: customer 3's suspension of
# 2 March, 08:00 is older than its closure (dropped: under P11 it would reopen customer 3), and
# customer 1 becomes vip. Export 2 March: 1 has 150 points (a +U), 2 and 3 unchanged (nothing);
# export 3 March: 2 is gold with 60 (a +U), 1 unchanged, 3 left the CRM (a -D of a key with no row).
RUNS = [
    ["crm_export/crm_20260301.csv", "accounts/accounts_001.csv"],
    ["crm_export/crm_20260302.csv", "crm_export/crm_20260303.csv", "accounts/accounts_002.csv"],
]
EXPECTED = {
    (1, "gold", 150, t("2026-03-02 00:00:00"), "vip", t("2026-03-03 09:00:00")),
    (2, "gold", 60, t("2026-03-03 00:00:00"), "open", t("2026-03-01 09:30:00")),
}


def test_a_closed_account_stays_closed_for_late_events_and_the_checks_pass(
    spark: Any, tmp_path: Path
) -> None:
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    resources = {
        "spark": spark_resource(),
        "lake": LakeSettings(root=str(lake)),
        "landing": LandingZone(root=str(landing)),
    }
    defs = dg.Definitions.merge(declared_defs("customer_accounts"), dg.Definitions(resources=resources))
    instance = dg.DagsterInstance.ephemeral()
    for files in RUNS:
        for name in files:
            target = landing / "customer_accounts" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(DATA / "customer_accounts" / name, target)
        result = defs.resolve_job_def(JOB).execute_in_process(instance=instance, raise_on_error=False)
        assert result.success
    checks = {e.asset_check_key.name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"converges_to_source_join": True, "primary_key_unique_not_null": True}
    table = WideTable.open(spark, str(lake / "customer_accounts" / "customer_accounts"))
    assert {tuple(r) for r in table.read().collect()} == EXPECTED
