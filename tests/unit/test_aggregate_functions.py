"""The SQL each aggregate function generates. Functions whose SQL is plain SQL are folded over a
sequence of values by DuckDB, an engine independent of ours, and compared with the rule; the others
are checked for the guard their rule needs."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from wide_assets.aggregate_functions import (
    FLUSS_FUNCTIONS,
    PAIMON_FUNCTIONS,
    Operands,
    retraction_unsupported,
)
from wide_assets.errors import InvalidOptionError
from wide_assets.schema import Column, FieldFunction

DUCKDB_TYPES = {"bigint": "BIGINT", "string": "VARCHAR", "boolean": "BOOLEAN"}


def fold(dialect: str, name: str, type_: str, values: list[Any]) -> Any:
    """Fold `values` in order with the function's `agg`, starting from NULL, evaluated by DuckDB."""
    functions = FLUSS_FUNCTIONS if dialect == "fluss" else PAIMON_FUNCTIONS
    column = Column("v", type_)
    sql_type = DUCKDB_TYPES[type_]
    acc, seen = None, False
    for value in values:
        operands = Operands("acc", "inp", column, FieldFunction("v", name), "seen")
        expression = functions[name].agg(operands)
        acc = (
            duckdb.connect()
            .execute(
                f"SELECT {expression} FROM (SELECT CAST(? AS {sql_type}) AS acc, CAST(? AS {sql_type}) AS inp, "
                "CAST(? AS BOOLEAN) AS seen)",
                [acc, value, seen],
            )
            .fetchone()[0]
        )  # type: ignore[index]
        seen = True
    return acc


@pytest.mark.parametrize(
    ("dialect", "name", "type_", "values", "expected"),
    [
        ("paimon", "max", "bigint", [3, None, 7, 5], 7),
        ("paimon", "min", "bigint", [3, None, 1, 5], 1),
        ("paimon", "last_value", "bigint", [3, 4, None], None),  # NULL is a value
        ("paimon", "last_non_null_value", "bigint", [3, 4, None], 4),
        ("paimon", "first_value", "bigint", [None, 4, 5], None),  # the first record's value, even NULL
        ("paimon", "first_non_null_value", "bigint", [None, 4, 5], 4),
        ("paimon", "bool_and", "boolean", [True, None, False, True], False),
        ("paimon", "bool_or", "boolean", [False, None, True], True),
        ("fluss", "last_value_ignore_nulls", "bigint", [1, None], 1),
        ("fluss", "first_value", "bigint", [None, 2, 3], 2),  # Fluss's code, not its docs
        ("fluss", "listagg", "string", ["a", None, "", "b"], "a,,b"),  # Fluss keeps blanks
    ],
)
def test_fold_follows_the_rule(dialect: str, name: str, type_: str, values: list[Any], expected: Any) -> None:
    assert fold(dialect, name, type_, values) == expected


def operands(type_: str, name: str) -> Operands:
    return Operands("acc", "inp", Column("v", type_), FieldFunction("v", name))


def test_paimon_sum_fails_on_integral_overflow_and_fluss_sum_wraps() -> None:
    assert "raise_error" in PAIMON_FUNCTIONS["sum"].agg(operands("bigint", "sum"))
    assert "add overflow in column v (bigint)" in PAIMON_FUNCTIONS["sum"].agg(operands("bigint", "sum"))
    assert "raise_error" not in PAIMON_FUNCTIONS["sum"].agg(operands("double", "sum"))
    wrapping = FLUSS_FUNCTIONS["sum"].agg(operands("int", "sum"))
    assert "raise_error" not in wrapping and "pmod" in wrapping and "4294967296" in wrapping


def test_functions_that_cannot_retract_say_how_to_ignore_retractions() -> None:
    assert PAIMON_FUNCTIONS["max"].retract(operands("bigint", "max")) is None
    assert "fields.v.ignore-retract" in retraction_unsupported("v", "max")


def test_a_function_checks_its_column_type() -> None:
    with pytest.raises(InvalidOptionError, match="does not support column v of type string"):
        PAIMON_FUNCTIONS["sum"].check_type(Column("v", "string"), "sum")
    PAIMON_FUNCTIONS["listagg"].check_type(Column("v", "string"), "listagg")
