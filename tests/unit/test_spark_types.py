"""Spark SQL type names checked without Spark: what a declared column type may be, and the refusals."""

from __future__ import annotations

import pytest

from wide_assets.spark_types import type_problem


@pytest.mark.parametrize(
    "text",
    [
        "string",
        "BIGINT",
        "decimal(10,2)",
        "DECIMAL(38, 0)",
        "decimal",
        "varchar(20)",
        "timestamp_ntz",
        "int not null",
        "array<string>",
        "map<string, array<int>>",
        "struct<a: int, b string, c: map<string,double>>",
    ],
)
def test_spark_types_are_accepted(text: str) -> None:
    assert type_problem(text) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("integr", "'integr' is not a Spark SQL type (did you mean 'integer'?)"),
        ("decimel(10,2)", "'decimel' is not a Spark SQL type (did you mean 'decimal'?)"),
        ("array<strng>", "'strng' is not a Spark SQL type (did you mean 'string'?)"),
        ("decimal(40,2)", "decimal(40,2) needs 1 <= precision <= 38 and scale <= precision"),
        ("decimal(5,6)", "decimal(5,6) needs 1 <= precision <= 38 and scale <= precision"),
        ("varchar", "varchar takes 1..1 parameters, not 0"),
        ("map<int>", "',' expected, found '>'"),
        ("array<int", "it ends where '>' should follow"),
        ("int int", "unexpected 'int' after the type"),
        ("", "the type is empty"),
    ],
)
def test_bad_types_are_refused_naming_the_problem(text: str, problem: str) -> None:
    assert type_problem(text) == problem
