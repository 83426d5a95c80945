"""Aggregate functions beyond the public cases (roaring bitmaps, collect, merge_map, ...) and the Fluss
auto-increment column; expectations are worked out by hand from `docs/semantics.md` sections 1.6 / 2.7
and Fluss's primary-key table documentation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Factory
from pyroaring import BitMap, BitMap64

from wide_assets import WideTable
from wide_assets.errors import InvalidInputError, InvalidOptionError, MergeError
from wide_assets.merge.first_row import RETRACT_REJECTED
from wide_assets.merge.partial_update import DELETE_REJECTED


def rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in table.read().collect())


BITMAP_OPTIONS = [
    (
        "rbm32",
        {"merge-engine": "aggregation", "fields.ids.aggregate-function": "rbm32"},
        BitMap,
        [1, 7, 70000],
    ),
    ("rbm32", {"table.merge-engine": "aggregation", "fields.ids.agg": "rbm32"}, BitMap, [3, 5, 2**31 - 1]),
    (
        "rbm64",
        {"merge-engine": "aggregation", "fields.ids.aggregate-function": "rbm64"},
        BitMap64,
        [2**40, 9, 2**33 + 1],
    ),
    # Unsigned values at and above 2^63, which a BIGINT holds only as their two's complement.
    (
        "rbm64",
        {"merge-engine": "aggregation", "fields.ids.aggregate-function": "rbm64"},
        BitMap64,
        [2**64 - 1, 2**63, 5],
    ),
]


@pytest.mark.parametrize(
    ("name", "options", "bitmap", "values"),
    BITMAP_OPTIONS,
    ids=["paimon32", "fluss32", "paimon64", "paimon64_top_bit"],
)
def test_roaring_bitmaps_or_in_the_portable_format(
    engine: tuple[Any, Factory], name: str, options: dict[str, str], bitmap: Any, values: list[int]
) -> None:
    spark, make = engine
    table = make([("k", "int"), ("ids", "binary")], ["k"], options)
    first, second, third = values
    batch = [(1, bitmap([first, second]).serialize()), (1, None), (2, bitmap([third]).serialize())]
    table.write(spark.createDataFrame(batch, "k int, ids binary"))
    table.write(spark.createDataFrame([(1, bitmap([second, third]).serialize())], "k int, ids binary"))
    result = {k: sorted(bitmap.deserialize(bytes(ids))) for k, ids in rows(table)}
    assert result == {1: sorted({first, second, third}), 2: [third]}
    # Stored bytes are exactly pyroaring's (CRoaring's portable format, as Java RoaringBitmap writes).
    assert dict(rows(table))[1] == bitmap(sorted({first, second, third})).serialize()


def test_bitmap_retraction_is_rejected_unless_ignored(spark: Any, tmp_path: Path) -> None:
    options = {"merge-engine": "aggregation", "fields.ids.aggregate-function": "rbm32"}
    table = WideTable.create(spark, tmp_path / "t", [("k", "int"), ("ids", "binary")], ["k"], options)
    table.write(spark.createDataFrame([(1, BitMap([1]).serialize())], "k int, ids binary"))
    retraction = spark.createDataFrame(
        [(1, BitMap([1]).serialize(), "-U")], "k int, ids binary, _row_kind string"
    )
    with pytest.raises(Exception, match="'rbm32' does not support retraction"):
        table.write(retraction)
    ignoring = WideTable.create(
        spark,
        tmp_path / "u",
        [("k", "int"), ("ids", "binary")],
        ["k"],
        {**options, "fields.ids.ignore-retract": "true"},
    )
    ignoring.write(spark.createDataFrame([(1, BitMap([1]).serialize())], "k int, ids binary"))
    ignoring.write(retraction)
    assert [sorted(BitMap.deserialize(bytes(r[1]))) for r in rows(ignoring)] == [[1]]


def test_collect_concatenates_and_retracts_one_occurrence(engine: tuple[Any, Factory]) -> None:
    spark, make = engine
    ddl = "k int, v array<int>, d array<int>, _row_kind string"
    options = {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "collect",
        "fields.d.aggregate-function": "collect",
        "fields.d.distinct": "true",
    }
    table = make([("k", "int"), ("v", "array<int>"), ("d", "array<int>")], ["k"], options)
    table.write(spark.createDataFrame([(1, [1, 2], [1, 2], "+I"), (1, [2, 3], [2, 3], "+I")], ddl))
    assert rows(table) == [(1, [1, 2, 2, 3], [1, 2, 3])]
    table.write(spark.createDataFrame([(1, [2], [2], "-U")], ddl))
    assert rows(table) == [(1, [1, 2, 3], [1, 3])]


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
@pytest.mark.parametrize("merge_engine", ["aggregation", "partial-update"])
def test_collect_retracts_as_paimons_collect_it_case(
    engine: tuple[Any, Factory], producer: str, merge_engine: str
) -> None:
    """Paimon's CollectAggregationITCase.testRetract, its values step by step. Its UPDATE_BEFORE records
    never reach the table there (Flink's upsert sink drops them, "CANNOT handle"), so they are not sent.
    In a sequence group with the lookup producer this crashed on Sail: "Child type mismatch for
    Struct(...)" (a stored list's element field is named `element`, a computed one's `item`)."""
    spark, make = engine
    group = {"fields.f1.sequence-group": "f0"} if merge_engine == "partial-update" else {}
    options = {
        "changelog-producer": producer,
        "merge-engine": merge_engine,
        "fields.f0.aggregate-function": "collect",
        **group,
    }
    table = make([("id", "int"), ("f0", "array<string>"), ("f1", "int")], ["id"], options)
    ddl = "id int, f0 array<string>, f1 int, _row_kind string"
    steps: list[tuple[list[Any], dict[int, list[str]]]] = [
        ([(1, ["A", "B"], 1, "+I")], {1: ["A", "B"]}),
        ([(1, ["C", "D"], 3, "+U")], {1: ["A", "B", "C", "D"]}),
        ([(1, ["C", "D"], 4, "-D")], {1: ["A", "B"]}),
        ([(2, ["A", "B"], 5, "+I"), (3, ["A", "B"], 6, "+I")], {1: ["A", "B"], 2: ["A", "B"], 3: ["A", "B"]}),
        ([(2, ["C", "D"], 8, "+U")], {1: ["A", "B"], 2: ["A", "B", "C", "D"], 3: ["A", "B"]}),
        ([(3, ["A"], 9, "-D")], {1: ["A", "B"], 2: ["A", "B", "C", "D"], 3: ["B"]}),
    ]
    for records, expected in steps:
        table.write(spark.createDataFrame(records, ddl))
        assert {r[0]: r[1] for r in rows(table)} == expected


def test_nested_update_as_paimons_field_aggregator_test(engine: tuple[Any, Factory]) -> None:
    """FieldAggregatorTest's testFieldNestedUpdateAgg (n1), testFieldNestedAppendAgg (n2),
    testFieldNestedAppendAggWithCountLimit (n3) and testFieldNestedUpdateAggWithSequenceField (n4),
    their inputs and expected rows step by step, compared in any order as upstream compares them."""
    spark, make = engine
    row = "struct<k0:int,k1:int,v:string>"
    with_seq = "struct<k0:int,k1:int,v:string,seq:int>"
    options = {
        "merge-engine": "aggregation",
        **{f"fields.n{i}.aggregate-function": "nested_update" for i in range(1, 5)},
        "fields.n1.nested-key": "k0,k1",
        "fields.n3.count-limit": "2",
        "fields.n4.nested-key": "k0,k1",
        "fields.n4.nested-sequence-field": "seq",
    }
    columns = [("k", "int"), ("n1", f"array<{row}>"), ("n2", f"array<{row}>"), ("n3", f"array<{row}>")]
    table = make([*columns, ("n4", f"array<{with_seq}>")], ["k"], options)
    ddl = ", ".join(f"{c} {t}" for c, t in columns) + f", n4 array<{with_seq}>, _row_kind string"
    a, b_upper, b, c = (0, 0, "A"), (0, 1, "B"), (0, 1, "b"), (0, 1, "C")
    steps = [
        ("+I", a, b_upper, b_upper, (*a, 1)),
        ("+I", b_upper, b, b, (*b_upper, 2)),
        ("+I", b, None, c, (*b, 3)),
        ("+I", None, None, None, (0, 1, "B_late", 2)),
        ("-U", b, b, None, (*b, 3)),
    ]
    expected = [
        ([a], [b_upper], [b_upper], [(*a, 1)]),
        ([a, b_upper], [b_upper, b], [b_upper, b], [(*a, 1), (*b_upper, 2)]),
        ([a, b], [b_upper, b], [b_upper, b], [(*a, 1), (*b, 3)]),
        ([a, b], [b_upper, b], [b_upper, b], [(*a, 1), (*b, 3)]),
        ([a], [b_upper], [b_upper, b], [(*a, 1)]),
    ]
    for (kind, *values), want in zip(steps, expected, strict=True):
        record = (1, *([value] if value is not None else None for value in values), kind)
        table.write(spark.createDataFrame([record], ddl))
        [(_, *got)] = rows(table)
        assert [sorted(tuple(r) for r in column) for column in got] == [sorted(w) for w in want]


def test_nested_partial_update_as_paimons_field_aggregator_test(engine: tuple[Any, Factory]) -> None:
    """FieldAggregatorTest.testFieldNestedPartialUpdateAgg's inputs and expected rows step by step (any
    order, as upstream compares them), then a batch of two rows of one new key merged field by field."""
    spark, make = engine
    row = "struct<k:int,v1:int,v2:string>"
    table = make(
        [("id", "int"), ("n", f"array<{row}>")],
        ["id"],
        {
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "nested_partial_update",
            "fields.n.nested-key": "k",
        },
    )
    steps = [
        ([(0, 0, None)], [(0, 0, None)]),
        ([(0, None, "A")], [(0, 0, "A")]),
        ([(0, 1, "B")], [(0, 1, "B")]),
        ([(1, 2, "C")], [(0, 1, "B"), (1, 2, "C")]),
        ([(None, 0, "D")], [(0, 1, "B"), (1, 2, "C"), (None, 0, "D")]),
        ([(2, 5, None), None, (2, None, "E")], [(0, 1, "B"), (1, 2, "C"), (None, 0, "D"), (2, 5, "E")]),
    ]
    for written, expected in steps:
        table.write(spark.createDataFrame([(1, written)], f"id int, n array<{row}>"))
        [(_, got)] = rows(table)
        assert unordered(got) == unordered(expected)


def unordered(array: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in array), key=repr)


def test_nested_key_null_strategies_as_paimons_field_aggregator_test(engine: tuple[Any, Factory]) -> None:
    """FieldAggregatorTest's testFieldNestedUpdateAggWithCountLimitWhenNestedKeyNullUse{Merge,Ignore,
    ThrowError}Strategy (nested_update, nested key k0,k1, sequence field seq, count-limit 3): one column
    per strategy, their inputs and expected rows; the ERROR column's NULL-key rows are written alone and
    fail the write with Paimon's message, leaving the table as it was. Then ...RetractApplies
    NestedKeyNullStrategyToRetractInput: a retracted row with a NULL key field is skipped (IGNORE) or
    refused (ERROR)."""
    spark, make = engine
    row = "struct<k0:int,k1:int,v:string,seq:int>"
    strategies = ("merge", "ignore", "error")
    options = {"merge-engine": "aggregation"}
    for s in strategies:
        options |= {
            f"fields.{s}.aggregate-function": "nested_update",
            f"fields.{s}.nested-key": "k0,k1",
            f"fields.{s}.nested-sequence-field": "seq",
            f"fields.{s}.count-limit": "3",
            f"fields.{s}.nested-key-null-strategy": s.upper() if s == "error" else s,
        }
    table = make([("k", "int"), *((s, f"array<{row}>") for s in strategies)], ["k"], options)
    ddl = f"k int, merge array<{row}>, ignore array<{row}>, error array<{row}>, _row_kind string"

    def write(kind: str, merge: Any, ignore: Any, error: Any) -> None:
        table.write(spark.createDataFrame([(1, merge, ignore, error, kind)], ddl))

    b, b_updated = (0, 1, "B", 1), (0, 1, "B_updated", 4)
    null_2, null_null = (None, 2, "NULL_2", 2), (None, None, "NULL_NULL", 3)
    c, d = (1, 2, "C", 3), (2, 3, "D", 5)
    for merge, ignore, error in [
        (b, b, b),
        (null_2, null_2, None),
        (null_null, null_null, None),
        ((1, 2, "C", 5), c, c),
        (b_updated, b_updated, b_updated),
        (None, d, d),
    ]:
        write("+I", *([r] if r is not None else None for r in (merge, ignore, error)))
    expected = [
        unordered([b_updated, null_2, null_null]),
        unordered([b_updated, c, d]),
        unordered([b_updated, c, d]),
    ]
    [(_, *got)] = rows(table)
    assert [unordered(column) for column in got] == expected
    for kind, null_key in (("+I", null_2), ("+I", null_null), ("-U", (0, None, "X", None))):
        with pytest.raises(MergeError) as raised:
            write(kind, None, None, [null_key])
        assert str(raised.value) == "Nested key contains null values. Primary key fields must not be null."
    write("-U", None, [(0, None, "X", None)], None)
    [(_, *got)] = rows(table)
    assert [unordered(column) for column in got] == expected


def test_nested_partial_update_null_key_strategies_as_paimons_field_aggregator_test(
    engine: tuple[Any, Factory],
) -> None:
    """FieldAggregatorTest's testFieldNestedPartialUpdateAggWithNestedKeyNullUse{Ignore,ThrowError}Strategy:
    a NULL-key row is dropped (IGNORE) or fails the write with Paimon's message (ERROR), on a stored
    array and on the first one."""
    spark, make = engine
    row = "struct<k:int,v1:int,v2:string>"
    options = {"merge-engine": "aggregation"}
    for s in ("ignore", "error"):
        options |= {
            f"fields.{s}.aggregate-function": "nested_partial_update",
            f"fields.{s}.nested-key": "k",
            f"fields.{s}.nested-key-null-strategy": s,
        }
    table = make([("id", "int"), ("ignore", f"array<{row}>"), ("error", f"array<{row}>")], ["id"], options)
    ddl = f"id int, ignore array<{row}>, error array<{row}>"

    def write(key: int, ignore: Any, error: Any) -> None:
        table.write(spark.createDataFrame([(key, ignore, error)], ddl))

    write(1, [(0, 0, None)], [(0, 0, None)])
    write(1, [(None, None, "A_ignore")], None)
    write(2, [(None, None, "FirstInput")], None)
    expected = [(1, [(0, 0, None)], [(0, 0, None)]), (2, [], None)]
    assert [(k, unordered(i), e and unordered(e)) for k, i, e in rows(table)] == expected
    for key, null_key in ((1, (None, 0, "A")), (3, (None, None, "FirstInput"))):
        with pytest.raises(MergeError) as raised:
            write(key, None, [null_key])
        assert str(raised.value) == "Nested key contains null values. Primary key fields must not be null."
    assert [(k, unordered(i), e and unordered(e)) for k, i, e in rows(table)] == expected


def test_merge_map_with_keytime_as_paimons_field_aggregator_test(engine: tuple[Any, Factory]) -> None:
    """FieldAggregatorTest.testFieldMergeMapWithKeyTimeAgg's maps and expected entries, then a NULL ROW
    (removes its key) and a ROW without a time (skipped), as FieldMergeMapWithKeyTimeAgg reads them."""
    spark, make = engine
    value = "struct<actual_value:string,dbsync_ts:string>"
    table = make(
        [("k", "int"), ("m", f"map<string,{value}>")],
        ["k"],
        {"merge-engine": "aggregation", "fields.m.aggregate-function": "merge_map_with_keytime"},
    )
    ddl = f"k int, m map<string,{value}>"
    t1, t2, t0 = "17682882903686900100", "17682882903686900200", "17682882903686900050"
    steps = [
        ({"key1": ("A", t1), "key2": ("B", t1)}, {"key1": "A", "key2": "B"}),
        ({"key1": ("A1", t2), "key3": ("C", t2)}, {"key1": "A1", "key2": "B", "key3": "C"}),
        ({"key2": ("B2", t0)}, {"key1": "A1", "key2": "B", "key3": "C"}),
        ({"key3": None, "key1": ("A2", None)}, {"key1": "A1", "key2": "B"}),
    ]
    for written, expected in steps:
        table.write(spark.createDataFrame([(1, written)], ddl))
        [(_, got)] = rows(table)
        assert {key: row[0] for key, row in got.items()} == expected


def test_merge_map_overrides_keys_and_retracts_them(engine: tuple[Any, Factory]) -> None:
    spark, make = engine
    ddl = "k int, m map<string,int>, _row_kind string"
    table = make(
        [("k", "int"), ("m", "map<string,int>")],
        ["k"],
        {"merge-engine": "aggregation", "fields.m.aggregate-function": "merge_map"},
    )
    table.write(
        spark.createDataFrame([(1, {"a": 1}, "+I"), (1, {"a": 2, "b": 3}, "+I"), (1, None, "+I")], ddl)
    )
    assert rows(table) == [(1, {"a": 2, "b": 3})]
    table.write(spark.createDataFrame([(1, {"a": 0}, "-U")], ddl))
    assert rows(table) == [(1, {"b": 3})]


def test_paimon_scalar_functions(engine: tuple[Any, Factory]) -> None:
    spark, make = engine
    columns = [
        ("k", "int"),
        ("p", "int"),
        ("l", "string"),
        ("band", "boolean"),
        ("bor", "boolean"),
        ("f", "string"),
    ]
    options = {
        "merge-engine": "aggregation",
        "fields.p.aggregate-function": "product",
        "fields.l.aggregate-function": "listagg",
        "fields.band.aggregate-function": "bool_and",
        "fields.bor.aggregate-function": "bool_or",
        "fields.f.aggregate-function": "first_non_null_value",
        "fields.l.ignore-retract": "true",
        "fields.band.ignore-retract": "true",
        "fields.bor.ignore-retract": "true",
        "fields.f.ignore-retract": "true",
    }
    table = make(columns, ["k"], options)
    ddl = "k int, p int, l string, band boolean, bor boolean, f string, _row_kind string"
    table.write(
        spark.createDataFrame(
            [
                (1, 6, "a", True, False, None, "+I"),
                (1, 7, " ", None, True, "x", "+I"),
                (1, None, "b", False, None, "y", "+I"),
            ],
            ddl,
        )
    )
    # product 6*7 (NULL ignored); listagg skips the blank; bool_and T&F; bool_or F|T; first non-NULL 'x'
    assert rows(table) == [(1, 42, "a,b", False, True, "x")]
    table.write(spark.createDataFrame([(1, 5, "c", True, True, "z", "-U")], ddl))
    # product retraction is integer division: 42 div 5 = 8; the others ignore retractions
    assert rows(table) == [(1, 8, "a,b", False, True, "x")]


def test_paimon_listagg_skips_java_whitespace_as_blank(engine: tuple[Any, Factory]) -> None:
    """Paimon's listagg skips a NULL or blank input, blank meaning Character.isWhitespace throughout
    (tab, newline, U+3000, U+2028, ...), not only spaces; with distinct, blank tokens too. An empty
    delimiter with distinct splits on a space. A delimiter with braces is a plain string."""
    spark, make = engine
    columns = [("k", "int"), ("l", "string"), ("d", "string"), ("e", "string"), ("f", "string")]
    options = {
        "merge-engine": "aggregation",
        **{f"fields.{c}.aggregate-function": "listagg" for c in "ldef"},
        "fields.d.distinct": "true",
        "fields.e.distinct": "true",
        "fields.e.list-agg-delimiter": "",
        "fields.f.list-agg-delimiter": "{k}",
    }
    table = make(columns, ["k"], options)
    ddl = "k int, l string, d string, e string, f string"
    table.write(
        spark.createDataFrame(
            [
                (1, "a", "a", "a", "a"),
                (1, "\t", "\t", "\t", "\t"),
                (1, "\n", "\n", "\n", "\n"),
                (1, "\u3000", "\u3000", "\u3000", "\u3000"),
                # distinct: blank tokens, tokens already there and repeated ones are dropped
                (1, "b", "b,\t,\u3000,a,b,c", "bb a \u3000", "b"),
                (2, "\t\n\u3000 ", "\t \n", "\u3000", "\r\x1c"),  # all blank: stays NULL
                # onto a NULL accumulator the input is taken verbatim, even with distinct
                (2, " x\t", "x,\n,x", "y", "x"),
            ],
            ddl,
        )
    )
    assert rows(table) == [(1, "a,b", "a,b,c", "abb", "a{k}b"), (2, " x\t", "x,\n,x", "y", "x")]
    table.write(
        spark.createDataFrame(
            [(1, "\u2028", "\u205f", "\u2029", "\x0b"), (2, "z", "\u3000,z,x", "\x1c", "\u2000")], ddl
        )
    )
    assert rows(table) == [(1, "a,b", "a,b,c", "abb", "a{k}b"), (2, " x\t,z", "x,\n,x,z", "y", "x")]


@pytest.mark.parametrize(
    ("merge_engine", "message"), [("partial-update", DELETE_REJECTED), ("first-row", RETRACT_REJECTED)]
)
def test_refused_deletes_carry_paimons_whole_multi_line_text(
    engine: tuple[Any, Factory], merge_engine: str, message: str
) -> None:
    spark, make = engine
    table = make([("k", "int"), ("a", "string")], ["k"], {"merge-engine": merge_engine})
    table.write(spark.createDataFrame([(1, "x")], "k int, a string"))
    with pytest.raises(MergeError) as raised:
        table.write(spark.createDataFrame([(1, None, "-D")], "k int, a string, _row_kind string"))
    assert "\n" in message and str(raised.value) == message


@pytest.mark.parametrize(
    ("type_", "rows", "message"),
    [
        ("tinyint", [(1, 127, "+I"), (1, 1, "+I")], "byte overflow: 127 + 1 = 128"),
        ("smallint", [(1, -200, "+I"), (1, 200, "+I")], "short overflow: -200 * 200 = -40000"),
        ("int", [(1, 2147483647, "+I"), (1, 1, "+I")], "int overflow: 2147483647 + 1"),
        # retracting from a NULL sum negates (FieldSumAgg.negateExact)
        ("bigint", [(1, None, "+I"), (1, -(2**63), "-U")], "long overflow: --9223372036854775808"),
    ],
)
def test_integral_overflow_names_the_operands(
    engine: tuple[Any, Factory], type_: str, rows: list[Any], message: str
) -> None:
    """Paimon's ArithmeticException texts (FieldSumAgg, FieldProductAgg), built from the values."""
    spark, make = engine
    function = "product" if type_ == "smallint" else "sum"
    table = make(
        [("k", "int"), ("v", type_)],
        ["k"],
        {"merge-engine": "aggregation", "fields.v.aggregate-function": function},
    )
    with pytest.raises(MergeError) as raised:
        table.write(spark.createDataFrame(rows, f"k int, v {type_}, _row_kind string"))
    assert str(raised.value) == message


def test_auto_increment_assigns_dense_ids_once(spark: Any, tmp_path: Path) -> None:
    """Seed 003: a dictionary table mapping a string key to a dense id, assigned on first sight."""
    table = WideTable.create(
        spark,
        tmp_path / "uid_mapping",
        [("user_id", "string"), ("uid", "bigint")],
        ["user_id"],
        {"auto-increment.fields": "uid", "bucket.num": "2"},
    )
    keys = "user_id string, _offset bigint"
    table.write(spark.createDataFrame([("user3", 3), ("user1", 1), ("user2", 2), ("user1", 4)], keys))
    assert rows(table) == [("user1", 1), ("user2", 2), ("user3", 3)]
    table.write(spark.createDataFrame([("user2", 1), ("user4", 2)], keys))
    assert rows(table) == [("user1", 1), ("user2", 2), ("user3", 3), ("user4", 4)]
    table.write(spark.createDataFrame([("user4", "-D")], "user_id string, _row_kind string"))
    table.write(spark.createDataFrame([("user5",), ("user4",)], "user_id string"))
    # ids are never reused: user4's 4 is gone with its row, user5 and the new user4 get 5 and 6
    assert rows(table) == [("user1", 1), ("user2", 2), ("user3", 3), ("user4", 6), ("user5", 5)]
    # Fluss's UpsertWriterImpl words a write of every column and one of target columns differently.
    with pytest.raises(InvalidInputError) as full_row:
        table.write(spark.createDataFrame([("user9", 9)], "user_id string, uid bigint"))
    assert str(full_row.value) == (
        "This table has auto increment column [uid]. Explicitly specifying values for an auto increment "
        "column is not allowed. Please specify non-auto-increment columns as target columns using "
        "partialUpdate first."
    )
    with pytest.raises(InvalidInputError) as targeted:
        table.write(
            spark.createDataFrame([("user9", 9)], "user_id string, uid bigint"),
            target_columns=["user_id", "uid"],
        )
    assert (
        str(targeted.value)
        == "Explicitly specifying values for the auto increment column uid is not allowed."
    )


def test_auto_increment_definition_errors(spark: Any, tmp_path: Path) -> None:
    columns = [("k", "string"), ("a", "int"), ("b", "string")]
    for options, message in [
        ({"auto-increment.fields": "a,b"}, "Multiple auto increment columns are not supported yet."),
        ({"auto-increment.fields": "b"}, "The data type of auto increment column must be INT or BIGINT."),
        ({"auto-increment.fields": "k"}, "Auto increment column can not be used as the primary key."),
        (
            {"auto-increment.fields": "zz"},
            "Auto increment column zz does not exist in table columns [k, a, b].",
        ),
    ]:
        with pytest.raises(InvalidOptionError) as raised:
            WideTable.create(spark, tmp_path / "t", columns, ["k"], options)
        assert str(raised.value) == message
