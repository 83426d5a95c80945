"""Paimon `hll_sketch` and `theta_sketch` columns: the merged sketch estimates the exact number of
distinct raw values written (within the sketch's documented error), whatever the order the records
come in; FieldAggregatorTest's byte-level cases; and Java's DataSketches reading and writing the same
bytes (on the JVM, where its jar ships with Spark)."""

from __future__ import annotations

import random
from typing import Any

import datasketches as ds  # type: ignore[import-untyped]  # it ships no type information
import pytest
from conftest import Factory

from wide_assets import sketches
from wide_assets.errors import MergeError

OPTIONS = {
    "merge-engine": "aggregation",
    "fields.h.aggregate-function": "hll_sketch",
    "fields.t.aggregate-function": "theta_sketch",
}
COLUMNS = [("k", "int"), ("h", "binary"), ("t", "binary")]
DDL = "k int, h binary, t binary"
# Relative standard error at 2^12 (the default lgK of both Java sketches): HLL_4 1.04/sqrt(K) (the
# DataSketches HLL documentation), Theta 1/sqrt(K - 1) (its Theta accuracy documentation). The tests
# allow three of them, a bound a correct sketch misses about once in 370 draws; the draws are seeded.
K = 2**12
HLL_RSE = 1.04 / K**0.5
THETA_RSE = 1 / (K - 1) ** 0.5


def hll_of(values: list[int]) -> bytes:
    """What Paimon's HllSketchUtil.sketchOf writes: `new HllSketch()` (lgK 12, HLL_4), compact."""
    sketch = ds.hll_sketch(12, ds.tgt_hll_type.HLL_4)
    for value in values:
        sketch.update(value)
    return bytes(sketch.serialize_compact())


def theta_of(values: list[int]) -> bytes:
    """What Paimon's ThetaSketch.sketchOf writes: a default update sketch (lgK 12), compact."""
    sketch = ds.update_theta_sketch(12)
    for value in values:
        sketch.update(value)
    return bytes(sketch.compact().serialize())


def test_merged_sketches_estimate_the_distinct_values_written_in_any_order(
    engine: tuple[Any, Factory],
) -> None:
    """Keys whose records hold sketches of overlapping random value sets (the sizes put HLL through its
    list, set and dense modes and Theta past its 4096 exact entries), a NULL record among them, written
    over two commits in one order to one table and reversed to another."""
    spark, make = engine
    draw = random.Random(21)
    records: list[tuple[int, list[int] | None]] = []
    for key, sizes in {1: [3, 2], 2: [200, 150, 100], 3: [6000, 9000, 3000]}.items():
        pool = range(2 * sum(sizes))  # overlapping draws: the union is smaller than the sum
        records += [(key, draw.sample(pool, size)) for size in sizes]
    records.insert(2, (2, None))
    forward, reverse = make(COLUMNS, ["k"], OPTIONS), make(COLUMNS, ["k"], OPTIONS)
    for table, ordered in ((forward, records), (reverse, records[::-1])):
        rows = [(k, v and hll_of(v), v and theta_of(v)) for k, v in ordered]
        half = len(rows) // 2
        for commit in (rows[:half], rows[half:]):
            table.write(spark.createDataFrame(commit, DDL))
    exact = {k: len({x for key, v in records if key == k for x in v or []}) for k in (1, 2, 3)}
    results = []
    for table in (forward, reverse):
        stored = {k: (bytes(h), bytes(t)) for k, h, t in table.read().collect()}
        estimates = {
            k: (sketches.estimate("hll", h), sketches.estimate("theta", t)) for k, (h, t) in stored.items()
        }
        for k, count in exact.items():
            hll, theta = estimates[k]
            assert abs(hll - count) <= 3 * HLL_RSE * count, (k, hll, count)
            assert abs(theta - count) <= 3 * THETA_RSE * count, (k, theta, count)
        # SQL reads an HLL column's estimate on both engines, rounded.
        in_sql = dict(table.read().selectExpr("k", "hll_sketch_estimate(h)").collect())
        assert in_sql == {k: round(hll) for k, (hll, _) in estimates.items()}
        results.append(estimates)
    # Theta's union commutes exactly. HLL's keeps the same registers, but which estimator reads them
    # depends on the order the sketches came in (as in Java): both are within the bound above.
    assert [{k: t for k, (_, t) in r.items()} for r in results[1:]] == [
        {k: t for k, (_, t) in results[0].items()}
    ]
    hll, theta = results[0][1]
    assert exact[1] == 5 and (round(hll), theta) == (5, 5.0)  # few values: both sketches are exact


def test_sketch_unions_as_paimons_field_aggregator_test(engine: tuple[Any, Factory]) -> None:
    """FieldAggregatorTest.testFieldHllSketchAgg and testFieldThetaSketchAgg: sketchOf(2, 3) merged
    with sketchOf(1) is sketchOf(1, 2, 3) byte for byte, and merging sketchOf(1) again changes nothing."""
    spark, make = engine
    table = make(COLUMNS, ["k"], OPTIONS)
    for values in ([2, 3], [1], None, [1]):
        record = (1, values and hll_of(values), values and theta_of(values))
        table.write(spark.createDataFrame([record], DDL))
        if values == [1]:
            [(_, h, t)] = table.read().collect()
            assert (bytes(h), bytes(t)) == (hll_of([1, 2, 3]), theta_of([1, 2, 3]))


def test_a_value_that_is_not_a_sketch_fails_the_write_naming_the_column(engine: tuple[Any, Factory]) -> None:
    spark, make = engine
    table = make(COLUMNS, ["k"], OPTIONS)
    table.write(spark.createDataFrame([(1, hll_of([1]), theta_of([1]))], DDL))
    with pytest.raises(MergeError) as raised:
        table.write(spark.createDataFrame([(1, b"not a sketch", theta_of([2]))], DDL))
    assert str(raised.value).startswith(
        "Column h (hll_sketch) holds a value that is not a serialized DataSketches HLL sketch (datasketches: "
    )
    assert [(bytes(h), bytes(t)) for _, h, t in table.read().collect()] == [(hll_of([1]), theta_of([1]))]


@pytest.mark.jvm
def test_java_datasketches_reads_and_writes_the_same_bytes(jvm_spark: Any) -> None:
    """datasketches-java (Spark's jar; Paimon 2.0 shades 4.2.0 of it, the same serialization) builds
    sketches of overlapping sets in list, set and dense HLL modes; Paimon's HllSketchUtil.union of them
    is byte for byte ours, and its ThetaSketch.union retains the same hashes under the same theta as
    ours, whose bytes Java reads."""
    jvm = jvm_spark._jvm
    hll, theta = jvm.org.apache.datasketches.hll, jvm.org.apache.datasketches.theta
    memory = jvm.org.apache.datasketches.memory.Memory
    draw = random.Random(6)

    def java_update(sketch: Any, values: list[int]) -> None:
        for value in values:  # update(long[]) hashes as update(long) does; py4j has no Java long
            datum = jvm_spark.sparkContext._gateway.new_array(jvm.long, 1)
            datum[0] = value
            sketch.update(datum)

    for size_a, size_b in ((1, 2), (5, 6), (300, 300), (5000, 7000)):
        a, b = draw.sample(range(3 * size_b), size_a), draw.sample(range(3 * size_b), size_b)
        java_hll_a, java_hll_b, java_theta_a, java_theta_b = (
            hll.HllSketch(),
            hll.HllSketch(),
            theta.UpdateSketch.builder().build(),
            theta.UpdateSketch.builder().build(),
        )
        for sketch, values in ((java_hll_a, a), (java_hll_b, b), (java_theta_a, a), (java_theta_b, b)):
            java_update(sketch, values)
        hll_a, hll_b = bytes(java_hll_a.toCompactByteArray()), bytes(java_hll_b.toCompactByteArray())
        assert (hll_a, hll_b) == (hll_of(a), hll_of(b))
        java_union = hll.Union.heapify(hll_b)  # HllSketchUtil.union(a, b)
        java_union.update(hll.HllSketch.heapify(hll_a))
        assert sketches.union("hll", hll_a, hll_b) == bytes(
            java_union.getResult(hll.TgtHllType.HLL_4).toCompactByteArray()
        )

        theta_a, theta_b = (
            bytes(java_theta_a.compact().toByteArray()),
            bytes(java_theta_b.compact().toByteArray()),
        )
        java_theta_union = theta.Sketches.setOperationBuilder().buildUnion()  # ThetaSketch.union(a, b)
        java_theta_union.union(memory.wrap(theta_a))
        java_theta_union.union(memory.wrap(theta_b))
        expected = java_theta_union.getResult()
        ours = theta.Sketches.wrapSketch(memory.wrap(sketches.union("theta", theta_a, theta_b)))
        assert ours.getThetaLong() == expected.getThetaLong()
        assert list(ours.getCache()) == list(expected.getCache())
        assert ours.getEstimate() == expected.getEstimate()
