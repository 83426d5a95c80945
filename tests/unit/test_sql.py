"""SQL spelling: identifiers, literals, row-kind predicates and key joins, evaluated by DuckDB as an
independent SQL engine where the text is plain SQL."""

from __future__ import annotations

import duckdb
import pytest

from wide_assets.sql import (
    ADDS,
    RETRACTS,
    RowKind,
    Value,
    columns,
    fail,
    key_join,
    kind_in,
    quote,
    string_literal,
    value_literal,
)


def test_quote_doubles_backquotes() -> None:
    assert quote("a`b") == "`a``b`"
    assert columns(["a", "b"], "t.") == "t.`a`, t.`b`"


@pytest.mark.parametrize(
    ("kinds", "expected"),
    [
        (ADDS, {"+I", "+U"}),
        (RETRACTS, {"-U", "-D"}),
        ([RowKind.DELETE], {"-D"}),
        (list(RowKind), {"+I", "-U", "+U", "-D"}),
    ],
)
def test_kind_in_selects_exactly_those_kinds(kinds: list[RowKind], expected: set[str]) -> None:
    rows = (
        duckdb.connect()
        .sql(f"SELECT k FROM (VALUES ('+I'), ('-U'), ('+U'), ('-D'), ('x')) v(k) WHERE {kind_in('k', kinds)}")
        .fetchall()
    )
    assert {r[0] for r in rows} == expected


def test_key_join_matches_on_every_key_column() -> None:
    condition = key_join(["a", "b"], "l", "r").replace("`", '"')
    rows = (
        duckdb.connect()
        .sql(
            "SELECT l.v FROM (VALUES (1, 1, 'x'), (1, 2, 'y')) l(a, b, v) "
            f"JOIN (VALUES (1, 2)) r(a, b) ON {condition}"
        )
        .fetchall()
    )
    assert rows == [("y",)]


def test_null_safe_key_join_matches_null_keys() -> None:
    condition = (
        key_join(["a"], "l", "r", null_safe=True).replace("`", '"').replace("<=>", "IS NOT DISTINCT FROM")
    )
    rows = (
        duckdb.connect()
        .sql(f"SELECT l.a FROM (VALUES (NULL)) l(a) JOIN (VALUES (NULL)) r(a) ON {condition}")
        .fetchall()
    )
    assert rows == [(None,)]


@pytest.mark.parametrize(
    ("value", "literal"),
    [(True, "true"), (7, "7"), (1.5, "1.5"), ("o'k", "'o\\'k'"), ("a\\b", "'a\\\\b'")],
)
def test_value_literal(value: object, literal: str) -> None:
    assert value_literal(value) == literal


def test_string_literal_is_safe_in_a_format_template() -> None:
    # `spark.sql(text, df=...)` formats `text`: a literal spells braces (and newlines) as escapes
    # Spark and Sail unescape, so a message like Paimon's `'fields.${field_name}...'` survives.
    literal = string_literal("a{b}\nc")
    assert literal == "'a\\u007Bb\\u007D\\nc'"
    assert literal.format() == literal


def test_fail_builds_the_message_from_values_at_run_time() -> None:
    assert fail("plain") == "raise_error('[wide_assets] plain')"
    assert fail("int overflow: ", Value("acc"), " + ", Value("inp")) == (
        "raise_error(concat('[wide_assets] ', 'int overflow: ', CAST(acc AS STRING), ' + ', CAST(inp AS STRING)))"
    )
