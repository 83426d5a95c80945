"""The merge's SQL decisions that are plain SQL: which row kinds reach the merge (evaluated by DuckDB),
and the per-engine rules a write is checked against before any query runs."""

from __future__ import annotations

import duckdb
import pytest

from wide_assets.errors import InvalidInputError
from wide_assets.merge import MergeContext, engine_for
from wide_assets.merge.plan import kind_filter, merge_order, merge_query
from wide_assets.table.images import rows_fold_directly
from wide_assets.table_definition import TableDefinition

COLUMNS = [("k", "int"), ("a", "string"), ("seq", "bigint")]


def context(options: dict[str, str], target_columns: tuple[str, ...] | None = None) -> MergeContext:
    return MergeContext(TableDefinition.build(COLUMNS, ["k"], options), target_columns)


@pytest.mark.parametrize(
    ("options", "reaching"),
    [
        ({}, {"+I", "-U", "+U", "-D"}),
        ({"ignore-delete": "true"}, {"+I", "+U"}),  # Paimon drops -U and -D
        ({"ignore-update-before": "true"}, {"+I", "+U", "-D"}),
        ({"table.delete.behavior": "allow"}, {"+I", "+U", "-D"}),  # a Fluss upsert sink never sees -U
        ({"table.delete.behavior": "ignore"}, {"+I", "+U"}),
        ({"table.delete.behavior": "allow", "sink.ignore-delete": "true"}, {"+I", "+U"}),
    ],
)
def test_row_kind_filter(options: dict[str, str], reaching: set[str]) -> None:
    rows = (
        duckdb.connect()
        .sql(
            "SELECT _row_kind FROM (VALUES ('+I'), ('-U'), ('+U'), ('-D')) v(_row_kind) "
            f"WHERE {kind_filter(context(options))}"
        )
        .fetchall()
    )
    assert {r[0] for r in rows} == reaching


def test_merge_order_puts_the_sequence_first_nulls_first() -> None:
    assert merge_order(context({"sequence.field": "seq"})).startswith("c2 ASC NULLS FIRST, ")
    assert merge_order(
        context({"sequence.field": "seq", "sequence.field.sort-order": "descending"})
    ).startswith("c2 DESC NULLS FIRST, ")
    assert merge_order(context({})) == "CASE WHEN _stored THEN 0 ELSE 1 END, _arrival"


@pytest.mark.parametrize(
    ("options", "before_images"),
    [
        ({"merge-engine": "partial-update"}, False),
        ({"merge-engine": "partial-update", "changelog-producer": "input"}, False),
        ({"merge-engine": "partial-update", "changelog-producer": "lookup"}, True),
        ({"changelog-producer": "full-compaction"}, True),
    ],
)
def test_an_update_logs_its_before_image_only_where_a_changelog_is_read_from_the_merge(
    options: dict[str, str], before_images: bool
) -> None:
    """Elsewhere the log keeps only the new images (log_frames.log_rows), so the merge makes none."""
    query = merge_query(context(options))
    assert ("'-U'" in query) == before_images
    assert "'+U'" in query


def test_engines_that_refuse_partial_writes() -> None:
    first_row = context({"table.merge-engine": "first_row", "table.delete.behavior": "ignore"}, ("k",))
    with pytest.raises(InvalidInputError, match="Partial update is not supported"):
        engine_for(first_row.merge).check_write(MergeContext(first_row.definition, ("k", "a")))
    last_row = context({"table.delete.behavior": "allow"})
    engine_for(last_row.merge).check_write(MergeContext(last_row.definition, ("k", "a")))


def test_fold_state_carries_a_seen_flag_only_for_stateful_functions() -> None:
    ctx = context({"merge-engine": "aggregation", "fields.a.aggregate-function": "first_value"})
    assert ctx.stateful_columns() == ("a",)
    assert [name for name, _ in ctx.state_fields()] == ["e", "c1", "c2", "s1"]


@pytest.mark.parametrize(
    ("columns", "options", "direct"),
    [
        (COLUMNS, {"merge-engine": "partial-update"}, True),
        (COLUMNS, {"merge-engine": "aggregation", "fields.a.aggregate-function": "listagg"}, True),
        (COLUMNS, {"merge-engine": "first-row", "ignore-delete": "true"}, True),
        (
            [("k", "int"), ("b", "binary")],
            {"merge-engine": "aggregation", "fields.b.aggregate-function": "rbm32"},
            False,
        ),
        (
            [("k", "int"), ("b", "array<int>")],
            {"merge-engine": "aggregation", "fields.b.aggregate-function": "collect"},
            False,
        ),
        (COLUMNS, {"table.merge-engine": "first_row"}, False),  # Fluss: a CDC entry per record
    ],
)
def test_union_reads_fold_rows_directly_only_where_an_unchanged_row_comes_back_as_stored(
    columns: list[tuple[str, str]], options: dict[str, str], direct: bool
) -> None:
    assert rows_fold_directly(TableDefinition.build(columns, ["k"], options)) is direct
