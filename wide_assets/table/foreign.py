"""Commits other Delta writers made to a wide table since its last own commit, and which of them the
table cannot accept: those that change its rows (an INSERT, UPDATE, DELETE or MERGE by another job) or
its schema behind the commit log. Rearranging files (OPTIMIZE, Z-ORDER: `dataChange: false`), table
properties, protocol upgrades and VACUUM change no row and are accepted. (A table whose property
holding the definition was removed is refused when it is opened: `definition.stored_definition`.)

A table commit of ours carries the `txn` action of APP_ID, so the commits to examine are those after
the newest one that carries it; normally that is the latest, and one small JSON file is read.
"""

from __future__ import annotations

import json
from typing import Any

from wide_assets.errors import TableStateError
from wide_assets.table.arbiter import APP_ID
from wide_assets.table.delta_log import commit_actions
from wide_assets.table.objects import TableFiles
from wide_assets.table_definition import BUCKET_COLUMN, TableDefinition

__all__ = ["foreign_changes", "refuse_foreign_changes"]

WAY_OUT = (
    "Nothing was written. The table must hold exactly the rows its commit log says: write such changes "
    "through WideTable.write (or a source), then run WideTable.rebuild(), which rewrites the table from "
    "its commit log (dropping the other writer's rows) and makes it writable again."
)


def foreign_changes(files: TableFiles, version: int, definition: TableDefinition) -> list[str]:
    """What each commit up to `version`, after the table's newest own commit, changes that the table
    (of `definition`) cannot accept, newest first (empty when there is nothing)."""
    from obstore.exceptions import NotFoundError

    problems: list[str] = []
    # Only the newest metadata in force matters: an older one (the creation's, before the definition
    # was recorded) was replaced.
    newest_metadata = True
    for at in range(version, -1, -1):
        try:
            actions = commit_actions(files, at)
        except (NotFoundError, FileNotFoundError):
            # Delta's log clean-up removed it: every commit before it was examined when it was newest.
            break
        if any(action.get("txn", {}).get("appId") == APP_ID for action in actions):
            break
        problem = _rows_changed(actions)
        metadata = next((a["metaData"] for a in actions if "metaData" in a), None)
        if metadata is not None and newest_metadata:
            newest_metadata = False
            problem = problem or _schema_problem(metadata, definition)
        if problem:
            info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
            who = f"{info.get('operation', 'a commit')} by {info.get('engineInfo', 'an unknown writer')}"
            problems.append(f"version {at} ({who}) {problem}")
    return problems


def refuse_foreign_changes(files: TableFiles, version: int, definition: TableDefinition) -> None:
    """Raise TableStateError naming each commit up to `version` the table cannot accept."""
    problems = foreign_changes(files, version, definition)
    if problems:
        raise TableStateError(
            f"Another writer changed the wide table {files.root} behind its commit log: "
            f"{'; '.join(problems)}. {WAY_OUT}"
        )


def _rows_changed(actions: list[dict[str, Any]]) -> str | None:
    changed = [
        kind
        for action in actions
        for kind in ("add", "remove")
        if kind in action and action[kind].get("dataChange", True)
    ]
    if changed:
        return f"adds or removes rows ({changed.count('add')} files added, {changed.count('remove')} removed)"
    return None


def _schema_problem(metadata: dict[str, Any], definition: TableDefinition) -> str | None:
    expected = [*definition.column_names, *([BUCKET_COLUMN] if definition.bucketing is not None else [])]
    columns = [field["name"] for field in json.loads(metadata["schemaString"])["fields"]]
    if columns != expected:
        return f"changes the columns to {columns}, where the definition has {expected}"
    return None
