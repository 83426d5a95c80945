"""The SQL each aggregate function generates. Functions whose SQL is plain SQL are folded over a
sequence of values by DuckDB, an engine independent of ours, and compared with the rule; the others
are checked for the guard their rule needs."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import duckdb
import pytest

from wide_assets.aggregate_functions import (
    FLUSS_FUNCTIONS,
    PAIMON_FUNCTIONS,
    Operands,
    retraction_unsupported,
)
from wide_assets.aggregate_functions.arithmetic import overflow
from wide_assets.aggregate_functions.text import JAVA_WHITESPACE
from wide_assets.errors import InvalidOptionError
from wide_assets.schema import Column, FieldFunction
from wide_assets.sql import fail

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
        row = (
            duckdb.connect()
            .execute(
                f"SELECT {expression} FROM (SELECT CAST(? AS {sql_type}) AS acc, CAST(? AS {sql_type}) AS inp, "
                "CAST(? AS BOOLEAN) AS seen)",
                [acc, value, seen],
            )
            .fetchone()
        )
        assert row is not None
        acc = row[0]
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
    paimon = PAIMON_FUNCTIONS["sum"].agg(operands("bigint", "sum"))
    assert "raise_error" in paimon and "long overflow: " in paimon
    assert "raise_error" not in PAIMON_FUNCTIONS["sum"].agg(operands("double", "sum"))
    wrapping = FLUSS_FUNCTIONS["sum"].agg(operands("int", "sum"))
    assert "raise_error" not in wrapping and "pmod" in wrapping and "4294967296" in wrapping


@pytest.mark.parametrize(
    ("type_", "operation", "acc", "inp", "message"),
    [
        # FieldSumAgg / FieldProductAgg: Math.*Exact and their byte/short variants (the int result too)
        ("tinyint", "add", 127, 1, "byte overflow: 127 + 1 = 128"),
        ("smallint", "subtract", -32768, 1, "short overflow: -32768 - 1 = -32769"),
        ("int", "add", 2147483647, 1, "int overflow: 2147483647 + 1"),
        ("bigint", "multiply", -9223372036854775807, 2, "long overflow: -9223372036854775807 * 2"),
        ("tinyint", "subtract", None, -128, "byte overflow: --128 = 128"),  # negation: NULL accumulator
        ("int", "subtract", None, -2147483648, "int overflow: --2147483648"),
    ],
)
def test_overflow_names_the_operands_as_paimon_does(
    type_: str, operation: str, acc: int | None, inp: int, message: str
) -> None:
    sql_type = type_.upper()
    x = Operands("acc", "inp", Column("v", type_), FieldFunction("v", "sum"))
    raised = overflow(x, operation, None if acc is None else "acc", "inp")
    match = re.fullmatch(r"raise_error\((.*)\)", raised)
    assert match is not None
    # DuckDB evaluates the message expression (the argument of raise_error) from the operands.
    text = (
        duckdb.connect()
        .execute(
            f"SELECT {match[1]} FROM (SELECT CAST(? AS {sql_type}) AS acc, CAST(? AS {sql_type}) AS inp)",
            [acc, inp],
        )
        .fetchone()[0]  # type: ignore[index]
    )
    assert text == "[wide_assets] " + message


def test_functions_that_cannot_retract_say_how_to_ignore_retractions() -> None:
    assert PAIMON_FUNCTIONS["max"].retract(operands("bigint", "max")) is None
    # FieldAggregator.retract: `${field_name}` stays as is.
    assert retraction_unsupported("first_not_null_value") == fail(
        "Aggregate function 'first_not_null_value' does not support retraction, If you allow this function to "
        "ignore retraction messages, you can configure 'fields.${field_name}.ignore-retract'='true'."
    )


def test_a_function_checks_its_column_type() -> None:
    with pytest.raises(
        InvalidOptionError, match=r"^Data type for sum column must be 'NumericType' but was 'STRING'\.$"
    ):
        PAIMON_FUNCTIONS["sum"].check_type(Column("v", "string"), "sum", "paimon")
    PAIMON_FUNCTIONS["listagg"].check_type(Column("v", "string"), "listagg", "paimon")


def test_listagg_blank_is_java_whitespace() -> None:
    """Paimon's isBlank tests Character.isWhitespace: the space separators except the no-break ones, and
    U+0009-U+000D, U+001C-U+001F; computed here from the Unicode categories."""
    separators = {chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Zs", "Zl", "Zp")}
    java = (separators - {"\u00a0", "\u2007", "\u202f"}) | {
        chr(c) for c in (*range(0x09, 0x0E), *range(0x1C, 0x20))
    }
    assert len(java) == 25
    assert set(JAVA_WHITESPACE) == java and len(JAVA_WHITESPACE) == 25
