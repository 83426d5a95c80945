"""Flink SQL `CREATE TABLE` statements read into a wide table's definition (`wide_assets.ddl`), checked
against expectations written by hand from the seeds' own DDL and Flink's type semantics."""

from __future__ import annotations

from pathlib import Path

import pytest

from wide_assets.ddl import CreateTable, parse_create_table
from wide_assets.errors import InvalidOptionError
from wide_assets.schema import Column
from wide_assets.table_definition import TableDefinition

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _ddl(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_seed_000_user_rec_wide() -> None:
    assert parse_create_table(_ddl("seed_000_user_rec_wide.sql")) == CreateTable(
        name="user_rec_wide",
        columns=[
            Column("user_id", "string"),
            Column("item_id", "string"),
            Column("rec_score", "double"),
            Column("imp_cnt", "int"),
            Column("click_cnt", "int"),
        ],
        primary_key=("user_id", "item_id"),
        options={"bucket.num": "3", "table.datalake.enabled": "true"},
    )


def test_seed_002_product_360() -> None:
    assert parse_create_table(_ddl("seed_002_product_360.sql")) == CreateTable(
        name="product_360",
        columns=[
            Column("product_id", "bigint"),
            Column("product_name", "string"),
            Column("brand", "string"),
            Column("price", "decimal(10,2)"),
            Column("sale_ends", "date"),
            Column("discontinue_date", "date"),
            Column("review_cnt", "bigint"),
            Column("open_question_cnt", "bigint"),
        ],
        primary_key=("product_id",),
        options={"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "false"},
    )


FLINK_TYPES = [
    ("STRING", "string"),
    ("VARCHAR(10)", "string"),  # Flink does not enforce the length by default either
    ("CHAR(3)", "string"),
    ("INT", "int"),
    ("INTEGER", "int"),
    ("BIGINT", "bigint"),
    ("TINYINT", "tinyint"),
    ("SMALLINT", "smallint"),
    ("FLOAT", "float"),
    ("DOUBLE", "double"),
    ("DECIMAL(10, 2)", "decimal(10,2)"),
    ("DECIMAL", "decimal(10,0)"),  # Flink's default precision and scale
    ("DATE", "date"),
    ("TIMESTAMP(3)", "timestamp_ntz"),  # Flink's TIMESTAMP has no time zone
    ("TIMESTAMP", "timestamp_ntz"),
    ("TIMESTAMP_LTZ(3)", "timestamp"),  # an instant: Spark's timestamp
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "timestamp"),
    ("BOOLEAN", "boolean"),
    ("BYTES", "binary"),
    ("VARBINARY(16)", "binary"),
    ("ARRAY<STRING>", "array<string>"),
    ("MAP<STRING, ARRAY<DECIMAL(5, 1)>>", "map<string,array<decimal(5,1)>>"),
    (
        "ROW<a INT, b ROW<c STRING, `d e` TIMESTAMP_LTZ(6)>>",
        "struct<a:int,b:struct<c:string,`d e`:timestamp>>",
    ),
    ("INT NOT NULL", "int not null"),
]


@pytest.mark.parametrize(("flink", "spark"), FLINK_TYPES)
def test_flink_types_become_spark_types(flink: str, spark: str) -> None:
    [key, column] = parse_create_table(f"CREATE TABLE t (k INT PRIMARY KEY NOT ENFORCED, c {flink})").columns
    assert column == Column.parse("c", spark) and key == Column("k", "int")


def test_comments_constraints_and_clauses_with_no_effect() -> None:
    ddl = """
    /* a block comment
       over two lines */
    CREATE TABLE IF NOT EXISTS fluss_catalog.shop.orders (
      order_id BIGINT NOT NULL COMMENT 'the key', -- NOT NULL is implied by the key anyway
      day      STRING,
      amount   DECIMAL(12, 2) NOT NULL,
      ts       TIMESTAMP(3),
      CONSTRAINT pk PRIMARY KEY (order_id, day) NOT ENFORCED,
      WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
    ) COMMENT 'orders by day'
    PARTITIONED BY (day)
    WITH (
      'table.merge-engine' = 'first_row',
      'table.delete.behavior' = 'ignore',
      'custom.note' = 'it''s verbatim: ''quoted'', spaced  '
    );
    """
    definition = parse_create_table(ddl)
    assert definition.name == "orders"
    assert definition.columns == [
        Column("order_id", "bigint"),
        Column("day", "string"),
        Column("amount", "decimal(12,2)", nullable=False),
        Column("ts", "timestamp_ntz"),
    ]
    assert definition.primary_key == ("order_id", "day")
    assert definition.options["custom.note"] == "it's verbatim: 'quoted', spaced  "
    inline = parse_create_table("CREATE TABLE t (id BIGINT PRIMARY KEY NOT ENFORCED, v INT)")
    assert inline.primary_key == ("id",) and inline.options == {}


@pytest.mark.parametrize(
    ("ddl", "message"),
    [
        (
            "CREATE TABLE t (\n  id BIGINT,\n  n BIGNT,\n  PRIMARY KEY (id) NOT ENFORCED\n)",
            "Column 'n' (line 3, column 3) has an unknown type 'BIGNT' (did you mean 'BIGINT'?).",
        ),
        (
            "CREATE TABLE t (\n  id BIGINT,\n  r ROW<a INT, b STRNG>\n)",
            "Cannot read the CREATE TABLE statement at line 3, column 18 ('STRNG'): Expecting >; "
            "unknown type 'STRNG' (did you mean 'STRING'?).",
        ),
        (
            "CREATE TABLE t (id BIGINT, PRIMARY KEY (idd) NOT ENFORCED)",
            "Column 'idd' is not declared (did you mean 'id'?).",
        ),
        (
            "CREATE TABLE t (id BIGINT, c AS id + 1)",
            "Column 'c' (line 1, column 28) is computed (AS ...): a wide table stores declared columns only.",
        ),
        (
            "CREATE TABLE t (id BIGINT, m TIMESTAMP_LTZ(3) METADATA FROM 'timestamp')",
            "('METADATA'): Expecting ); metadata columns (METADATA FROM ...) are connector metadata",
        ),
        (
            "CREATE TABLE t (id BIGINT, ts TIMESTAMP(9))",
            "Column 'ts' (line 1, column 28): precision 9 is finer than the microseconds a Spark timestamp holds",
        ),
        ("CREATE TABLE t (id BIGINT, a ARRAY<INT NOT NULL>)", "NOT NULL is supported on columns, not inside"),
        ("CREATE TABLE t (id BIGINT, m MULTISET<INT>)", "MULTISET has no Spark equivalent"),
        ("CREATE TABLE t (id BIGINT, t TIME(3))", "type TIME(3) has no Spark equivalent here"),
        ("CREATE TABLE t (id BIGINT) WITH ('k' = '1', 'k' = '2')", "Option 'k' is given twice."),
        ("CREATE TABLE t (id BIGINT) WITH ('k' = 1)", "Options are quoted strings"),
        ("CREATE TABLE t (id BIGINT) WITH ('k' = 'open)", "an unterminated quote or comment?"),
        ("CREATE TABLE t (id BIGINT) LIKE u", "'LIKE u' is not part of a Flink CREATE TABLE."),
        ("CREATE TABLE t AS SELECT 1 AS id", "CREATE TABLE ... AS SELECT is not supported"),
        ("CREATE TABLE t (id BIGINT); CREATE TABLE u (id BIGINT)", "Expected one CREATE TABLE statement"),
        (
            "CREATE TABLE t (id BIGINT, d STRING, PRIMARY KEY (id) NOT ENFORCED) PARTITIONED BY (d)",
            "PARTITIONED BY (d) must name primary key columns (id)",
        ),
    ],
)
def test_unreadable_statements_name_the_problem(ddl: str, message: str) -> None:
    with pytest.raises(InvalidOptionError) as refused:
        parse_create_table(ddl)
    assert message in str(refused.value)


def test_the_blogs_reversed_sequence_groups_are_refused_with_the_documented_form() -> None:
    # The post's own sequence-group lines, as a WITH list, on the table with its op-time columns.
    written = _ddl("seed_002_sequence_groups.txt")
    options = parse_create_table(f"CREATE TABLE t (k INT) WITH ({written})").options
    assert options["fields.product_name.sequence-group"] == "catalog_op_ts"
    table = parse_create_table(_ddl("product_360.sql"))
    with pytest.raises(InvalidOptionError) as refused:
        TableDefinition.build(table.columns, table.primary_key, {"merge-engine": "partial-update", **options})
    # Paimon's own refusal of the groups read the documented way, then the form the user meant.
    assert str(refused.value) == (
        "Field catalog_op_ts is defined repeatedly by multiple groups: fields.brand.sequence-group. "
        "These sequence groups look written the other way round: the key names the sequence field and the "
        "value the columns it orders, as in 'fields.catalog_op_ts.sequence-group' = 'product_name,brand', "
        "'fields.pricing_op_ts.sequence-group' = 'price,sale_ends'."
    )
    # One reversed line alone is recognised too: a STRING cannot order a group, a timestamp can.
    with pytest.raises(InvalidOptionError) as refused:
        TableDefinition.build(
            table.columns,
            table.primary_key,
            {"merge-engine": "partial-update", "fields.brand.sequence-group": "catalog_op_ts"},
        )
    assert str(refused.value).startswith(
        "Sequence field brand of 'fields.brand.sequence-group' has type string"
    )
    assert str(refused.value).endswith("as in 'fields.catalog_op_ts.sequence-group' = 'brand'.")


def test_the_product_360_ddl_declares_the_demos_table() -> None:
    from demos import declared

    product_360 = declared("product_360").spec
    table = parse_create_table(_ddl("product_360.sql"))
    spec = TableDefinition.build(product_360.columns, product_360.primary_key, product_360.options)
    assert TableDefinition.build(table.columns, table.primary_key, table.options) == spec
    assert [(g.sequence_fields, g.protected) for g in spec.merge.sequence_groups][:2] == [
        (("catalog_op_ts",), ("product_name", "brand")),
        (("pricing_op_ts",), ("price", "sale_ends")),
    ]
