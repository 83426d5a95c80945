"""Which commits of other Delta writers a wide table accepts, on Delta logs written by hand as
delta-spark writes them: rearranged files, properties and VACUUM are accepted; rows or columns changed
behind the commit log are named, newest first, and only those after the table's newest own commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wide_assets.errors import TableStateError
from wide_assets.table.arbiter import APP_ID
from wide_assets.table.definition import SPEC_PROPERTY
from wide_assets.table.foreign import foreign_changes, refuse_foreign_changes
from wide_assets.table.objects import TableFiles
from wide_assets.table_definition import TableDefinition

DEFINITION = TableDefinition.build([("k", "int"), ("v", "string")], ["k"], {"merge-engine": "deduplicate"})
SPARK = "Apache-Spark/4.0.1 Delta-Lake/4.0.1"


def metadata(columns: list[str], definition: str | None = DEFINITION.to_json()) -> dict[str, Any]:
    fields = [{"name": c, "type": "string", "nullable": True, "metadata": {}} for c in columns]
    configuration = {} if definition is None else {SPEC_PROPERTY: definition}
    return {
        "metaData": {
            "schemaString": json.dumps({"type": "struct", "fields": fields}),
            "configuration": configuration,
        }
    }


def info(operation: str, engine: str = SPARK) -> dict[str, Any]:
    return {"commitInfo": {"operation": operation, "engineInfo": engine}}


def file(kind: str, data_change: bool) -> dict[str, Any]:
    return {kind: {"path": f"part-{kind}.parquet", "dataChange": data_change}}


OURS = [info("MERGE", "wide_assets"), {"txn": {"appId": APP_ID, "version": 1}}, file("add", True)]
CREATED = [
    [info("CREATE TABLE", "delta-rs:py-1.6.6"), metadata(["k", "v"], definition=None)],
    [info("SET TBLPROPERTIES", "delta-rs:py-1.6.6"), metadata(["k", "v"])],
    OURS,
]


def table(tmp_path: Path, commits: list[list[dict[str, Any]]]) -> TableFiles:
    log = tmp_path / "_delta_log"
    log.mkdir()
    for version, actions in enumerate(commits):
        (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return TableFiles(str(tmp_path))


def test_maintenance_by_another_writer_is_accepted(tmp_path: Path) -> None:
    files = table(
        tmp_path,
        [
            *CREATED,
            [info("OPTIMIZE"), file("remove", False), file("add", False)],
            [info("SET TBLPROPERTIES"), metadata(["k", "v"])],
            [info("VACUUM START")],
            [info("VACUUM END")],
        ],
    )
    assert foreign_changes(files, 6, DEFINITION) == []


def test_rows_or_columns_changed_behind_the_log_are_named_newest_first(tmp_path: Path) -> None:
    files = table(
        tmp_path,
        [
            *CREATED,
            [info("WRITE"), file("add", True)],
            [info("OPTIMIZE"), file("remove", False), file("add", False)],
            [info("ADD COLUMNS"), metadata(["k", "v", "extra"])],
            [info("DELETE"), file("remove", True)],
        ],
    )
    assert foreign_changes(files, 6, DEFINITION) == [
        f"version 6 (DELETE by {SPARK}) adds or removes rows (0 files added, 1 removed)",
        f"version 5 (ADD COLUMNS by {SPARK}) changes the columns to ['k', 'v', 'extra'], where the definition has ['k', 'v']",
        f"version 3 (WRITE by {SPARK}) adds or removes rows (1 files added, 0 removed)",
    ]
    with pytest.raises(TableStateError, match=r"behind its commit log: version 6 .*WideTable.rebuild\(\)"):
        refuse_foreign_changes(files, 6, DEFINITION)


def test_only_commits_after_the_newest_own_commit_count(tmp_path: Path) -> None:
    files = table(tmp_path, [*CREATED[:2], [info("WRITE"), file("add", True)], OURS, [info("OPTIMIZE")]])
    assert foreign_changes(files, 4, DEFINITION) == []
