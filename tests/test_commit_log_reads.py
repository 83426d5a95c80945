"""The commit log read back through the engine: a commit's entries come from the files that hold them
(pruned by each file's statistics, not read from the whole log), equal what the whole log holds, and
the log is checkpointed like the table, so that neither replays its whole history on every open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from deltalake import DeltaTable

from wide_assets import WideTable
from wide_assets.table.log import Origin
from wide_assets.table.log_frames import log_entries, log_files

ENTRY = ("_commit", "_row_kind", "k", "v")


def test_a_commits_entries_come_from_its_own_files_and_equal_the_whole_logs(
    spark: Any, tmp_path: Path
) -> None:
    table = WideTable.create(
        spark,
        tmp_path / "t",
        [("k", "INT"), ("v", "STRING")],
        ["k"],
        {"merge-engine": "partial-update", "changelog-producer": "lookup"},
    )
    for i in range(12):
        table.write(spark.createDataFrame([(i % 5, f"v{i}"), (100 + i, "x")], "k INT, v STRING"))
    storage = table._storage
    whole = DeltaTable(table.changelog_path).to_pyarrow_table().to_pylist()
    for commit in (1, 7, 12):
        expected = sorted(
            tuple(r[c] for c in ENTRY) for r in whole if r["_commit"] == commit and r["_origin"] == "merged"
        )
        assert expected, f"commit {commit} logged no merged entries"
        read = log_entries(storage, [commit], Origin.MERGED).select(*ENTRY).collect()
        assert sorted(tuple(r) for r in read) == expected
        # Only files holding such rows are read: not every file of the log.
        for uri in log_files(storage, commit, commit, Origin.MERGED):
            rows = pq.read_table(uri, columns=["_commit", "_origin"]).to_pylist()
            assert {"_commit": commit, "_origin": "merged"} in rows, f"{uri} was read for commit {commit}"
    for path in (table.path, table.changelog_path):
        assert any(p.name.endswith(".checkpoint.parquet") for p in Path(path, "_delta_log").iterdir()), path
