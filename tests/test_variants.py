"""The first_row and aggregation variants through Dagster: tables, checks, replays, sensors, schedules.

Oracles are independent of the code under test: tables computed by hand from the bundled CSV files,
and a plain-Python replay of randomly generated review CDC streams. Each check the variants add is
shown to fail on a table corrupted behind the engine's back (delta-rs updates and deletes of the
Delta table, or a write that bypasses the exactly-once transaction ids); the shared primary-key check
is shown to fail in test_demo.py.
"""

from __future__ import annotations

import csv
import json
import random
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster_parts import assets, assets_and_checks, examples
from pyroaring import BitMap

from demos import declared, declared_defs
from wide_assets.pipelines import LakeTableSpec, LandingZone, asset_key, table_path
from wide_assets.pipelines.resources import LakeSettings, SparkEngine
from wide_assets.table import WideTable
from wide_assets_defs.product_review_stats import definitions as product_review_stats
from wide_assets_defs.product_review_stats.definitions import (
    PRODUCT_REVIEW_AVERAGES,
    PRODUCT_REVIEW_STATS,
    REVIEWER_IDS,
    REVIEWS,
    review_deltas,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
FIRST_CUSTOMER_TOUCH = declared("first_customer_touch").spec
TOUCH_DEFS = declared_defs("first_customer_touch")
TOUCH_JOB = "first_customer_touch_job"
STATS_JOB = "product_review_stats_job"
TOUCH_SENSOR = "first_customer_touch_new_data_sensor"
STATS_SENSOR = "product_review_stats_new_data_sensor"


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


# ------------------------------------------------------------------------------------------ harness
@dataclass
class Deployment:
    """The code location's definitions bound to a private lake and landing zone, on an ephemeral instance."""

    landing: Path
    resources: dict[str, Any]
    instance: dg.DagsterInstance

    @property
    def defs(self) -> dg.Definitions:
        # As definitions.py merges them, with this deployment's resources.
        return dg.Definitions.merge(
            TOUCH_DEFS, product_review_stats.defs, dg.Definitions(resources=self.resources)
        )

    def land(self, *names: str) -> None:
        """Copy bundled files (paths relative to data/) into the landing zone."""
        for name in names:
            target = self.landing / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(DATA / name, target)

    def run_job(self, name: str) -> dg.ExecuteInProcessResult:
        return self.defs.resolve_job_def(name).execute_in_process(
            instance=self.instance, raise_on_error=False
        )

    def run_checks(self, defs: dg.Definitions, key: dg.AssetKey) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            assets_and_checks(defs),
            instance=self.instance,
            resources=self.resources,
            selection=dg.AssetSelection.checks_for_assets(key),
            raise_on_error=False,
        )

    def path(self, spec: LakeTableSpec, name: str | None = None) -> str:
        return table_path(self.resources["lake"], spec, name)

    def table(self, spec: LakeTableSpec) -> WideTable:
        return WideTable.open(self.resources["spark"].spark, self.path(spec))


@pytest.fixture
def deployment(spark: Any, tmp_path: Path) -> Deployment:
    landing = tmp_path / "landing"
    landing.mkdir()
    # SparkEngine(engine="sail") resolves to the same cached session as the `spark` fixture.
    engine = SparkEngine(engine="sail")
    resources = {
        "spark": engine,
        "lake": LakeSettings(root=str(tmp_path / "lake")),
        "landing": LandingZone(root=str(landing)),
    }
    deployment = Deployment(landing, resources, dg.DagsterInstance.ephemeral())
    assert engine.spark is spark
    return deployment


def checks(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.asset_check_key.to_user_string(): e for e in result.get_asset_check_evaluations()}


def passed(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {name: e.passed for name, e in checks(result).items()}


def materialized(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict[str, Any]:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == key]
    return {k: v.value for k, v in event.step_materialization_data.materialization.metadata.items()}


def rows(table: WideTable) -> set[tuple[Any, ...]]:
    return {tuple(r) for r in table.read().collect()}


def delta_version(path: str) -> int:
    from deltalake import DeltaTable

    return DeltaTable(path).version()


def update(path: str, predicate: str, updates: dict[str, str]) -> None:
    """Change rows of a Delta table behind the engine's back (delta-rs: SQL predicate and expressions)."""
    from deltalake import DeltaTable

    DeltaTable(path).update(updates=updates, predicate=predicate)


# ------------------------------------------------------------------------------------------ first_row
TOUCH_KEY = asset_key(FIRST_CUSTOMER_TOUCH, FIRST_CUSTOMER_TOUCH.name)
EVENTS = ("customer_events/events_001.csv", "customer_events/events_002.csv")
# By hand from events_001.csv: each customer's first line.
FIRST_TOUCHES_001 = {
    ("c001", "page_view", "web", ts("2025-06-01 09:00:00")),
    ("c002", "signup", "mobile", ts("2025-06-01 09:05:00")),
    ("c003", "page_view", "email", ts("2025-06-01 09:12:00")),
    ("c004", "store_visit", "store", ts("2025-06-01 10:00:00")),
}
# events_002.csv adds only customers not seen before; c001/c003/c004's later lines change nothing,
# not even c003's late event whose event_ts is earlier than the touch already recorded.
NEW_IN_002 = {
    ("c005", "page_view", "web", ts("2025-06-02 08:10:00")),
    ("c006", "signup", "partner", ts("2025-06-02 09:00:00")),
}
TOUCH_CHECKS = {
    "first_touch/first_customer_touch:primary_key_unique_not_null",
    "first_touch/first_customer_touch:rows_never_change",
    "first_touch/first_customer_touch:converges_to_source_join",
}


def test_first_touch_keeps_each_customers_first_event_across_runs(deployment: Deployment) -> None:
    deployment.land(EVENTS[0])
    first = deployment.run_job(TOUCH_JOB)
    assert first.success
    assert passed(first) == dict.fromkeys(TOUCH_CHECKS, True)
    table = deployment.table(FIRST_CUSTOMER_TOUCH)
    assert rows(table) == FIRST_TOUCHES_001
    before = table.version

    deployment.land(EVENTS[1])
    second = deployment.run_job(TOUCH_JOB)
    assert second.success
    assert passed(second) == dict.fromkeys(TOUCH_CHECKS, True)
    assert rows(table) == FIRST_TOUCHES_001 | NEW_IN_002
    assert {tuple(r) for r in table.read(version=before).collect()} == FIRST_TOUCHES_001
    # Insert-only changelog: the second commit holds +I for the two new customers and nothing else.
    entries = table.changelog(start_commit=2).collect()
    assert sorted((e._row_kind, e.customer_id) for e in entries) == [("+I", "c005"), ("+I", "c006")]
    metadata = materialized(second, TOUCH_KEY)
    assert metadata["customer_events/offsets"] == "(6, 12]" and metadata["inserted"] == 2


def test_first_touch_replay_changes_nothing(deployment: Deployment) -> None:
    deployment.land(*EVENTS)
    assert deployment.run_job(TOUCH_JOB).success
    version = deployment.table(FIRST_CUSTOMER_TOUCH).version
    replay = deployment.run_job(TOUCH_JOB)
    assert replay.success and all(passed(replay).values())
    assert materialized(replay, TOUCH_KEY)["commits_this_run"] == 0
    assert deployment.table(FIRST_CUSTOMER_TOUCH).version == version
    assert rows(deployment.table(FIRST_CUSTOMER_TOUCH)) == FIRST_TOUCHES_001 | NEW_IN_002


def test_first_touch_checks_fail_when_a_touch_is_overwritten(deployment: Deployment) -> None:
    deployment.land(*EVENTS)
    assert deployment.run_job(TOUCH_JOB).success
    update(deployment.path(FIRST_CUSTOMER_TOUCH), "customer_id = 'c002'", {"first_channel": "'fax'"})
    result = deployment.run_checks(TOUCH_DEFS, TOUCH_KEY)
    assert not result.success  # blocking
    evaluations = checks(result)
    never_changes = evaluations["first_touch/first_customer_touch:rows_never_change"]
    matches = evaluations["first_touch/first_customer_touch:converges_to_source_join"]
    assert not never_changes.passed and not matches.passed
    assert evaluations["first_touch/first_customer_touch:primary_key_unique_not_null"].passed
    assert never_changes.metadata["missing"].value == 1
    assert "customer_id='c002'" in examples(never_changes)[0]
    assert "first_channel='mobile'" in examples(never_changes)[0]
    assert matches.metadata["differing_keys_by_column"].value == {"first_channel": 1}
    assert matches.metadata["examples"].value == [
        "customer_id='c002': first_channel table='fax' expected='mobile'"
    ]


def test_first_touch_checks_fail_when_a_touch_is_removed(deployment: Deployment) -> None:
    from deltalake import DeltaTable

    deployment.land(*EVENTS)
    assert deployment.run_job(TOUCH_JOB).success
    DeltaTable(deployment.path(FIRST_CUSTOMER_TOUCH)).delete("customer_id = 'c005'")
    evaluations = checks(deployment.run_checks(TOUCH_DEFS, TOUCH_KEY))
    never_changes = evaluations["first_touch/first_customer_touch:rows_never_change"]
    matches = evaluations["first_touch/first_customer_touch:converges_to_source_join"]
    assert not never_changes.passed and never_changes.metadata["missing"].value == 1
    assert not matches.passed and matches.metadata["missing"].value == 1
    assert matches.metadata["unexpected"].value == 0


# ------------------------------------------------------------------------------------------ aggregation
STATS_KEY = asset_key(PRODUCT_REVIEW_STATS, PRODUCT_REVIEW_STATS.name)
IDS_KEY = asset_key(REVIEWER_IDS, REVIEWER_IDS.name)
AVERAGES_KEY = asset_key(PRODUCT_REVIEW_AVERAGES, PRODUCT_REVIEW_AVERAGES.name)
REVIEW_FILES = ("reviews/reviews_001.csv", "reviews/reviews_002.csv")
# By hand from reviews_001.csv: r02's correction replaces rating 3 by 4 (net +1) and its time.
# Columns: review_cnt, rating_sum, latest_review_ts, everyone who ever reviewed the product.
STATS_001 = {
    "p1": (2, 9, ts("2025-06-01 11:30:00"), ["alice", "bob"]),
    "p2": (2, 6, ts("2025-06-01 13:00:00"), ["alice", "carol"]),
    "p3": (1, 1, ts("2025-06-01 14:00:00"), ["dave"]),
}
# Then reviews_002.csv: r06 added and corrected 4 -> 3, r08 added (p1); r04 deleted, r07 added (p2:
# carol stays a reviewer: bitmaps cannot forget); r05 deleted (p3 keeps its row with nothing live).
STATS_002 = {
    "p1": (4, 14, ts("2025-06-02 11:00:00"), ["alice", "bob", "carol"]),
    "p2": (2, 9, ts("2025-06-02 10:00:00"), ["alice", "carol", "erin"]),
    "p3": (0, 0, ts("2025-06-01 14:00:00"), ["dave"]),
}
IDS_002 = {("alice", 1), ("bob", 2), ("carol", 3), ("dave", 4), ("erin", 5)}
STATS_CHECKS = {
    "product_reviews/reviewer_ids:primary_key_unique_not_null",
    "product_reviews/reviewer_ids:reviewer_id_unique",
    "product_reviews/reviewer_ids:reviewer_ids_never_change",
    "product_reviews/product_review_stats:primary_key_unique_not_null",
    "product_reviews/product_review_stats:stats_match_reviews",
    "product_reviews/product_review_stats:reviews_applied_once",
    "product_reviews/product_review_averages:primary_key_unique_not_null",
}


def decoded_stats(deployment: Deployment) -> dict[str, tuple[Any, ...]]:
    """The stats table with its bitmaps decoded here, independently, into sorted reviewer names."""
    names = {r.reviewer_id: r.reviewer for r in deployment.table(REVIEWER_IDS).read().collect()}
    return {
        r.product_id: (
            r.review_cnt,
            r.rating_sum,
            r.latest_review_ts,
            sorted(names[i] for i in BitMap.deserialize(bytes(r.reviewers))),
        )
        for r in deployment.table(PRODUCT_REVIEW_STATS).read().collect()
    }


def averages_of(stats: dict[str, tuple[Any, ...]]) -> set[tuple[Any, ...]]:
    return {
        (product, n, total / n if n > 0 else None, latest, len(reviewers))
        for product, (n, total, latest, reviewers) in stats.items()
    }


def test_review_stats_equal_hand_computed_tables(deployment: Deployment) -> None:
    deployment.land(REVIEW_FILES[0])
    first = deployment.run_job(STATS_JOB)
    assert first.success
    assert passed(first) == dict.fromkeys(STATS_CHECKS, True)
    assert decoded_stats(deployment) == STATS_001
    assert rows(deployment.table(PRODUCT_REVIEW_AVERAGES)) == averages_of(STATS_001)

    deployment.land(REVIEW_FILES[1])
    second = deployment.run_job(STATS_JOB)
    assert second.success
    assert passed(second) == dict.fromkeys(STATS_CHECKS, True)
    assert decoded_stats(deployment) == STATS_002
    assert rows(deployment.table(REVIEWER_IDS)) == IDS_002  # the first four kept their ids
    averages = rows(deployment.table(PRODUCT_REVIEW_AVERAGES))
    assert averages == averages_of(STATS_002)
    assert ("p1", 4, 3.5, ts("2025-06-02 11:00:00"), 3) in averages
    # One aggregation record per review record: 7 records in the second file.
    stats = materialized(second, STATS_KEY)
    assert stats["reviews/offsets"] == "(7, 14]" and stats["updated"] == 3
    assert materialized(second, IDS_KEY)["inserted"] == 1
    # Paimon lookup changelog: one -U/+U pair per product touched by the commit.
    entries = deployment.table(PRODUCT_REVIEW_STATS).changelog(start_commit=2).collect()
    assert sorted((e._row_kind, e.product_id) for e in entries) == sorted(
        (kind, p) for p in STATS_002 for kind in ("-U", "+U")
    )


def test_review_replay_changes_nothing(deployment: Deployment) -> None:
    deployment.land(*REVIEW_FILES)
    assert deployment.run_job(STATS_JOB).success
    specs = (REVIEWER_IDS, PRODUCT_REVIEW_STATS, PRODUCT_REVIEW_AVERAGES)
    versions = [delta_version(deployment.path(s)) for s in specs]
    replay = deployment.run_job(STATS_JOB)
    assert replay.success
    assert passed(replay) == dict.fromkeys(STATS_CHECKS, True)
    assert [delta_version(deployment.path(s)) for s in specs] == versions
    for key in (IDS_KEY, STATS_KEY, AVERAGES_KEY):
        assert materialized(replay, key)["commits_this_run"] == 0
    assert decoded_stats(deployment) == STATS_002


def test_stats_checks_fail_on_a_replay_that_bypasses_the_txn(spark: Any, deployment: Deployment) -> None:
    deployment.land(*REVIEW_FILES)
    assert deployment.run_job(STATS_JOB).success
    reviews = spark.read.format("delta").load(deployment.path(PRODUCT_REVIEW_STATS, REVIEWS.name))
    ids = deployment.table(REVIEWER_IDS).read()
    # The same review records again, without the transaction id that makes a write exactly once.
    deployment.table(PRODUCT_REVIEW_STATS).write(review_deltas(spark, reviews, ids))
    assert decoded_stats(deployment)["p1"][:2] == (8, 28)  # double counted
    result = deployment.run_checks(product_review_stats.defs, STATS_KEY)
    assert not result.success
    evaluations = checks(result)
    applied_once = evaluations["product_reviews/product_review_stats:reviews_applied_once"]
    assert not applied_once.passed
    assert applied_once.metadata["examples"].value == [
        "commits [2] were not written from reviews",
        "28 record(s) applied for 14 source record(s) up to offset 14",
    ]
    matches = evaluations["product_reviews/product_review_stats:stats_match_reviews"]
    # p3 has no live review: doubling its (0, 0) changes nothing.
    assert not matches.passed and matches.metadata["unexpected"].value == 2


def test_stats_match_check_fails_on_a_changed_aggregate(deployment: Deployment) -> None:
    deployment.land(*REVIEW_FILES)
    assert deployment.run_job(STATS_JOB).success
    update(deployment.path(PRODUCT_REVIEW_STATS), "product_id = 'p2'", {"rating_sum": "10"})
    evaluations = checks(deployment.run_checks(product_review_stats.defs, STATS_KEY))
    matches = evaluations["product_reviews/product_review_stats:stats_match_reviews"]
    assert not matches.passed
    assert matches.metadata["missing"].value == 1 and matches.metadata["unexpected"].value == 1
    assert any("product_id='p2'" in e and "rating_sum=10" in e for e in examples(matches))
    # The commit log is intact: this corruption is not a replay.
    assert evaluations["product_reviews/product_review_stats:reviews_applied_once"].passed


def test_stats_match_check_fails_on_a_forgotten_reviewer(deployment: Deployment) -> None:
    deployment.land(*REVIEW_FILES)
    assert deployment.run_job(STATS_JOB).success
    # p3's bitmap replaced by an empty one: dave, who deleted his review, is still a reviewer.
    empty = BitMap().serialize().hex()
    update(deployment.path(PRODUCT_REVIEW_STATS), "product_id = 'p3'", {"reviewers": f"X'{empty}'"})
    evaluations = checks(deployment.run_checks(product_review_stats.defs, STATS_KEY))
    matches = evaluations["product_reviews/product_review_stats:stats_match_reviews"]
    assert not matches.passed
    assert "missing (product_id='p3'" in examples(matches)[0]


def test_dictionary_checks_fail_and_block_the_stats(deployment: Deployment) -> None:
    deployment.land(*REVIEW_FILES)
    assert deployment.run_job(STATS_JOB).success
    update(deployment.path(REVIEWER_IDS), "reviewer = 'erin'", {"reviewer_id": "1"})
    result = deployment.run_job(STATS_JOB)
    assert not result.success
    assert passed(result) == {
        "product_reviews/reviewer_ids:primary_key_unique_not_null": True,
        "product_reviews/reviewer_ids:reviewer_id_unique": False,
        "product_reviews/reviewer_ids:reviewer_ids_never_change": False,
    }
    # Blocking: nothing downstream of the broken dictionary ran.
    assert {e.asset_key for e in result.get_asset_materialization_events()} == {
        asset_key(PRODUCT_REVIEW_STATS, REVIEWS.name),
        IDS_KEY,
    }
    evaluation = checks(result)["product_reviews/reviewer_ids:reviewer_id_unique"]
    assert evaluation.metadata["examples"].value == ["2 rows: reviewer_id=1"]


def test_checks_say_not_judged_before_any_data(deployment: Deployment) -> None:
    """Nothing landed: every table is empty and has no commit, so no check has anything to compare."""
    results = [deployment.run_job(TOUCH_JOB), deployment.run_job(STATS_JOB)]
    assert all(r.success for r in results)
    status = {
        name: e.metadata["status"].value
        for r in results
        for name, e in checks(r).items()
        if e.passed and "status" in e.metadata
    }
    assert status == {
        "first_touch/first_customer_touch:primary_key_unique_not_null": "not judged: first_customer_touch has no rows yet.",
        "first_touch/first_customer_touch:rows_never_change": "not judged: first_customer_touch held no rows "
        "before Delta version 1: nothing to compare with.",
        "product_reviews/reviewer_ids:primary_key_unique_not_null": "not judged: reviewer_ids has no rows yet.",
        "product_reviews/reviewer_ids:reviewer_id_unique": "not judged: reviewer_ids has no rows yet.",
        "product_reviews/reviewer_ids:reviewer_ids_never_change": "not judged: reviewer_ids held no rows before "
        "Delta version 1: nothing to compare with.",
        "product_reviews/product_review_stats:primary_key_unique_not_null": "not judged: product_review_stats has "
        "no rows yet.",
        "product_reviews/product_review_stats:reviews_applied_once": "not judged: product_review_stats has no "
        "commit yet.",
        "product_reviews/product_review_averages:primary_key_unique_not_null": "not judged: product_review_averages "
        "has no rows yet.",
    }
    # The description says it too, where the UI shows it first.
    evaluation = checks(results[1])["product_reviews/product_review_stats:reviews_applied_once"]
    assert evaluation.description == "Not judged: product_review_stats has no commit yet."


# ------------------------------------------------------------------------------------------ random CDC
@dataclass(frozen=True)
class Review:
    review_id: str
    product_id: str
    reviewer: str
    rating: int
    review_ts: str

    def record(self, kind: str) -> list[str]:
        return [kind, self.review_id, self.product_id, self.reviewer, str(self.rating), self.review_ts]


def random_review_files(seed: int, files: int, per_file: int) -> list[list[list[str]]]:
    """CDC of a random review history: inserts, corrections (-U/+U, possibly moving the review to
    another product or reviewer) and deletions, each retraction carrying the live before-image."""
    rng = random.Random(seed)
    live: dict[str, Review] = {}
    counter = 0
    out = []
    for _ in range(files):
        records: list[list[str]] = []
        while len(records) < per_file:
            counter += 1
            stamp = f"2025-07-{1 + counter // 1440:02d} {counter // 60 % 24:02d}:{counter % 60:02d}:00"
            action = rng.random()
            if not live or action < 0.5:
                review = Review(
                    f"r{counter:03d}",
                    rng.choice(["p1", "p2", "p3", "p4"]),
                    rng.choice(["ann", "ben", "cat", "dan", "eve", "fay"]),
                    rng.randint(1, 5),
                    stamp,
                )
                live[review.review_id] = review
                records.append(review.record("+I"))
            elif action < 0.8:
                old = live[rng.choice(sorted(live))]
                new = Review(
                    old.review_id,
                    rng.choice([old.product_id, "p1", "p5"]),
                    rng.choice([old.reviewer, old.reviewer, "gus"]),
                    rng.randint(1, 5),
                    stamp,
                )
                live[new.review_id] = new
                records += [old.record("-U"), new.record("+U")]
            else:
                old = live.pop(rng.choice(sorted(live)))
                records.append(old.record("-D"))
        out.append(records)
    return out


def python_review_oracle(records: Sequence[Sequence[str]]) -> dict[str, tuple[Any, ...]]:
    """The stats' definition replayed in plain Python over the records in arrival order."""
    live: dict[str, tuple[str, int]] = {}
    ever: dict[str, tuple[datetime, set[str]]] = {}
    for kind, review_id, product, reviewer, rating, review_ts in records:
        if kind in ("+I", "+U"):
            live[review_id] = (product, int(rating))
            latest, reviewers = ever.get(product, (ts(review_ts), set()))
            ever[product] = (max(latest, ts(review_ts)), reviewers | {reviewer})
        else:
            live.pop(review_id, None)
    result = {}
    for product, (latest, reviewers) in ever.items():
        ratings = [rating for p, rating in live.values() if p == product]
        result[product] = (len(ratings), sum(ratings), latest, sorted(reviewers))
    return result


@pytest.mark.slow
@pytest.mark.parametrize("seed", [7, 2024])
def test_random_review_streams_match_a_python_replay(deployment: Deployment, seed: int) -> None:
    history: list[list[str]] = []
    ids_before: set[tuple[Any, ...]] = set()
    for index, records in enumerate(random_review_files(seed, files=3, per_file=12)):
        path = deployment.landing / "reviews" / f"random_{index}.csv"
        path.parent.mkdir(exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows([["_row_kind", *REVIEWS.column_names], *records])
        history += records
        result = deployment.run_job(STATS_JOB)
        assert result.success
        assert passed(result) == dict.fromkeys(STATS_CHECKS, True)
        expected = python_review_oracle(history)
        assert decoded_stats(deployment) == expected
        assert rows(deployment.table(PRODUCT_REVIEW_AVERAGES)) == averages_of(expected)
        ids = rows(deployment.table(REVIEWER_IDS))
        assert ids_before <= ids  # ids are never reassigned
        assert sorted(i for _, i in ids) == list(range(1, len(ids) + 1))  # dense
        ids_before = ids


# ------------------------------------------------------------------------------------------ sensors
def evaluate(deployment: Deployment, name: str, cursor: str | None) -> Any:
    """One tick of the sensor `name` against the deployment's instance, landing zone and lake."""
    sensor = deployment.defs.resolve_sensor_def(name)
    context = dg.build_sensor_context(
        instance=deployment.instance, cursor=cursor, resources=deployment.resources, sensor_name=name
    )
    return sensor.evaluate_tick(context)


def test_sensor_requests_runs_for_new_files_and_unapplied_versions_only(deployment: Deployment) -> None:
    deployment.land(EVENTS[0])
    tick = evaluate(deployment, TOUCH_SENSOR, None)
    assert len(tick.run_requests) == 1 and tick.skip_message is None
    cursor = tick.cursor
    assert json.loads(cursor)["files"].keys() == {EVENTS[0]}

    tick = evaluate(deployment, TOUCH_SENSOR, cursor)
    assert tick.run_requests == [] and "No new files" in tick.skip_message

    # The run's own ingest creates a source version; the table's materialization records it as applied.
    assert deployment.run_job(TOUCH_JOB).success
    tick = evaluate(deployment, TOUCH_SENSOR, cursor)
    assert tick.run_requests == [] and tick.skip_message is not None
    cursor = tick.cursor

    deployment.land(EVENTS[1])
    tick = evaluate(deployment, TOUCH_SENSOR, cursor)
    assert len(tick.run_requests) == 1
    landed_key = tick.run_requests[0].run_key
    cursor = tick.cursor

    # A source version the table has not applied (here: only the ingest ran) starts one run, once.
    source = [asset_key(FIRST_CUSTOMER_TOUCH, "customer_events")]
    assert dg.materialize(
        assets(TOUCH_DEFS),
        instance=deployment.instance,
        resources=deployment.resources,
        selection=source,
    ).success
    tick = evaluate(deployment, TOUCH_SENSOR, cursor)
    assert len(tick.run_requests) == 1
    assert tick.run_requests[0].run_key != landed_key  # a new state, a new run key
    assert evaluate(deployment, TOUCH_SENSOR, tick.cursor).run_requests == []


def test_sensor_waits_while_a_run_of_its_job_is_active(deployment: Deployment) -> None:
    deployment.land(*EVENTS)
    run = deployment.instance.add_run(
        dg.DagsterRun(job_name=TOUCH_JOB, run_id="active-run", status=dg.DagsterRunStatus.STARTED)
    )
    tick = evaluate(deployment, TOUCH_SENSOR, None)
    assert tick.run_requests == [] and run.run_id in tick.skip_message
    assert tick.cursor is None  # unchanged: the files are judged again after that run


def test_schedules_request_their_jobs(deployment: Deployment) -> None:
    for name, job in ((f"{TOUCH_JOB}_hourly", TOUCH_JOB), (f"{STATS_JOB}_hourly", STATS_JOB)):
        schedule = deployment.defs.resolve_schedule_def(name)
        assert schedule.cron_schedule == "0 * * * *"
        assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
        data = schedule.evaluate_tick(dg.build_schedule_context(instance=deployment.instance))
        assert data.run_requests is not None
        assert len(data.run_requests) == 1 and schedule.job_name == job


def test_jobs_run_in_process() -> None:
    import definitions

    for name in (TOUCH_JOB, STATS_JOB):
        assert definitions.defs.resolve_job_def(name).executor_def is dg.in_process_executor


def test_sensors_and_schedules_never_start_spark(spark: Any, tmp_path: Path) -> None:
    """Evaluated in a fresh interpreter (this one runs Sail for the other tests), on a lake whose
    source tables exist, so the Delta versions are really read (through delta-rs)."""
    landing = tmp_path / "landing"
    shutil.copytree(DATA, landing)
    lake = tmp_path / "lake"
    source = LakeSettings(root=str(lake)).path("product_reviews/reviews")
    spark.createDataFrame([("x",)], "a string").write.format("delta").save(source)
    code = textwrap.dedent(
        f"""
        import json, sys
        import dagster as dg
        import definitions
        import wide_assets.session as session
        from wide_assets.pipelines.resources import LakeSettings
        from wide_assets.pipelines import LandingZone

        resources = {{"landing": LandingZone(root={str(landing)!r}), "lake": LakeSettings(root={str(lake)!r})}}
        defs = definitions.defs
        out = {{}}
        with dg.DagsterInstance.ephemeral() as instance:
            for name in ({TOUCH_SENSOR!r}, {STATS_SENSOR!r}):
                sensor = defs.resolve_sensor_def(name)
                first = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, resources=resources))
                again = sensor.evaluate_tick(
                    dg.build_sensor_context(instance=instance, cursor=first.cursor, resources=resources)
                )
                out[name] = [len(first.run_requests), json.loads(first.cursor), again.skip_message]
            for schedule in defs.schedules:
                data = schedule.evaluate_tick(dg.build_schedule_context(instance=instance))
                out[schedule.name] = len(data.run_requests)
        assert session._sessions == {{}} and session._sail_server is None, "Spark was started"
        assert "pysail.spark" not in sys.modules
        print(json.dumps(out))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120, capture_output=True, text=True
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    requests, cursor, skipped = out[STATS_SENSOR]
    assert requests == 1 and skipped.startswith("No new files")
    assert cursor["versions"] == {"reviews": 0}  # read by delta-rs
    assert sorted(cursor["files"]) == list(REVIEW_FILES)
    requests, cursor, _ = out[TOUCH_SENSOR]
    assert requests == 1 and cursor["versions"] == {"customer_events": -1}
    assert out[f"{TOUCH_JOB}_hourly"] == out[f"{STATS_JOB}_hourly"] == 1
