"""Paimon's and Fluss's DECIMAL arithmetic as engine-neutral SQL: exact, rounded HALF_UP, NULL on overflow.

Paimon's `DecimalUtils.add`/`subtract` and `FieldProductAgg` compute the exact BigDecimal result and
hand it to `Decimal.fromBigDecimal(value, precision, scale)`, which rounds it HALF_UP to the column's
scale and returns NULL when it needs more than the column's precision (Fluss copies both). Spark SQL
cannot say this with `+` and `*` alone: JVM Spark types `decimal(38,s) + decimal(38,s)` as
`decimal(38,s-1)` for s > 6 and rounds the last digit away, Sail keeps `decimal(38,s)` but lets an
overflowing sum through as a 39-digit value, and Sail's `try_add` takes no DECIMAL at all. So every
expression here keeps each intermediate within 38 digits of a declared type both engines agree on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Two operands of at most this many digits multiply exactly within 38 digits (2 * 18 + 1 <= 38).
EXACT_PRODUCT_DIGITS = 18
_DECIMAL_TYPE = re.compile(r"(?:decimal|dec|numeric)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?")


@dataclass(frozen=True)
class DecimalType:
    """DECIMAL(precision, scale), parsed from a Spark SQL type name."""

    precision: int
    scale: int

    @classmethod
    def parse(cls, type_text: str) -> DecimalType | None:
        """`decimal(12,2)` -> DecimalType(12, 2); `decimal` -> (10, 0); not a DECIMAL -> None."""
        match = _DECIMAL_TYPE.fullmatch(type_text.strip().lower())
        if match is None:
            return None
        return cls(int(match[1] or 10), int(match[2] or 0))

    @property
    def sql(self) -> str:
        return f"DECIMAL({self.precision},{self.scale})"

    def typed(self, value: str) -> str:
        return f"CAST({value} AS {self.sql})"

    def bound(self, sign: str = "") -> str:
        """10^(precision - scale) as DECIMAL(38,0): the least magnitude that overflows. The sign is
        part of the literal: JVM Spark's unary minus rounds 38 digits to 34 (a 34-digit MathContext)."""
        return f"CAST('{sign}1{'0' * (self.precision - self.scale)}' AS DECIMAL(38,0))"


def decimal_add(left: str, right: str, t: DecimalType) -> str:
    """`left + right` in DECIMAL t, NULL when the sum overflows t (Paimon's `DecimalUtils.add`)."""
    a, b = t.typed(left), t.typed(right)
    if t.precision < 38:
        # decimal(p+1, s) holds every sum exactly on both engines; the narrowing cast NULLs overflow.
        return f"try_cast({a} + {b} AS {t.sql})"
    if t.scale == 0:
        # decimal(38,0) sums exactly on both engines as long as the result fits, so test that first.
        # Each room left is computed from `a` clamped to its side of zero: an engine evaluates both
        # sides of AND for every row, and `least - a` for a large positive `a` overflows (Sail raises).
        most, least = (f"CAST('{sign}{'9' * 38}' AS DECIMAL(38,0))" for sign in ("", "-"))
        zero = "CAST(0 AS DECIMAL(38,0))"
        room_up, room_down = f"{most} - greatest({a}, {zero})", f"{least} - least({a}, {zero})"
        overflows = f"({a} > 0 AND {b} > {room_up}) OR ({a} < 0 AND {b} < {room_down})"
        return f"(CASE WHEN {overflows} THEN CAST(NULL AS {t.sql}) ELSE CAST({a} + {b} AS {t.sql}) END)"
    return _wide_add(a, b, t)


def _wide_add(a: str, b: str, t: DecimalType) -> str:
    """A DECIMAL(38, s>0) sum, as integral part plus fraction in [0, 1), each summed in narrower
    types, and the result spelled as text: the only exact way back into decimal(38, s) on JVM Spark."""
    one = "CAST(1 AS DECIMAL(1,0))"
    fraction_type = f"DECIMAL({t.scale + 1},{t.scale})"
    fractions = f"(pmod({a}, {one}) + pmod({b}, {one}))"  # in [0, 2)
    carry = f"(CASE WHEN {fractions} >= {one} THEN {one} ELSE CAST(0 AS DECIMAL(1,0)) END)"
    whole = f"CAST(floor({a}) + floor({b}) + {carry} AS DECIMAL(38,0))"
    fraction = f"CAST(pmod({fractions}, {one}) AS {fraction_type})"
    # "0.25" -> ".25": the fraction's digits after the point, always `scale` of them.
    digits = f"substr(CAST({fraction} AS STRING), 2)"
    complement = f"substr(CAST(CAST({one} - {fraction} AS {fraction_type}) AS STRING), 2)"
    # A negative whole with a fraction, e.g. -3 + 0.25, is spelled -(2 + 0.75): "-2.75". (Not
    # `-(whole + 1)`: JVM Spark's unary minus rounds 38 digits to 34.)
    text = (
        f"(CASE WHEN {whole} < 0 AND {fraction} > 0 "
        f"THEN concat(CASE WHEN {whole} = -1 THEN '-0' ELSE CAST({whole} + {one} AS STRING) END, {complement}) "
        f"ELSE concat(CAST({whole} AS STRING), {digits}) END)"
    )
    rounds_to_bound = f"(CASE WHEN {fraction} > 0 THEN {one} ELSE CAST(0 AS DECIMAL(1,0)) END)"
    overflows = f"{whole} >= {t.bound()} OR {whole} + {rounds_to_bound} <= {t.bound('-')}"
    # try_cast: Sail may evaluate the ELSE branch of constants that overflow.
    return f"(CASE WHEN {overflows} THEN CAST(NULL AS {t.sql}) ELSE try_cast({text} AS {t.sql}) END)"


def decimal_subtract(left: str, right: str, t: DecimalType) -> str:
    """`left - right` in DECIMAL t, NULL on overflow (`DecimalUtils.subtract`)."""
    if t.precision < 38:
        return f"try_cast({t.typed(left)} - {t.typed(right)} AS {t.sql})"
    return decimal_add(left, decimal_negate(right, t), t)


def decimal_negate(value: str, t: DecimalType) -> str:
    """`-value` in DECIMAL t, spelled as text: JVM Spark negates through a 34-digit MathContext
    (`-CAST('-35008549128761530720081554985053972285' AS DECIMAL(38,0))` ends in 0000), and
    `0 - value` would be typed with one digit of scale less."""
    text = f"CAST({t.typed(value)} AS STRING)"
    flipped = f"(CASE WHEN {text} LIKE '-%' THEN substr({text}, 2) ELSE concat('-', {text}) END)"
    return f"CAST({flipped} AS {t.sql})"


def decimal_multiply(left: str, right: str, t: DecimalType, too_wide: str) -> str:
    """`left * right` rounded HALF_UP to t's scale, NULL on overflow (FieldProductAgg). Operands of
    at most 18 digits multiply exactly in decimal(37, 2 * scale) on both engines; wider operand types
    would be rounded before the final rounding (JVM Spark types decimal(38,18) * decimal(38,18) as
    decimal(38,6), Sail as decimal(38,36)). So wider columns multiply values that equal themselves
    in decimal(18, r) for some r of a few scales, and evaluate `too_wide` for any other values."""
    a, b = t.typed(left), t.typed(right)
    if t.precision <= EXACT_PRODUCT_DIGITS:
        return f"try_cast({a} * {b} AS {t.sql})"
    branches = []
    for r in sorted({min(t.scale, EXACT_PRODUCT_DIGITS), 12, 9, 6, 3, 0}, reverse=True):
        # Compared with a value of t, decimal(18, r) widens to decimal(s + max(18 - r, p - s), s),
        # which must fit in 38 digits to compare exactly.
        if r > t.scale or t.scale + max(EXACT_PRODUCT_DIGITS - r, t.precision - t.scale) > 38:
            continue
        narrow = DecimalType(EXACT_PRODUCT_DIGITS, r)
        # try_cast: NULL (not equal) for a value that needs more digits; an engine may evaluate the
        # branch for operands that do not fit (Sail folds constants).
        fits = " AND ".join(f"try_cast({v} AS {narrow.sql}) = {v}" for v in (a, b))
        product = f"try_cast(try_cast({a} AS {narrow.sql}) * try_cast({b} AS {narrow.sql}) AS {t.sql})"
        branches.append(f"WHEN {fits} THEN {product}")
    if not branches:
        return too_wide
    return f"(CASE {' '.join(branches)} ELSE {too_wide} END)"
