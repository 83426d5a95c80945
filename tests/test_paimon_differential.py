"""Apache Paimon itself as the oracle: random CDC workloads over random table definitions
(`tests/paimon_workloads.py`) go through Paimon (`tests/paimon_oracle.py`) and through `WideTable.write`
on Sail; the merged tables and each commit's changelog, or the refusals and their messages, must be
equal.

CI runs a fixed seed: random tables, and tables of each aggregate function alone (`function_tour`);
the random tables again made write-only and compacted after every other commit, with more random
tables whose writers stay lookup-free (`write_only_tour`), whose union read with the commits since
pending must hold Paimon's rows. A long run is `python tests/test_paimon_differential.py --tables 500 --keys 200 --seed 7` (100,000 keys;
from the worktree, with `make jars` done; it prints every disagreement and the figures).
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from paimon_oracle import PAIMON_JAR, Outcome, PaimonOracle, Rows, Workload, plain, sort_rows
from paimon_workloads import aggregated_by, workload
from pyroaring import BitMap

from wide_assets import WideTable
from wide_assets.errors import InvalidOptionError
from wide_assets.schema import Column
from wide_assets.table_definition import TableDefinition

CI_SEED = 20261126
CI_TABLES = 24
CI_TABLES_PER_FUNCTION = 2
CI_WRITE_ONLY_TABLES = 12
_JARS = Path(__file__).resolve().parent.parent / ".jars"


@dataclass(frozen=True)
class Disagreement:
    workload: Workload
    paimon: Outcome
    ours: Outcome

    def __str__(self) -> str:
        return f"{self.workload.describe()}\nPaimon: {self.paimon}\nours:   {self.ours}"


def run_ours(spark: Any, path: Path, w: Workload, write_only: bool = False) -> Outcome:
    """The workload through `WideTable.write`, one write per commit, and with a changelog producer each
    commit's changelog; an error is an outcome. `write_only`: into the table made write-only,
    compacted after every other commit, and read with the commits since pending (the union read over
    stored rows; a write-only table's changelog comes at compaction)."""
    columns = [Column(name, t, nullable=name not in w.primary_key) for name, t in w.columns]
    ddl = ", ".join(c.ddl for c in columns) + ", _row_kind string, _offset bigint"
    options = {**w.options, "write-only": "true"} if write_only else w.options
    try:
        table = WideTable.create(spark, path, columns, list(w.primary_key), options)
        commits = []
        for n, commit in enumerate(w.commits):
            rows = [(*values, kind, offset) for offset, (kind, values) in enumerate(commit)]
            commits.append(table.write(spark.createDataFrame(rows, ddl)).commit)
            if write_only and n % 2 == 0 and n < len(w.commits) - 1:
                table.compact()
        read = table.read().collect()
        entries = (
            table.changelog().collect()
            if w.options.get("changelog-producer", "none") != "none" and not write_only
            else None
        )
    except Exception as error:  # a refusal is compared with Paimon's
        return Outcome(None, f"{type(error).__name__}: {error}")

    def values(row: Any) -> tuple[Any, ...]:
        return tuple(plain(row[c.name], c.type) for c in columns)

    merged = sort_rows([values(row) for row in read])
    if entries is None:
        return Outcome(merged, None)
    changelog = tuple(
        sort_rows([(e["_row_kind"], *values(e)) for e in entries if e["_commit"] == n]) for n in commits
    )
    return Outcome(merged, None, changelog)


def root_message(chain: str) -> str:
    """The message of the last cause in Paimon's error chain (one `Class: message` per cause)."""
    starts = [m.end() for m in re.finditer(r"^[A-Za-z.]*(?:Exception|Error): ", chain, re.MULTILINE)]
    return chain[starts[-1] :].strip() if starts else chain.strip()


def same(paimon: Outcome, ours: Outcome) -> bool:
    """The same rows and, where Paimon has one, the same changelog per commit (as text: NaN is not equal
    to itself), or both refused with Paimon's message."""
    if paimon.error is not None or ours.error is not None:
        if paimon.error is None or ours.error is None:
            return False
        return root_message(paimon.error) in ours.error
    assert paimon.rows is not None and ours.rows is not None
    if paimon.changelog is not None and [_as_text(c) for c in paimon.changelog] != [
        _as_text(c) for c in ours.changelog or ()
    ]:
        return False
    return _as_text(paimon.rows) == _as_text(ours.rows)


def _as_text(rows: Rows) -> list[list[str]]:
    return [[repr(v) for v in row] for row in rows]


def as_we_choose(paimon: Outcome, w: Workload) -> Outcome:
    """Paimon's outcome with our deliberate choices and Paimon's current code applied to its changelog
    (docs/semantics.md F3, C6): a first-row table announces a new key as `+I`, where Paimon passes on
    the first record's own kind; `row-deduplicate` drops an unchanged row that holds an array with a
    NULL element, a map with a NULL value or a NaN, which Paimon 1.4.2's generated equaliser finds
    unequal to itself, and one whose set-compared array only changed its hash order."""
    if paimon.changelog is None:
        return paimon
    changelog = paimon.changelog
    if w.options.get("merge-engine") == "first-row":
        changelog = tuple(sort_rows([("+I", *row[1:]) for row in c]) for c in changelog)
    if w.options.get("changelog-producer.row-deduplicate") == "true":
        changelog = tuple(sort_rows(_without_unchanged_pairs(c, w)) for c in changelog)
    return replace(paimon, changelog=changelog)


def _without_unchanged_pairs(entries: Rows, w: Workload) -> list[tuple[Any, ...]]:
    """A commit's changelog (its set-compared columns sorted: `as_sets`) without the `-U`/`+U` pairs of
    one key whose images are equal and hold an array with a NULL element, a map with a NULL value or a
    FLOAT/DOUBLE NaN, or differed only in the hash order of a column compared as a set."""
    reordered = bool(_compared_as_sets(w))

    def unequal_to_itself(entry: tuple[Any, ...]) -> bool:
        return reordered or any(
            v is not None
            and (
                (t.startswith("array<") and None in v)
                or (t.startswith("map<") and any(e[1] is None for e in v))
                or (t in ("float", "double") and math.isnan(v))
            )
            for v, (_, t) in zip(entry[1:], w.columns, strict=True)
        )

    return _without_lone_pairs(
        entries,
        w,
        lambda before, after: repr(before[1:]) == repr(after[1:]) and unequal_to_itself(before),
    )


def _without_lone_pairs(
    entries: Rows, w: Workload, dropped: Callable[[tuple[Any, ...], tuple[Any, ...]], bool]
) -> list[tuple[Any, ...]]:
    """A commit's changelog without each key's `-U`/`+U` pair, when they are the key's only entries and
    `dropped(before, after)` holds."""
    key = [n + 1 for n, (name, _) in enumerate(w.columns) if name in w.primary_key]
    gone = set()
    for before in entries:
        same_key = [e for e in entries if [repr(e[n]) for n in key] == [repr(before[n]) for n in key]]
        after = [e for e in same_key if e[0] == "+U"]
        if before[0] == "-U" and len(same_key) == 2 and after and dropped(before, after[0]):
            gone.update({repr(before), repr(after[0])})
    return [e for e in entries if repr(e) not in gone]


def without_signed_zero_updates(ours: Outcome, w: Workload) -> Outcome:
    """Our outcome without the `-U`/`+U` pairs of one key whose images differ only in the sign of a
    FLOAT or DOUBLE zero, under `row-deduplicate`: Paimon 1.4.2's generated equaliser compares them with
    `==` and drops the pair as unchanged; we keep it, as its current code (`Double.compare`,
    apache/paimon#8534) does (docs/semantics.md C6, 1.6.2)."""
    if ours.changelog is None or w.options.get("changelog-producer.row-deduplicate") != "true":
        return ours
    floating = {n + 1 for n, (_, t) in enumerate(w.columns) if t in ("float", "double")}

    def equal_but_for_zeros(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
        differing = [n for n in range(1, len(before)) if repr(before[n]) != repr(after[n])]
        return bool(differing) and all(n in floating and before[n] == after[n] == 0 for n in differing)

    return replace(
        ours,
        changelog=tuple(sort_rows(_without_lone_pairs(c, w, equal_but_for_zeros)) for c in ours.changelog),
    )


def _compared_as_sets(w: Workload) -> dict[int, Callable[[Any], Any]]:
    """Column position -> how its value is compared as a set (see `as_sets`)."""

    def as_set(name: str) -> Callable[[Any], Any] | None:
        function = w.options.get(f"fields.{name}.aggregate-function")
        if function == "rbm32":
            return lambda v: list(BitMap.deserialize(v))
        unordered = (function == "collect" and w.options.get(f"fields.{name}.distinct") == "true") or (
            function in ("nested_update", "nested_partial_update")
            and f"fields.{name}.nested-key" in w.options
        )
        return (lambda v: sorted(v, key=repr)) if unordered else None

    return {n: f for n, (name, _) in enumerate(w.columns) if (f := as_set(name))}


def as_sets(outcome: Outcome, w: Workload) -> Outcome:
    """The outcome with the arrays of each distinct `collect` column and of each `nested_update` or
    `nested_partial_update` column with a `nested-key` sorted: Paimon's order is a HashSet's
    (`FieldCollectAgg.agg`) or a HashMap's (`FieldNestedUpdateAgg.agg`), so such a column is
    compared as a set; and each `rbm32`
    bitmap as its values (pyroaring), whichever containers its serialized form chose."""

    sets = _compared_as_sets(w)
    if not sets or outcome.rows is None:
        return outcome

    def sorted_sets(row: tuple[Any, ...], at: int) -> tuple[Any, ...]:
        return tuple(sets[n - at](v) if n - at in sets and v is not None else v for n, v in enumerate(row))

    changelog = outcome.changelog and tuple(
        sort_rows([sorted_sets(row, 1) for row in c]) for c in outcome.changelog
    )
    return replace(
        outcome, rows=sort_rows([sorted_sets(row, 0) for row in outcome.rows]), changelog=changelog
    )


# Paimon's `FieldProductAgg.retract` divides a DECIMAL with `BigDecimal.divide`, which raises this where
# the quotient has no finite expansion; we round it HALF_UP to the column's scale.
NON_TERMINATING = "Non-terminating decimal expansion"


def differences(
    spark: Any,
    workloads: Sequence[Workload],
    outcomes: Sequence[Outcome],
    lake: Path,
    write_only: bool = False,
) -> list[Disagreement]:
    """The workloads whose run through us (see `run_ours`) differs from Paimon's `outcomes`. Write-only,
    only the rows of the workloads Paimon took are compared: Paimon's changelog is its commits', and a
    write-only table may refuse records when it folds them rather than when they are written."""
    found = []
    for n, (w, paimon) in enumerate(zip(workloads, outcomes, strict=True)):
        if paimon.error is not None and (write_only or NON_TERMINATING in paimon.error):
            continue  # we round the quotient (docs/semantics.md 1.6): a deliberate difference
        ours = run_ours(spark, lake / f"t{n}", w, write_only)
        expected = replace(paimon, changelog=None) if write_only else paimon
        if not same(as_we_choose(as_sets(expected, w), w), as_sets(without_signed_zero_updates(ours, w), w)):
            found.append(Disagreement(w, paimon, ours))
    return found


def workloads(seed: int, tables: int, keys: int = 5) -> list[Workload]:
    rng = random.Random(seed)
    return [workload(rng, keys=keys) for _ in range(tables)]


def write_only_tour(seed: int, tables: int) -> list[Workload]:
    """`tables` random tables whose writers stay lookup-free once made write-only (their union read
    folds the pending records itself), of 2-4 commits: a fixed seed's random tables draw few."""
    rng = random.Random(seed)
    chosen: list[Workload] = []
    while len(chosen) < tables:
        w = workload(rng, keys=8)
        columns = [Column(name, t, nullable=name not in w.primary_key) for name, t in w.columns]
        try:
            merge = TableDefinition.build(
                columns, list(w.primary_key), {**w.options, "write-only": "true"}
            ).merge
        except InvalidOptionError:
            continue
        if merge.lookup_free_writes and len(w.commits) >= 2:
            chosen.append(w)
    return chosen


def function_tour(seed: int, per_function: int) -> list[Workload]:
    """`per_function` aggregation tables of each aggregate function alone: the random tables draw a
    rare function (bool_or, listagg) too seldom for a fixed seed's short run to exercise it."""
    rng = random.Random(seed)
    return [workload(rng, function=f) for f in aggregated_by() for _ in range(per_function)]


@pytest.mark.jvm
def test_wide_table_holds_what_paimon_holds(spark: Any, tmp_path: Path) -> None:
    oracle = PaimonOracle(_JARS, tmp_path / "oracle")
    chosen = workloads(CI_SEED, CI_TABLES) + function_tour(CI_SEED, CI_TABLES_PER_FUNCTION)
    lookup_free = write_only_tour(CI_SEED, CI_WRITE_ONLY_TABLES)
    outcomes = oracle.run(chosen + lookup_free)
    found = differences(spark, chosen, outcomes[: len(chosen)], tmp_path / "lake")
    assert not found, "\n\n".join(map(str, found))
    # The random tables made write-only, read with the commits since the last compaction pending.
    write_only = chosen[:CI_TABLES] + lookup_free
    found = differences(
        spark,
        write_only,
        outcomes[:CI_TABLES] + outcomes[len(chosen) :],
        tmp_path / "write_only",
        write_only=True,
    )
    assert not found, "\n\n".join(map(str, found))


_INT3 = (("k", "int"), ("v", "int"), ("s", "int"))
_GROUP = (("k", "int"), ("g", "int"), ("p", "decimal(10,2)"))
_ZERO_KEY = (("k", "double"), ("v", "int"))
_DESCENDING = {
    "merge-engine": "deduplicate",
    "sequence.field": "s",
    "sequence.field.sort-order": "descending",
}
_MIN_IN_GROUP = {
    "merge-engine": "partial-update",
    "fields.g.sequence-group": "p",
    "fields.p.aggregate-function": "min",
    "fields.p.ignore-retract": "true",
}
# (workload, Paimon 1.4.2's rows, ours): the minimized disagreements the run found, each decided in
# docs/semantics.md: fixed (the same rows since), a deliberate choice (Q4-Q7), or Paimon's current code
# where it changed after 1.4.2 (V1).
MINIMIZED = {
    "A1 a retraction clears the sequence field of an aggregation table": (
        Workload(
            _INT3,
            ("k",),
            {"merge-engine": "aggregation", "sequence.field": "s"},
            ((("+I", (1, 5, 1)),), (("-U", (1, 5, 1)),), (("+I", (1, 7, 0)),)),
        ),
        ((1, 7, 0),),
        ((1, 7, 0),),
    ),
    "Q4 descending order inside one commit": (
        Workload(_INT3, ("k",), _DESCENDING, ((("+I", (1, 1, 1)), ("+I", (1, 2, 2))),)),
        ((1, 2, 2),),
        ((1, 1, 1),),
    ),
    "Q5 a new key's lone record with a NULL group sequence": (
        Workload(
            _GROUP,
            ("k",),
            {"merge-engine": "partial-update", "fields.g.sequence-group": "p"},
            ((("+U", (2, None, Decimal("0.5"))),),),
        ),
        ((2, None, Decimal("0.50")),),
        ((2, None, None),),
    ),
    "Q5 a new key's first record is a retraction": (
        Workload(
            _GROUP, ("k",), _MIN_IN_GROUP, ((("-U", (4, 3, Decimal("-0.75"))), ("+I", (4, 1, Decimal(0)))),)
        ),
        ((4, 3, Decimal("-0.75")),),
        ((4, 3, Decimal("0.00")),),
    ),
    "Q5 a commit's leading -U seeds the row (remove-record-on-delete)": (
        Workload(
            (("k", "int"), ("v", "int"), ("w", "int")),
            ("k",),
            {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
            ((("+I", (1, 5, 5)),), (("-U", (1, 1, 1)), ("+U", (1, None, 7)))),
        ),
        ((1, 1, 7),),
        ((1, 5, 7),),
    ),
    "Q6 a commit's fold meets the stored row in sequence.field order": (
        Workload(
            _INT3,
            ("k",),
            {"merge-engine": "partial-update", "sequence.field": "s"},
            ((("+I", (1, 1, 1)),), (("+I", (1, 3, 0)), ("+I", (1, None, 1)))),
        ),
        ((1, 3, 1),),
        ((1, 1, 1),),
    ),
    "Q6 a retraction folded with its commit's other records": (
        Workload(
            _GROUP,
            ("k",),
            {
                "merge-engine": "partial-update",
                "fields.g.sequence-group": "p",
                "fields.p.aggregate-function": "last_non_null_value",
            },
            ((("+I", (1, 1, Decimal(-2))),), (("-U", (1, 2, Decimal(-1))), ("+U", (1, None, Decimal(3))))),
        ),
        ((1, 2, Decimal("-2.00")),),
        ((1, 2, None),),
    ),
    "Q6 an older record folded with a newer one of its commit": (
        Workload(
            _GROUP,
            ("k",),
            {
                "merge-engine": "partial-update",
                "fields.g.sequence-group": "p",
                "fields.p.aggregate-function": "last_non_null_value",
            },
            ((("+I", (1, 3, Decimal("0.75"))),), (("+U", (1, 2, Decimal("-0.25"))), ("+I", (1, 5, None)))),
        ),
        ((1, 5, Decimal("-0.25")),),
        ((1, 5, Decimal("0.75")),),
    ),
    "Q6 a DECIMAL sum overflowing inside a commit": (
        Workload(
            (("k", "int"), ("a", "decimal(38,10)")),
            ("k",),
            {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"},
            (
                (("+I", (4, Decimal("0.125"))),),
                (
                    ("+U", (4, Decimal("9" * 28 + "." + "9" * 10))),
                    ("+I", (4, Decimal("0.75"))),
                    ("+I", (4, Decimal("-0.375"))),
                ),
            ),
        ),
        ((4, Decimal("-0.2500000000")),),
        ((4, Decimal("0.3750000000")),),
    ),
    "Q10 a -0.0 key's record sorts before 0.0's in one commit": (
        Workload(
            _ZERO_KEY, ("k",), {"merge-engine": "deduplicate"}, ((("+I", (0.0, 1)), ("+I", (-0.0, 2))),)
        ),
        ((0.0, 1),),
        ((0.0, 2),),
    ),
    "Q10 a -0.0 key's later record respells the row's key": (
        Workload(
            _ZERO_KEY, ("k",), {"merge-engine": "deduplicate"}, ((("+I", (0.0, 1)),), (("+I", (-0.0, 2)),))
        ),
        ((-0.0, 2),),
        ((0.0, 2),),
    ),
    "Q10 a -0.0 sequence's record sorts before 0.0's in one commit": (
        Workload(
            (("k", "int"), ("v", "int"), ("s", "double")),
            ("k",),
            {"merge-engine": "deduplicate", "sequence.field": "s"},
            ((("+I", (1, 1, 0.0)), ("+I", (1, 2, -0.0))),),
        ),
        ((1, 1, 0.0),),
        ((1, 2, -0.0),),
    ),
    "V1 listagg skips a blank input (Paimon 2.0's FieldListaggAgg; 1.4.2 keeps a leading one)": (
        Workload(
            (("k", "int"), ("a", "string")),
            ("k",),
            {"merge-engine": "aggregation", "fields.a.aggregate-function": "listagg"},
            ((("+I", (1, " ")),), (("+I", (1, "b")), ("+I", (1, "\t")))),
        ),
        ((1, " ,b,\t"),),
        ((1, "b"),),
    ),
    "Q7 a NaN group sequence is older than no number": (
        Workload(
            (("k", "int"), ("g1", "double"), ("p2", "bigint")),
            ("k",),
            {
                "merge-engine": "partial-update",
                "fields.g1.sequence-group": "p2",
                "partial-update.remove-record-on-sequence-group": "g1",
            },
            ((("+I", (0, math.nan, 2**63 - 1)),), (("-D", (0, -1.0, 2)),)),
        ),
        (),
        ((0, math.nan, 2**63 - 1),),
    ),
    "Q7 a NaN sequence.field ties with every value": (
        Workload(
            (("k", "int"), ("s", "double"), ("v", "bigint")),
            ("k",),
            {"merge-engine": "deduplicate", "sequence.field": "s"},
            ((("+I", (0, 2.0, 1)),), (("+I", (0, math.nan, 5)),), (("+I", (0, 1.0, 9)),)),
        ),
        ((0, 1.0, 9),),
        ((0, math.nan, 5),),
    ),
    "Q9 a lone record's distinct collect keeps its repeats": (
        Workload(
            (("k", "int"), ("a", "array<int>")),
            ("k",),
            {
                "merge-engine": "aggregation",
                "fields.a.aggregate-function": "collect",
                "fields.a.distinct": "true",
            },
            ((("+I", (1, [1, 1, 2])),),),
        ),
        ((1, [1, 1, 2]),),
        ((1, [1, 2]),),
    ),
    "Q9 a lone record's keyed nested_update keeps both rows of a key": (
        Workload(
            (("k", "int"), ("n", "array<struct<id:int,v:string>>")),
            ("k",),
            {
                "merge-engine": "aggregation",
                "fields.n.aggregate-function": "nested_update",
                "fields.n.nested-key": "id",
            },
            ((("+I", (1, [(2, "z"), (2, "y")])),),),
        ),
        ((1, [(2, "z"), (2, "y")]),),
        ((1, [(2, "y")]),),
    ),
}


# A product's retraction divides (FieldProductAgg.retract): by zero, truncating, in every type the
# oracle takes.
_PRODUCT = {"merge-engine": "aggregation", "fields.v.aggregate-function": "product"}


def _retraction(kind: str, stored: Any, retracted: Any) -> Workload:
    return Workload(
        (("k", "int"), ("v", kind)), ("k",), _PRODUCT, ((("+I", (1, stored)),), (("-U", (1, retracted)),))
    )


PRODUCT_RETRACTIONS = {
    "int by zero": _retraction("int", 6, 0),
    "int truncated": _retraction("int", -7, 2),
    "tinyint by zero": _retraction("tinyint", 6, 0),
    "smallint truncated": _retraction("smallint", 7, -2),
    "decimal by zero": _retraction("decimal(10,2)", Decimal("1.50"), Decimal("0.00")),
    "decimal 0 / 0": _retraction("decimal(10,2)", Decimal(0), Decimal(0)),
    "double by zero": _retraction("double", 2.0, 0.0),
    "double by -0.0": _retraction("double", 2.0, -0.0),
    "negative double by zero": _retraction("double", -2.0, 0.0),
    "double 0 / 0": _retraction("double", 0.0, 0.0),
    "NaN by zero": _retraction("double", math.nan, 0.0),
    "infinity by -0.0": _retraction("double", math.inf, -0.0),
    "float by -0.0": _retraction("float", 3.0, -0.0),
}
# MIN / -1 wraps around in Paimon 1.4.2 (Java's `/`); its current code raises (`divideExactInt` and the
# like, a byte or short divided as an int), which we follow, as for `sum`'s `Math.addExact`.
PRODUCT_OVERFLOWS = {
    "int overflow: -2147483648 / -1": _retraction("int", -(2**31), -1),
    "long overflow: -9223372036854775808 / -1": _retraction("bigint", -(2**63), -1),
    "byte overflow: -128 / -1 = 128": _retraction("tinyint", -128, -1),
    "short overflow: -32768 / -1 = 32768": _retraction("smallint", -(2**15), -1),
}


@pytest.mark.jvm
def test_a_product_retraction_divides_as_paimon_does(spark: Any, tmp_path: Path) -> None:
    """Rows, or the refusal with Paimon's message, for each retraction in PRODUCT_RETRACTIONS."""
    oracle = PaimonOracle(_JARS, tmp_path / "oracle")
    names, chosen = list(PRODUCT_RETRACTIONS), list(PRODUCT_RETRACTIONS.values())
    found = []
    for name, w, paimon in zip(names, chosen, oracle.run(chosen), strict=True):
        ours = run_ours(spark, tmp_path / name.replace(" ", "_").replace("/", "by"), w)
        if not same(paimon, ours):
            found.append(f"{name}\nPaimon: {paimon}\nours:   {ours}")
    assert not found, "\n\n".join(found)


# Two kinds of error in one commit (seed 53 of the long run): every key but the first retracts a
# product by zero ("Division by zero"), the first retracts a function that cannot retract. Paimon merges
# key by key in key order and names the first key's error; the engine computed another key first.
_FIRST_FAILING_KEY = Workload(
    (("k", "int"), ("a1", "decimal(10,2)"), ("a2", "tinyint")),
    ("k",),
    {
        "merge-engine": "aggregation",
        "fields.a1.aggregate-function": "product",
        "fields.a2.aggregate-function": "first_non_null_value",
    },
    (
        tuple(("+I", (k, Decimal("1.50"), 1)) for k in range(1, 41)),
        (*(("-D", (k, Decimal("0.00"), 1)) for k in range(40, 1, -1)), ("-U", (1, Decimal("1.50"), 1))),
    ),
)


@pytest.mark.jvm
def test_the_first_failing_key_names_the_error_as_in_paimon(spark: Any, tmp_path: Path) -> None:
    oracle = PaimonOracle(_JARS, tmp_path / "oracle")
    [paimon] = oracle.run([_FIRST_FAILING_KEY])
    assert paimon.error is not None and "does not support retraction" in paimon.error, paimon
    ours = run_ours(spark, tmp_path / "t", _FIRST_FAILING_KEY)
    assert same(paimon, ours), ours
    write_only = run_ours(spark, tmp_path / "w", _FIRST_FAILING_KEY, write_only=True)
    assert same(paimon, write_only), write_only


@pytest.mark.jvm
def test_a_double_sum_retracted_from_null_is_negated(spark: Any, tmp_path: Path) -> None:
    """`FieldSumAgg.retract` of a NULL sum is the input negated: 0.0 retracted gives -0.0 (0 - 0.0 would
    give 0.0); found by the differential run."""
    w = Workload(
        (("k", "int"), ("v", "double")),
        ("k",),
        {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
        ((("+I", (1, None)), ("+I", (2, None))), (("-U", (1, 0.0)), ("-U", (2, -1.5)))),
    )
    expected = Outcome(((1, -0.0), (2, 1.5)), None)
    (paimon,) = PaimonOracle(_JARS, tmp_path / "oracle").run([w])
    assert same(paimon, expected)
    assert same(run_ours(spark, tmp_path / "t", w), expected)


@pytest.mark.jvm
def test_a_decimal_product_retraction_rounds_where_paimon_cannot_divide(spark: Any, tmp_path: Path) -> None:
    """1 / 3 in DECIMAL(10,2): Paimon's retraction raises (`BigDecimal.divide` without a rounding mode);
    ours is 0.33, rounded HALF_UP to the scale as every DECIMAL product step is."""
    w = Workload(
        (("k", "int"), ("v", "decimal(10,2)")),
        ("k",),
        _PRODUCT,
        (
            (("+I", (1, Decimal(1))), ("+I", (2, Decimal(2)))),
            (("-U", (1, Decimal(3))), ("-U", (2, Decimal(3)))),
        ),
    )
    (paimon,) = PaimonOracle(_JARS, tmp_path / "oracle").run([w])
    assert paimon.error is not None and NON_TERMINATING in paimon.error
    assert same(
        run_ours(spark, tmp_path / "t", w), Outcome(((1, Decimal("0.33")), (2, Decimal("0.67"))), None)
    )


@pytest.mark.parametrize("message", list(PRODUCT_OVERFLOWS))
def test_a_product_retraction_past_the_type_is_refused_as_paimons_current_code(
    spark: Any, tmp_path: Path, message: str
) -> None:
    outcome = run_ours(spark, tmp_path / "t", PRODUCT_OVERFLOWS[message])
    assert outcome == Outcome(None, f"MergeError: {message}")


def test_a_double_product_retraction_by_zero_is_ieee_on_every_engine(any_spark: Any, tmp_path: Path) -> None:
    """Java's double division, by hand: x / ±0 is ±Infinity by the signs, 0 / 0 and NaN / 0 are NaN. On
    JVM Spark a zero divisor gives NULL or an error and atan2 drops a zero's sign; on Sail it raises."""
    cases = [(2.0, 0.0, math.inf), (2.0, -0.0, -math.inf), (-2.0, 0.0, -math.inf), (0.0, 0.0, math.nan)]
    cases += [(math.nan, 0.0, math.nan), (math.inf, -0.0, -math.inf), (-math.inf, -0.0, math.inf)]
    commits = tuple(
        tuple(("-U" if i else "+I", (k, case[i])) for k, case in enumerate(cases)) for i in (0, 1)
    )
    w = Workload((("k", "int"), ("v", "double")), ("k",), _PRODUCT, commits)
    expected = sort_rows([(k, quotient) for k, (_, _, quotient) in enumerate(cases)])
    assert same(run_ours(any_spark, tmp_path / "t", w), Outcome(expected, None))


@pytest.mark.jvm
def test_a_stored_list_meets_a_written_one_in_a_sequence_group(spark: Any, tmp_path: Path) -> None:
    """Array, map, struct and array-of-struct columns under sequence groups: the second commit folds
    stored lists (read from Parquet) with written ones in one struct, which Sail 0.7.2 refused
    (`Child type mismatch ... field: 'element'`) until stored nested columns were cast to their
    declared types (`sql.as_declared`)."""
    w = Workload(
        (
            ("k", "int"),
            ("g", "bigint"),
            ("a", "array<int>"),
            ("m", "map<string,int>"),
            ("h", "int"),
            ("s", "struct<a:int,b:string>"),
            ("n", "array<struct<id:int,v:string>>"),
        ),
        ("k",),
        {
            "merge-engine": "partial-update",
            "fields.g.sequence-group": "a,m",
            "fields.h.sequence-group": "s,n",
        },
        (
            (("+I", (1, 1, [1, 2], {"x": 1}, 1, (1, "x"), [(1, "x")])),),
            (("+U", (1, 2, [3, None], {"y": None}, None, (2, "y"), [(2, "y")])),),
            (("+U", (1, 1, [4], {}, 2, None, [])), ("+I", (2, None, None, None, 1, (3, None), [(3, None)]))),
        ),
    )
    (paimon,) = PaimonOracle(_JARS, tmp_path / "oracle").run([w])
    assert paimon.rows == (
        (1, 2, [3, None], (("y", None),), 2, None, []),
        (2, None, None, None, 1, (3, None), [(3, None)]),
    )
    assert same(paimon, run_ours(spark, tmp_path / "t", w))


@pytest.mark.jvm
def test_a_changelog_reads_maps_from_files_of_both_writers(spark: Any, tmp_path: Path) -> None:
    """A NaN has a commit's log file written again by pyarrow (`files.without_bounds`), which names a
    map's entries `key_value` where Sail names them `entries`: Sail 0.7.2 refused to scan such files
    together (`Fail to merge schema field 'm'`) until they were read apart (`log_frame`)."""
    w = Workload(
        (("k", "int"), ("d", "double"), ("m", "map<string,int>")),
        ("k",),
        {"changelog-producer": "lookup"},
        ((("+I", (1, math.nan, {"a": 1})),), (("+I", (2, 1.0, {"b": 2})),), (("+U", (1, 2.0, {"c": 3})),)),
    )
    (paimon,) = PaimonOracle(_JARS, tmp_path / "oracle").run([w])
    assert paimon.changelog is not None and len(paimon.changelog[2]) == 2
    assert same(paimon, run_ours(spark, tmp_path / "t", w))


@pytest.mark.jvm
def test_a_first_row_changelog_announces_a_new_key_as_an_insert(spark: Any, tmp_path: Path) -> None:
    """F3, a deliberate choice: Paimon's `FirstRowMergeFunctionWrapper.getResult` passes a new key's
    first record on with its own kind (`+U` here); we announce it as `+I`, as Paimon's lookup producer
    does on every other engine (`LookupChangelogMergeFunctionWrapper.setChangelog`)."""
    w = Workload(
        (("k", "int"), ("v", "int")),
        ("k",),
        {"merge-engine": "first-row", "changelog-producer": "lookup"},
        ((("+U", (1, 5)), ("+I", (2, 6))), (("+U", (1, 7)), ("+I", (3, 8)))),
    )
    (paimon,) = PaimonOracle(_JARS, tmp_path / "oracle").run([w])
    assert paimon.changelog == ((("+I", 2, 6), ("+U", 1, 5)), (("+I", 3, 8),))
    assert run_ours(spark, tmp_path / "t", w).changelog == ((("+I", 1, 5), ("+I", 2, 6)), (("+I", 3, 8),))


# (columns, the row written twice, its image as read): rows Paimon 1.4.2's equaliser finds unequal to
# themselves, and its changelog producer under `row-deduplicate`.
UNEQUAL_TO_ITSELF = {
    "nested NULLs": (
        (("k", "int"), ("a", "array<int>"), ("m", "map<string,int>"), ("s", "struct<a:int,b:string>")),
        (1, [1, None], {"a": None}, (None, "x")),
        (1, [1, None], (("a", None),), (None, "x")),
        "lookup",
    ),
    "NaN": (
        (("k", "int"), ("d", "double"), ("f", "float")),
        (1, math.nan, math.nan),
        (1, math.nan, math.nan),
        "full-compaction",
    ),
}


@pytest.mark.jvm
@pytest.mark.parametrize("case", list(UNEQUAL_TO_ITSELF))
def test_row_deduplicate_drops_an_unchanged_row_paimon_finds_unequal(
    spark: Any, tmp_path: Path, case: str
) -> None:
    """C6: the same row written twice gives no changelog under `row-deduplicate`. Paimon 1.4.2 finds an
    array with a NULL element or a map with a NULL value unequal to itself (a deliberate difference),
    and a NaN (its current code, apache/paimon#8534, no longer does), and emits a pair of equal images."""
    columns, row, image, producer = UNEQUAL_TO_ITSELF[case]
    w = Workload(
        columns,
        ("k",),
        {"changelog-producer": producer, "changelog-producer.row-deduplicate": "true"},
        ((("+I", row),), (("+I", row),)),
    )
    (paimon,) = PaimonOracle(_JARS, tmp_path / "oracle").run([w])
    assert paimon.changelog is not None
    assert [_as_text(c) for c in paimon.changelog] == [
        _as_text((("+I", *image),)),
        _as_text((("+U", *image), ("-U", *image))),
    ]
    ours = run_ours(spark, tmp_path / "t", w)
    assert [_as_text(c) for c in ours.changelog or ()] == [_as_text((("+I", *image),)), []]
    assert same(as_we_choose(paimon, w), ours)


def test_a_signed_zero_sequence_ties_on_every_engine(any_spark: Any, tmp_path: Path) -> None:
    """A -0.0 sequence ties with 0.0, and a tie goes to the later record, as in Paimon (its comparator
    uses `<` and `>`): on Sail, whose own order puts -0.0 first, and on JVM Spark alike. Expected
    rows by hand; Paimon agrees where its jar is fetched."""
    three = (("k", "int"), ("v", "int"), ("s", "double"))
    ascending = {"merge-engine": "deduplicate", "sequence.field": "s"}
    descending = {**ascending, "sequence.field.sort-order": "descending"}
    groups = {"merge-engine": "partial-update", "fields.s.sequence-group": "v"}
    zeros = ((("+I", (1, 1, 0.0)), ("+I", (2, 1, -0.0))), (("+I", (1, 2, -0.0)), ("+I", (2, 2, 0.0))))
    cases = [Workload(three, ("k",), options, zeros) for options in (ascending, descending, groups)]
    expected = Outcome(((1, 2, -0.0), (2, 2, 0.0)), None)
    for n, w in enumerate(cases):
        assert same(expected, run_ours(any_spark, tmp_path / f"t{n}", w)), w.options
    if (_JARS / PAIMON_JAR).is_file():
        for w, paimon in zip(cases, PaimonOracle(_JARS, tmp_path / "oracle").run(cases), strict=True):
            assert same(paimon, expected), w.options


@pytest.mark.jvm
def test_minimized_disagreements(spark: Any, tmp_path: Path) -> None:
    """Each disagreement found stays decided: Paimon gives its rows, we give ours (docs/semantics.md)."""
    oracle = PaimonOracle(_JARS, tmp_path / "oracle")
    cases = list(MINIMIZED.values())
    for (name, (w, paimon_rows, our_rows)), paimon in zip(
        MINIMIZED.items(), oracle.run([c[0] for c in cases]), strict=True
    ):
        # Compared as text, as the random run does: NaN is not equal to itself.
        assert same(paimon, Outcome(paimon_rows, None)), (name, paimon)
        ours = run_ours(spark, tmp_path / name.replace(" ", "_"), w)
        assert same(ours, Outcome(our_rows, None)), (name, ours)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--seed", type=int, default=CI_SEED)
    parser.add_argument(
        "--keys", type=int, default=5, help="keys per table (a commit holds up to twice as many records)"
    )
    args = parser.parse_args(argv)
    from wide_assets.session import get_spark

    spark = get_spark()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as work:
        oracle = PaimonOracle(_JARS, Path(work) / "oracle")
        chosen = workloads(args.seed, args.tables, args.keys)
        paimon = oracle.run(chosen)
        found = differences(spark, chosen, paimon, Path(work) / "lake")
        write_only = differences(spark, chosen, paimon, Path(work) / "write_only", write_only=True)
    for disagreement in found:
        print(f"{disagreement}\n")
    for disagreement in write_only:
        print(f"write-only, union read: {disagreement}\n")
    records = sum(len(c) for w in chosen for c in w.commits)
    changelogs = sum(len(c) for outcome in paimon for c in outcome.changelog or ())
    print(
        f"{len(found)} disagreement(s), {len(write_only)} write-only, in {args.tables} tables, "
        f"{args.tables * args.keys} keys, "
        f"{records} records, {changelogs} changelog entries, seed {args.seed}, "
        f"{time.monotonic() - started:.0f} s"
    )
    return 1 if found or write_only else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
