"""Edge values through write, read, changelog and compaction, and every reader: NaN, ±Infinity, the
largest double, signed zeros, the last timestamp, DECIMAL(38,0) sums at the bound, RoaringBitmap32
values of 2^31 and more, and NULL sequences in descending order. Every expectation is derived by hand
from Paimon's Java semantics (Double.compare, BigDecimal sums, unsigned 32-bit bitmaps), never from
the code under test."""

from __future__ import annotations

import itertools
import math
import random
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from delta_readers import READERS

from wide_assets import WideTable
from wide_assets.batch import GENERATED_ARRIVALS
from wide_assets.merge import entry_offset

NAN, INF, LARGEST, SMALLEST = float("nan"), float("inf"), sys.float_info.max, 5e-324
# Java's Double.compare order, written out: -Inf < ... < -0.0 < 0.0 < ... < +Inf < NaN.
JAVA_ORDER = [-INF, -LARGEST, -1.0, -SMALLEST, -0.0, 0.0, SMALLEST, 1.0, LARGEST, INF, NAN]
LAST_INSTANT = datetime(9999, 12, 31, 23, 59, 59, 999999)
FIRST_INSTANT = datetime(1, 1, 1)
LAST_INSTANT_FILTER = "t >= TIMESTAMP '9999-12-31 23:59:59.999'"


def spelled(value: Any) -> Any:
    """A value as compared here: a float by its repr (-0.0 and NaN differ from 0.0 and each other
    value), a timestamp as naive UTC."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def keyed(rows: Any) -> dict[Any, tuple[Any, ...]]:
    found = {row[0]: tuple(spelled(v) for v in row[1:]) for row in rows}
    assert len(found) == len(rows), "a key is live twice"
    return found


def java_greater(d: float, bound: float) -> bool:
    """`d > bound` in Java's Double.compare order (NaN above everything), as every reader filters."""
    return math.isnan(d) or d > bound


def test_nan_infinities_and_the_last_timestamp_in_every_reader(spark: Any, tmp_path: Path) -> None:
    """NaN must not hide behind a footer's finite bounds (a filtered read skipped its file), ±Infinity
    and the largest double must not make the statistics invalid JSON, and the last timestamp must
    not overflow its bound: each value reads back the same through every reader, filtered or not,
    before and after compaction."""
    columns = [("k", "int"), ("d", "double"), ("t", "timestamp_ntz"), ("z", "timestamp")]
    table = WideTable.create(spark, tmp_path / "t", columns, ["k"], {"changelog-producer": "lookup"})
    commits: list[list[tuple[int, float, datetime | None]]] = [
        [(1, NAN, LAST_INSTANT), (2, 5.0, FIRST_INSTANT)],
        [(3, INF, LAST_INSTANT), (4, -INF, FIRST_INSTANT), (5, LARGEST, None), (6, -0.0, None)],
        [(2, NAN, None), (7, SMALLEST, LAST_INSTANT), (8, 7.0, datetime(2026, 11, 26, 8, 0))],
    ]
    oracle: dict[int, tuple[float, datetime | None]] = {}
    for rows in commits:
        frame = [(k, d, t, None if t is None else t.replace(tzinfo=UTC)) for k, d, t in rows]
        table.write(spark.createDataFrame(frame, "k int, d double, t timestamp_ntz, z timestamp"))
        oracle.update({k: (d, t) for k, d, t in rows})
    expected = {k: (spelled(d), t, t) for k, (d, t) in oracle.items()}
    above_six = {k: v for k, v in expected.items() if java_greater(oracle[k][0], 6.0)}
    last_instant = {k: v for k, v in expected.items() if oracle[k][1] == LAST_INSTANT}
    # The changelog's last image of each key is the row.
    images = table.changelog().orderBy("_commit", "_offset").collect()
    last_images = {r.k: (spelled(r.d), r.t, spelled(r.z)) for r in images if r._row_kind in ("+I", "+U")}
    assert last_images == expected

    def mismatches(when: str) -> list[str]:
        """Each reader, plain and filtered (NaN is above 6 in every reader, as in Java's order)."""
        found = []
        for where, wanted in ((None, expected), ("d > 6", above_six), (LAST_INSTANT_FILTER, last_instant)):
            sail = table.read().where(where or "true").select("k", "d", "t", "z").collect()
            got = {"sail": keyed(sail)}
            if where != LAST_INSTANT_FILTER:  # polars' SQL has no TIMESTAMP literal
                got |= {name: keyed(read(table.path, "k, d, t, z", where)) for name, read in READERS.items()}
            found += [f"{when}, {name}, {where}: {rows}" for name, rows in got.items() if rows != wanted]
        return found

    written = mismatches("written")
    table.optimize()
    assert written + mismatches("compacted") == []


def test_a_compacted_file_of_nan_and_one_value_reads_back_nan(spark: Any, tmp_path: Path) -> None:
    """Compaction (delta-rs OPTIMIZE) writes NaN, 5.0 and 5.0 into one file: its statistics must not
    say min = max = 5.0, which Sail reads as the column's constant (the NaN read back as 5.0)."""
    table = WideTable.create(spark, tmp_path / "t", [("k", "int"), ("d", "double")], ["k"])
    table.write(spark.createDataFrame([(1, NAN), (2, 5.0)], "k int, d double"))
    table.write(spark.createDataFrame([(3, 5.0)], "k int, d double"))
    table.optimize()
    expected = {1: ("nan",), 2: ("5.0",), 3: ("5.0",)}
    assert keyed(table.read().collect()) == expected
    for name, read in READERS.items():
        assert keyed(read(table.path, "k, d")) == expected, name


@pytest.mark.parametrize(
    "options",
    [
        {"merge-engine": "deduplicate"},
        {"merge-engine": "aggregation", "fields.d.aggregate-function": "last_value"},
    ],
    ids=["deduplicate", "last_value"],
)
def test_a_negative_zero_replacing_zero_is_an_update(
    spark: Any, tmp_path: Path, options: dict[str, str]
) -> None:
    """-0.0 and 0.0 are different values (Paimon stores the newest record's bits, and its changelog
    compares binary rows): the newer one is stored, and the change is an update; NaN replacing NaN
    is no change."""
    columns = [("k", "int"), ("d", "double")]
    table = WideTable.create(spark, tmp_path / "t", columns, ["k"], options)
    deduplicated = WideTable.create(
        spark,
        tmp_path / "deduplicated",
        columns,
        ["k"],
        {**options, "changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true"},
    )
    for written in (table, deduplicated):
        written.write(spark.createDataFrame([(1, 0.0), (2, -0.0), (3, NAN)], "k int, d double"))
        result = written.write(spark.createDataFrame([(1, -0.0), (2, 0.0), (3, NAN)], "k int, d double"))
        assert keyed(written.read().collect()) == {1: ("-0.0",), 2: ("0.0",), 3: ("nan",)}
        assert result.updated == 2
    changes = deduplicated.changelog(start_commit=2).orderBy("k", "_offset").collect()
    assert [(r._row_kind, r.k, repr(r.d)) for r in changes] == [
        ("-U", 1, "0.0"),
        ("+U", 1, "-0.0"),
        ("-U", 2, "-0.0"),
        ("+U", 2, "0.0"),
    ]


@pytest.mark.parametrize("write_only", [False, True], ids=["merged", "write-only"])
@pytest.mark.parametrize("dialect", ["paimon", "fluss"])
def test_max_and_min_order_doubles_as_java_does(
    spark: Any, tmp_path: Path, dialect: str, write_only: bool
) -> None:
    """Every ordered pair of JAVA_ORDER, across two commits and within one: max keeps the later one in
    Java's order, min the earlier (FieldMaxAgg/FieldMinAgg compare with Double.compare), whether the
    writes merge or a compaction folds them."""
    options = {
        "merge-engine": "aggregation",
        "fields.hi.aggregate-function": "max",
        "fields.lo.aggregate-function": "min",
    }
    if dialect == "fluss":
        options = {"table.merge-engine": "aggregation", "fields.hi.agg": "max", "fields.lo.agg": "min"}
    columns = [("k", "int"), ("hi", "double"), ("lo", "double")]
    if write_only:
        options["write-only"] = "true"
    table = WideTable.create(spark, tmp_path / "t", columns, ["k"], options)
    pairs = list(itertools.product(range(len(JAVA_ORDER)), repeat=2))
    first = [(n, JAVA_ORDER[i], JAVA_ORDER[i]) for n, (i, _) in enumerate(pairs)]
    second = [(n, JAVA_ORDER[j], JAVA_ORDER[j]) for n, (_, j) in enumerate(pairs)]
    within = [(1000 + n, v, v) for n, (i, j) in enumerate(pairs) for v in (JAVA_ORDER[i], JAVA_ORDER[j])]
    table.write(spark.createDataFrame(first + within, "k int, hi double, lo double"))
    table.write(spark.createDataFrame(second, "k int, hi double, lo double"))
    if write_only:
        table.compact()
    expected = {}
    for n, (i, j) in enumerate(pairs):
        outcome = (spelled(JAVA_ORDER[max(i, j)]), spelled(JAVA_ORDER[min(i, j)]))
        expected[n] = expected[1000 + n] = outcome
    assert keyed(table.read().collect()) == expected


def test_a_decimal_38_0_sum_near_the_bound_is_exact(spark: Any, tmp_path: Path) -> None:
    """Paimon's sum of DECIMAL(38,0) (DecimalUtils.add): the exact BigDecimal sum, NULL when it needs
    39 digits, after which the next value starts again (FieldSumAgg takes the input over a NULL)."""
    limit = 10**38 - 1
    rng = random.Random(1)
    columns = [("k", "int"), ("j", "string"), ("s", "decimal(38,0)")]
    options = {"merge-engine": "aggregation", "fields.s.aggregate-function": "sum"}
    table = WideTable.create(spark, tmp_path / "t", columns, ["k", "j"], options)
    oracle: dict[tuple[int, str], int | None] = {}
    for _ in range(3):
        rows = []
        for _ in range(40):
            key = (rng.randint(0, 5), rng.choice("ab"))
            value = (
                rng.choice([1, -1]) * rng.randint(limit // 2, limit)
                if rng.random() < 0.6
                else rng.randint(-limit, limit)
            )
            rows.append((*key, Decimal(value)))
            stored = oracle.get(key)
            total = value if stored is None else stored + value
            oracle[key] = total if abs(total) <= limit else None
        table.write(spark.createDataFrame(rows, "k int, j string, s decimal(38,0)"))
    found = {(r.k, r.j): None if r.s is None else int(r.s) for r in table.read().collect()}
    assert found == oracle


def test_rbm32_holds_unsigned_32_bit_values(spark: Any, tmp_path: Path) -> None:
    """A RoaringBitmap32 holds values up to 2^32 - 1 (Java's int read as unsigned): they merge."""
    from pyroaring import BitMap

    options = {"merge-engine": "aggregation", "fields.b.aggregate-function": "rbm32"}
    table = WideTable.create(spark, tmp_path / "t", [("k", "int"), ("b", "binary")], ["k"], options)
    for values in ([1, 2**31, 2**32 - 1], [3, 2**31 + 7]):
        table.write(spark.createDataFrame([(1, bytearray(BitMap(values).serialize()))], "k int, b binary"))
    expected = [1, 3, 2**31, 2**31 + 7, 2**32 - 1]
    assert [list(BitMap.deserialize(bytes(r.b))) for r in table.read().collect()] == [expected]
    for name, read in READERS.items():
        assert [list(BitMap.deserialize(bytes(b))) for _, b in read(table.path, "k, b")] == [expected], name


@pytest.mark.parametrize("write_only", [False, True], ids=["merged", "write-only"])
def test_a_null_sequence_sorts_first_in_descending_order(
    spark: Any, tmp_path: Path, write_only: bool
) -> None:
    """Paimon places a NULL sequence before every value whatever the sort order
    (GenerateUtils.generateRowCompare), so with `descending` the smallest value wins, never NULL."""
    columns = [("k", "int"), ("s", "int"), ("v", "string")]
    options = {"sequence.field": "s", "sequence.field.sort-order": "descending"}
    if write_only:
        options["write-only"] = "true"
    table = WideTable.create(spark, tmp_path / "t", columns, ["k"], options)
    table.write(
        spark.createDataFrame(
            [
                (1, 5, "five"),
                (1, None, "null"),
                (2, None, "null"),
                (2, 5, "five"),
                (3, 3, "three"),
                (3, 5, "five"),
            ],
            "k int, s int, v string",
        )
    )
    table.write(spark.createDataFrame([(4, 5, "five"), (5, None, "null")], "k int, s int, v string"))
    table.write(spark.createDataFrame([(4, None, "null"), (5, 5, "five")], "k int, s int, v string"))
    if write_only:
        table.compact()
    found = {r.k: (r.s, r.v) for r in table.read().collect()}
    assert found == {1: (5, "five"), 2: (5, "five"), 3: (3, "three"), 4: (5, "five"), 5: (5, "five")}


@pytest.mark.parametrize(
    "options",
    [{"changelog-producer": "lookup"}, {"table.changelog.image": "FULL"}],
    ids=["paimon", "fluss"],
)
def test_arrivals_at_the_bigint_bounds_order_a_commits_changelog(
    spark: Any, tmp_path: Path, options: dict[str, str]
) -> None:
    """A changelog entry's `_offset` is its place in the commit, in arrival order, -U before its +U,
    whatever `_offset` values the records arrived with: within +-2^61 (numbered from the arrival) and
    out to the BIGINT bounds (ranked). The order is written out by hand from the arrivals."""
    table = WideTable.create(spark, tmp_path / "t", [("k", "int"), ("v", "string")], ["k"], options)
    table.write(spark.createDataFrame([(k, "old") for k in range(1, 5)], "k int, v string"))
    schema = "k int, v string, _offset bigint"
    near = [(1, "a", -(2**61)), (2, "b", 2**61), (5, "c", 7)]
    far = [(1, "d", 2**63 - 1), (2, "e", -(2**63)), (3, "f", 0), (4, "g", 2**62), (6, "h", -5)]
    for rows in (near, far):
        table.write(spark.createDataFrame(rows, schema))
    entries = table.changelog(start_commit=2).orderBy("_commit", "_offset").collect()
    assert [(r._commit, r._row_kind, r.k, r.v) for r in entries] == [
        (2, "-U", 1, "old"),
        (2, "+U", 1, "a"),
        (2, "+I", 5, "c"),
        (2, "-U", 2, "old"),
        (2, "+U", 2, "b"),
        (3, "-U", 2, "b"),
        (3, "+U", 2, "e"),
        (3, "+I", 6, "h"),
        (3, "-U", 3, "old"),
        (3, "+U", 3, "f"),
        (3, "-U", 4, "old"),
        (3, "+U", 4, "g"),
        (3, "-U", 1, "a"),
        (3, "+U", 1, "d"),
    ]


@pytest.mark.parametrize(
    "options",
    [{"changelog-producer": "lookup"}, {"merge-engine": "partial-update", "fields.ts.sequence-group": "v"}],
    ids=["deduplicate", "partial-update"],
)
@pytest.mark.parametrize("together", [False, True], ids=["two-commits", "one-batch"])
def test_a_negative_zero_key_is_the_zero_key(
    spark: Any, tmp_path: Path, options: dict[str, str], together: bool
) -> None:
    """A FLOAT or DOUBLE key -0.0 is the key 0.0 (SQL's `=` and GROUP BY make them one): a newer record
    for -0.0 updates the row of 0.0, which keeps the key 0.0, whether the two arrive in two commits
    (the stored row and a record) or in one batch. A window over the two once ranked them apart on
    Sail, and the record for -0.0 was lost."""
    columns = [("k", "double"), ("v", "string"), ("ts", "int")]
    table = WideTable.create(spark, tmp_path / "t", columns, ["k"], options)
    rows = [(0.0, "zero", 1), (-0.0, "negative zero", 2)]
    schema = "k double, v string, ts int"
    if together:
        table.write(spark.createDataFrame(rows, schema))
    else:
        table.write(spark.createDataFrame(rows[:1], schema))
        assert table.write(spark.createDataFrame(rows[1:], schema)).updated == 1
    assert [(repr(r.k), r.v, r.ts) for r in table.read().collect()] == [("0.0", "negative zero", 2)]


def test_an_arrival_beyond_what_a_commit_numbers_fails_the_query(spark: Any) -> None:
    """Generated arrivals are not counted (`GENERATED_ARRIVALS`): an entry numbered from an arrival
    beyond the bound fails with a message instead of wrapping around; within it, it is numbered
    2 * arrival + index (by hand: 3, 1 -> 7; -1, 0 -> -2), and no arrival stays no number."""
    offset = entry_offset(GENERATED_ARRIVALS)
    rows = spark.sql(
        f"SELECT {offset} AS o FROM VALUES (CAST(3 AS BIGINT), 1), (-1, 0), (NULL, 1) AS t(_order_a, _order_i)"
    ).collect()
    assert [r.o for r in rows] == [7, -2, None]
    beyond = f"SELECT {offset} AS o FROM VALUES (CAST({2**62} AS BIGINT), 0) AS t(_order_a, _order_i)"
    with pytest.raises(Exception, match="beyond what a commit can number"):
        spark.sql(beyond).collect()
