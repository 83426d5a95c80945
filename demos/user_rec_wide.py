"""The Fluss partial-update blog demo: recommendations, impressions and clicks -> `user_rec_wide`.

Mirrors the blog's Flink SQL: three sources keyed by (user_id, item_id), each `INSERT INTO
user_rec_wide (user_id, item_id, <its column>)`, applied in that order to a Fluss-dialect table.
"""

from __future__ import annotations

from wide_assets.pipelines import SourceSpec, WideTableSpec, wide_table_defs

__all__ = ["USER_REC_WIDE", "defs"]

KEY = ("user_id", "item_id")
# The seed's sources and wide table are all created WITH these options; a `table.*` key selects Fluss.
FLUSS_OPTIONS = {"bucket.num": "3", "table.datalake.enabled": "true"}

USER_REC_WIDE = WideTableSpec(
    name="user_rec_wide",
    description="Per user and item: the latest model score, impression count and click count.",
    group="fluss_demo",
    columns=(
        ("user_id", "string"),
        ("item_id", "string"),
        ("rec_score", "double"),
        ("imp_cnt", "int"),
        ("click_cnt", "int"),
    ),
    primary_key=KEY,
    options=FLUSS_OPTIONS,
    sources=(
        SourceSpec(
            name="recommendations",
            description="Recommendation model scores per user and item.",
            files=("recommendations*.csv",),
            columns=(
                ("user_id", "string"),
                ("item_id", "string"),
                ("rec_score", "double"),
                ("rec_ts", "timestamp_ntz"),
            ),
            primary_key=KEY,
            feeds={"rec_score": "rec_score"},
            op_time="rec_ts",
        ),
        SourceSpec(
            name="impressions",
            description="How often each item was shown to each user.",
            files=("impressions*.csv",),
            columns=(
                ("user_id", "string"),
                ("item_id", "string"),
                ("imp_cnt", "int"),
                ("imp_ts", "timestamp_ntz"),
            ),
            primary_key=KEY,
            feeds={"imp_cnt": "imp_cnt"},
            op_time="imp_ts",
        ),
        SourceSpec(
            name="clicks",
            description="How often each user clicked each item.",
            files=("clicks*.csv",),
            columns=(
                ("user_id", "string"),
                ("item_id", "string"),
                ("click_cnt", "int"),
                ("clk_ts", "timestamp_ntz"),
            ),
            primary_key=KEY,
            feeds={"click_cnt": "click_cnt"},
            op_time="clk_ts",
        ),
    ),
)

defs = wide_table_defs(USER_REC_WIDE)
