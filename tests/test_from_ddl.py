"""`WideTable.from_ddl` creates the seeds' tables from their own DDL text, and they behave as the seeds say.

Seed 000 (the Fluss blog): the rows of its `INSERT INTO` statements are written source by source into
`user_rec_wide` created from the blog's `CREATE TABLE`; the oracle is the changelog and the snapshot the
blog prints (parsed by `test_demo.load_seed`). Seed 002 (the Paimon post): `product_360` with one
sequence group per source, written with the fragments the post describes; the expected rows are written
by hand from the post's text.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from test_demo import SEED, Entry, _by_key, load_seed

from wide_assets.table import WideTable

FIXTURES = Path(__file__).resolve().parent / "fixtures"
INSERT = re.compile(r"INSERT INTO (\w+) VALUES\n(.*?);", re.DOTALL)
VALUES = re.compile(r"\('([^']*)','([^']*)',\s*([\d.]+)\s*,")
# Each source writes its own column of user_rec_wide, in the blog's order (Steps 5, 5 and 6).
SOURCE_COLUMNS: dict[str, tuple[str, type]] = {
    "recommendations": ("rec_score", float),
    "impressions": ("imp_cnt", int),
    "clicks": ("click_cnt", int),
}


def _seed_inserts() -> dict[str, list[tuple[str, str, str]]]:
    """The rows of the blog's `INSERT INTO <source> VALUES ...` statements: user, item, measure."""
    text = SEED.read_text(encoding="utf-8")
    return {name: VALUES.findall(body) for name, body in INSERT.findall(text)}


def _changelog(table: WideTable, columns: list[str]) -> dict[int, list[Entry]]:
    commits: dict[int, list[Entry]] = defaultdict(list)
    for r in table.changelog().orderBy("_commit", "_offset").collect():
        commits[r._commit].append((r._row_kind, tuple(r[c] for c in columns)))
    return dict(commits)


def test_seed_000_user_rec_wide_from_its_ddl(spark: Any, tmp_path: Path) -> None:
    seed = load_seed()
    table = WideTable.from_ddl(
        spark, tmp_path / "user_rec_wide", (FIXTURES / "seed_000_user_rec_wide.sql").read_text("utf-8")
    )
    assert table.definition.merge.dialect == "fluss" and table.definition.merge.engine == "last_row"
    assert table.definition.ignored_options == ("table.datalake.enabled",)
    assert table.definition.bucketing is not None and table.definition.bucketing.count == 3
    inserts = _seed_inserts()
    for source, (column, parse) in SOURCE_COLUMNS.items():
        rows = [(user, item, parse(value)) for user, item, value in inserts[source]]
        assert len(rows) == 5
        schema = f"user_id string, item_id string, {column} {table.definition.column(column).type}"
        table.write(spark.createDataFrame(rows, schema))
    columns = [c.name for c in table.definition.columns]
    changelog = _changelog(table, columns)
    assert sorted(changelog) == [1, 2, 3]
    for commit, stage in zip(sorted(changelog), seed.stages, strict=True):
        assert _by_key(changelog[commit]) == _by_key(stage), f"commit {commit}"
    assert {tuple(r[c] for c in columns) for r in table.read().collect()} == seed.snapshot
    # The same DDL again opens the same table.
    again = WideTable.from_ddl(
        spark, table.path, (FIXTURES / "seed_000_user_rec_wide.sql").read_text("utf-8")
    )
    assert again.definition == table.definition and again.last_commit == 3


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_seed_002_product_360_with_sequence_groups_from_ddl(spark: Any, tmp_path: Path) -> None:
    table = WideTable.from_ddl(
        spark, tmp_path / "product_360", (FIXTURES / "product_360.sql").read_text("utf-8")
    )
    assert table.definition.merge.write_only and len(table.definition.merge.sequence_groups) == 5

    def write(schema: str, *rows: tuple[Any, ...]) -> None:
        table.write(spark.createDataFrame(list(rows), f"product_id bigint, {schema}"))

    catalog = "product_name string, brand string, catalog_op_ts timestamp"
    pricing = "price decimal(10,2), sale_ends date, pricing_op_ts timestamp, _row_kind string"
    questions = "open_question_cnt bigint, questions_op_ts timestamp"
    # "catalog @ t1 sets product_name, brand; pricing @ t2 (hours later) sets price, sale_ends;
    # questions @ t3 sets open_question_cnt" -> one assembled row.
    write(catalog, (42, "Aurora Lamp", "Lumen", _at("2026-05-01 09:00:00+00:00")))
    write(pricing, (42, Decimal("39.99"), date(2026, 7, 1), _at("2026-05-01 12:00:00+00:00"), "+I"))
    write(questions, (42, 3, _at("2026-05-01 13:00:00+00:00")))
    # "A late catalog update must not overwrite a newer catalog update, but it also shouldn't be ranked
    # against the pricing stream at all": an older catalog record changes nothing, while a pricing record
    # that is older than the catalog's newest but newer than pricing's own still applies.
    write(catalog, (42, "Aurora Lamp (old name)", "Old Brand", _at("2026-04-30 09:00:00+00:00")))
    write(pricing, (42, Decimal("34.99"), date(2026, 7, 1), _at("2026-05-01 12:30:00+00:00"), "+U"))
    write(catalog, (7, "Nova Desk", "Lumen", _at("2026-05-02 09:00:00+00:00")))
    # "A 'price deleted' event usually just means 'no current price', so clear those columns and keep
    # everything else"; "a 'product removed from catalog' event is usually authoritative, so drop the row".
    write(pricing, (42, Decimal("34.99"), date(2026, 7, 1), _at("2026-05-03 00:00:00+00:00"), "-D"))
    table.write(
        spark.createDataFrame(
            [(7, _at("2026-05-04 00:00:00+00:00"), "-D")],
            "product_id bigint, catalog_op_ts timestamp, _row_kind string",
        )
    )
    assert table.pending_commits() == list(range(1, 9))  # write-only: folded in by the compaction job
    expected = {(42, "Aurora Lamp", "Lumen", None, None, None, None, 3)}
    picked = (
        "product_id",
        "product_name",
        "brand",
        "price",
        "sale_ends",
        "discontinue_date",
        "review_cnt",
        "open_question_cnt",
    )

    def rows() -> set[tuple[Any, ...]]:
        return {tuple(r[c] for c in picked) for r in table.read().collect()}

    assert rows() == expected  # merge-on-read before the compaction
    table.compact()
    assert table.pending_commits() == [] and rows() == expected
