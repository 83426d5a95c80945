"""What a changed declaration may do to a stored table: add nullable columns after the stored ones, with
`fields.<column>.*` options of their own (a new source); every other difference is named and refused.

Oracle: the differences written out by hand for each case."""

from __future__ import annotations

from typing import Any

import pytest

from wide_assets.errors import InvalidOptionError
from wide_assets.table_definition import TableDefinition

COLUMNS = [("k", "string"), ("name", "string"), ("name_ts", "timestamp")]
OPTIONS = {"merge-engine": "partial-update", "fields.name_ts.sequence-group": "name"}
STORED = TableDefinition.build(COLUMNS, ["k"], OPTIONS)
SOURCE = [("points", "int"), ("points_ts", "timestamp")]
SOURCE_OPTIONS = {"fields.points_ts.sequence-group": "points", "fields.points.aggregate-function": "sum"}


def declared(columns: list[Any], options: dict[str, str], key: tuple[str, ...] = ("k",)) -> TableDefinition:
    return TableDefinition.build(columns, key, options)


def test_a_new_source_adds_its_columns_and_its_options() -> None:
    columns, options = declared([*COLUMNS, *SOURCE], {**OPTIONS, **SOURCE_OPTIONS}).additions_over(STORED)
    assert [(c.name, c.type) for c in columns] == SOURCE
    assert options == SOURCE_OPTIONS


def test_the_same_definition_adds_nothing() -> None:
    assert STORED.additions_over(STORED) == ((), {})


CHANGES = {
    "a type": (
        declared([("k", "string"), ("name", "varchar(10)"), ("name_ts", "timestamp")], OPTIONS),
        "column 'name': string -> varchar(10)",
    ),
    "a removed column": (
        declared([*COLUMNS[:2], *SOURCE], {"merge-engine": "partial-update"}),
        "column 'name_ts' removed",
    ),
    "a new column first": (
        declared([("k", "string"), ("points", "int"), *COLUMNS[1:]], OPTIONS),
        "new columns ['points'] stand before stored ones (they are added after them)",
    ),
    "reordered columns": (
        declared([COLUMNS[0], COLUMNS[2], COLUMNS[1]], OPTIONS),
        "columns reordered: ['k', 'name', 'name_ts'] -> ['k', 'name_ts', 'name']",
    ),
    "the key": (
        declared([*COLUMNS, ("region", "string")], OPTIONS, ("k", "region")),
        "primary key ['k'] -> ['k', 'region']",
    ),
    "a changed option": (
        declared([*COLUMNS, *SOURCE], {**OPTIONS, "fields.name_ts.sequence-group": "name,points"}),
        "option 'fields.name_ts.sequence-group': 'name' -> 'name,points'",
    ),
    "a removed option": (
        declared(COLUMNS, {"merge-engine": "partial-update"}),
        "option 'fields.name_ts.sequence-group': 'name' -> None",
    ),
    "a table option": (
        declared(COLUMNS, {**OPTIONS, "changelog-producer": "lookup"}),
        "option 'changelog-producer' added, which is not about a new column",
    ),
    "an option about a stored column": (
        declared([*COLUMNS, *SOURCE], {**OPTIONS, "fields.name_ts,points_ts.sequence-group": "points"}),
        "option 'fields.name_ts,points_ts.sequence-group' added, which is not about a new column",
    ),
}


@pytest.mark.parametrize("case", CHANGES, ids=list(CHANGES))
def test_every_other_change_is_refused_by_name(case: str) -> None:
    definition, difference = CHANGES[case]
    with pytest.raises(InvalidOptionError, match="changes more than it adds") as refused:
        definition.additions_over(STORED)
    assert difference in str(refused.value)


def test_all_differences_are_named_at_once() -> None:
    changed = declared(
        [("k", "string"), ("name", "int"), ("name_ts", "timestamp"), *SOURCE],
        {**OPTIONS, "fields.name_ts.sequence-group": "name,points"},
    )
    with pytest.raises(InvalidOptionError) as refused:
        changed.additions_over(STORED)
    for difference in (
        "column 'name': string -> int",
        "option 'fields.name_ts.sequence-group': 'name' -> 'name,points'",
    ):
        assert difference in str(refused.value)
