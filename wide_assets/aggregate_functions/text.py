"""listagg and string_agg: Paimon's (delimiter, distinct, blank values skipped as Java's
StringUtils.isBlank does) and Fluss's."""

from __future__ import annotations

from wide_assets.aggregate_functions.base import Aggregator, Operands, ignoring_nulls
from wide_assets.sql import string_literal

REGEX_META = set("\\.^$|?*+()[]{}")


def literal_regex(text: str) -> str:
    """A regex matching `text` literally, valid in Java's (Spark) and Rust's (Sail) regex syntax."""
    return "".join("\\" + ch if ch in REGEX_META else ch for ch in text)


# Java's `Character.isWhitespace`, which Paimon's `StringUtils.isBlank` tests every character with:
# the space separators (Zs, Zl, Zp) except the no-break spaces U+00A0, U+2007 and U+202F, plus
# U+0009-U+000D and U+001C-U+001F. No supplementary code point is whitespace.
JAVA_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
    "\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)
# A regex class of every other character. `\uXXXX` means the same in Java's regex syntax (JVM Spark)
# and Rust's (Sail), and has no braces, which `spark.sql(text, df=...)` would read as placeholders.
NOT_JAVA_WHITESPACE = "[^" + "".join(f"\\u{ord(c):04X}" for c in JAVA_WHITESPACE) + "]"


def blank(value: str) -> str:
    """SQL: `value` is NULL or blank as Paimon's `StringUtils.isBlank` has it: empty, or made only of
    Java whitespace."""
    return f"({value} IS NULL OR NOT ({value} RLIKE {string_literal(NOT_JAVA_WHITESPACE)}))"


class ListAgg(Aggregator):
    """Paimon `listagg` (FieldListaggAgg): a NULL or blank input leaves the accumulator, a non-blank
    input onto a NULL or blank accumulator replaces it verbatim, otherwise `acc + delimiter + input`.
    With `distinct`, the input's tokens (split on the whole delimiter, or on a space when the
    delimiter is empty) are appended except blank ones and ones already seen in the accumulator or
    earlier in the input."""

    name = "listagg"
    types = ("string",)
    paimon_type_error = "Data type for list agg column must be 'VarCharType' but was '{type}'."

    def agg(self, x: Operands) -> str:
        delimiter = string_literal(x.function.delimiter)
        if not x.function.distinct:
            appended = f"concat({x.acc}, {delimiter}, {x.inp})"
        else:
            pattern = string_literal(literal_regex(x.function.delimiter or " "))
            existing = f"split({x.acc}, {pattern})"
            new_tokens = (
                f"array_distinct(filter(split({x.inp}, {pattern}), "
                f"t -> NOT {blank('t')} AND NOT array_contains({existing}, t)))"
            )
            appended = (
                f"(CASE WHEN size({new_tokens}) = 0 THEN {x.acc} "
                f"ELSE concat({x.acc}, {delimiter}, array_join({new_tokens}, {delimiter})) END)"
            )
        return f"(CASE WHEN {blank(x.inp)} THEN {x.acc} WHEN {blank(x.acc)} THEN {x.inp} ELSE {appended} END)"

    def agg_reversed(self, x: Operands) -> str:
        """An older input (a sequence group's `aggReversed`) is prepended, and skipped when blank, as a
        newer one is (docs/semantics.md Q8). Paimon's swapped `agg(in, acc)` would make an older blank input the value
        of a NULL accumulator; a stored row is folded again as its first record, where `agg` drops
        that blank: the value would then depend on whether another commit touched the key."""
        return f"(CASE WHEN {blank(x.inp)} THEN {x.acc} ELSE {self.agg(x.swapped())} END)"


class FlussListAgg(Aggregator):
    """Fluss `listagg`/`string_agg`: NULL skipped, blank strings kept, no distinct."""

    name = "listagg"
    types = ("string",)
    fluss_roots = ("STRING", "CHAR")

    def agg(self, x: Operands) -> str:
        delimiter = string_literal(x.function.delimiter)
        return ignoring_nulls(x, f"concat({x.acc}, {delimiter}, {x.inp})")
