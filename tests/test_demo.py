"""The Fluss blog demo through Dagster, checked against the blog itself (the seed document).

The oracle is parsed from the seed's Flink SQL output: the streaming `SELECT * FROM user_rec_wide`
blocks (each one extends the previous by the changelog of one `INSERT INTO`) and the batch snapshot
after Step 8. Nothing expected here is copied by hand from the blog.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster_parts import assets_and_checks, step_error, step_failure_metadata
from engine import spark_resource

from demos import declared, declared_defs
from wide_assets.pipelines import LandingZone, SourceSpec, WideTableSpec, asset_key
from wide_assets.pipelines.assets import lake_name
from wide_assets.pipelines.resources import LakeSettings
from wide_assets.table import WideTable

ROOT = Path(__file__).resolve().parents[1]
SEED = Path(__file__).resolve().parent / "fixtures" / "seed_000_user_rec_wide.txt"
QUERY = "Flink SQL> SELECT * FROM user_rec_wide;"
SPEC = declared("user_rec_wide").spec
DEFS = declared_defs("user_rec_wide")
WIDE_KEY = asset_key(SPEC, SPEC.name)
CHECK_KEY = dg.AssetCheckKey(WIDE_KEY, "primary_key_unique_not_null")
PYTHON_TYPES = {"string": str, "double": float, "int": int}

Row = tuple[Any, ...]  # the wide table's columns, in spec order
Entry = tuple[str, Row]  # (row kind, row)


# ------------------------------------------------------------------------------------------ oracle
@dataclass(frozen=True)
class Block:
    """One tableau result of the seed's `SELECT * FROM user_rec_wide`, at a line of the document."""

    line: int
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _blocks(lines: list[str]) -> list[Block]:
    blocks = []
    for start, text in enumerate(lines):
        if text.strip() != QUERY:
            continue
        table = []
        for line in lines[start + 1 :]:
            if not line.startswith(("|", "+")):
                break
            if line.startswith("|"):
                table.append(tuple(cell.strip() for cell in line.strip().strip("|").split("|")))
        blocks.append(Block(start, table[0], tuple(table[1:])))
    return blocks


def _typed(header: Sequence[str], cells: Sequence[str]) -> Row:
    values = dict(zip(header, cells, strict=True))
    return tuple(
        None if values[name] == "<NULL>" else PYTHON_TYPES[type_](values[name])
        for name, type_ in SPEC.columns
    )


@dataclass(frozen=True)
class Seed:
    stages: tuple[tuple[Entry, ...], ...]  # changelog of each INSERT INTO, in the blog's order
    snapshot: frozenset[Row]


def load_seed() -> Seed:
    """The seed's changelog of each INSERT INTO and its final snapshot, as rows of the demo's columns."""
    lines = SEED.read_text(encoding="utf-8").splitlines()
    step6 = next(i for i, line in enumerate(lines) if line.startswith("Step 6:"))
    step8 = next(i for i, line in enumerate(lines) if line.startswith("Step 8:"))
    blocks = _blocks(lines)
    streaming = [b for b in blocks if b.header[0] == "op"]
    assert streaming[-1].line > step6, "the full changelog is printed after Step 6"
    stages: list[tuple[Entry, ...]] = []
    seen: tuple[tuple[str, ...], ...] = ()
    for block in streaming:
        # Each streaming block re-prints the previous one and appends one INSERT's changelog.
        assert block.rows[: len(seen)] == seen
        stages.append(tuple((r[0], _typed(block.header[1:], r[1:])) for r in block.rows[len(seen) :]))
        seen = block.rows
    snapshot = next(b for b in blocks if b.line > step8 and b.header[0] != "op")
    rows = frozenset(_typed(snapshot.header, r) for r in snapshot.rows)
    assert len(stages) == len(SPEC.sources) and len(rows) == len(snapshot.rows) > 0
    return Seed(tuple(stages), rows)


@pytest.fixture(scope="module")
def seed() -> Seed:
    return load_seed()


def _by_key(entries: Sequence[Entry]) -> dict[Row, list[Entry]]:
    """Entries per primary key, in order: the seed prints different keys of one step in any order."""
    grouped: dict[Row, list[Entry]] = defaultdict(list)
    key = [SPEC.column_names.index(k) for k in SPEC.primary_key]
    for kind, row in entries:
        grouped[tuple(row[i] for i in key)].append((kind, row))
    return dict(grouped)


# ------------------------------------------------------------------------------------------ runs
@dataclass
class Deployment:
    """The demo's definitions bound to a private lake and landing zone, on an ephemeral instance."""

    resources: dict[str, Any]
    landing: Path
    instance: dg.DagsterInstance

    def run(self, selection: Any = None) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            assets_and_checks(DEFS),
            instance=self.instance,
            resources=self.resources,
            selection=selection,
            raise_on_error=False,
        )

    def path(self, name: str) -> str:
        lake = self.resources["lake"]
        assert isinstance(lake, LakeSettings)
        return lake.path(lake_name(asset_key(SPEC, name)))

    def table(self) -> WideTable:
        return WideTable.open(self.resources["spark"].spark, self.path(SPEC.name))


def _deploy(spark: Any, root: Path, lake: str | None = None) -> Deployment:
    """The demo with its landing zone under `root` and its lake in `lake` (default `root/lake`)."""
    landing = root / "landing"
    shutil.copytree(ROOT / "data", landing)
    # The resource for the engine under test resolves to the same cached session as the `spark` fixture.
    resources = {
        "spark": spark_resource(),
        "lake": LakeSettings(root=lake or str(root / "lake")),
        "landing": LandingZone(root=str(landing)),
    }
    deployment = Deployment(resources, landing, dg.DagsterInstance.ephemeral())
    assert deployment.resources["spark"].spark is spark
    return deployment


@pytest.fixture
def deployment(spark: Any, tmp_path: Path) -> Deployment:
    return _deploy(spark, tmp_path)


@pytest.fixture(scope="module")
def built(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    """The demo materialized once on the bundled data, shared by the read-only tests."""
    deployment = _deploy(spark, tmp_path_factory.mktemp("demo"))
    assert deployment.run().success
    return deployment


def _materialized(result: dg.ExecuteInProcessResult, name: str) -> dict[str, Any]:
    return {
        k: v.value
        for k, v in result.asset_materializations_for_node(f"{SPEC.group}__{name}")[0].metadata.items()
    }


def _rows(df: Any) -> frozenset[Row]:
    return frozenset(tuple(r[c] for c in SPEC.column_names) for r in df.collect())


def _changelog(table: WideTable) -> dict[int, list[Entry]]:
    commits: dict[int, list[Entry]] = defaultdict(list)
    for r in table.changelog().orderBy("_commit", "_offset").collect():
        commits[r._commit].append((r._row_kind, tuple(r[c] for c in SPEC.column_names)))
    return dict(commits)


def _state(deployment: Deployment) -> dict[str, Any]:
    from deltalake import DeltaTable

    table = deployment.table()
    paths = [deployment.path(s.name) for s in SPEC.sources] + [table.path, table.changelog_path]
    return {
        "versions": [DeltaTable(p).version() for p in paths],
        "commits": table.commits(),
        "changelog_rows": table.changelog().count(),
        "rows": _rows(table.read()),
    }


# ------------------------------------------------------------------------------------------ tests
def test_wide_table_equals_seed_snapshot(built: Deployment, seed: Seed) -> None:
    assert _rows(built.table().read()) == seed.snapshot


def test_changelog_equals_seed_one_commit_per_source(built: Deployment, seed: Seed) -> None:
    table = built.table()
    commits = table.commits()
    assert [c.commit for c in commits] == [1, 2, 3]
    # Sources apply in spec order, each up to its last ingested offset (5 records per file).
    assert [(c.txn.app_id, c.txn.offset) for c in commits if c.txn] == [(s.name, 5) for s in SPEC.sources]
    changelog = _changelog(table)
    assert sorted(changelog) == [1, 2, 3]
    for commit, stage in zip(sorted(changelog), seed.stages, strict=True):
        assert _by_key(changelog[commit]) == _by_key(stage), f"commit {commit}"
    assert {kind for kind, _ in changelog[1]} == {"+I"} and len(changelog[1]) == 5


def test_materialization_metadata(built: Deployment) -> None:
    result = built.run()
    wide = _materialized(result, SPEC.name)
    assert wide["dagster/row_count"] == 5 and wide["commits_this_run"] == 0
    assert [c.name for c in wide["dagster/column_schema"].columns] == list(SPEC.column_names)
    lineage = wide["dagster/column_lineage"].deps_by_column
    assert lineage["click_cnt"] == [
        dg.TableColumnDep(asset_key=asset_key(SPEC, "clicks"), column_name="click_cnt")
    ]
    assert {d.asset_key for d in lineage["user_id"]} == {asset_key(SPEC, s.name) for s in SPEC.sources}
    source = _materialized(result, "recommendations")
    assert source["dagster/row_count"] == 5 and source["latest_op_time"] == "2025-05-16 09:16:45"


def test_rematerializing_without_new_data_changes_nothing(built: Deployment) -> None:
    before = _state(built)
    result = built.run()
    assert result.success
    assert _state(built) == before
    for source in SPEC.sources:
        assert _materialized(result, source.name)["rows_appended"] == 0
    assert _materialized(result, SPEC.name)["commits_this_run"] == 0


def test_new_landed_cdc_file_is_one_more_commit(deployment: Deployment, seed: Seed) -> None:
    assert deployment.run().success
    clicks_version = _source_state(deployment, "clicks")
    (deployment.landing / "clicks_2.csv").write_text("user_id,item_id,click_cnt,clk_ts\n", encoding="utf-8")
    (deployment.landing / "impressions_2.csv").write_text(
        "_row_kind,user_id,item_id,imp_cnt,imp_ts\n"
        "+U,user_101,prod_501,9,2025-05-16 10:00:00\n"
        "+I,user_105,prod_505,1,2025-05-16 10:00:01\n",
        encoding="utf-8",
    )
    result = deployment.run()
    assert result.success
    assert _materialized(result, "impressions")["rows_appended"] == 2
    assert _source_state(deployment, "clicks") == clicks_version  # a header-only file adds nothing
    table = deployment.table()
    last = table.commits()[-1]
    assert last.commit == 4 and last.txn is not None and last.txn[:2] == ("impressions", 7)
    old = next(r for r in seed.snapshot if r[:2] == ("user_101", "prod_501"))
    new = (*old[:3], 9, old[4])
    added = ("user_105", "prod_505", None, 1, None)
    assert _rows(table.read()) == (seed.snapshot - {old}) | {new, added}
    assert _by_key(_changelog(table)[4]) == _by_key([("-U", old), ("+U", new), ("+I", added)])


def test_source_files_landing_late_apply_in_later_runs(deployment: Deployment, seed: Seed) -> None:
    held_back = deployment.landing.parent / "clicks.csv"
    (deployment.landing / "clicks.csv").rename(held_back)
    result = deployment.run()
    assert result.success
    assert _materialized(result, "clicks")["dagster/row_count"] == 0
    assert [c.txn[:2] for c in deployment.table().commits() if c.txn] == [
        ("recommendations", 5),
        ("impressions", 5),
    ]
    held_back.rename(deployment.landing / "clicks.csv")
    result = deployment.run()
    assert result.success
    assert _materialized(result, SPEC.name)["changelog_preview"].startswith(
        "Changelog rows by kind: `+U` 5, `-U` 5"
    )
    changelog = _changelog(deployment.table())
    assert [_by_key(changelog[c]) for c in sorted(changelog)] == [_by_key(stage) for stage in seed.stages]
    assert _rows(deployment.table().read()) == seed.snapshot


def _duplicate_first_row(spark: Any, path: str) -> None:
    """Append a second row for an existing key behind the engine's back, as a corrupted table would have
    (the demo table has fixed buckets: the row goes to bucket 0)."""
    spark.createDataFrame(
        [("user_101", "prod_501", 0.5, 1, 1, 0)],
        ", ".join(f"{name} {type_}" for name, type_ in [*SPEC.columns, ("_bucket", "int")]),
    ).write.format("delta").mode("append").partitionBy("_bucket").save(path)


def test_key_check_passes_and_fails_on_duplicate_key(spark: Any, deployment: Deployment) -> None:
    result = deployment.run()
    assert result.success
    assert {e.check_name: e.passed for e in result.get_asset_check_evaluations()} == {
        "primary_key_unique_not_null": True,
        "converges_to_source_join": True,
    }
    _duplicate_first_row(spark, deployment.path(SPEC.name))
    result = deployment.run(selection=dg.AssetSelection.checks(CHECK_KEY))
    assert not result.success  # blocking
    [evaluation] = result.get_asset_check_evaluations()
    assert not evaluation.passed
    assert evaluation.metadata["duplicate_keys"].value == 1
    assert evaluation.metadata["null_keys"].value == 0
    assert evaluation.metadata["examples"].value == ["2 rows: user_id='user_101', item_id='prod_501'"]


def test_bad_value_fails_ingest_naming_column_and_line(deployment: Deployment) -> None:
    recommendations = [asset_key(SPEC, "recommendations")]
    assert deployment.run(selection=recommendations).success
    before = _source_state(deployment, "recommendations")
    (deployment.landing / "recommendations_2.csv").write_text(
        "user_id,item_id,rec_score,rec_ts\n"
        "user_105,prod_505,0.5,2025-05-16 10:00:00\n"
        "user_105,prod_506,high,2025-05-16 10:00:01\n",
        encoding="utf-8",
    )
    result = deployment.run(selection=recommendations)
    assert not result.success
    [failure] = result.get_step_failure_events()
    message = step_error(failure).message
    assert 'recommendations_2.csv line 3: column rec_score: "high" is not a valid double' in message
    assert step_failure_metadata(failure)["bad_records"].value == 1
    assert _source_state(deployment, "recommendations") == before


def _source_state(deployment: Deployment, name: str) -> tuple[int, int]:
    from deltalake import DeltaTable

    path = deployment.path(name)
    rows = deployment.resources["spark"].spark.read.format("delta").load(path).count()
    return DeltaTable(path).version(), rows


def test_definitions_load_without_starting_spark() -> None:
    # A fresh interpreter: this one already runs Sail for the other tests.
    code = textwrap.dedent(
        """
        import sys
        import dagster as dg
        import definitions
        import wide_assets.session as session
        dg.Definitions.validate_loadable(definitions.defs)
        assert definitions.defs.resolve_job_def("user_rec_wide_job") is not None
        assert session._sessions == {} and session._sail_server is None
        assert "pysail.spark" not in sys.modules
        """
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_the_demos_expected_warnings_are_checks_of_the_code_location() -> None:
    # A fresh interpreter, as above; a misspelled key would never be printed beside its failure.
    code = textwrap.dedent(
        """
        import definitions
        from demos.__main__ import EXPECTED_WARNINGS
        checks = set(definitions.defs.get_repository_def().asset_checks_defs_by_key)
        assert set(EXPECTED_WARNINGS) <= checks, set(EXPECTED_WARNINGS) - checks
        """
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


@pytest.mark.slow
def test_demo_prints_the_table_and_exits_non_zero_on_a_failed_check(spark: Any, tmp_path: Path) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home), "WIDE_ASSETS_LAKE": str(tmp_path / "lake")}
    env.pop("WIDE_ASSETS_ENV", None)

    def demo() -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "demos"]
        return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)

    first = demo()
    assert first.returncode == 0, first.stderr
    assert ", 3 commits):" in first.stdout
    assert "primary_key_unique_not_null: PASSED" in first.stdout
    _duplicate_first_row(spark, str(tmp_path / "lake" / SPEC.group / SPEC.name))
    second = demo()
    assert second.returncode == 1
    assert "'commits_this_run': 0" in second.stdout
    assert "primary_key_unique_not_null: FAILED" in second.stdout


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"feeds": {"rec_score": "score"}}, "not value columns"),
        ({"feeds": {"nope": "rec_score"}}, "not among its columns"),
        ({"primary_key": ("user_id",)}, "one to one"),
        ({"op_time": "ts"}, "op-time"),
    ],
)
def test_spec_rejects_inconsistent_sources(change: dict[str, Any], message: str) -> None:
    source = SPEC.sources[0]
    fields = {
        f: getattr(source, f) for f in ("name", "description", "files", "columns", "primary_key", "feeds")
    }
    with pytest.raises(ValueError, match=message):
        WideTableSpec(
            name=SPEC.name,
            description=SPEC.description,
            group=SPEC.group,
            columns=SPEC.columns,
            primary_key=SPEC.primary_key,
            sources=(SourceSpec(**{**fields, **change}),),
        )
