"""Two writers on one table at once (two runs with records landing between them, or a run and a
compaction): serialized by the table's lock or retried after a detected conflict, never a lost update."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from bench.reliability import concurrent_trials


def test_concurrent_writers_lose_and_double_nothing(spark: Any, tmp_path: Path) -> None:
    trials = concurrent_trials(spark, tmp_path, 4, random.Random(5), progress=print)
    assert [t.problems for t in trials] == [()] * 4, trials
    assert [t.kind for t in trials] == ["two runs", "run + compaction"] * 2


def test_two_ingests_of_one_source_at_once_append_each_record_once(spark: Any, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from demos import declared
    from wide_assets.pipelines.ingest import ingest, landed_files

    pricing = declared("product_360").spec.source("pricing")
    files = landed_files(Path("data"), pricing)
    path = str(tmp_path / "pricing")
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: ingest(spark, pricing, files, path), range(2)))
    # One run appended the file; the other, waiting on the table's lock, found it already ingested.
    assert sorted(r.appended > 0 for r in results) == [False, True]
    rows = spark.read.format("delta").load(path)
    lines = sum(1 for f in files for line in f.path.read_bytes().splitlines() if line.strip())
    assert rows.count() == max(r.appended for r in results) <= lines
    assert rows.select("_source_file", "_source_line").distinct().count() == rows.count()
