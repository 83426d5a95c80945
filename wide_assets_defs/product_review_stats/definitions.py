"""The aggregation variant: `reviews` (CDC: new, corrected and deleted reviews) -> `product_review_stats`,
per product counts, rating sums, latest review time and a RoaringBitmap of reviewers, and from it
`product_review_averages`, the average rating and the exact number of distinct reviewers.

Not a declaration: a dictionary table assigning dense ids, RoaringBitmaps of those ids aggregated per
product, and a table recomputed from another table's changelog are steps no wide-table declaration
says, so this pipeline is Python, built by the factories `wide_assets.pipelines` exports; Dagster loads
this file's `Definitions` like any Python module in the defs folder.

Tables and dialects:
- `reviewer_ids` (Fluss, `auto-increment.fields`): the dictionary of Fluss's auto-increment documentation. Each reviewer gets a
  dense INT id on first sight, never reused, so a set of reviewers fits a 32-bit RoaringBitmap.
- `product_review_stats` (Paimon `aggregation`, `changelog-producer` = `lookup`): `sum` of
  `review_cnt` and `rating_sum`, `max` of `latest_review_ts`, `rbm32` OR of `reviewers`. Paimon rather
  than Fluss because an integer `sum` that overflows fails instead of wrapping around, and `lookup`
  emits one -U/+U per product and commit (what `product_review_averages` consumes) instead of one per
  review record.

Each review CDC record becomes one aggregation record (a delta), sent as an upsert: `+I`/`+U` ->
(+1, +rating, review_ts, {reviewer}), `-U`/`-D` -> (-1, -rating, NULL, NULL), using the rating the
retraction carries (CDC retractions carry the full before-image). A correction `-U old, +U new` nets
to (0, new - old); a move to another product is -1 on one and +1 on the other. Deltas are never
retractions, so `max` and `rbm32`, which cannot retract, never see one.

What the columns mean under deletes and corrections (and what the oracle check computes):
- `review_cnt`, `rating_sum`: over the reviews live now (the last CDC record of each review is +I/+U).
  A product whose reviews were all deleted keeps its row with 0 and 0 (aggregation never deletes).
- `latest_review_ts`: the latest `review_ts` any version of any review of the product ever had.
- `reviewers` / `reviewer_cnt`: everyone who ever reviewed the product, deleted reviews included.
  A RoaringBitmap OR cannot remove a member: whether a reviewer still has another live review of the
  product is not something a delta can say. "Current distinct reviewers" would need per (product,
  reviewer) review counts, i.e. a second table keyed by both.

"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg

from wide_assets.errors import TableStateError
from wide_assets.pipelines import (
    LakeLocator,
    LakeTableSpec,
    Pending,
    Prepared,
    SourceApplied,
    SourceSpec,
    applied_once_check,
    applied_records,
    apply_with_retries,
    asset_key,
    column_lineage,
    consumed_offsets,
    hourly_schedule,
    new_data_sensor,
    pending_records,
    pipeline_job,
    primary_key_check,
    row_diff,
    source_asset,
    table_asset,
    table_check,
    table_path,
    unchanged_rows_check,
    unique_check,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from wide_assets.table import WideTable

__all__ = [
    "PRODUCT_REVIEW_AVERAGES",
    "PRODUCT_REVIEW_STATS",
    "REVIEWER_IDS",
    "REVIEWS",
    "bitmap_ids",
    "defs",
]

GROUP = "product_reviews"
ADDS = "_row_kind IN ('+I', '+U')"

REVIEWS = SourceSpec(
    name="reviews",
    description="Product reviews as change data: new reviews, corrections (-U/+U) and deletions (-D).",
    files=("reviews/*.csv",),
    columns=(
        ("review_id", "string"),
        ("product_id", "string"),
        ("reviewer", "string"),
        ("rating", "int"),
        ("review_ts", "timestamp_ntz"),
    ),
    primary_key=("review_id",),
    op_time="review_ts",
)

REVIEWER_IDS = LakeTableSpec(
    name="reviewer_ids",
    description="A dense integer id per reviewer, assigned when first seen and never reused.",
    group=GROUP,
    columns=(("reviewer", "string"), ("reviewer_id", "int")),
    primary_key=("reviewer",),
    options={"auto-increment.fields": "reviewer_id"},
)

PRODUCT_REVIEW_STATS = LakeTableSpec(
    name="product_review_stats",
    description="Per product: live review count and rating sum, latest review time, everyone who reviewed it.",
    group=GROUP,
    columns=(
        ("product_id", "string"),
        ("review_cnt", "bigint"),
        ("rating_sum", "bigint"),
        ("latest_review_ts", "timestamp_ntz"),
        ("reviewers", "binary"),
    ),
    primary_key=("product_id",),
    options={
        "merge-engine": "aggregation",
        "changelog-producer": "lookup",
        "fields.review_cnt.aggregate-function": "sum",
        "fields.rating_sum.aggregate-function": "sum",
        "fields.latest_review_ts.aggregate-function": "max",
        "fields.reviewers.aggregate-function": "rbm32",
    },
)

PRODUCT_REVIEW_AVERAGES = LakeTableSpec(
    name="product_review_averages",
    description="Per product: live review count, average rating and how many people ever reviewed it.",
    group=GROUP,
    columns=(
        ("product_id", "string"),
        ("review_cnt", "bigint"),
        ("avg_rating", "double"),
        ("latest_review_ts", "timestamp_ntz"),
        ("reviewer_cnt", "bigint"),
    ),
    primary_key=("product_id",),
    # Paimon deduplicate: each commit replaces the rows of the products whose stats changed.
    options={"changelog-producer": "lookup"},
)

REVIEWS_KEY = asset_key(PRODUCT_REVIEW_STATS, REVIEWS.name)
IDS_KEY = asset_key(REVIEWER_IDS, REVIEWER_IDS.name)
STATS_KEY = asset_key(PRODUCT_REVIEW_STATS, PRODUCT_REVIEW_STATS.name)
AVERAGES_KEY = asset_key(PRODUCT_REVIEW_AVERAGES, PRODUCT_REVIEW_AVERAGES.name)


# ------------------------------------------------------------------------------------------ transforms
def bitmap_ids(value: bytes | bytearray | None) -> list[int]:
    """The ids in a serialized 32-bit RoaringBitmap (none for NULL)."""
    from pyroaring import BitMap

    return [] if value is None else list(BitMap.deserialize(bytes(value)))


def review_deltas(spark: SparkSession, reviews: DataFrame, ids: DataFrame) -> DataFrame:
    """One aggregation record per review CDC record (see the module docstring), in the same order."""
    from pyroaring import BitMap

    joined = spark.sql(
        "SELECT r.*, i.reviewer_id FROM {r} r LEFT JOIN {i} i ON r.reviewer = i.reviewer", r=reviews, i=ids
    )
    unknown = joined.where(f"{ADDS} AND reviewer_id IS NULL").count()
    if unknown:
        raise TableStateError(f"{unknown} review record(s) name a reviewer that reviewer_ids has no id for.")
    # The bitmap of a single id, built by pyroaring so its bytes are exactly the portable format.
    singletons = [
        (row.reviewer_id, BitMap([row.reviewer_id]).serialize())
        for row in spark.sql(
            "SELECT DISTINCT reviewer_id FROM {j} WHERE reviewer_id IS NOT NULL", j=joined
        ).collect()
    ]
    bitmaps = spark.createDataFrame(singletons, "reviewer_id int, bitmap binary")
    return spark.sql(
        f"SELECT j.product_id, CASE WHEN {ADDS} THEN 1 ELSE -1 END AS review_cnt, "
        f"CASE WHEN {ADDS} THEN j.rating ELSE -j.rating END AS rating_sum, "
        f"CASE WHEN {ADDS} THEN j.review_ts END AS latest_review_ts, "
        f"CASE WHEN {ADDS} THEN b.bitmap END AS reviewers, j._offset "
        "FROM {j} j LEFT JOIN {b} b ON j.reviewer_id = b.reviewer_id",
        j=joined,
        b=bitmaps,
    )


def review_averages(spark: SparkSession, stats: DataFrame) -> DataFrame:
    """`stats` rows -> averages rows; the distinct reviewer count is the bitmap's cardinality."""
    counts = [
        (r.product_id, len(bitmap_ids(r.reviewers)))
        for r in stats.select("product_id", "reviewers").collect()
    ]
    cardinality = spark.createDataFrame(counts, "product_id string, reviewer_cnt bigint")
    return spark.sql(
        "SELECT s.product_id, s.review_cnt, "
        "CASE WHEN s.review_cnt > 0 THEN s.rating_sum / s.review_cnt END AS avg_rating, "
        "s.latest_review_ts, c.reviewer_cnt FROM {s} s JOIN {c} c ON s.product_id = c.product_id",
        s=stats,
        c=cardinality,
    )


# ------------------------------------------------------------------------------------------ assets
def assign_reviewer_ids(spark: SparkSession, table: WideTable, lake: LakeLocator) -> list[SourceApplied]:
    """Every reviewer of the new review records gets an id, if it has none yet."""

    def prepare() -> Prepared:
        pending = pending_records(
            spark, table, REVIEWS.name, table_path(lake, PRODUCT_REVIEW_STATS, REVIEWS.name)
        )
        if pending.rows is None:
            return pending, None
        # Only the key: the table assigns ids to new reviewers, in order of first appearance.
        return pending, spark.sql(
            "SELECT reviewer, min(_offset) AS _offset FROM {r} GROUP BY reviewer", r=pending.rows
        )

    return [apply_with_retries(table, prepare)]


def aggregate_reviews(spark: SparkSession, table: WideTable, lake: LakeLocator) -> list[SourceApplied]:
    """The new review records, as deltas, aggregated into their products' stats."""
    from wide_assets.table import WideTable

    ids = WideTable.open(spark, table_path(lake, REVIEWER_IDS))
    path = table_path(lake, PRODUCT_REVIEW_STATS, REVIEWS.name)

    def prepare() -> Prepared:
        # Not past what reviewer_ids has covered: records newer than that may name reviewers without an
        # id yet (reviews ingested by another run meanwhile); the next run applies them.
        covered = consumed_offsets(ids).get(REVIEWS.name, 0)
        pending = pending_records(spark, table, REVIEWS.name, path, upto_at_most=covered)
        return pending, None if pending.rows is None else review_deltas(spark, pending.rows, ids.read())

    return [apply_with_retries(table, prepare)]


def average_reviews(spark: SparkSession, table: WideTable, lake: LakeLocator) -> list[SourceApplied]:
    """The averages of the products whose stats changed since the last run, recomputed."""
    from wide_assets.table import WideTable

    stats = WideTable.open(spark, table_path(lake, PRODUCT_REVIEW_STATS))

    # Progress is the stats table's commit number: the products its changelog touched since then
    # are recomputed from their current stats.
    def prepare() -> Prepared:
        consumed = consumed_offsets(table).get(PRODUCT_REVIEW_STATS.name, 0)
        last = stats.last_commit
        rows = None
        if last > consumed:
            touched = stats.changelog(start_commit=consumed + 1)
            rows = spark.sql(
                "SELECT * FROM {s} WHERE product_id IN (SELECT product_id FROM {t})",
                s=stats.read(),
                t=touched,
            )
        pending = Pending(PRODUCT_REVIEW_STATS.name, consumed, last, stats.version, rows)
        return pending, None if rows is None else review_averages(spark, rows)

    return [apply_with_retries(table, prepare)]


ASSETS = [
    source_asset(PRODUCT_REVIEW_STATS, REVIEWS),
    table_asset(
        REVIEWER_IDS,
        [REVIEWS_KEY],
        column_lineage({"reviewer": [(REVIEWS_KEY, "reviewer")]}),
        assign_reviewer_ids,
    ),
    table_asset(
        PRODUCT_REVIEW_STATS,
        [REVIEWS_KEY, IDS_KEY],
        column_lineage(
            {
                "product_id": [(REVIEWS_KEY, "product_id")],
                "review_cnt": [(REVIEWS_KEY, "_row_kind")],
                "rating_sum": [(REVIEWS_KEY, "rating"), (REVIEWS_KEY, "_row_kind")],
                "latest_review_ts": [(REVIEWS_KEY, "review_ts")],
                "reviewers": [(REVIEWS_KEY, "reviewer"), (IDS_KEY, "reviewer_id")],
            }
        ),
        aggregate_reviews,
    ),
    table_asset(
        PRODUCT_REVIEW_AVERAGES,
        [STATS_KEY],
        column_lineage(
            {
                "product_id": [(STATS_KEY, "product_id")],
                "review_cnt": [(STATS_KEY, "review_cnt")],
                "avg_rating": [(STATS_KEY, "rating_sum"), (STATS_KEY, "review_cnt")],
                "latest_review_ts": [(STATS_KEY, "latest_review_ts")],
                "reviewer_cnt": [(STATS_KEY, "reviewers")],
            }
        ),
        average_reviews,
    ),
]


# ------------------------------------------------------------------------------------------ checks
def expected_stats(spark: SparkSession, reviews: DataFrame) -> DataFrame:
    """The oracle, plain SQL over review CDC records: per product ever reviewed, the live reviews'
    count and rating sum, the latest review_ts ever and the sorted names of everyone who reviewed it."""
    return spark.sql(
        "WITH last AS (SELECT review_id, max(_offset) AS o FROM {r} GROUP BY review_id), "
        f"live AS (SELECT r.* FROM {{r}} r JOIN last ON r._offset = last.o WHERE r.{ADDS}), "
        "counts AS (SELECT product_id, count(*) AS n, sum(rating) AS s FROM live GROUP BY product_id), "
        "ever AS (SELECT product_id, max(review_ts) AS latest_review_ts, "
        f"array_sort(collect_set(reviewer)) AS reviewers FROM {{r}} WHERE {ADDS} GROUP BY product_id) "
        "SELECT e.product_id, CAST(coalesce(c.n, 0) AS BIGINT) AS review_cnt, "
        "CAST(coalesce(c.s, 0) AS BIGINT) AS rating_sum, e.latest_review_ts, e.reviewers "
        "FROM ever e LEFT JOIN counts c ON e.product_id = c.product_id",
        r=reviews,
    )


def stats_with_reviewer_names(spark: SparkSession, stats: DataFrame, ids: DataFrame) -> DataFrame:
    """`stats` with its reviewer bitmap decoded into sorted reviewer names through the dictionary."""
    names = {r.reviewer_id: r.reviewer for r in ids.collect()}
    decoded = [
        (r.product_id, sorted(names.get(i, f"<no reviewer has id {i}>") for i in bitmap_ids(r.reviewers)))
        for r in stats.select("product_id", "reviewers").collect()
    ]
    reviewers = spark.createDataFrame(decoded, "product_id string, reviewers array<string>")
    return spark.sql(
        "SELECT s.product_id, s.review_cnt, s.rating_sum, s.latest_review_ts, n.reviewers "
        "FROM {s} s JOIN {n} n ON s.product_id = n.product_id",
        s=stats,
        n=reviewers,
    )


def _stats_match_reviews(spark: SparkSession, table: WideTable, lake: LakeLocator) -> dg.AssetCheckResult:
    from wide_assets.table import WideTable

    consumed, applied = applied_records(spark, PRODUCT_REVIEW_STATS, REVIEWS, table, lake)
    ids = WideTable.open(spark, table_path(lake, REVIEWER_IDS)).read()
    actual = stats_with_reviewer_names(spark, table.read(), ids)
    columns = ("product_id", "review_cnt", "rating_sum", "latest_review_ts", "reviewers")
    return row_diff(spark, actual, expected_stats(spark, applied), columns).result(consumed_offset=consumed)


CHECKS = [
    primary_key_check(REVIEWER_IDS),
    unique_check(
        REVIEWER_IDS,
        ["reviewer_id"],
        name="reviewer_id_unique",
        description="No two reviewers share an id, so a bitmap of ids counts people exactly.",
    ),
    unchanged_rows_check(
        REVIEWER_IDS,
        name="reviewer_ids_never_change",
        description="A reviewer's id, once assigned, is the same in every later version.",
    ),
    primary_key_check(PRODUCT_REVIEW_STATS),
    table_check(
        PRODUCT_REVIEW_STATS,
        name="stats_match_reviews",
        description="Counts, sums, latest time and reviewers equal a plain GROUP BY over the applied reviews.",
        evaluate=_stats_match_reviews,
    ),
    applied_once_check(
        PRODUCT_REVIEW_STATS,
        REVIEWS,
        name="reviews_applied_once",
        description="Every review record was counted exactly once, however often the job was re-run.",
    ),
    primary_key_check(PRODUCT_REVIEW_AVERAGES),
]

JOB = pipeline_job(
    "product_review_stats_job",
    [REVIEWS_KEY, IDS_KEY, STATS_KEY, AVERAGES_KEY],
    "Ingest reviews, assign reviewer ids, aggregate per product and derive the averages.",
)

defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=CHECKS,
    jobs=[JOB],
    schedules=[hourly_schedule(JOB)],
    sensors=[new_data_sensor(PRODUCT_REVIEW_STATS, (REVIEWS,), JOB, applied_by=STATS_KEY)],
)
