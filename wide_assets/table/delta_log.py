"""The wide table's Delta log read and written directly: the live files of a snapshot with their deletion
vectors (delta-rs does not expose those), and a commit written as exactly the next version.

delta-rs's Python `AddAction` cannot carry a deletion vector, so commits that add or change vectors are
written here: one JSON file `_delta_log/<version>.json`, created with a put-if-absent, so that of two
writers that read version N exactly one lands N + 1 and the other gets `Conflict`, the same
arbitration delta-rs gives with `max_commit_retries=0` (docs/commit-protocol.md).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import unquote

from wide_assets.table import arbiter
from wide_assets.table.arbiter import APP_ID, Conflict
from wide_assets.table.deletion_vectors import Descriptor
from wide_assets.table.files import DataFile
from wide_assets.table.objects import AlreadyExists, TableFiles

logger = logging.getLogger(__name__)

LOG_DIR = "_delta_log"
# Readers replay at most this many JSON commits after the last checkpoint: Delta's own default
# (`delta.checkpointInterval`). A write opens the table and its commit log about ten times, and each
# open replays them: at 100, a 20-row write spent a third of its time opening tables once the log
# held 70 commits (docs/performance.md, "Writes as a table's history grows").
CHECKPOINT_INTERVAL = 10
CHECKPOINT_FILE = re.compile(r"^(\d{20})\.checkpoint(?:\.\d{10}\.\d{10})?\.parquet$")
COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
ENGINE_INFO = "wide_assets"


def live_files(files: TableFiles, version: int) -> list[DataFile]:
    """The data files of the table as of `version`: the newest checkpoint at or before it, then every
    JSON commit after it, replayed."""
    names = [f.path.rsplit("/", 1)[-1] for f in files.list(LOG_DIR)]
    checkpoints: dict[int, list[str]] = {}
    for name in names:
        match = CHECKPOINT_FILE.match(name)
        if match and int(match.group(1)) <= version:
            checkpoints.setdefault(int(match.group(1)), []).append(name)
    start = max(checkpoints, default=-1)
    live: dict[str, DataFile] = {}
    if start >= 0:
        for name in checkpoints[start]:
            for add in _checkpoint_adds(files, f"{LOG_DIR}/{name}"):
                live[add.path] = add
    for commit in range(start + 1, version + 1):
        for action in commit_actions(files, commit):
            if "add" in action:
                add = _live_file(action["add"])
                live[add.path] = add
            elif "remove" in action:
                live.pop(unquote(action["remove"]["path"]), None)
    return list(live.values())


def vectors_in_use(files: TableFiles, version: int, since: datetime) -> set[str]:
    """The vector files (table-relative) that a snapshot from the time `since` up to `version` can
    read: those of the snapshot in force at `since`, and those every later commit adds."""
    commits = sorted(
        (int(match.group(1)), f.modified)
        for f in files.list(LOG_DIR)
        if (match := COMMIT_FILE.match(f.path.rsplit("/", 1)[-1])) and int(match.group(1)) <= version
    )
    later = [v for v, modified in commits if modified >= since]
    first = max(later[0] - 1, 0) if later else version
    vectors = [f.deletion_vector for f in live_files(files, first)]
    for commit_version in range(first + 1, version + 1):
        for action in commit_actions(files, commit_version):
            vector = action.get("add", {}).get("deletionVector")
            vectors.append(Descriptor.from_action(vector) if vector else None)
    return {v.file_path() for v in vectors if v is not None and v.storage_type == "u"}


def commit_actions(files: TableFiles, version: int) -> list[dict[str, Any]]:
    """The actions of the JSON commit of `version`."""
    text = files.get(f"{LOG_DIR}/{version:020d}.json").decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def commit(files: TableFiles, version: int, actions: Iterable[dict[str, Any]], operation: str) -> None:
    """Write `actions` as the table's version `version`, or raise `Conflict` if it exists already."""
    now = int(time.time() * 1000)
    info = {"commitInfo": {"timestamp": now, "operation": operation, "engineInfo": ENGINE_INFO}}
    lines = [json.dumps(info), *(json.dumps(a, separators=(",", ":")) for a in actions)]
    try:
        files.put_if_absent(f"{LOG_DIR}/{version:020d}.json", ("\n".join(lines) + "\n").encode())
    except AlreadyExists as error:
        raise Conflict(f"Version {version} of {files.root} was committed by another writer.") from error


def txn_action(through: int) -> dict[str, Any]:
    """The application transaction recording that the table holds the log's commits up to `through`."""
    return {"txn": {"appId": APP_ID, "version": through, "lastUpdated": int(time.time() * 1000)}}


def checkpoint_if_due(path: str, version: int) -> None:
    """Write a checkpoint every CHECKPOINT_INTERVAL versions, so that reading a snapshot stays bounded
    (delta-rs checkpoints after its own commits only). Best effort: it follows a commit that landed,
    so a failure is logged, never raised (the next due version writes one); a lost race writes the
    same file."""
    if version % CHECKPOINT_INTERVAL != 0:
        return
    try:
        arbiter.open_table(path, version).create_checkpoint()
    except Exception as error:
        logger.warning(
            "%s: no checkpoint at version %d (reads replay more commits): %s", path, version, error
        )


def _checkpoint_adds(files: TableFiles, path: str) -> list[DataFile]:
    import pyarrow.parquet as pq

    table = pq.read_table(files.open_parquet(path), columns=["add"])
    return [_live_file(add) for add in table.column("add").to_pylist() if add is not None]


def _live_file(add: dict[str, Any]) -> DataFile:
    partitions = add.get("partitionValues") or {}
    if isinstance(partitions, list):  # a checkpoint's map column reads as key-value pairs
        partitions = dict(partitions)
    vector = add.get("deletionVector")
    return DataFile(
        path=unquote(add["path"]),
        size=int(add["size"]),
        modification_time=int(add["modificationTime"]),
        partition_values=partitions,
        stats=add.get("stats"),
        deletion_vector=Descriptor.from_action(vector) if vector else None,
    )
