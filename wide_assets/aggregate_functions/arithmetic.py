"""sum and product: Paimon's with overflow checks and exact DECIMAL arithmetic (FieldSumAgg,
FieldProductAgg), Fluss's wrapping on integer overflow."""

from __future__ import annotations

from wide_assets.aggregate_functions.base import (
    FLUSS_NUMERIC_ROOTS,
    INTEGRAL,
    INTEGRAL_BITS,
    JAVA_INTEGRAL,
    NUMERIC,
    Aggregator,
    Operands,
    ignoring_nulls,
)
from wide_assets.decimals import (
    EXACT_PRODUCT_DIGITS,
    DecimalType,
    decimal_add,
    decimal_multiply,
    decimal_subtract,
)
from wide_assets.sql import Value, fail

ARITHMETIC = {"add": "+", "subtract": "-", "multiply": "*"}


def overflow(x: Operands, operation: str, left: str | None, right: str) -> str:
    """The error an overflowing integral `left <operation> right` raises: Paimon's message
    (FieldSumAgg/FieldProductAgg: Java's `Math.*Exact` and their byte/short variants), with the
    operands' values, e.g. `int overflow: 2147483647 + 1` or `byte overflow: 127 + 1 = 128`;
    `left` None is a negation (`int overflow: --2147483648`)."""
    symbol = ARITHMETIC[operation]
    java = JAVA_INTEGRAL[x.column.base_type]
    if left is None:
        parts: list[str | Value] = [f"{java} overflow: -", Value(right)]
        exact = f"-CAST({right} AS INT)"
    else:
        parts = [f"{java} overflow: ", Value(left), f" {symbol} ", Value(right)]
        exact = f"CAST({left} AS INT) {symbol} CAST({right} AS INT)"
    if java in ("byte", "short"):  # the result, computed as an int, is printed too
        parts += [" = ", Value(exact)]
    return fail(*parts)


def decimal_arithmetic(x: Operands, operation: str, left: str, right: str, decimal: DecimalType) -> str:
    """`left <operation> right` as Paimon's and Fluss's decimal arithmetic has it: exact, rounded
    HALF_UP to the column's scale, NULL on overflow (docs/semantics.md, DECIMAL arithmetic)."""
    if operation == "add":
        return decimal_add(left, right, decimal)
    if operation == "subtract":
        return decimal_subtract(left, right, decimal)
    too_wide = fail(
        f"DECIMAL product in column {x.column.name} ({x.column.type}) of ",
        Value(left),
        " and ",
        Value(right),
        f": Spark SQL multiplies DECIMAL operands of more than {EXACT_PRODUCT_DIGITS} digits only "
        f"approximately, so the product is refused; declare the column with precision "
        f"{EXACT_PRODUCT_DIGITS} or less to multiply these values",
    )
    return decimal_multiply(left, right, decimal, too_wide)


def checked(x: Operands, operation: str, left: str | None, right: str) -> str:
    """`left <operation> right` (`0 - right` for `left` None) in the column type; integral overflow
    is an error, decimal overflow NULL (Paimon)."""
    lhs = "0" if left is None else left
    if x.column.base_type in ("float", "double"):
        if left is None and operation == "subtract":
            # Java's negation (`FieldSumAgg.retract` of a NULL sum): -0.0 for 0.0, where 0 - 0.0 is 0.0.
            return f"CAST(-({right}) AS {x.column.type})"
        return f"CAST({lhs} {ARITHMETIC[operation]} {right} AS {x.column.type})"
    decimal = DecimalType.parse(x.column.type)
    if decimal is not None:
        return decimal_arithmetic(x, operation, lhs, right, decimal)
    message = overflow(x, operation, left, right)
    if x.column.base_type in ("tinyint", "smallint"):
        # Sail's try_* take no TINYINT/SMALLINT; in INT the result is exact and try_cast range-checks it.
        lhs, right = f"CAST({lhs} AS INT)", f"CAST({right} AS INT)"
    return f"coalesce(try_cast(try_{operation}({lhs}, {right}) AS {x.column.type}), {message})"


def wrapped(x: Operands, operation: str) -> str:
    """`acc <operation> in` with two's-complement wrap-around, as Java arithmetic in Fluss does;
    decimals as in Paimon (Fluss's `DecimalUtils` is Paimon's)."""
    decimal = DecimalType.parse(x.column.type)
    if decimal is not None:
        return decimal_arithmetic(x, operation, x.acc, x.inp, decimal)
    bits = INTEGRAL_BITS.get(x.column.base_type)
    if bits is None:
        return f"CAST({x.acc} {ARITHMETIC[operation]} {x.inp} AS {x.column.type})"
    half = 2 ** (bits - 1)
    exact = f"CAST({x.acc} AS DECIMAL(38,0)) {ARITHMETIC[operation]} CAST({x.inp} AS DECIMAL(38,0))"
    return f"CAST(pmod({exact} + {half}, {2 * half}) - {half} AS {x.column.type})"


class Sum(Aggregator):
    name = "sum"
    types = NUMERIC
    paimon_type_error = "Data type for sum column must be 'NumericType' but was '{type}'."
    fluss_roots = FLUSS_NUMERIC_ROOTS
    checks_accumulator = True

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, checked(x, "add", x.acc, x.inp))

    def retract(self, x: Operands) -> str:
        return (
            f"(CASE WHEN {x.inp} IS NULL THEN {x.acc} WHEN {x.acc} IS NULL THEN {checked(x, 'subtract', None, x.inp)} "
            f"ELSE {checked(x, 'subtract', x.acc, x.inp)} END)"
        )


class WrappingSum(Sum):
    """Fluss `sum`: integral overflow wraps around (no check)."""

    checks_accumulator = False

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, wrapped(x, "add"))


class Product(Aggregator):
    name = "product"
    types = NUMERIC
    paimon_type_error = "Data type for product column must be 'NumericType' but was '{type}'."
    fluss_roots = FLUSS_NUMERIC_ROOTS
    checks_accumulator = True

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, checked(x, "multiply", x.acc, x.inp))

    def retract(self, x: Operands) -> str:
        """`FieldProductAgg.retract`: `acc / in`, stated for every value rather than left to the engine
        (Sail raises on a zero divisor of any type; Spark returns NULL, or raises under ANSI)."""
        return f"(CASE WHEN {x.acc} IS NULL OR {x.inp} IS NULL THEN {x.acc} ELSE {self._quotient(x)} END)"

    @staticmethod
    def _quotient(x: Operands) -> str:
        acc, inp, base = x.acc, x.inp, x.column.base_type
        if base in INTEGRAL:
            # Java's integer division: truncated, "/ by zero"; only MIN / -1 leaves the type (Paimon
            # divides a byte or short as an int and names the result).
            smallest = -(2 ** (INTEGRAL_BITS[base] - 1))
            result = f" = {-smallest}" if INTEGRAL_BITS[base] < 32 else ""
            too_large = fail(f"{JAVA_INTEGRAL[base]} overflow: {smallest} / -1{result}")
            return (
                f"CASE WHEN {inp} = 0 THEN {fail('/ by zero')} WHEN {acc} = {smallest} AND {inp} = -1 "
                f"THEN {too_large} ELSE CAST({acc} div {inp} AS {x.column.type}) END"
            )
        if base == "decimal":
            # BigDecimal.divide's errors; the quotient rounded HALF_UP to the scale, NULL past the
            # precision (Decimal.fromBigDecimal), as a product's overflow is.
            undefined = f"CASE WHEN {acc} = 0 THEN 'Division undefined' ELSE 'Division by zero' END"
            return f"CASE WHEN {inp} = 0 THEN {fail(Value(undefined))} ELSE try_cast({acc} / {inp} AS {x.column.type}) END"
        # FLOAT, DOUBLE: IEEE 754, as Java divides: x / ±0 is ±Infinity by the signs, 0 / 0 and NaN / 0 NaN.
        # The sign of a zero, as its text: Spark's atan2 adds 0.0 to its arguments, losing it.
        negative_zero = f"CAST({inp} AS STRING) LIKE '-%'"
        by_zero = (
            f"CASE WHEN isnan({acc}) OR {acc} = 0 THEN CAST('NaN' AS {x.column.type}) "
            f"WHEN ({acc} > 0) <> ({negative_zero}) THEN CAST('Infinity' AS {x.column.type}) "
            f"ELSE CAST('-Infinity' AS {x.column.type}) END"
        )
        return f"CASE WHEN {inp} = 0 THEN {by_zero} ELSE CAST({acc} / {inp} AS {x.column.type}) END"


class WrappingProduct(Product):
    checks_accumulator = False

    def agg(self, x: Operands) -> str:
        return ignoring_nulls(x, wrapped(x, "multiply"))
