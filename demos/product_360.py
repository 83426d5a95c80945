"""`product_360` (seed 002, "Stream Joins Without Joining"): one always-current row per product,
assembled by Paimon's partial-update merge engine from five CDC sources instead of a five-way join.

Sources (landed under `landing/<source>/` as JSON lines): `catalog`, `pricing` and `lifecycle` are
Debezium envelopes of database tables keyed by `product_id`; `reviews` and `questions` are Flink
changelog JSON of review and question rows. Each source carries its own operation time `op_ts`.

Table options, one sequence group per source on that source's op time (the op-time columns live in
the row), so a late record of one source never overwrites newer data of that source and never
competes with another source:
- `catalog_op_ts` guards product_name, brand; a catalog delete removes the whole product row
  (`partial-update.remove-record-on-sequence-group`, P11): a product removed from the catalog is gone.
- `pricing_op_ts` guards price, sale_ends; a pricing delete only clears them (P10: "no current price").
- `lifecycle_op_ts` guards discontinue_date, deleted the same way.
- `reviews_op_ts` guards `review_cnt`, a `sum` of +1/-1 deltas (Pattern B): one delta per review change
  record (+I/+U add one, -U/-D remove one), so sums add up whatever order they arrive in (P8).
- `questions_op_ts` guards `open_question_cnt`, pre-aggregated (Pattern A): per product touched by new
  question records, the latest state of each of its questions by op time, counted when open, written
  with the product's newest question op time (so the group's sequence only moves forward).

Deletes and their order: a catalog delete is a product's last event. The pipeline applies catalog last
in each run, so other sources' records that arrive in the same batch as the removal land before it.
The convergence check spells out the expected table and reports any product that breaks this contract.

Landing data: `python -m demos.generate --products 50 --changes 400 --seed 7 --out data/landing
--late-share 0.1 --delete-share 0.05 --malformed 6` (see `demos.generate`), plus 15 hand-written
orders in `landing/orders/` (one for an unknown product). Malformed records go to each source's
quarantine table (`<cdc table>_quarantine`); more than `MAX_BAD_RECORDS` in one run fail it.

Automation: one sensor per landing folder, an hourly schedule, `eager` on product_360 and
orders_enriched, `on_cron` on the per-brand table, a run-failure sensor. Serving (seed 001):
`orders_enriched` is a lookup join (`WideTable.lookup`) of new orders against product_360;
`active_products_per_brand` is a materialized table defined by SQL over product_360.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import dagster as dg

from wide_assets.pipelines import (
    CompactionPolicy,
    LakeLocator,
    LakeTableSpec,
    Prepared,
    SourceApplied,
    SourceSpec,
    WideTableSpec,
    applied_records,
    apply_with_retries,
    asset_key,
    column_lineage,
    keyed_diff,
    maintenance_defs,
    materialized_table_asset,
    pending_records,
    pipeline_job,
    primary_key_check,
    source_asset,
    source_health_checks,
    table_asset,
    table_check,
    table_path,
    wide_table_defs,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from wide_assets.table import WideTable

__all__ = ["ORDERS_ENRICHED", "PRODUCT_360", "SOURCES", "defs", "enrich", "expected_product_360"]

KEY = ("product_id",)
LIVE = "_row_kind IN ('+I', '+U')"
# Quarantine malformed records up to this many per run, fail the run above it.
MAX_BAD_RECORDS = 10
# Warn when a source's newest ingested change is older than this.
MAX_LAG = timedelta(hours=24)


def _table_source(name: str, description: str, columns: tuple[tuple[str, str], ...]) -> SourceSpec:
    """A Debezium-captured table keyed by product_id whose columns feed the same-named wide columns."""
    return SourceSpec(
        name=name,
        description=description,
        files=(f"landing/{name}/*.jsonl",),
        columns=(("product_id", "bigint"), *columns, ("op_ts", "timestamp")),
        primary_key=KEY,
        feeds={**{c: c for c, _ in columns}, "op_ts": f"{name}_op_ts"},
        op_time="op_ts",
        format="debezium",
        max_bad_records=MAX_BAD_RECORDS,
    )


CATALOG = _table_source(
    "catalog",
    "Product master data from the catalog/PIM database.",
    (("product_name", "string"), ("brand", "string")),
)
PRICING = _table_source(
    "pricing",
    "Current price and promotion end per product.",
    (("price", "decimal(10,2)"), ("sale_ends", "date")),
)
LIFECYCLE = _table_source(
    "lifecycle", "Planned discontinuation date per product.", (("discontinue_date", "date"),)
)


def _stream_source(
    name: str, description: str, row: tuple[tuple[str, str], ...], counts: tuple[str, str], transform: str
) -> SourceSpec:
    """A Flink changelog stream of rows keyed by their first column, each about one product; `transform`
    turns its records into a per-product count: `counts` is (the source column it counts, the wide column)."""
    return SourceSpec(
        name=name,
        description=description,
        files=(f"landing/{name}/*.jsonl",),
        columns=(row[0], ("product_id", "bigint"), *row[1:], ("op_ts", "timestamp")),
        primary_key=(row[0][0],),
        key_columns=KEY,
        feeds={counts[0]: counts[1], "op_ts": f"{name}_op_ts"},
        op_time="op_ts",
        format="flink-json",
        max_bad_records=MAX_BAD_RECORDS,
        transform=transform,
    )


# Pattern B: one +1/-1 delta per review record, summed by the table.
REVIEWS = _stream_source(
    "reviews",
    "Customer reviews: new ones, rating edits and removals.",
    (("review_id", "bigint"), ("rating", "int")),
    ("review_id", "review_cnt"),
    f"SELECT product_id, CAST(CASE WHEN {LIVE} THEN 1 ELSE -1 END AS BIGINT) AS review_cnt, "
    "op_ts AS reviews_op_ts, _offset FROM {pending}",
)
# Pattern A: per product touched, its open questions counted from each question's latest state.
QUESTIONS = _stream_source(
    "questions",
    "Customer questions on products, opened, closed and deleted.",
    (("question_id", "bigint"), ("status", "string")),
    ("status", "open_question_cnt"),
    "WITH latest AS (SELECT *, row_number() OVER (PARTITION BY question_id "
    "ORDER BY op_ts DESC, _offset DESC) AS rank FROM {applied} "
    "WHERE product_id IN (SELECT product_id FROM {pending})) "
    f"SELECT product_id, CAST(count_if(rank = 1 AND {LIVE} AND status = 'open') AS BIGINT) "
    "AS open_question_cnt, max(op_ts) AS questions_op_ts, max(_offset) AS _offset "
    "FROM latest GROUP BY product_id",
)
# Catalog last: a product's removal is applied after whatever else arrived in the same run.
SOURCES = (PRICING, LIFECYCLE, REVIEWS, QUESTIONS, CATALOG)

PRODUCT_360 = WideTableSpec(
    name="product_360",
    description="One current row per product: catalog, price, lifecycle, review and open-question counts.",
    group="product_360",
    columns=(
        ("product_id", "bigint"),
        ("product_name", "string"),
        ("brand", "string"),
        ("catalog_op_ts", "timestamp"),
        ("price", "decimal(10,2)"),
        ("sale_ends", "date"),
        ("pricing_op_ts", "timestamp"),
        ("discontinue_date", "date"),
        ("lifecycle_op_ts", "timestamp"),
        ("review_cnt", "bigint"),
        ("reviews_op_ts", "timestamp"),
        ("open_question_cnt", "bigint"),
        ("questions_op_ts", "timestamp"),
    ),
    primary_key=KEY,
    options={
        "merge-engine": "partial-update",
        "changelog-producer": "lookup",
        "fields.catalog_op_ts.sequence-group": "product_name,brand",
        "fields.pricing_op_ts.sequence-group": "price,sale_ends",
        "fields.lifecycle_op_ts.sequence-group": "discontinue_date",
        "fields.reviews_op_ts.sequence-group": "review_cnt",
        "fields.review_cnt.aggregate-function": "sum",
        "fields.questions_op_ts.sequence-group": "open_question_cnt",
        "partial-update.remove-record-on-sequence-group": "catalog_op_ts",
        # Seed 002: write-only writers and one dedicated compaction job (`product_360_compaction_job`).
        "write-only": "true",
    },
    sources=SOURCES,
)


# ------------------------------------------------------------------------------------------ oracle
def _latest(spark: SparkSession, records: DataFrame, key: str) -> DataFrame:
    """Each `key`'s newest record by op time (arrival breaks ties, as the merge's `>=` does)."""
    return spark.sql(
        f"SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY {key} ORDER BY op_ts DESC, _offset DESC) "
        "AS rank FROM {r}) WHERE rank = 1",
        r=records,
    )


def expected_product_360(spark: SparkSession, applied: dict[str, DataFrame]) -> DataFrame:
    """The five-way join the table replaces, over the applied CDC records of each source: the latest
    state of each source by op time (a deleted price or lifecycle row gives NULLs and its delete's op
    time), live reviews and open questions counted per product; products removed from the catalog
    (latest catalog record is a delete) have no row; any product some source mentions has one."""
    c = _latest(spark, applied["catalog"], "product_id")
    p = _latest(spark, applied["pricing"], "product_id")
    lc = _latest(spark, applied["lifecycle"], "product_id")
    r = _latest(spark, applied["reviews"], "review_id")
    q = _latest(spark, applied["questions"], "question_id")
    return spark.sql(
        "WITH products AS (SELECT product_id FROM {ac} UNION SELECT product_id FROM {ap} "
        "UNION SELECT product_id FROM {al} UNION SELECT product_id FROM {ar} UNION SELECT product_id FROM {aq}), "
        f"reviews AS (SELECT product_id, CAST(count_if({LIVE}) AS BIGINT) AS review_cnt FROM {{r}} GROUP BY product_id), "
        "reviews_ts AS (SELECT product_id, max(op_ts) AS reviews_op_ts FROM {ar} GROUP BY product_id), "
        f"questions AS (SELECT product_id, CAST(count_if({LIVE} AND status = 'open') AS BIGINT) AS open_question_cnt "
        "FROM {q} GROUP BY product_id), "
        "questions_ts AS (SELECT product_id, max(op_ts) AS questions_op_ts FROM {aq} GROUP BY product_id) "
        "SELECT k.product_id, c.product_name, c.brand, c.op_ts AS catalog_op_ts, "
        f"CASE WHEN p.{LIVE} THEN p.price END AS price, CASE WHEN p.{LIVE} THEN p.sale_ends END AS sale_ends, "
        f"p.op_ts AS pricing_op_ts, CASE WHEN lc.{LIVE} THEN lc.discontinue_date END AS discontinue_date, "
        "lc.op_ts AS lifecycle_op_ts, r.review_cnt, rt.reviews_op_ts, q.open_question_cnt, qt.questions_op_ts "
        "FROM products k LEFT JOIN {c} c ON k.product_id = c.product_id "
        "LEFT JOIN {p} p ON k.product_id = p.product_id LEFT JOIN {lc} lc ON k.product_id = lc.product_id "
        "LEFT JOIN reviews r ON k.product_id = r.product_id LEFT JOIN reviews_ts rt ON k.product_id = rt.product_id "
        "LEFT JOIN questions q ON k.product_id = q.product_id "
        "LEFT JOIN questions_ts qt ON k.product_id = qt.product_id "
        "WHERE c._row_kind IS NULL OR c._row_kind <> '-D'",
        ac=applied["catalog"],
        ap=applied["pricing"],
        al=applied["lifecycle"],
        ar=applied["reviews"],
        aq=applied["questions"],
        c=c,
        p=p,
        lc=lc,
        r=r,
        q=q,
    )


def _converges(spark: SparkSession, table: WideTable, lake: LakeLocator) -> dg.AssetCheckResult:
    applied = {}
    consumed = {}
    for source in SOURCES:
        consumed[source.name], applied[source.name] = applied_records(spark, PRODUCT_360, source, table, lake)
    expected = expected_product_360(spark, applied)
    diff = keyed_diff(spark, table.read(), expected, KEY, PRODUCT_360.value_columns)
    return diff.result(consumed_offsets=consumed, delta_version=table.version)


CONVERGENCE = table_check(
    PRODUCT_360,
    name="converges_to_source_join",
    description="Every row equals the five-way join of each source's latest state by op time, same delete rules.",
    evaluate=_converges,
)

WIDE = wide_table_defs(
    PRODUCT_360,
    checks=[CONVERGENCE, *source_health_checks(PRODUCT_360, SOURCES, MAX_LAG)],
    # A sensor per landing folder, the hourly schedule, and eager: new source data is applied at once.
    sensor_per_source=True,
    automation_condition=dg.AutomationCondition.eager(),
    failure_sensor=True,
)


# ------------------------------------------------------------------------------------------ serving
ORDERS = SourceSpec(
    name="orders",
    description="Customer orders: which product, how many, when.",
    files=("landing/orders/*.csv",),
    columns=(
        ("order_id", "bigint"),
        ("product_id", "bigint"),
        ("quantity", "int"),
        ("order_ts", "timestamp"),
    ),
    primary_key=("order_id",),
    op_time="order_ts",
)
ENRICHMENT = ("product_name", "brand", "price")
ORDERS_ENRICHED = LakeTableSpec(
    name="orders_enriched",
    description="Each order with its product's name, brand and price as product_360 had them when it arrived.",
    group=PRODUCT_360.group,
    columns=(
        *ORDERS.columns,
        ("product_name", "string"),
        ("brand", "string"),
        ("price", "decimal(10,2)"),
        ("line_total", "decimal(20,2)"),
    ),
    primary_key=("order_id",),
    # Paimon deduplicate; `input` keeps each enriched order as its changelog, for downstream readers.
    options={"changelog-producer": "input"},
)
WIDE_KEY = asset_key(PRODUCT_360, PRODUCT_360.name)
ORDERS_KEY = asset_key(ORDERS_ENRICHED, ORDERS.name)


def enrich(spark: SparkSession, orders: DataFrame, products: DataFrame) -> DataFrame:
    """Orders joined with the product rows looked up for them (an order of an unknown product keeps NULLs)."""
    return spark.sql(
        "SELECT o.order_id, o.product_id, o.quantity, o.order_ts, p.product_name, p.brand, p.price, "
        "CAST(o.quantity * p.price AS DECIMAL(20,2)) AS line_total, o._offset "
        "FROM {o} o LEFT JOIN {p} p ON o.product_id = p.product_id",
        o=orders,
        p=products,
    )


def enrich_new_orders(spark: SparkSession, table: WideTable, lake: LakeLocator) -> list[SourceApplied]:
    """The new orders, enriched by a lookup join: product_360 is read only for the products they name."""
    from wide_assets.table import WideTable

    def prepare() -> Prepared:
        pending = pending_records(spark, table, ORDERS.name, table_path(lake, ORDERS_ENRICHED, ORDERS.name))
        if pending.rows is None:
            return pending, None
        products = WideTable.open(spark, table_path(lake, PRODUCT_360))
        keys = spark.sql("SELECT DISTINCT product_id FROM {o}", o=pending.rows)
        return pending, enrich(spark, pending.rows, products.lookup(keys))

    return [apply_with_retries(table, prepare)]


ACTIVE_PRODUCTS_SQL = (
    "SELECT brand, CAST(count(*) AS BIGINT) AS active_products, "
    "CAST(avg(price) AS DECIMAL(14,2)) AS avg_price, "
    "CAST(sum(coalesce(open_question_cnt, 0)) AS BIGINT) AS open_questions "
    "FROM {product_360} WHERE brand IS NOT NULL "
    "AND (discontinue_date IS NULL OR discontinue_date > current_date()) GROUP BY brand"
)

SERVING = dg.Definitions(
    assets=[
        source_asset(ORDERS_ENRICHED, ORDERS),
        table_asset(
            ORDERS_ENRICHED,
            [ORDERS_KEY, WIDE_KEY],
            column_lineage(
                {
                    **{c: [(ORDERS_KEY, c)] for c in ORDERS.column_names},
                    **{c: [(WIDE_KEY, c)] for c in ENRICHMENT},
                    "line_total": [(ORDERS_KEY, "quantity"), (WIDE_KEY, "price")],
                }
            ),
            enrich_new_orders,
            automation_condition=dg.AutomationCondition.eager(),
        ),
        materialized_table_asset(
            "active_products_per_brand",
            PRODUCT_360.group,
            "Per brand: products in the catalog and not discontinued, their average price and open questions.",
            ACTIVE_PRODUCTS_SQL,
            {"product_360": PRODUCT_360},
            primary_key=("brand",),
            automation_condition=dg.AutomationCondition.on_cron("0 * * * *"),
        ),
    ],
    asset_checks=[primary_key_check(ORDERS_ENRICHED)],
    jobs=[
        pipeline_job(
            "product_360_serving_job",
            [
                ORDERS_KEY,
                asset_key(ORDERS_ENRICHED, ORDERS_ENRICHED.name),
                dg.AssetKey([PRODUCT_360.group, "active_products_per_brand"]),
            ],
            "Ingest orders, enrich them from product_360 by lookup, refresh the per-brand table.",
        )
    ],
)

# Compaction folds the writers' fragments in; its sensor fires on pending commits, files or lag.
MAINTENANCE = maintenance_defs(PRODUCT_360, CompactionPolicy(max_pending_commits=20, max_files=40))

defs = dg.Definitions.merge(WIDE, SERVING, MAINTENANCE)
