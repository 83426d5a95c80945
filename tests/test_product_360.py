"""product_360 (Paimon's "stream joins without joining") through Dagster: five CDC sources in Debezium and Flink JSON -> one row per product.

The oracle (`bench.product_360_oracle`) is plain Python over the landed files, sharing no code with
the pipeline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster_parts import asset_definitions, assets, assets_and_checks, step_failure_metadata
from engine import spark_resource

from bench.product_360_oracle import SOURCES, oracle, records, table_rows
from demos import declared, declared_defs
from demos.generate import generate
from wide_assets.pipelines import LandingZone, asset_key, lake_name
from wide_assets.pipelines.checks import freshness_check, landed_at
from wide_assets.pipelines.ingest import quarantine_path
from wide_assets.pipelines.resources import LakeSettings
from wide_assets.table import WideTable

ROOT = Path(__file__).resolve().parents[1]
PRODUCT_360 = declared("product_360").spec
DEFS = declared_defs("product_360")
PRICING = PRODUCT_360.source("pricing")
MAX_LAG = timedelta(hours=24)  # the declaration's source_health max_lag_hours
WIDE_KEY = asset_key(PRODUCT_360, PRODUCT_360.name)
CONVERGENCE = dg.AssetCheckKey(WIDE_KEY, "converges_to_source_join")


# ------------------------------------------------------------------------------------------ runs
@dataclass
class Pipeline:
    """product_360's definitions on a private landing zone and lake, on an ephemeral instance."""

    landing: Path
    lake: Path
    instance: dg.DagsterInstance

    @property
    def resources(self) -> dict[str, Any]:
        return {
            "spark": spark_resource(),
            "lake": LakeSettings(root=str(self.lake)),
            "landing": LandingZone(root=str(self.landing)),
        }

    def run(self, selection: Any = None) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            assets_and_checks(DEFS),
            instance=self.instance,
            resources=self.resources,
            selection=selection,
            raise_on_error=False,
        )

    def path(self, name: str) -> str:
        return str(self.lake / lake_name(asset_key(PRODUCT_360, name)))

    def table(self, spark: Any) -> WideTable:
        return WideTable.open(spark, self.path(PRODUCT_360.name))


def _pipeline(root: Path, landing: Path | None = None) -> Pipeline:
    target = root / "data"
    if landing is not None:
        shutil.copytree(landing, target / "landing")
    else:
        (target / "landing").mkdir(parents=True)
    return Pipeline(target, root / "lake", dg.DagsterInstance.ephemeral())


def _check(result: dg.ExecuteInProcessResult, key: dg.AssetCheckKey) -> Any:
    return next(e for e in result.get_asset_check_evaluations() if e.asset_check_key == key)


def _metadata(result: dg.ExecuteInProcessResult, name: str) -> dict[str, Any]:
    node = f"{PRODUCT_360.group}__{name}"
    return {k: v.value for k, v in result.asset_materializations_for_node(node)[0].metadata.items()}


@pytest.fixture(scope="module")
def bundled(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Pipeline, dg.ExecuteInProcessResult]:
    pipeline = _pipeline(tmp_path_factory.mktemp("bundled"), ROOT / "data" / "landing")
    result = pipeline.run()
    assert result.success
    return pipeline, result


# ------------------------------------------------------------------------------------------ tests
def test_bundled_data_equals_python_oracle(spark: Any, bundled: tuple[Pipeline, Any]) -> None:
    pipeline, result = bundled
    expected = oracle(pipeline.landing)
    assert table_rows(pipeline.table(spark)) == expected
    # The bundled story exercises what it should: removed products, cleared prices, late updates.
    assert len(expected) < 50 and any(r[4] is None and r[6] is not None for r in expected)
    blocking = [e for e in result.get_asset_check_evaluations() if e.severity == dg.AssetCheckSeverity.ERROR]
    assert {"primary_key_unique_not_null", "converges_to_source_join"} <= {e.check_name for e in blocking}
    # product_360 is write-only: until its compaction job runs, every commit is pending.
    [wide] = [e for e in result.get_asset_materialization_events() if e.asset_key.path[-1] == "product_360"]
    metadata = wide.materialization.metadata
    assert metadata["pending_commits"].value == len(pipeline.table(spark).pending_commits()) > 0
    assert metadata["last_compaction"].value == "never"
    assert all(e.passed for e in blocking)
    wide = _metadata(result, PRODUCT_360.name)
    assert wide["dagster/row_count"] == len(expected) and wide["commits_this_run"] == 5
    lineage = wide["dagster/column_lineage"].deps_by_column
    assert lineage["price"] == [
        dg.TableColumnDep(asset_key=asset_key(PRODUCT_360, "pricing"), column_name="price")
    ]
    assert _metadata(result, "pricing")["quarantined_this_run"] == 6


def test_rerun_without_new_files_changes_nothing(spark: Any, bundled: tuple[Pipeline, Any]) -> None:
    pipeline, _ = bundled
    before = table_rows(pipeline.table(spark)), pipeline.table(spark).version
    result = pipeline.run()
    assert result.success and _metadata(result, PRODUCT_360.name)["commits_this_run"] == 0
    assert _metadata(result, "pricing")["quarantined_this_run"] == 0
    assert (table_rows(pipeline.table(spark)), pipeline.table(spark).version) == before


def test_tampered_price_fails_convergence(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    pipeline = _pipeline(tmp_path, ROOT / "data" / "landing")
    assert pipeline.run().success
    table = pipeline.table(spark)
    # Tamper with the Delta table itself, after the compaction folded the write-only fragments in.
    table.compact()
    assert table.pending_commits() == []
    victim = min(r[0] for r in table_rows(table) if r[4] is not None)
    DeltaTable(table.path).update(predicate=f"product_id = {victim}", updates={"price": "price + 1"})
    result = pipeline.run(selection=dg.AssetSelection.checks(CONVERGENCE))
    check = _check(result, CONVERGENCE)
    assert not check.passed
    assert check.metadata["differing_keys_by_column"].value == {"price": 1}
    assert f"product_id={victim}: price table=" in check.description


def test_late_out_of_order_and_deletes_converge_incrementally_and_on_backfill(
    spark: Any, tmp_path: Path
) -> None:
    generated = tmp_path / "generated"
    generate(120, 1500, seed=11, out=generated / "landing", late_share=0.25, delete_share=0.08, files=4)
    incremental = _pipeline(tmp_path / "incremental")
    for batch in range(4):
        # Each batch's file of every source lands, then the job runs, as the sensor would start it.
        for source in SOURCES:
            folder = incremental.landing / "landing" / source
            folder.mkdir(parents=True, exist_ok=True)
            name = f"{source}_{batch:03d}.jsonl"
            shutil.copy(generated / "landing" / source / name, folder / name)
        result = incremental.run()
        assert result.success and _check(result, CONVERGENCE).passed, batch
        assert table_rows(incremental.table(spark)) == oracle(incremental.landing), batch
    # Backfill: every landed file into a fresh lake in one run gives the same table.
    backfill = _pipeline(tmp_path / "backfill", generated / "landing")
    assert backfill.run().success
    assert table_rows(backfill.table(spark)) == table_rows(incremental.table(spark))


BAD = {
    "bad JSON": ("pricing", '{"before": null, "after": {"product_id": 1'),
    "missing key": ("pricing", '{"before": null, "after": {"price": "1.00"}, "op": "c", "ts_ms": 1}'),
    "unknown op": ("pricing", '{"before": null, "after": {"product_id": 1}, "op": "t", "ts_ms": 1}'),
    "uncastable value": (
        "pricing",
        '{"before": null, "after": {"product_id": 1, "price": "x"}, "op": "c", "ts_ms": 1}',
    ),
    "missing image": ("pricing", '{"before": null, "after": null, "op": "d", "ts_ms": 1}'),
}
BAD_FLINK = {
    "bad JSON": '{"rowkind": "+I", ',
    "missing key": '{"rowkind": "+I", "question_id": 1, "status": "open", "op_ts": "2026-01-01 00:00:00"}',
    "unknown op": '{"rowkind": "+X", "question_id": 1, "product_id": 2, "op_ts": "2026-01-01 00:00:00"}',
    "uncastable value": '{"rowkind": "+I", "question_id": 1, "product_id": 2, "op_ts": "not-a-time"}',
}


def _quarantine(spark: Any, pipeline: Pipeline, source: str) -> list[Any]:
    rows = spark.read.format("delta").load(quarantine_path(pipeline.path(source)))
    collected: list[Any] = rows.orderBy("_source_file", "_source_line").collect()
    return collected


def test_each_malformed_record_is_quarantined_with_its_reason(spark: Any, tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)
    good = '{"before": null, "after": {"product_id": 7, "price": "2.50", "sale_ends": null}, "op": "c", "ts_ms": 1000}'
    pricing = [good, *(line for _, line in BAD.values())]
    for source, lines in (("pricing", pricing), ("questions", list(BAD_FLINK.values()))):
        folder = pipeline.landing / "landing" / source
        folder.mkdir(parents=True)
        (folder / "bad.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    keys = [asset_key(PRODUCT_360, s) for s in ("pricing", "questions")]
    result = pipeline.run(selection=dg.AssetSelection.assets(*keys))
    assert result.success
    quarantined = _quarantine(spark, pipeline, "pricing")
    assert [(r._source_line, r._reason.rsplit("(", 1)[1].rstrip(")")) for r in quarantined] == [
        (line, reason) for line, reason in enumerate(BAD, start=2)
    ]
    assert (
        quarantined[0]._record == BAD["bad JSON"][1]
        and quarantined[0]._source_file == "landing/pricing/bad.jsonl"
    )
    reasons = [r._reason.rsplit("(", 1)[1].rstrip(")") for r in _quarantine(spark, pipeline, "questions")]
    assert reasons == list(BAD_FLINK)
    cdc = spark.read.format("delta").load(pipeline.path("pricing")).collect()
    assert [(r.product_id, r.price, r._source_line) for r in cdc] == [(7, Decimal("2.50"), 1)]
    assert _metadata(result, "pricing")["quarantined_this_run"] == len(BAD)


def test_too_many_malformed_records_fail_the_run_and_ingest_nothing(spark: Any, tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)
    folder = pipeline.landing / "landing" / "pricing"
    folder.mkdir(parents=True)
    limit = PRICING.max_bad_records
    assert limit is not None
    (folder / "bad.jsonl").write_text("not json\n" * (limit + 1), "utf-8")
    result = pipeline.run(selection=dg.AssetSelection.assets(asset_key(PRODUCT_360, "pricing")))
    assert not result.success
    failure = result.get_step_failure_events()[0]
    assert step_failure_metadata(failure)["bad_records"].value == limit + 1
    from deltalake import DeltaTable

    # Rejected before anything was written: neither a quarantine nor a CDC table exists.
    assert not DeltaTable.is_deltatable(quarantine_path(pipeline.path("pricing")))
    assert not DeltaTable.is_deltatable(pipeline.path("pricing"))


CRASHING_RUN = """
import dagster as dg
from bench.product_360_oracle import SOURCES, oracle, records, table_rows
from engine import spark_resource
from wide_assets.pipelines.resources import LakeSettings
from demos import declared_defs
from wide_assets.pipelines import LandingZone
dg.materialize(
    declared_defs("product_360").assets,
    selection=[dg.AssetKey(["product_360", "pricing"])],
    resources={{"spark": spark_resource(), "lake": LakeSettings(root={lake!r}),
               "landing": LandingZone(root={landing!r})}},
)
"""


def _source_state(spark: Any, pipeline: Pipeline, source: str) -> tuple[list[Any], list[Any]]:
    cdc = spark.read.format("delta").load(pipeline.path(source)).orderBy("_offset").collect()
    return cdc, _quarantine(spark, pipeline, source)


def test_ingest_killed_before_its_commit_then_rerun_equals_one_clean_run(spark: Any, tmp_path: Path) -> None:
    crashed = _pipeline(tmp_path / "crashed", ROOT / "data" / "landing")
    script = textwrap.dedent(CRASHING_RUN.format(lake=str(crashed.lake), landing=str(crashed.landing)))
    pythonpath = os.pathsep.join([str(ROOT), str(ROOT / "tests")])  # the project and `engine`
    env = {**os.environ, "WIDE_ASSETS_CRASH_AT": "ingest_before_commit", "PYTHONPATH": pythonpath}
    process = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, timeout=300
    )
    assert process.returncode == -9, process.stderr.decode()[-2000:]
    # Killed between the quarantine append and the CDC append: malformed lines are kept, records not.
    assert len(_quarantine(spark, crashed, "pricing")) == 6
    selection = dg.AssetSelection.assets(asset_key(PRODUCT_360, "pricing"))
    assert crashed.run(selection=selection).success
    clean = _pipeline(tmp_path / "clean", ROOT / "data" / "landing")
    assert clean.run(selection=selection).success
    assert _source_state(spark, crashed, "pricing") == _source_state(spark, clean, "pricing")


def _checks(result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    return {e.asset_check_key.name: e for e in result.get_asset_check_evaluations()}


def test_source_health_checks_warn_without_blocking(bundled: tuple[Pipeline, Any]) -> None:
    pipeline, result = bundled
    checks = _checks(result)
    warn = dg.AssetCheckSeverity.WARN
    # The bundled changes are from March 2026, but they landed in this run: freshness is judged by
    # arrival, so the demo is healthy out of the box.
    newest = max(ts for s in SOURCES if s == "pricing" for _, ts, _ in records(pipeline.landing, s))
    fresh = checks["pricing_freshness"]
    assert fresh.passed and fresh.severity == warn
    assert fresh.metadata["newest_op_time"].value == datetime.fromtimestamp(newest / 1000, UTC).isoformat()
    landed = datetime.fromisoformat(fresh.metadata["landed_at"].value)
    assert timedelta(0) <= datetime.now(UTC) - landed < MAX_LAG
    assert all(checks[f"{s}_freshness"].passed for s in SOURCES)
    growth = checks["pricing_quarantine_growth"]
    assert not growth.passed and growth.severity == warn and growth.metadata["quarantine_rows"].value == 6
    assert checks["catalog_quarantine_growth"].passed
    assert all(checks[f"{s}_schema_drift"].passed for s in SOURCES)
    assert result.success  # warnings never fail the run


def _pricing_line(product_id: int, price: str, ts_ms: int) -> str:
    after = {"product_id": product_id, "price": price, "sale_ends": None}
    return json.dumps({"before": None, "after": after, "op": "c", "ts_ms": ts_ms}) + "\n"


def test_freshness_fails_when_nothing_new_landed_within_the_lag(tmp_path: Path) -> None:
    """A source that delivered nothing new for longer than the lag is stale, and says when it last did."""
    pipeline = _pipeline(tmp_path)
    pricing = asset_key(PRODUCT_360, "pricing")
    lag = timedelta(seconds=1)
    stale = freshness_check(PRODUCT_360, PRICING, lag)
    key = next(iter(stale.check_keys))
    # Before anything landed or was ingested, no source check has anything to judge.
    before = pipeline.run(selection=dg.AssetSelection.checks_for_assets(pricing))
    assert {
        e.check_name: (e.passed, e.metadata["status"].value) for e in before.get_asset_check_evaluations()
    } == {
        "pricing_freshness": (True, "not judged: no pricing record has landed yet."),
        "pricing_schema_drift": (True, "not judged: no pricing file has landed yet."),
        "pricing_quarantine_growth": (True, "not judged: no pricing ingest has been recorded yet."),
    }
    folder = pipeline.landing / "landing" / "pricing"
    folder.mkdir(parents=True)
    (folder / "p.jsonl").write_text(_pricing_line(1, "9.99", int(time.time() * 1000)), "utf-8")
    assert pipeline.run(selection=dg.AssetSelection.assets(pricing)).success
    landed = landed_at(pipeline.path("pricing"))
    assert landed is not None
    time.sleep(max(0.0, (landed + 2 * lag - datetime.now(UTC)).total_seconds()))
    check = _check(_run_with(pipeline, stale, dg.AssetSelection.checks(stale)), key)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["lag_seconds"].value >= 2 and check.metadata["threshold_seconds"].value == 1
    assert check.metadata["landed_at"].value == landed.isoformat()
    assert "the newest records landed" in (check.description or "")


def _run_with(
    pipeline: Pipeline, check: dg.AssetChecksDefinition, selection: Any
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [*assets(declared_defs("product_360")), check],
        instance=pipeline.instance,
        resources=pipeline.resources,
        selection=selection,
        raise_on_error=False,
    )


def test_schema_drift_lists_unknown_and_missing_columns(tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)
    folder = pipeline.landing / "landing" / "reviews"
    folder.mkdir(parents=True)
    line = {"rowkind": "+I", "review_id": 1, "product_id": 2, "title": "Nice", "op_ts": "2026-01-01 00:00:00"}
    (folder / "r.jsonl").write_text(json.dumps(line) + "\n", "utf-8")
    drift = dg.AssetCheckKey(asset_key(PRODUCT_360, "reviews"), "reviews_schema_drift")
    check = _check(pipeline.run(selection=dg.AssetSelection.checks(drift)), drift)
    assert not check.passed
    assert check.metadata["unexpected_columns"].value == ["title"]
    assert check.metadata["missing_columns"].value == ["rating"]


# ------------------------------------------------------------------------------------------ automation
SENSORS = [f"product_360_{s}_sensor" for s in SOURCES]


def test_one_sensor_per_landing_folder_without_spark(tmp_path: Path) -> None:
    """Evaluated in a fresh interpreter, so that starting Spark would show."""
    pipeline = _pipeline(tmp_path, ROOT / "data" / "landing")
    code = textwrap.dedent(
        f"""
        import json, shutil, sys
        from pathlib import Path
        import dagster as dg
        import wide_assets.session as session
        from wide_assets.pipelines.resources import LakeSettings
        import definitions
        from wide_assets.pipelines import LandingZone

        resources = {{"landing": LandingZone(root={str(pipeline.landing)!r}), "lake": LakeSettings(root={str(pipeline.lake)!r})}}
        out = {{}}
        with dg.DagsterInstance.ephemeral() as instance:
            cursors = {{}}
            for name in {SENSORS!r}:
                tick = definitions.defs.resolve_sensor_def(name).evaluate_tick(
                    dg.build_sensor_context(instance=instance, resources=resources, sensor_name=name)
                )
                cursors[name] = tick.cursor
                out[name] = [len(tick.run_requests), sorted(json.loads(tick.cursor)["files"])]
            folder = Path({str(pipeline.landing)!r}) / "landing" / "pricing"
            shutil.copy(folder / "pricing_000.jsonl", folder / "pricing_100.jsonl")
            for name in {SENSORS!r}:
                tick = definitions.defs.resolve_sensor_def(name).evaluate_tick(
                    dg.build_sensor_context(instance=instance, resources=resources, cursor=cursors[name], sensor_name=name)
                )
                out[name].append(len(tick.run_requests))
        assert session._sessions == {{}} and session._sail_server is None, "Spark was started"
        assert "pysail.spark" not in sys.modules
        print(json.dumps(out))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=120, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for source, name in zip(SOURCES, SENSORS, strict=True):
        first, files, second = out[name]
        landed = sorted(
            p.relative_to(pipeline.landing).as_posix()
            for p in (pipeline.landing / "landing" / source).glob("*.jsonl")
        )
        # Each sensor watches its own folder (cursor = its files seen); only pricing saw the new file.
        assert first == 1 and files == [f for f in landed if not f.endswith("pricing_100.jsonl")]
        assert second == (1 if source == "pricing" else 0), name


def test_wide_table_is_eager_and_requested_once_sources_are_new(spark: Any, tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path, ROOT / "data" / "landing")
    wide = next(a for a in asset_definitions(DEFS) if WIDE_KEY in a.keys)
    assert wide.automation_conditions_by_key[WIDE_KEY] == dg.AutomationCondition.eager()
    defs = dg.Definitions(assets=DEFS.assets, resources=pipeline.resources)
    before = dg.evaluate_automation_conditions(defs=defs, instance=pipeline.instance)
    assert before.get_num_requested(WIDE_KEY) == 0
    sources = [asset_key(PRODUCT_360, s) for s in SOURCES]
    assert pipeline.run(selection=dg.AssetSelection.assets(*sources)).success
    after = dg.evaluate_automation_conditions(defs=defs, instance=pipeline.instance, cursor=before.cursor)
    assert after.get_num_requested(WIDE_KEY) == 1


def test_run_failure_sensor_logs_which_step_failed(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    pipeline = _pipeline(tmp_path)
    folder = pipeline.landing / "landing" / "pricing"
    folder.mkdir(parents=True)
    assert PRICING.max_bad_records is not None
    (folder / "bad.jsonl").write_text("not json\n" * (PRICING.max_bad_records + 1), "utf-8")
    defs = dg.Definitions.merge(DEFS, dg.Definitions(resources=pipeline.resources))
    result = defs.resolve_job_def("product_360_job").execute_in_process(
        instance=pipeline.instance, raise_on_error=False
    )
    assert not result.success
    sensor = defs.resolve_sensor_def("product_360_run_failure_sensor")
    context = dg.build_run_status_sensor_context(
        sensor_name=sensor.name,
        dagster_instance=pipeline.instance,
        dagster_run=result.dagster_run,
        dagster_event=result.get_run_failure_event(),
    ).for_run_failure()
    sensor(context)
    message = next(line for line in capfd.readouterr().err.splitlines() if "FAILED in step" in line)
    assert result.run_id in message and "product_360__pricing" in message and "re-run the job" in message


# ------------------------------------------------------------------------------------------ serving
def test_orders_enriched_equals_a_plain_join(spark: Any, bundled: tuple[Pipeline, Any]) -> None:
    pipeline, _ = bundled
    orders = spark.read.format("delta").load(pipeline.path("orders"))
    expected = spark.sql(
        "SELECT o.order_id, p.product_name, p.brand, p.price, o.quantity * p.price AS line_total "
        "FROM {o} o LEFT JOIN {p} p ON o.product_id = p.product_id",
        o=orders,
        p=pipeline.table(spark).read(),
    ).collect()
    enriched = WideTable.open(spark, pipeline.path("orders_enriched")).read().collect()
    columns = ("order_id", "product_name", "brand", "price", "line_total")
    assert {tuple(r[c] for c in columns) for r in enriched} == {
        tuple(r[c] for c in columns) for r in expected
    }
    assert len(enriched) == 15
    # Unknown (9999) and removed (deleted from the catalog) products stay unenriched; the rest are.
    missing = {r.product_id for r in enriched if r.product_name is None}
    assert 9999 in missing and len(missing) < len(enriched)


def test_active_products_per_brand_equals_its_sql_over_the_current_table(
    spark: Any, bundled: tuple[Pipeline, Any]
) -> None:
    pipeline, _ = bundled
    today = date.today()
    groups: dict[str, list[Any]] = {}
    for r in pipeline.table(spark).read().collect():
        if r.brand is not None and (r.discontinue_date is None or r.discontinue_date > today):
            groups.setdefault(r.brand, []).append(r)
    expected = set()
    for brand, rows in groups.items():
        prices = [r.price for r in rows if r.price is not None]
        avg = (sum(prices) / len(prices)).quantize(Decimal("0.01"), ROUND_HALF_UP) if prices else None
        expected.add((brand, len(rows), avg, sum(r.open_question_cnt or 0 for r in rows)))
    table = spark.read.format("delta").load(str(pipeline.lake / "product_360" / "active_products_per_brand"))
    assert {tuple(r) for r in table.collect()} == expected
    materialized = next(a for a in asset_definitions(DEFS) if a.key.path[-1] == "active_products_per_brand")
    condition = materialized.automation_conditions_by_key[materialized.key]
    assert condition == dg.AutomationCondition.on_cron("0 * * * *")


def test_debezium_envelopes_with_payload_wrapper_and_snapshot_reads(tmp_path: Path) -> None:
    from wide_assets.pipelines.cdc_json import parse_json_lines

    pricing = PRICING
    lines = [
        {"payload": {"before": None, "after": {"product_id": 1, "price": "9.99"}, "op": "r", "ts_ms": 0}},
        {"schema": {}, "payload": {"before": {"product_id": 1}, "after": None, "op": "d", "ts_ms": 1500}},
        {"before": None, "after": None, "op": "t", "ts_ms": 2000},  # truncate: not a row change
    ]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    records = list(parse_json_lines(pricing, path))
    assert [(r.line, r.row_kind, r.values, r.problem) for r in records[:2]] == [
        (1, "+I", ("1", "9.99", None, "1970-01-01 00:00:00.000"), ""),
        (2, "-D", ("1", None, None, "1970-01-01 00:00:01.500"), ""),
    ]
    assert records[2].problem.endswith("(unknown op)") and records[2].raw == json.dumps(lines[2])
