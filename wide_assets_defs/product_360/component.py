"""product_360 with what its declaration cannot say: the serving table built on it by a lookup join.

`orders_enriched` is a lookup join (`WideTable.lookup`) of each new order against product_360, read
only for the products the orders name. The declared part (the table, its five sources, the SQL table
`active_products_per_brand`, checks, automation and compaction) is defs.yaml; this subclass adds the
orders, their enrichment and the serving job to what the component builds from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg

from wide_assets import WideTableComponent
from wide_assets.pipelines import (
    LakeLocator,
    LakeTableSpec,
    Prepared,
    SourceApplied,
    SourceSpec,
    WideTableSpec,
    apply_with_retries,
    asset_key,
    column_lineage,
    pending_records,
    pipeline_job,
    primary_key_check,
    source_asset,
    table_asset,
    table_path,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from wide_assets.table import WideTable

__all__ = ["ORDERS", "Product360", "enrich", "orders_enriched_spec"]

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


def orders_enriched_spec(products: WideTableSpec) -> LakeTableSpec:
    """Each order with its product's columns as `products` had them when the order arrived."""
    return LakeTableSpec(
        name="orders_enriched",
        description="Each order with its product's name, brand and price as product_360 had them when it arrived.",
        group=products.group,
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


def enrich(spark: SparkSession, orders: DataFrame, products: DataFrame) -> DataFrame:
    """Orders joined with the product rows looked up for them (an order of an unknown product keeps NULLs)."""
    return spark.sql(
        "SELECT o.order_id, o.product_id, o.quantity, o.order_ts, p.product_name, p.brand, p.price, "
        "CAST(o.quantity * p.price AS DECIMAL(20,2)) AS line_total, o._offset "
        "FROM {o} o LEFT JOIN {p} p ON o.product_id = p.product_id",
        o=orders,
        p=products,
    )


def serving_defs(products: WideTableSpec) -> dg.Definitions:
    """orders -> orders_enriched (a lookup join against `products`), and the serving job."""
    enriched = orders_enriched_spec(products)
    products_key = asset_key(products, products.name)
    orders_key = asset_key(enriched, ORDERS.name)

    def enrich_new_orders(spark: SparkSession, table: WideTable, lake: LakeLocator) -> list[SourceApplied]:
        """The new orders, enriched by a lookup join: the products table is read only for the products they name."""
        from wide_assets.table import WideTable

        def prepare() -> Prepared:
            pending = pending_records(spark, table, ORDERS.name, table_path(lake, enriched, ORDERS.name))
            if pending.rows is None:
                return pending, None
            product_table = WideTable.open(spark, table_path(lake, products))
            keys = spark.sql("SELECT DISTINCT product_id FROM {o}", o=pending.rows)
            return pending, enrich(spark, pending.rows, product_table.lookup(keys))

        return [apply_with_retries(table, prepare)]

    # Declared in defs.yaml (`sql_tables`); the serving job refreshes it after the orders.
    per_brand = dg.AssetKey([products.group, "active_products_per_brand"])
    return dg.Definitions(
        assets=[
            source_asset(enriched, ORDERS),
            table_asset(
                enriched,
                [orders_key, products_key],
                column_lineage(
                    {
                        **{c: [(orders_key, c)] for c in ORDERS.column_names},
                        **{c: [(products_key, c)] for c in ENRICHMENT},
                        "line_total": [(orders_key, "quantity"), (products_key, "price")],
                    }
                ),
                enrich_new_orders,
                automation_condition=dg.AutomationCondition.eager(),
            ),
        ],
        asset_checks=[primary_key_check(enriched)],
        jobs=[
            pipeline_job(
                "product_360_serving_job",
                [orders_key, asset_key(enriched, enriched.name), per_brand],
                "Ingest orders, enrich them from product_360 by lookup, refresh the per-brand table.",
            )
        ],
    )


class Product360(WideTableComponent):
    """product_360 as declared in defs.yaml, plus its serving tables."""

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return dg.Definitions.merge(super().build_defs(context), serving_defs(self.spec))
