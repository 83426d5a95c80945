"""Every numeric type against every function that takes numbers, Paimon and Fluss, on Sail (Delta) and
JVM Spark, compared with a plain Python fold of Paimon's/Fluss's Java arithmetic: exact integers (an
overflow is an error in Paimon and wraps in Fluss), IEEE single/double floats, and DECIMAL as
BigDecimal rounded HALF_UP to the column's scale, NULL past its precision (docs/semantics.md)."""

from __future__ import annotations

import random
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import numpy as np
import pytest
from conftest import Factory

from wide_assets.decimals import EXACT_PRODUCT_DIGITS, DecimalType
from wide_assets.errors import MergeError

INTEGRAL_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
TYPES = [
    *INTEGRAL_BITS,
    "float",
    "double",
    "decimal(3,1)",
    "decimal(12,2)",
    "decimal(18,4)",
    "decimal(20,3)",
    "decimal(38,0)",
    "decimal(38,2)",
    "decimal(38,18)",
]
# Every function that takes a number, per dialect, as the option names it.
FUNCTIONS = {
    "paimon": [
        "sum",
        "product",
        "max",
        "min",
        "last_value",
        "last_non_null_value",
        "first_value",
        "first_non_null_value",
        "first_not_null_value",
    ],
    "fluss": [
        "sum",
        "product",
        "max",
        "min",
        "last_value",
        "last_value_ignore_nulls",
        "first_value",
        "first_value_ignore_nulls",
    ],
}


class Overflow(Exception):
    """An integral result out of range in Paimon (an ArithmeticException there)."""


def exact(type_: str, value: Any, dialect: str) -> Any:
    """`value`, an exact result, in the column type as Java computes it."""
    if value is None:
        return None
    decimal = DecimalType.parse(type_)
    if decimal is not None:
        with localcontext(prec=100):
            rounded = Decimal(value).quantize(Decimal(1).scaleb(-decimal.scale), rounding=ROUND_HALF_UP)
        # Decimal.fromBigDecimal: NULL past the precision.
        return None if abs(rounded) >= Decimal(10) ** (decimal.precision - decimal.scale) else rounded
    if type_ == "float":
        return float(np.float32(value))
    if type_ == "double":
        return float(value)
    half = 2 ** (INTEGRAL_BITS[type_] - 1)
    if -half <= value < half:
        return value
    if dialect == "paimon":
        raise Overflow(value)
    return (value + half) % (2 * half) - half  # Fluss: Java's two's-complement wrap-around


def arithmetic(type_: str, dialect: str, operation: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A NULL-skipping fold step: NULL accumulator -> the input; otherwise `acc op input`, as Java
    computes it in the column type (a float is widened, combined and rounded back, as float math is)."""

    def step(acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        if type_ == "float":
            return float(operation(np.float32(acc), np.float32(value)))
        with localcontext(prec=100):  # exact: BigDecimal has no precision limit
            return exact(type_, operation(acc, value), dialect)

    return step


def oracle(dialect: str, function: str, type_: str) -> Callable[[Any, Any, bool], Any]:
    """(acc, value, seen) -> the new accumulator; `seen` says a record came before."""
    steps: dict[str, Callable[[Any, Any, bool], Any]] = {
        "sum": lambda a, v, s: arithmetic(type_, dialect, lambda x, y: x + y)(a, v),
        "product": lambda a, v, s: arithmetic(type_, dialect, lambda x, y: x * y)(a, v),
        "max": lambda a, v, s: v if a is None else a if v is None else max(a, v),
        "min": lambda a, v, s: v if a is None else a if v is None else min(a, v),
        "last_value": lambda a, v, s: v,
        "last_non_null_value": lambda a, v, s: a if v is None else v,
        "last_value_ignore_nulls": lambda a, v, s: a if v is None else v,
        "first_non_null_value": lambda a, v, s: v if a is None else a,
        "first_not_null_value": lambda a, v, s: v if a is None else a,
        "first_value_ignore_nulls": lambda a, v, s: v if a is None else a,
    }
    if function == "first_value":
        # Paimon: the first record's value, even NULL; Fluss's code replaces a NULL (docs/semantics.md).
        if dialect == "paimon":
            return lambda a, v, s: a if s else v
        return steps["first_non_null_value"]
    return steps[function]


def random_value(rng: random.Random, type_: str, function: str) -> Any:
    """A value of `type_`, small for products so that most folds stay in range, NULL at times."""
    if rng.random() < 0.2:
        return None
    decimal = DecimalType.parse(type_)
    if decimal is not None and function == "product" and decimal.precision > EXACT_PRODUCT_DIGITS:
        return Decimal(rng.choice([-2, -1, 1, 2, 3]))  # wider products are exact for short values only
    if decimal is not None:
        digits = min(decimal.precision, decimal.scale + (1 if function == "product" else 6))
        unscaled = rng.randrange(-(10**digits) + 1, 10**digits)
        return Decimal(unscaled).scaleb(-decimal.scale)
    if type_ in ("float", "double"):
        value = rng.uniform(-4, 4) if function == "product" else rng.uniform(-1e6, 1e6)
        return float(np.float32(value)) if type_ == "float" else value
    if function == "product":
        return rng.choice([-1, 1, 2])
    return rng.randrange(-(2 ** (INTEGRAL_BITS[type_] - 4)), 2 ** (INTEGRAL_BITS[type_] - 4))


Cell = tuple[str, str]  # (function, type) of one column


def column_name(cell: Cell, index: int) -> str:
    return f"{cell[0]}__{index}"


def make_table(make: Factory, dialect: str, cells: list[Cell]) -> Any:
    """A table with one column per cell, keyed by `k`."""
    names = [column_name(cell, i) for i, cell in enumerate(cells)]
    if dialect == "paimon":
        options = {"merge-engine": "aggregation"} | {
            f"fields.{n}.aggregate-function": f for n, (f, _) in zip(names, cells, strict=True)
        }
    else:
        options = {"table.merge-engine": "aggregation"} | {
            f"fields.{n}.agg": f for n, (f, _) in zip(names, cells, strict=True)
        }
    return make([("k", "int"), *((n, t) for n, (_, t) in zip(names, cells, strict=True))], ["k"], options)


def ddl(cells: list[Cell]) -> str:
    return "k int, " + ", ".join(f"{column_name(cell, i)} {cell[1]}" for i, cell in enumerate(cells))


def expected_rows(
    dialect: str, cells: list[Cell], writes: list[list[tuple[Any, ...]]]
) -> dict[int, tuple[Any, ...]]:
    steps = [oracle(dialect, function, type_) for function, type_ in cells]
    state: dict[int, list[Any]] = {}
    for write in writes:
        for key, *values in write:
            seen = key in state
            row = state.setdefault(key, [None] * len(cells))
            for index, step in enumerate(steps):
                row[index] = step(row[index], values[index], seen)
    return {key: tuple(row) for key, row in state.items()}


def random_writes(
    rng: random.Random, dialect: str, cells: list[Cell]
) -> tuple[list[list[tuple[Any, ...]]], dict[int, tuple[Any, ...]]]:
    """Two writes of records over four keys whose integral folds stay in range, and the rows they give."""
    while True:
        writes = [
            [(rng.randrange(4), *(random_value(rng, t, f) for f, t in cells)) for _ in range(10)]
            for _ in range(2)
        ]
        try:
            return writes, expected_rows(dialect, cells, writes)
        except Overflow:
            continue


def same(got: Any, want: Any) -> bool:
    if got is None or want is None:
        return got is None and want is None
    return bool(got == want)


def assert_rows(table: Any, cells: list[Cell], expected: dict[int, tuple[Any, ...]]) -> None:
    got = {row[0]: tuple(row[1:]) for row in table.read().collect()}
    assert got.keys() == expected.keys()
    for key, row in expected.items():
        for cell, want, value in zip(cells, row, got[key], strict=True):
            assert same(value, want), (key, cell, value, want)


@pytest.mark.parametrize("dialect", ["paimon", "fluss"])
def test_every_numeric_function_folds_as_java_does(engine: tuple[Any, Factory], dialect: str) -> None:
    """One table per dialect, a column per (function, type); the second write folds onto stored rows."""
    spark, make = engine
    cells = [(function, type_) for type_ in TYPES for function in FUNCTIONS[dialect]]
    writes, expected = random_writes(random.Random(dialect), dialect, cells)
    table = make_table(make, dialect, cells)
    for write in writes:
        table.write(spark.createDataFrame(write, ddl(cells)))
    assert_rows(table, cells, expected)


DECIMALS = [t for t in TYPES if t.startswith("decimal")]


def largest(type_: str) -> Decimal:
    decimal = DecimalType.parse(type_)
    assert decimal is not None
    return Decimal(f"{10**decimal.precision - 1}E-{decimal.scale}")


@pytest.mark.parametrize("dialect", ["paimon", "fluss"])
def test_decimal_overflow_is_null_and_the_fold_starts_again(
    engine: tuple[Any, Factory], dialect: str
) -> None:
    """Decimal.fromBigDecimal returns NULL past the precision; the next value then replaces the NULL
    accumulator. Key 1 overflows and starts again, key 2 overflows last, key 3 reaches the bound."""
    spark, make = engine
    cells: list[Cell] = []
    columns: list[tuple[Decimal, ...]] = []  # per cell, the values of the records below
    for type_ in DECIMALS:
        decimal = DecimalType.parse(type_)
        assert decimal is not None
        most, unit = largest(type_), Decimal(f"1E-{decimal.scale}")
        cells.append(("sum", type_))
        with localcontext(prec=100):
            columns.append((most, -most, most - unit, unit, -unit, unit, unit))
        # A factor whose square overflows, short enough to multiply exactly (a 38-digit column's
        # products never reach its bound exactly; they are refused, see below).
        factor = Decimal(10) ** ((decimal.precision - decimal.scale + 1) // 2)
        if factor < Decimal(10) ** EXACT_PRODUCT_DIGITS:
            cells.append(("product", type_))
            columns.append((factor, factor, unit, factor, -factor, unit, Decimal(2)))
    keys = (1, 2, 3, 1, 2, 3, 1)
    records = [(key, *values) for key, *values in zip(keys, *columns, strict=True)]
    writes = [records[:3], records[3:]]
    expected = expected_rows(dialect, cells, writes)
    for index, (function, _) in enumerate(cells):  # the oracle overflows too
        assert expected[2][index] is None and expected[1][index] == (
            columns[index][3] if function == "sum" else 2
        )
    table = make_table(make, dialect, cells)
    for write in writes:
        table.write(spark.createDataFrame(write, ddl(cells)))
    assert_rows(table, cells, expected)


def test_paimon_sum_retracts_exactly(engine: tuple[Any, Factory]) -> None:
    """-U/-D subtract (FieldSumAgg.retract); from a NULL sum they negate; past the precision NULL
    (key 5: the largest value, then a retraction of its negation)."""
    spark, make = engine
    rng = random.Random(7)
    cells = [("sum", type_) for type_ in TYPES]
    records = [
        (
            rng.randrange(4),
            *(random_value(rng, t, "sum") for _, t in cells),
            rng.choice(["+I", "-U", "-D", "+U"]),
        )
        for _ in range(24)
    ]
    extreme = [largest(t) if t in DECIMALS else None for _, t in cells]
    with localcontext(prec=100):
        negated = [None if v is None else -v for v in extreme]
    records += [(5, *extreme, "+I"), (5, *negated, "-U")]
    expected: dict[int, list[Any]] = {}
    for key, *values, kind in records:
        row = expected.setdefault(key, [None] * len(cells))
        for index, ((_, type_), value) in enumerate(zip(cells, values, strict=True)):
            if kind in ("+I", "+U"):
                row[index] = arithmetic(type_, "paimon", lambda x, y: x + y)(row[index], value)
            elif row[index] is None and value is not None:
                with localcontext(prec=100):
                    row[index] = exact(type_, -value, "paimon")
            else:
                row[index] = arithmetic(type_, "paimon", lambda x, y: x - y)(row[index], value)
    table = make_table(make, "paimon", cells)
    table.write(spark.createDataFrame(records, ddl(cells) + ", _row_kind string"))
    assert_rows(table, cells, {key: tuple(row) for key, row in expected.items()})


def test_a_wide_decimal_product_that_cannot_be_exact_is_refused(engine: tuple[Any, Factory]) -> None:
    spark, make = engine
    cells = [("product", "decimal(38,2)")]
    table = make_table(make, "paimon", cells)
    big = Decimal("12345678901234567890.25")
    with pytest.raises(MergeError, match=r"DECIMAL product in column product__0 \(decimal\(38,2\)\) of"):
        table.write(spark.createDataFrame([(1, big), (1, big)], ddl(cells)))
