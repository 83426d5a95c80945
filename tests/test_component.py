"""`wide_assets.WideTableComponent`: the demos as declarations, refusals at load, the scaffold, the
generated convergence check, and Parquet and Delta sources.

Oracles: the demos' asset keys and check names as listed here (the Python declarations had them, with
the renames noted); tables written by hand from the landed files; and the convergence check's own
verdict on a table changed behind the engine's back, or merged by options that do not mean what the
declaration says.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships its types as a separate package (types-PyYAML)
from dagster.components.testing import DefsFolderSandbox, create_defs_folder_sandbox
from dagster_parts import asset_definitions, assets_and_checks, step_error

from wide_assets import WideTableComponent
from wide_assets.pipelines import LandingZone
from wide_assets.pipelines.resources import LakeSettings, SparkEngine
from wide_assets.table import WideTable

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent

# What the five demos define (customer_accounts: docs/semantics.md section 7). Renamed from the Python declarations: first_customer_touch's
# `first_touch_matches_source` is the generated `converges_to_source_join` (the same first-row
# oracle, now every table's), and `first_touch_never_changes` the declared `rows_never_change`;
# user_rec_wide gained its convergence check, product_360 its history table (SCD type 2) and its checks.
ASSETS = {
    "customer_accounts/accounts",
    "customer_accounts/crm_export",
    "customer_accounts/customer_accounts",
    "first_touch/customer_events",
    "first_touch/first_customer_touch",
    "fluss_demo/clicks",
    "fluss_demo/impressions",
    "fluss_demo/recommendations",
    "fluss_demo/user_rec_wide",
    "product_360/active_products_per_brand",
    "product_360/catalog",
    "product_360/lifecycle",
    "product_360/orders",
    "product_360/orders_enriched",
    "product_360/pricing",
    "product_360/product_360",
    "product_360/product_360_changelog_debezium",
    "product_360/product_360_history",
    "product_360/questions",
    "product_360/reviews",
    "product_reviews/product_review_averages",
    "product_reviews/product_review_stats",
    "product_reviews/reviewer_ids",
    "product_reviews/reviews",
}
CHECKS = {
    "customer_accounts/customer_accounts:converges_to_source_join",
    "customer_accounts/customer_accounts:primary_key_unique_not_null",
    "first_touch/first_customer_touch:converges_to_source_join",
    "first_touch/first_customer_touch:primary_key_unique_not_null",
    "first_touch/first_customer_touch:rows_never_change",
    "fluss_demo/user_rec_wide:converges_to_source_join",
    "fluss_demo/user_rec_wide:primary_key_unique_not_null",
    *(
        f"product_360/{source}:{source}_{check}"
        for source in ("catalog", "pricing", "lifecycle", "reviews", "questions")
        for check in ("freshness", "quarantine_growth", "schema_drift")
    ),
    "product_360/orders_enriched:primary_key_unique_not_null",
    "product_360/product_360:changelog_replays_to_table",
    "product_360/product_360:compaction_preserved_content",
    "product_360/product_360:converges_to_source_join",
    "product_360/product_360:file_count_health",
    "product_360/product_360:primary_key_unique_not_null",
    "product_360/product_360_history:intervals_never_overlap",
    "product_360/product_360_history:open_interval_equals_table_row",
    "product_reviews/product_review_averages:primary_key_unique_not_null",
    "product_reviews/product_review_stats:primary_key_unique_not_null",
    "product_reviews/product_review_stats:reviews_applied_once",
    "product_reviews/product_review_stats:stats_match_reviews",
    "product_reviews/reviewer_ids:primary_key_unique_not_null",
    "product_reviews/reviewer_ids:reviewer_id_unique",
    "product_reviews/reviewer_ids:reviewer_ids_never_change",
}
JOBS = {
    "customer_accounts_job",
    "first_customer_touch_job",
    "product_360_compaction_job",
    "product_360_job",
    "product_360_serving_job",
    "product_review_stats_job",
    "user_rec_wide_job",
}
SCHEDULES = {
    "customer_accounts_job_hourly",
    "first_customer_touch_job_hourly",
    "product_360_compaction_nightly",
    "product_360_job_hourly",
    "product_review_stats_job_hourly",
    "user_rec_wide_job_hourly",
}
SENSORS = {
    "customer_accounts_new_data_sensor",
    "first_customer_touch_new_data_sensor",
    *(f"product_360_{s}_sensor" for s in ("catalog", "pricing", "lifecycle", "reviews", "questions")),
    "product_360_compaction_sensor",
    "product_360_run_failure_sensor",
    "product_review_stats_new_data_sensor",
    "user_rec_wide_new_data_sensor",
}


def test_the_declared_demos_define_what_the_demos_defined() -> None:
    import definitions

    defs = definitions.defs
    assert {k.to_user_string() for k in defs.resolve_all_asset_keys()} == ASSETS
    assert {k.to_user_string() for c in defs.asset_checks or [] for k in c.check_keys} == CHECKS
    assert {j.name for j in defs.jobs or []} == JOBS
    assert {s.name for s in defs.schedules or []} == SCHEDULES
    assert {s.name for s in defs.sensors or []} == SENSORS


def test_product_360_is_a_declaration_with_python_only_for_serving() -> None:
    from wide_assets_defs.product_360.component import Product360

    declaration = ROOT / "wide_assets_defs" / "product_360" / "defs.yaml"
    lines = [
        line
        for line in declaration.read_text("utf-8").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert len(lines) <= 82
    import definitions

    component = definitions.DECLARATIONS.load_component("product_360")
    assert type(component) is Product360 and isinstance(component, WideTableComponent)
    assert [s.name for s in component.spec.sources] == [
        "pricing",
        "lifecycle",
        "reviews",
        "questions",
        "catalog",
    ]


# ------------------------------------------------------------------------------------------ refusals
@pytest.fixture
def sandbox() -> Iterator[DefsFolderSandbox]:
    with create_defs_folder_sandbox() as folder:
        yield folder


def scaffold(sandbox: DefsFolderSandbox, name: str = "my_table") -> tuple[Path, dict[str, Any]]:
    """`dg scaffold defs wide_assets.WideTableComponent <name>` in the sandbox: its folder and defs.yaml."""
    path = sandbox.scaffold_component(WideTableComponent, defs_path=name)
    return path, yaml.safe_load((path / "defs.yaml").read_text("utf-8"))


def build(sandbox: DefsFolderSandbox, path: Path, doc: dict[str, Any] | None = None) -> dg.Definitions:
    if doc is not None:
        (path / "defs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
        assert isinstance(component, WideTableComponent)
        return defs


def messages(error: BaseException) -> str:
    """The error and every error it was raised from, one per line."""
    found = []
    cause: BaseException | None = error
    while cause is not None:
        found.append(f"{type(cause).__name__}: {cause}")
        cause = cause.__cause__ or cause.__context__
    return "\n".join(found)


def _source(doc: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return doc["attributes"]["sources"][index]  # type: ignore[no-any-return]


def _table(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["attributes"]["table"]  # type: ignore[no-any-return]


def _rename(mapping: dict[str, Any], old: str, new: str) -> None:
    mapping[new] = mapping.pop(old)


BAD: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "misspelled source field": (
        lambda d: _rename(_source(d), "op_time", "op_tme"),
        "source has no field 'op_tme' (did you mean 'op_time'?)",
    ),
    "misspelled table field": (
        lambda d: _rename(_table(d), "primary_key", "primary_keys"),
        "table has no field 'primary_keys' (did you mean 'primary_key'?)",
    ),
    "misspelled option": (
        lambda d: _rename(_table(d)["options"], "merge-engine", "merge-engin"),
        "Unknown option 'merge-engin' for a Paimon table (did you mean 'merge-engine'?)",
    ),
    "option naming no column": (
        lambda d: _table(d)["options"].update({"fields.points_ts.sequence-group": "pionts"}),
        "table my_table: Field pionts can not be found in table schema",
    ),
    "bad column type": (
        lambda d: _table(d)["columns"].update(points="integr"),
        "table my_table: column points has type 'integr': unknown type name 'integr' (did you mean 'integer'?)",
    ),
    "bad source column type": (
        lambda d: _source(d)["columns"].update(changed_at="timestmp"),
        "source profiles: column changed_at has type 'timestmp': unknown type name 'timestmp' (did you mean 'timestamp'?)",
    ),
    "unknown format": (
        lambda d: _source(d).update(format="cvs"),
        "`format` is 'cvs', which is not one of csv, parquet, debezium, flink-json, delta (did you mean 'csv'?).",
    ),
    "feeds an unknown column": (
        lambda d: _source(d, 1)["feeds"].update(points="pionts"),
        "source loyalty: it feeds ['pionts'], which are not value columns of my_table",
    ),
    "a source without its description": (
        lambda d: _source(d).pop("description"),
        "`description` is required here: One line: what its records are.",
    ),
    "option value not among its choices": (
        lambda d: _table(d)["options"].update({"merge-engine": "partial_update"}),
        "Valid values: deduplicate, partial-update, aggregation, first-row (did you mean 'partial-update'?).",
    ),
    "unknown delete rule": (
        lambda d: _source(d).update(deletes="drop"),
        "`deletes` is 'drop', which is not one of remove-row, clear-columns, ignore.",
    ),
    "ddl and columns": (
        lambda d: _table(d).update(ddl="CREATE TABLE my_table (customer_id STRING)"),
        "table my_table: a table declares either a `ddl` or ['columns', 'primary_key', 'options'], not both.",
    ),
    "aggregates of a source keyed by the table": (
        lambda d: _source(d, 1).update(aggregates={"points": "sum(points)"}),
        "source loyalty: aggregates are over the rows of a source keyed apart from the table",
    ),
    "convergence of an aggregation table": (
        lambda d: _table(d).update(
            options={"merge-engine": "aggregation", "fields.points.aggregate-function": "sum"}
        ),
        "table my_table: no convergence check can be generated: column name of an aggregation table has "
        "the function last_non_null_value; the oracle folds sum, max, min, listagg, string_agg, rbm32, rbm64 only",
    ),
    "unknown source default": (
        lambda d: d["attributes"].update(source_defaults={"op_tme": "changed_at"}),
        "source defaults has no field 'op_tme' (did you mean 'op_time'?)",
    ),
    "a source default the source cannot take": (
        lambda d: (
            d["attributes"].update(source_defaults={"op_time": "updated_at"}) or _source(d).pop("op_time")
        ),
        "source profiles: op-time column 'updated_at' is not among its columns",
    ),
    "a sql table reading another table": (
        lambda d: d["attributes"].update(
            sql_tables=[
                {"name": "t", "description": "T.", "sql": "SELECT * FROM {orders}", "primary_key": ["k"]}
            ]
        ),
        "table my_table: sql table t reads ['orders']; its SQL reads the wide table, as {my_table}, and nothing else.",
    ),
    "a sql table named as a source": (
        lambda d: d["attributes"].update(
            sql_tables=[
                {
                    "name": "loyalty",
                    "description": "T.",
                    "sql": "SELECT * FROM {my_table}",
                    "primary_key": ["k"],
                }
            ]
        ),
        "table my_table: sql table 'loyalty' needs a name of letters, digits and '_' that no other asset",
    ),
    "bad cron": (
        lambda d: d["attributes"]["automation"].update(schedule="every hour"),
        "every hour",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_declaration_fails_loading_naming_what_is_wrong(sandbox: DefsFolderSandbox, case: str) -> None:
    change, message = BAD[case]
    path, doc = scaffold(sandbox)
    build(sandbox, path)  # the scaffold itself loads
    bad = copy.deepcopy(doc)
    change(bad)
    with pytest.raises(Exception) as raised:
        build(sandbox, path, bad)
    assert message in messages(raised.value)


def test_two_tables_of_a_code_location_with_different_landing_zones_are_refused_naming_both_files(
    sandbox: DefsFolderSandbox,
) -> None:
    first, _ = scaffold(sandbox, "first_table")
    second, doc = scaffold(sandbox, "second_table")
    _table(doc)["name"] = "second_table"
    doc["attributes"]["landing"] = "data"  # the default, spelled out: the very same resource
    (second / "defs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    with sandbox.build_all_defs() as defs:
        assert defs.resources is not None and defs.resources["landing"].root == str(
            sandbox.project_root / "data"
        )
    doc["attributes"]["landing"] = "incoming"
    (second / "defs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    with pytest.raises(Exception) as raised, sandbox.build_all_defs():
        pass
    text = messages(raised.value)
    assert "attributes.landing" in text and "share one `landing` resource" in text, text
    # Whichever of the two loads second is refused at its file; the message names the other's and both zones.
    assert str(first / "defs.yaml") in text and str(second / "defs.yaml") in text, text
    assert str(sandbox.project_root / "incoming") in text and str(sandbox.project_root / "data") in text, text


def test_a_declaration_brings_default_resources_that_its_fields_override(
    sandbox: DefsFolderSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("WIDE_ASSETS_LAKE", "WIDE_ASSETS_ENGINE", "WIDE_ASSETS_ENV"):
        monkeypatch.delenv(variable, raising=False)
    path, doc = scaffold(sandbox)
    defaults = build(sandbox, path).resources or {}
    assert defaults["lake"].root == str(sandbox.project_root / "lake")
    assert defaults["landing"].root == str(sandbox.project_root / "data")
    assert defaults["spark"].engine == "sail"
    monkeypatch.setenv("WIDE_ASSETS_LAKE", "s3://from-the-environment/lake")
    assert (build(sandbox, path).resources or {})["lake"].root == "s3://from-the-environment/lake"
    doc["attributes"].update(
        lake="s3://bucket/lake",
        landing="incoming",
        spark={"engine": "connect", "remote": "sc://spark.example:15002", "config": {"spark.a": "b"}},
    )
    declared = build(sandbox, path, doc).resources or {}
    assert declared["lake"].root == "s3://bucket/lake"
    assert declared["landing"].root == str(sandbox.project_root / "incoming")
    spark = declared["spark"]
    assert (spark.engine, spark.remote, spark.spark_config) == (
        "connect",
        "sc://spark.example:15002",
        {"spark.a": "b"},
    )
    doc["attributes"]["spark"] = {"engine": "connect"}
    with pytest.raises(Exception) as raised:
        build(sandbox, path, doc)
    assert "spark: engine 'connect' needs `remote: sc://host:port`" in messages(raised.value)


def test_source_defaults_fill_only_what_a_source_leaves_unset(sandbox: DefsFolderSandbox) -> None:
    path, doc = scaffold(sandbox)
    spelled_out = _component(sandbox, path).spec
    short = copy.deepcopy(doc)
    for source in short["attributes"]["sources"]:
        del source["op_time"]
    del _source(short, 1)["deletes"]
    # The profiles source keeps its own `deletes: remove-row`; loyalty takes the default.
    short["attributes"]["source_defaults"] = {"op_time": "changed_at", "deletes": "clear-columns"}
    assert _component(sandbox, path, short).spec == spelled_out
    del _source(short)["deletes"]
    changed = _component(sandbox, path, short).spec
    assert [s.deletes for s in changed.sources] == ["clear-columns", "clear-columns"]


def _component(
    sandbox: DefsFolderSandbox, path: Path, doc: dict[str, Any] | None = None
) -> WideTableComponent:
    if doc is not None:
        (path / "defs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    with sandbox.load_component_and_build_defs(defs_path=path) as (component, _):
        assert isinstance(component, WideTableComponent)
        return component


def test_post_processing_reaches_every_asset_of_the_table(sandbox: DefsFolderSandbox) -> None:
    path, doc = scaffold(sandbox)
    doc["requirements"] = {"env": ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]}
    doc["post_processing"] = {
        "assets": [{"target": "*", "attributes": {"owners": ["team:data"], "tags": {"tier": "gold"}}}]
    }
    defs = build(sandbox, path, doc)
    specs = {spec.key.to_user_string(): spec for asset in asset_definitions(defs) for spec in asset.specs}
    assert set(specs) == {"my_table/profiles", "my_table/loyalty", "my_table/my_table"}
    for spec in specs.values():
        assert spec.owners == ["team:data"] and spec.tags.get("tier") == "gold"


def test_translation_sets_each_assets_spec_per_table_and_source(sandbox: DefsFolderSandbox) -> None:
    path, doc = scaffold(sandbox)
    doc["attributes"]["translation"] = {
        "owners": ["team:{{ data.source or 'wide' }}"],
        "tags": {"feed": "{{ data.table }}-{{ data.source }}"},
        "kinds": ["delta"],
    }
    defs = build(sandbox, path, doc)
    specs = {spec.key.path[-1]: spec for asset in asset_definitions(defs) for spec in asset.specs}
    table = doc["attributes"]["table"]["name"]
    sources = [s["name"] for s in doc["attributes"]["sources"]]
    assert set(specs) == {table, *sources}
    for name, spec in specs.items():
        source = name if name in sources else None
        assert spec.owners == [f"team:{source or 'wide'}"]
        assert spec.tags["feed"] == f"{table}-{source}"
        assert "delta" in spec.kinds


def test_a_sql_table_is_an_asset_of_the_table_translated_like_the_others(sandbox: DefsFolderSandbox) -> None:
    path, doc = scaffold(sandbox)
    sql = "SELECT count(*) AS customers FROM {my_table}"
    doc["attributes"]["sql_tables"] = [
        {"name": "counts", "description": "How many customers.", "sql": sql, "primary_key": []},
        {
            "name": "daily",
            "description": "The same, daily.",
            "sql": sql,
            "primary_key": [],
            "cron": "0 6 * * *",
        },
    ]
    doc["attributes"]["translation"] = {"owners": ["team:{{ data.source or 'wide' }}"]}
    defs = build(sandbox, path, doc)
    specs = {spec.key.to_user_string(): spec for asset in asset_definitions(defs) for spec in asset.specs}
    assert {"my_table/counts", "my_table/daily"} <= set(specs)
    assert specs["my_table/counts"].owners == ["team:wide"]
    assert specs["my_table/counts"].automation_condition == dg.AutomationCondition.eager()
    assert specs["my_table/daily"].automation_condition == dg.AutomationCondition.on_cron("0 6 * * *")
    assert [dep.asset_key for dep in specs["my_table/counts"].deps] == [dg.AssetKey(["my_table", "my_table"])]


def test_a_translation_that_changes_a_key_is_refused(sandbox: DefsFolderSandbox) -> None:
    path, doc = scaffold(sandbox)
    doc["attributes"]["translation"] = {"key_prefix": "elsewhere"}
    with pytest.raises(Exception) as raised:
        build(sandbox, path, doc)
    assert "changed its key to elsewhere/" in messages(raised.value)


def test_the_documented_example_loads(sandbox: DefsFolderSandbox) -> None:
    doc = WideTableComponent.__doc__ or ""
    example = textwrap.dedent(doc.split(".. code-block:: yaml", 1)[1].split("\n\n    Extend", 1)[0])
    path = sandbox.defs_folder_path / "customer_360"
    path.mkdir()
    (path / "defs.yaml").write_text(example, "utf-8")
    defs = build(sandbox, path)
    assert {k.to_user_string() for a in asset_definitions(defs) for k in a.keys} == {
        "customer_360/profiles",
        "customer_360/loyalty",
        "customer_360/customer_360",
    }


def _dg(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "DAGSTER_HOME": str(project / ".dagster_home"),
        # This checkout's library, wherever the environment's editable install points.
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [str(VENV_BIN / "dg"), *args], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )


PROJECT_PYPROJECT = """\
[project]
name = "tables"
version = "0"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "tables"
defs_module = "tables"
code_location_target_module = "definitions"
"""
PROJECT_DEFINITIONS = """\
from pathlib import Path

import dagster as dg

defs = dg.load_from_defs_folder(path_within_project=Path(__file__).resolve().parent)
"""


# Misspellings of the scaffold's defs.yaml (text -> misspelled), the `dg check defs` options, and the one
# block it prints for each, at the line of the misspelled text: (stream, lines).
OP_TIME = ("op_time: changed_at\n      deletes: remove-row", "op_tme: changed_at\n      deletes: remove-row")
REFUSALS = {
    "misspelled option": (
        ("merge-engine:", "merge-engin:"),
        (),
        "stderr",
        [
            "{file}:{line}: attributes.table.options.merge-engin",
            "  table my_table: Unknown option 'merge-engin' for a Paimon table (did you mean 'merge-engine'?).",
        ],
    ),
    "feeds a column the table lacks": (
        ("feeds: {name: name,", "feeds: {name: nme,"),
        (),
        "stderr",
        [
            "{file}:{line}: attributes.sources[0].feeds",
            "  source profiles: it feeds ['nme'], which are not value columns of my_table "
            "['name', 'profile_ts', 'points', 'points_ts'] (did you mean 'name'?).",
        ],
    ),
    "misspelled field": (
        OP_TIME,
        (),
        "stdout",
        [
            "{file}:{line} - wide_assets.WideTableComponent attributes.sources.0.op_tme "
            "Additional properties are not allowed ('op_tme' was unexpected)"
        ],
    ),
    "an option value not among its choices": (
        ("merge-engine: partial-update", "merge-engine: partial_update"),
        (),
        "stderr",
        [
            "{file}:{line}: attributes.table.options.merge-engine",
            "  table my_table: Could not parse value 'partial_update' for key 'merge-engine'. Valid values: "
            "deduplicate, partial-update, aggregation, first-row (did you mean 'partial-update'?).",
        ],
    ),
    "a misspelled column type, at the column": (
        ("      points: int\n", "      points: integr\n"),
        (),
        "stderr",
        [
            "{file}:{line}: attributes.table.columns.points",
            "  table my_table: column points has type 'integr': unknown type name 'integr' (did you mean "
            "'integer'?).",
        ],
    ),
    # A value the YAML's schema refuses, where dg's YAML check did not see it (see below).
    "a delete rule not among its choices": (
        ("deletes: clear-columns", "deletes: clear_columns"),
        ("--no-check-yaml",),
        "stderr",
        [
            "{file}:{line}: attributes.sources[1].deletes",
            "  `deletes` is 'clear_columns', which is not one of remove-row, clear-columns, ignore (did you "
            "mean 'clear-columns'?).",
        ],
    ),
    "a source without its description": (
        (
            "    - name: loyalty\n      description: Loyalty point balance changes; a delete clears the balance.\n",
            "    - name: loyalty\n",
        ),
        ("--no-check-yaml",),
        "stderr",
        [
            "{file}:{line}: attributes.sources[1].description",
            "  `description` is required here: One line: what its records are.",
        ],
    ),
    # Found while the definitions are built, after the declaration parsed: located all the same.
    "a schedule that is no cron": (
        ('schedule: "0 * * * *"', 'schedule: "every hour"'),
        (),
        "stderr",
        [
            "{file}:{line}: attributes.automation.schedule",
            "  table my_table: schedule 'every hour' is not a cron expression (e.g. '0 * * * *').",
        ],
    ),
    # dg's YAML check validates one defs.yaml per component type (the last it finds), so in a project
    # of several tables a misspelled field may reach the load, which refuses it the same way.
    "misspelled field past the YAML check": (
        OP_TIME,
        ("--no-check-yaml",),
        "stderr",
        [
            "{file}:{line}: attributes.sources[0].op_tme",
            "  source has no field 'op_tme' (did you mean 'op_time'?)",
        ],
    ),
}


@pytest.fixture(scope="module")
def dg_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dg project with the scaffolded table `my_table`."""
    project = tmp_path_factory.mktemp("dg") / "project"
    (project / "tables").mkdir(parents=True)
    (project / "tables" / "__init__.py").write_text("", "utf-8")
    (project / "pyproject.toml").write_text(PROJECT_PYPROJECT, "utf-8")
    (project / "definitions.py").write_text(PROJECT_DEFINITIONS, "utf-8")
    (project / ".dagster_home").mkdir()
    (project / ".dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", "utf-8")
    listed = _dg(project, "list", "components")
    assert listed.returncode == 0 and "wide_assets.WideTableComponent" in listed.stdout
    assert listed.stderr == ""
    scaffolded = _dg(project, "scaffold", "defs", "wide_assets.WideTableComponent", "my_table")
    assert scaffolded.returncode == 0, scaffolded.stderr
    assert "Warning" not in scaffolded.stderr, scaffolded.stderr
    assert (project / "data" / "my_table" / "profiles_001.csv").exists()
    return project


@pytest.mark.slow
def test_dg_check_defs_accepts_the_scaffold_and_says_nothing_else(dg_project: Path) -> None:
    checked = _dg(dg_project, "check", "defs")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines() == [
        "All component YAML validated successfully.",
        "All definitions loaded successfully.",
    ]
    assert checked.stderr == ""


def test_only_dagster_pysparks_scaffolder_warning_is_silenced() -> None:
    # A fresh interpreter: pytest resets the warning filters a module installs when it is imported.
    code = textwrap.dedent(
        """
        import warnings
        import dagster as dg
        import wide_assets.component  # what `dg` imports to list the component

        scaffolder = "Class `SparkDeclarativePipelineScaffolder` is currently in preview, and may change."
        user_code = "Class `MyTablesComponent` is currently in preview, and may change."
        warnings.warn(scaffolder, dg.PreviewWarning)
        warnings.warn(user_code, dg.PreviewWarning)
        warnings.warn(user_code, dg.BetaWarning)
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    shown = [line for line in ran.stderr.splitlines() if "Warning: " in line]
    assert [line.split(": ", 1)[1] for line in shown] == [
        "PreviewWarning: Class `MyTablesComponent` is currently in preview, and may change.",
        "BetaWarning: Class `MyTablesComponent` is currently in preview, and may change.",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("case", REFUSALS, ids=list(REFUSALS))
def test_dg_check_defs_reports_a_bad_declaration_as_one_block_first(dg_project: Path, case: str) -> None:
    (good, bad), options, stream, block = REFUSALS[case]
    declaration = dg_project / "tables" / "my_table" / "defs.yaml"
    scaffolded = declaration.read_text("utf-8")
    try:
        text = scaffolded.replace(good, bad, 1)
        assert text != scaffolded
        declaration.write_text(text, "utf-8")
        line = text[: text.index(bad)].count("\n") + 1
        refused = _dg(dg_project, "check", "defs", *options)
    finally:
        declaration.write_text(scaffolded, "utf-8")
    assert refused.returncode == 1
    expected = [entry.format(file=declaration, line=line) for entry in block]
    output = {"stdout": refused.stdout, "stderr": refused.stderr}
    if stream == "stderr":
        # Refused as the definitions load: the block follows the YAML check's verdict, and nothing follows it.
        yaml_checked = [] if "--no-check-yaml" in options else ["All component YAML validated successfully."]
        assert refused.stdout.splitlines() == yaml_checked
        assert refused.stderr.splitlines() == expected
        assert "Traceback" not in refused.stderr and "Stack Trace" not in refused.stderr
    else:
        # The YAML check stops it: the block (its first line, then the YAML around it) comes first.
        assert refused.stdout.splitlines()[0] == expected[0]
        assert "Input should be a valid string" not in refused.stdout
        assert refused.stdout.count("wide_assets.WideTableComponent attributes") == 1
    assert "SparkDeclarativePipelineScaffolder" not in output["stderr"]


# ------------------------------------------------------------------------------------------ runs
@dataclass
class Lake:
    """A declared table's definitions bound to a private lake and the sandbox's landing zone."""

    defs: dg.Definitions
    resources: dict[str, Any]
    instance: dg.DagsterInstance

    def run(self, selection: Any = None) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            assets_and_checks(self.defs),
            instance=self.instance,
            resources=self.resources,
            selection=selection,
            raise_on_error=False,
        )

    def path(self, name: str) -> str:
        return str(self.resources["lake"].path(name))

    def rows(self, spark: Any, name: str) -> set[tuple[Any, ...]]:
        return {tuple(r) for r in WideTable.open(spark, self.path(name)).read().collect()}


def lake(spark: Any, sandbox: DefsFolderSandbox, defs: dg.Definitions, root: Path) -> Lake:
    engine = SparkEngine(engine="sail")
    resources = {
        "spark": engine,
        "lake": LakeSettings(root=str(root / "lake")),
        "landing": LandingZone(root=str(sandbox.project_root / "data")),
    }
    assert engine.spark is spark
    return Lake(defs, resources, dg.DagsterInstance.ephemeral())


def evaluations(result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


# By hand from the scaffold's sample files: c1's newer profile and balance win; c2's loyalty delete
# clears its points but keeps the delete's time (its sequence group moves forward).
SCAFFOLD_ROWS = {
    ("c1", "Ada Lovelace", ts("2025-01-05 10:00:00"), 25, ts("2025-01-05 11:00:00")),
    ("c2", "Grace", ts("2025-01-05 09:01:00"), None, ts("2025-01-05 12:00:00")),
}


def test_the_scaffold_materializes_its_sample_and_converges_until_the_table_is_changed(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path
) -> None:
    from deltalake import DeltaTable

    path, _ = scaffold(sandbox)
    deployment = lake(spark, sandbox, build(sandbox, path), tmp_path)
    result = deployment.run()
    assert result.success
    assert deployment.rows(spark, "my_table/my_table") == SCAFFOLD_ROWS
    assert {name: e.passed for name, e in evaluations(result).items()} == {
        "primary_key_unique_not_null": True,
        "converges_to_source_join": True,
    }
    DeltaTable(deployment.path("my_table/my_table")).update(
        predicate="customer_id = 'c1'", updates={"points": "26"}
    )
    checks = dg.AssetSelection.checks_for_assets(dg.AssetKey(["my_table", "my_table"]))
    convergence = evaluations(deployment.run(checks))["converges_to_source_join"]
    assert not convergence.passed
    assert convergence.metadata["differing_keys_by_column"].value == {"points": 1}
    assert convergence.metadata["examples"].value == ["customer_id='c1': points table=26 expected=25"]


def _failure(result: dg.ExecuteInProcessResult) -> str:
    [failure] = result.get_step_failure_events()
    return f"{failure.step_key}: {step_error(failure).to_string()}"


def test_a_declaration_that_gains_a_source_adds_its_columns_and_nothing_else(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path
) -> None:
    path, doc = scaffold(sandbox)
    doc["attributes"]["history"] = {"track_except": ["profile_ts", "points_ts"]}
    first = lake(spark, sandbox, build(sandbox, path, doc), tmp_path).run()
    assert first.success
    # A third source with its own sequence group; its op-time column is not tracked, its value is.
    table = _table(doc)
    table["columns"].update(tier="string", tier_ts="timestamp")
    table["options"]["fields.tier_ts.sequence-group"] = "tier"
    doc["attributes"]["history"]["track_except"].append("tier_ts")
    doc["attributes"]["sources"].append(
        {
            "name": "tiers",
            "description": "Customer tier changes.",
            "files": ["my_table/tiers*.csv"],
            "columns": {"customer_id": "string", "tier": "string", "changed_at": "timestamp"},
            "feeds": {"tier": "tier", "changed_at": "tier_ts"},
            "op_time": "changed_at",
            "deletes": "clear-columns",
        }
    )
    (sandbox.project_root / "data" / "my_table" / "tiers_001.csv").write_text(
        "_row_kind,customer_id,tier,changed_at\n+I,c1,gold,2025-01-06 09:00:00\n", "utf-8"
    )
    grown = lake(spark, sandbox, build(sandbox, path, doc), tmp_path)
    result = grown.run()
    # The table took the new columns and the tier; the history, started without them, refuses them.
    assert not result.success
    assert "my_table__my_table_history: " in _failure(result)
    assert "does not hold the columns ['tier'] it tracks now" in _failure(result)
    tier = {"c1": ("gold", ts("2025-01-06 09:00:00")), "c2": (None, None)}
    expected = {(*row, *tier[row[0]]) for row in SCAFFOLD_ROWS}
    assert grown.rows(spark, "my_table/my_table") == expected
    # As the refusal says: delete the history, and the next run builds it again from the sources.
    shutil.rmtree(grown.path("my_table/my_table_history"))
    again = grown.run()
    assert again.success and all(e.passed for e in again.get_asset_check_evaluations())
    assert grown.rows(spark, "my_table/my_table") == expected
    # A change that is not an addition is refused by name, and the table stays as it was.
    table["columns"]["points"] = "bigint"
    changed = lake(spark, sandbox, build(sandbox, path, doc), tmp_path).run()
    assert not changed.success
    assert "column 'points': int -> bigint" in _failure(changed)
    assert grown.rows(spark, "my_table/my_table") == expected


def test_an_execute_override_runs_the_tables_asset(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path
) -> None:
    """A subclass's `execute` is what a run of the table's asset does: here it notes the run, then
    applies the sources as the default does, so the table holds the sample's rows."""
    path, doc = scaffold(sandbox)
    marker = tmp_path / "executed"
    (path / "component.py").write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path

            from wide_assets import WideTableComponent


            class Noted(WideTableComponent):
                def execute(self, spark, table, lake):
                    Path({str(marker)!r}).write_text(table.path, "utf-8")
                    return super().execute(spark, table, lake)
            """
        ),
        "utf-8",
    )
    doc["type"] = ".component.Noted"
    deployment = lake(spark, sandbox, build(sandbox, path, doc), tmp_path)
    assert deployment.run().success
    assert marker.read_text("utf-8") == deployment.path("my_table/my_table")
    assert deployment.rows(spark, "my_table/my_table") == SCAFFOLD_ROWS


LATE_PROFILES = {
    "my_table/profiles_001.csv": "customer_id,name,changed_at\nc1,Ada,2025-01-05 09:00:00\nc2,Grace,2025-01-05 09:01:00\n",
    "my_table/profiles_002.csv": "_row_kind,customer_id,name,changed_at\n+U,c1,Ada Lovelace,2025-01-05 10:00:00\n",
    # Arrives last with an older op time: a sequence group keeps the newer name, arrival order does not.
    "my_table/profiles_003.csv": "_row_kind,customer_id,name,changed_at\n+U,c1,A. King,2025-01-05 08:00:00\n",
    "my_table/loyalty_001.csv": "customer_id,points,changed_at\nc1,10,2025-01-05 09:30:00\n",
}


@pytest.mark.parametrize("sequence_groups", [True, False])
def test_convergence_fails_when_the_options_do_not_mean_what_the_declaration_says(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path, sequence_groups: bool
) -> None:
    path, doc = scaffold(sandbox)
    for name, content in LATE_PROFILES.items():
        (sandbox.project_root / "data" / name).write_text(content, "utf-8")
    if not sequence_groups:
        # Plain partial-update: the last record to arrive wins, whatever its op time.
        _table(doc)["options"] = {"merge-engine": "partial-update"}
    deployment = lake(spark, sandbox, build(sandbox, path, doc), tmp_path)
    result = deployment.run()
    convergence = evaluations(result)["converges_to_source_join"]
    name = {r[0]: r[1] for r in deployment.rows(spark, "my_table/my_table")}["c1"]
    if sequence_groups:
        assert result.success and convergence.passed and name == "Ada Lovelace"
    else:
        assert not result.success and not convergence.passed and name == "A. King"
        assert convergence.metadata["differing_keys_by_column"].value == {"name": 1, "profile_ts": 1}


def test_a_failing_convergence_check_first_names_deletes_the_options_do_not_mean(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path
) -> None:
    """The scaffold's loyalty source without its `deletes: clear-columns` line declares the default,
    remove-row, which the table's options do not do (c2's delete only clears its points group): the
    check fails on c2, and its first example says which option or declaration would agree."""
    path, doc = scaffold(sandbox)
    del _source(doc, 1)["deletes"]
    deployment = lake(spark, sandbox, build(sandbox, path, doc), tmp_path)
    convergence = evaluations(deployment.run())["converges_to_source_join"]
    assert not convergence.passed
    first, *differences = convergence.metadata["examples"].value
    assert first == (
        "source loyalty declares deletes: remove-row, but the table's -D of sequence group "
        "fields.points_ts.sequence-group only clears ['points']: add points_ts to the option "
        "partial-update.remove-record-on-sequence-group, or declare deletes: clear-columns"
    )
    assert differences == ["unexpected row customer_id='c2'"]
    assert first in convergence.description


def test_a_listagg_column_keeps_its_convergence_check_which_replays_the_late_record(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path
) -> None:
    """`listagg` no longer turns the check off: by hand, the late 08:00 name is prepended (P8)."""
    path, doc = scaffold(sandbox)
    for name, content in LATE_PROFILES.items():
        (sandbox.project_root / "data" / name).write_text(content, "utf-8")
    _table(doc)["options"]["fields.name.aggregate-function"] = "listagg"
    deployment = lake(spark, sandbox, build(sandbox, path, doc), tmp_path)
    result = deployment.run()
    convergence = evaluations(result)["converges_to_source_join"]
    name = {r[0]: r[1] for r in deployment.rows(spark, "my_table/my_table")}["c1"]
    assert result.success and convergence.passed, convergence.metadata
    assert name == "A. King,Ada,Ada Lovelace"


def test_a_failed_blocking_check_says_the_history_is_not_materialized(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path
) -> None:
    """Dagster skips the history when a blocking check of the table fails: the check's result, the
    run's log and the history asset (an observation) say so, naming the check."""
    path, doc = scaffold(sandbox)
    for name, content in LATE_PROFILES.items():
        (sandbox.project_root / "data" / name).write_text(content, "utf-8")
    _table(doc)["options"] = {"merge-engine": "partial-update"}  # the late profile wins: no convergence
    doc["attributes"]["history"] = {"track": ["name", "points"]}
    deployment = lake(spark, sandbox, build(sandbox, path, doc), tmp_path)
    result = deployment.run()
    convergence = evaluations(result)["converges_to_source_join"]
    history = dg.AssetKey(["my_table", "my_table_history"])
    assert not convergence.passed
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    assert dg.AssetKey(["my_table", "my_table"]) in materialized and history not in materialized
    assert convergence.metadata["not_materialized"].value == ["my_table/my_table_history"]
    observed = [
        e.asset_observation_data.asset_observation for e in result.all_events if e.is_asset_observation
    ]
    [note] = [str(o.metadata["not_materialized"].value) for o in observed if o.asset_key == history]
    assert "my_table/my_table_history is not materialized" in note and "converges_to_source_join" in note
    assert any(e.message and note in e.message for e in result.all_events)  # the run's log


@pytest.mark.parametrize("quarantine", ["warn", "block"])
def test_quarantined_records_show_per_source_on_the_table_and_may_block_the_run(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path, quarantine: str
) -> None:
    path, doc = scaffold(sandbox)
    _source(doc, 1)["max_bad_records"] = 5
    doc["attributes"]["checks"]["quarantine"] = quarantine
    # Without `block`, the growth check is one of the source warnings.
    doc["attributes"]["checks"]["source_health"] = {"max_lag_hours": 10**6}
    bad = "customer_id,points,changed_at\nc3,lots,2025-01-05 13:00:00\nc3,7,2025-01-05 13:01:00\n"
    (sandbox.project_root / "data" / "my_table" / "loyalty_002.csv").write_text(bad, "utf-8")
    deployment = lake(spark, sandbox, build(sandbox, path, doc), tmp_path)
    result = deployment.run()
    growth = evaluations(result)["loyalty_quarantine_growth"]
    assert not growth.passed and growth.metadata["quarantined_last_run"].value == 1
    table = result.asset_materializations_for_node("my_table__my_table")
    if quarantine == "warn":
        assert result.success and growth.severity == dg.AssetCheckSeverity.WARN
        assert table[0].metadata["quarantined_records"].value == {"loyalty": 1}
    else:
        # Blocking: the run fails before the table applies loyalty's good record (c3, 7).
        assert not result.success and growth.severity == dg.AssetCheckSeverity.ERROR and not table


def test_a_convergence_check_turned_off_says_so_on_the_tables_checks(
    sandbox: DefsFolderSandbox, tmp_path: Path
) -> None:
    path, doc = scaffold(sandbox)
    doc["attributes"]["checks"]["convergence"] = False
    defs = build(sandbox, path, doc)
    key = dg.AssetCheckKey(dg.AssetKey(["my_table", "my_table"]), "converges_to_source_join")
    [check] = [c for c in defs.asset_checks or [] if key in c.check_keys]
    [spec] = check.check_specs
    assert not spec.blocking and spec.description is not None
    assert spec.description.startswith(
        "Off: the declaration of my_table turned it off (checks: convergence: false)"
    )
    evaluation = check()
    assert isinstance(evaluation, dg.AssetCheckResult)
    assert evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN
    assert evaluation.description is not None and evaluation.description.startswith(
        "Not judged: the declaration"
    )


@pytest.mark.parametrize("options_ignore_deletes", [True, False])
def test_declared_ignored_deletes_are_ignored_whatever_the_options(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path, options_ignore_deletes: bool
) -> None:
    """`deletes: ignore` drops the source's retractions before the merge: without `ignore-delete`
    the table's sequence group would clear the columns (P10)."""
    path, doc = scaffold(sandbox)
    _source(doc, 1)["deletes"] = "ignore"
    if options_ignore_deletes:
        # Every delete of the table: Paimon refuses ignore-delete beside remove-record-on-sequence-group.
        options = _table(doc)["options"]
        del options["partial-update.remove-record-on-sequence-group"]
        options["ignore-delete"] = True
        _source(doc, 0)["deletes"] = "ignore"
    deployment = lake(spark, sandbox, build(sandbox, path, doc), tmp_path)
    result = deployment.run()
    convergence = evaluations(result)["converges_to_source_join"]
    c2 = {r[0]: r for r in deployment.rows(spark, "my_table/my_table")}["c2"]
    # By hand: c2's loyalty delete is ignored, its balance and time stay.
    assert result.success and convergence.passed
    assert c2 == ("c2", "Grace", ts("2025-01-05 09:01:00"), 5, ts("2025-01-05 09:31:00"))


ACCOUNTS = """\
type: wide_assets.WideTableComponent
attributes:
  table:
    name: accounts
    description: Per account, its plan and its balance.
    columns: {account_id: bigint, plan: string, plan_ts: timestamp, balance: "decimal(12,2)", balance_ts: timestamp}
    primary_key: [account_id]
    options:
      merge-engine: partial-update
      fields.plan_ts.sequence-group: plan
      fields.balance_ts.sequence-group: balance
  sources:
    - name: plans
      description: Plan changes, landed as Parquet files.
      format: parquet
      files: ["plans/*.parquet"]
      columns: {account_id: bigint, plan: string, ts: timestamp}
      feeds: {plan: plan, ts: plan_ts}
      op_time: ts
      deletes: clear-columns
    - name: balances
      description: Balance changes, appended to a Delta table by another system.
      format: delta
      table: balances
      columns: {account_id: bigint, balance: "decimal(12,2)", ts: timestamp}
      feeds: {balance: balance, ts: balance_ts}
      op_time: ts
      deletes: clear-columns
"""


def test_parquet_and_delta_sources(spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path) -> None:
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    landing = sandbox.project_root / "data"
    (landing / "plans").mkdir(parents=True)
    path = sandbox.defs_folder_path / "accounts"
    path.mkdir()
    (path / "defs.yaml").write_text(ACCOUNTS, "utf-8")

    def changes(*rows: tuple[Any, ...], value: str, value_type: pa.DataType) -> pa.Table:
        names = ["_row_kind", "account_id", value, "ts"]
        types = [pa.string(), pa.int64(), value_type, pa.timestamp("us")]
        return pa.table(
            [pa.array(list(column), t) for column, t in zip(zip(*rows, strict=True), types, strict=True)],
            names=names,
        )

    plan = {"value": "plan", "value_type": pa.string()}
    balance = {"value": "balance", "value_type": pa.decimal128(12, 2)}
    pq.write_table(
        changes(("+I", 1, "free", ts("2025-02-01 09:00")), ("+I", 2, "pro", ts("2025-02-01 09:05")), **plan),
        landing / "plans" / "plans_001.parquet",
    )
    pq.write_table(
        changes(("+U", 1, "pro", ts("2025-02-02 09:00")), **plan), landing / "plans" / "plans_002.parquet"
    )
    write_deltalake(
        landing / "balances",
        changes(
            ("+I", 1, Decimal("10.00"), ts("2025-02-01 09:00")),
            ("+I", 2, Decimal("5.50"), ts("2025-02-01 09:00")),
            **balance,
        ),
    )
    write_deltalake(
        landing / "balances",
        changes(
            ("+U", 2, Decimal("7.25"), ts("2025-02-03 09:00")),
            ("-D", 1, Decimal("10.00"), ts("2025-02-04 09:00")),
            **balance,
        ),
        mode="append",
    )
    deployment = lake(spark, sandbox, build(sandbox, path), tmp_path)
    result = deployment.run()
    assert result.success
    assert all(e.passed for e in result.get_asset_check_evaluations())
    # By hand: account 1 moved to pro and its balance was deleted (cleared, at the delete's time).
    assert deployment.rows(spark, "accounts/accounts") == {
        (1, "pro", ts("2025-02-02 09:00"), None, ts("2025-02-04 09:00")),
        (2, "pro", ts("2025-02-01 09:05"), Decimal("7.25"), ts("2025-02-03 09:00")),
    }
    again = deployment.run()
    assert again.success
    appended = {
        e.materialization.asset_key.path[-1]: e.materialization.metadata["rows_appended"].value
        for e in again.get_asset_materialization_events()
        if "rows_appended" in e.materialization.metadata
    }
    assert appended == {"plans": 0, "balances": 0}

    # Rewriting the Delta source would offer its records again under new file names: refused.
    write_deltalake(
        landing / "balances",
        changes(("+I", 3, Decimal("1.00"), ts("2025-02-05 09:00")), **balance),
        mode="overwrite",
    )
    refused = deployment.run(dg.AssetSelection.assets(dg.AssetKey(["accounts", "balances"])))
    assert not refused.success
    [failure] = refused.get_step_failure_events()
    assert "the Delta table" in step_error(failure).to_string()
    assert "is not append-only (version 2: WRITE" in step_error(failure).to_string()


QUESTIONS = """\
type: wide_assets.WideTableComponent
attributes:
  table:
    name: products
    description: Per product, its name and its count of open questions.
    columns: {product_id: bigint, name: string, name_ts: timestamp, open_cnt: bigint, questions_ts: timestamp}
    primary_key: [product_id]
    options:
      merge-engine: partial-update
      fields.name_ts.sequence-group: name
      fields.questions_ts.sequence-group: open_cnt
  source_defaults: {op_time: ts, deletes: clear-columns}
  sources:
    - name: catalog
      description: Product names.
      files: ["products/catalog_*.csv"]
      columns: {product_id: bigint, name: string, ts: timestamp}
      feeds: {name: name, ts: name_ts}
    - name: questions
      description: Questions on products; one may move to another product.
      files: ["products/questions_*.csv"]
      columns: {question_id: bigint, product_id: bigint, status: string, ts: timestamp}
      primary_key: [question_id]
      key_columns: [product_id]
      feeds: {status: open_cnt, ts: questions_ts}
      aggregates: {open_cnt: "count_if(_live AND status = 'open')"}
"""
Question = tuple[str, int, int, str, str]


def _open_questions(landed: list[Question]) -> dict[int, tuple[int, datetime]]:
    """Plain Python: per product any record named, its questions whose latest record (by op time, then
    arrival) holds it, is live and open, counted; and the newest op time of a record naming it."""
    latest: dict[int, tuple[tuple[datetime, int], Question]] = {}
    for arrival, record in enumerate(landed):
        order = (ts(record[4]), arrival)
        if record[1] not in latest or order >= latest[record[1]][0]:
            latest[record[1]] = (order, record)
    return {
        product: (
            sum(
                1
                for _, (kind, _, held, status, _) in latest.values()
                if held == product and kind in ("+I", "+U") and status == "open"
            ),
            max(ts(r[4]) for r in landed if r[2] == product),
        )
        for product in {r[2] for r in landed}
    }


def test_declared_aggregates_compute_a_sources_rows_as_its_keys_move(
    spark: Any, sandbox: DefsFolderSandbox, tmp_path: Path
) -> None:
    landing = sandbox.project_root / "data" / "products"
    landing.mkdir(parents=True)
    path = sandbox.defs_folder_path / "products"
    path.mkdir()
    (path / "defs.yaml").write_text(QUESTIONS, "utf-8")

    def land(name: str, header: str, rows: list[tuple[Any, ...]]) -> None:
        lines = [header, *(",".join(str(v) for v in row) for row in rows)]
        (landing / name).write_text("\n".join(lines) + "\n", "utf-8")

    names = {1: ("A", "2025-03-01 08:00:00"), 2: ("B", "2025-03-01 08:00:00")}
    land("catalog_001.csv", "_row_kind,product_id,name,ts", [("+I", p, n, t) for p, (n, t) in names.items()])
    first: list[Question] = [
        ("+I", 1, 1, "open", "2025-03-01 09:00:00"),
        ("+I", 2, 1, "open", "2025-03-01 09:00:00"),
        ("+I", 3, 2, "closed", "2025-03-01 09:00:00"),
        ("+I", 5, 3, "open", "2025-03-01 09:00:00"),
        # Question 7 moves to product 5 by a lone +U: product 2, which the next run touches, must not
        # count its older record there.
        ("+I", 7, 2, "open", "2025-03-01 09:00:00"),
        ("+U", 7, 5, "open", "2025-03-01 09:30:00"),
    ]
    # Question 1 moves to product 2, question 2 is deleted, a late record of question 3 loses to its
    # newer one, question 4 names a product the catalog never had, and question 5 moves from product
    # 3 to product 1 (its -U landing after its +U).
    second: list[Question] = [
        ("-U", 1, 1, "open", "2025-03-02 09:00:00"),
        ("+U", 1, 2, "open", "2025-03-02 09:00:00"),
        ("-D", 2, 1, "open", "2025-03-03 09:00:00"),
        ("+U", 3, 2, "open", "2025-03-01 08:30:00"),
        ("+I", 4, 4, "open", "2025-03-02 10:00:00"),
        ("+U", 5, 1, "open", "2025-03-02 11:00:00"),
        ("-U", 5, 3, "open", "2025-03-02 11:00:00"),
    ]
    header = "_row_kind,question_id,product_id,status,ts"
    deployment = lake(spark, sandbox, build(sandbox, path), tmp_path)
    for run, (batch, landed) in enumerate(((first, first), (second, first + second)), start=1):
        land(f"questions_{run:03}.csv", header, list(batch))
        result = deployment.run()
        assert result.success and all(e.passed for e in result.get_asset_check_evaluations()), run
        expected = {
            (p, *((names[p][0], ts(names[p][1])) if p in names else (None, None)), count, time)
            for p, (count, time) in _open_questions(landed).items()
        }
        assert deployment.rows(spark, "products/products") == expected, run
